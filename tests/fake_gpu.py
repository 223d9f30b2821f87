"""A stand-in for CuPy that runs on the CPU, so the device logic is tested on machines without a
GPU: placement, transfer nodes, guards that tell devices apart, GPU graphs on the interpreter.

It keeps the CuPy rules that matter for placement:
- a device array is its own type (`FakeArray`), not an `np.ndarray` subclass;
- NumPy refuses to convert it implicitly (`np.asarray(x)` raises TypeError, as with CuPy);
- device functions and ufuncs refuse host `np.ndarray` operands (NumPy scalars are fine);
- reductions return 0-d device arrays, not NumPy scalars;
- `asarray`/`asnumpy` are the explicit transfers.

It does not model CuPy's API gaps (functions NumPy has and CuPy lacks): those need a real GPU
(`tests/test_gpu.py`, run when one is lent).
"""
from __future__ import annotations

import operator
import re
import types

import numpy as np


class DeviceError(TypeError):
    pass


class _HostIndex:
    """An index already unwrapped (host index arrays allowed, as in `x[index]`)."""

    def __init__(self, index):
        self.index = index


def _unwrap(v):
    if type(v) is _HostIndex:
        return v.index
    if type(v) is FakeArray:
        return v._a
    if type(v) is np.ndarray:
        raise DeviceError(f"Unsupported type {type(v)}: a host array given to a device operation")
    if isinstance(v, (list, tuple)):
        return type(v)(_unwrap(x) for x in v)
    return v


def _wrap(v):
    if isinstance(v, (np.ndarray, np.generic)) and not isinstance(v, FakeArray):
        return FakeArray(np.asarray(v))
    if isinstance(v, tuple):
        return tuple(_wrap(x) for x in v)
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


def _call(fn, args, kwargs):
    out = kwargs.get("out")
    result = fn(*_unwrap(args), **{k: _unwrap(x) for k, x in kwargs.items()})
    if out is not None and type(out) is FakeArray:
        return out
    return _wrap(result)


class FakeArray:
    """An array on the fake device."""

    __array_priority__ = 10_000

    def __init__(self, a):
        self._a = a

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    T = property(lambda self: FakeArray(self._a.T))
    device = property(lambda self: types.SimpleNamespace(id=0))  # CuPy's is a Device object, not a str

    def __array__(self, dtype=None, copy=None):
        raise DeviceError("Implicit conversion to a NumPy array is not allowed. Please use `.get()`")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _call(getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        return _call(func, args, kwargs)

    def __getattr__(self, name):  # methods: x.sum(), x.reshape(), x.astype(), x.copy(), ...
        if name.startswith("__"):  # no __array_interface__ / __array_struct__: no implicit host copy
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if callable(attr):
            return lambda *args, **kwargs: _call(attr, args, kwargs)
        return _wrap(attr)

    def __getitem__(self, index):
        return _wrap(self._a[_unwrap_index(index)])

    def __setitem__(self, index, value):
        self._a[_unwrap_index(index)] = _unwrap(value)

    def __len__(self):
        return len(self._a)

    def __bool__(self):
        return bool(self._a)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __index__(self):
        return operator.index(self._a)

    def __repr__(self):
        return f"FakeArray({self._a!r})"

    def get(self):
        return self._a.copy()

    def item(self):
        return self._a.item()


def _unwrap_index(index):
    if isinstance(index, tuple):
        return tuple(_unwrap_index(i) for i in index)
    return index._a if type(index) is FakeArray else index


def _defers(other):
    """An operand with its own __array_ufunc__ (a janus_like Tensor) takes the operator, as
    ndarray's operators let it."""
    return type(other) not in (FakeArray, np.ndarray) and hasattr(type(other), "__array_ufunc__")


def _binary(ufunc, reflected=False):
    if reflected:
        return lambda self, other: NotImplemented if _defers(other) else _call(ufunc, (other, self), {})
    return lambda self, other: NotImplemented if _defers(other) else _call(ufunc, (self, other), {})


for _name, _uf in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.true_divide),
                   ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul)]:
    setattr(FakeArray, f"__{_name}__", _binary(_uf))
    setattr(FakeArray, f"__r{_name}__", _binary(_uf, reflected=True))
for _name, _uf in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
                   ("eq", np.equal), ("ne", np.not_equal), ("and", np.logical_and), ("or", np.logical_or)]:
    setattr(FakeArray, f"__{_name}__", _binary(_uf))
FakeArray.__neg__ = lambda self: _call(np.negative, (self,), {})
FakeArray.__abs__ = lambda self: _call(np.absolute, (self,), {})
FakeArray.__hash__ = object.__hash__


class _Ufunc:
    def __init__(self, uf):
        self._uf = uf
        self.__name__ = uf.__name__

    def __call__(self, *args, **kwargs):
        return _call(self._uf, args, kwargs)

    def __getattr__(self, name):  # reduce, accumulate, at, outer, nin, ...
        attr = getattr(self._uf, name)
        if name == "at":  # its index, like x[index], may hold host index arrays
            return lambda a, index, *rest: _call(attr, (a, _HostIndex(_unwrap_index(index))) + rest, {})
        if callable(attr):
            return lambda *args, **kwargs: _call(attr, args, kwargs)
        return attr


# the C functions that janus_like's GPU fusion writes, as NumPy's
_C_FUNCTIONS = {"F32": "np.float32", "F64": "np.float64", "sqrt": "np.sqrt", "fabs": "np.abs", "exp": "np.exp",
                "log": "np.log", "tanh": "np.tanh", "MAXIMUM": "np.maximum",
                **{f"__{p}{op}_rn": f"np.{ufunc}" for p in "fd" for op, ufunc in
                   (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("div", "true_divide"))}}


class _ElementwiseKernel:
    """CuPy's ElementwiseKernel for the C that janus_like's GPU fusion writes (typed locals,
    F32/F64 casts, CUDA's rounding intrinsics, sqrt, fabs, exp, log, tanh, comparisons;
    executor/gpu_fusion.py), run as NumPy over whole broadcast arrays: the same values the fused
    kernel computes, one op at a time."""

    def __init__(self, in_params, out_params, operation, name, options=(), preamble=""):
        self.inputs = [p.split()[-1] for p in in_params.split(",")]
        self.outputs = [(p.split()[-1], np.dtype(p.split()[0])) for p in out_params.split(",")]
        code = re.sub(r"\b(?:float|double|bool) (t\d+) =", r"\1 =", operation)
        code = re.sub(r"(?<![\w.])(\w+)\(", lambda m: _C_FUNCTIONS.get(m[1], m[1]) + "(", code)
        self.code = compile("\n".join(line.strip() for line in code.split(";") if line.strip()), name, "exec")

    def __call__(self, *args):
        env = {"np": np}
        env.update(zip(self.inputs, (_unwrap(a) for a in args)))
        exec(self.code, env)
        outs = tuple(FakeArray(np.asarray(env[name], dtype=dt)) for name, dt in self.outputs)
        return outs if len(outs) > 1 else outs[0]


class FakeCupy(types.ModuleType):
    """The module: `xp.tanh(x)`, `xp.zeros(shape)`, `xp.add.at(...)` on device arrays."""

    ndarray = FakeArray
    ElementwiseKernel = _ElementwiseKernel

    def __init__(self):
        super().__init__("fake_cupy")
        self.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))
        self.transfers = 0  # host <-> device copies, for tests

    def __getattr__(self, name):
        attr = getattr(np, name)
        if isinstance(attr, np.ufunc):
            return _Ufunc(attr)
        if callable(attr) and not isinstance(attr, type):
            return lambda *args, **kwargs: _call(attr, args, kwargs)
        return attr

    def asarray(self, x, dtype=None):
        if type(x) is FakeArray:
            return x if dtype is None else x.astype(dtype)
        self.transfers += 1
        return FakeArray(np.array(x, dtype=dtype))

    def array(self, x, dtype=None, copy=True, order="K"):
        if type(x) is FakeArray:
            return FakeArray(np.array(x._a, dtype=dtype, copy=copy, order=order))
        self.transfers += 1
        return FakeArray(np.array(x, dtype=dtype, order=order))

    def asnumpy(self, x):
        self.transfers += 1
        return x._a.copy() if type(x) is FakeArray else np.asarray(x)
