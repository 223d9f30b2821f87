"""Tensor (an immutable array value) and Variable (mutable state watched by every tape).

NumPy's own functions work on tensors: `np.tanh(t)`, `np.dot(a, b)`, `np.sum(t, axis=1)` go
through `__array_ufunc__` / `__array_function__` to the op registry and return tensors, so
results, broadcasting and dtype promotion are NumPy's. Functions without a registered op run on
the underlying arrays and return a constant tensor (with a warning when a tape is recording).

    >>> import numpy as np, janus_like as jl
    >>> t = jl.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> np.sum(np.tanh(t), axis=1).shape
    (2,)
"""
from __future__ import annotations

import itertools
import operator
import warnings

import numpy as np

from . import backend
from .ops import api as F
from .ops.methods import ArrayMethods
from .ops import registry as _registry
from .ops.registry import _tapes

_next_id = itertools.count(1).__next__
_new = object.__new__
_builder = _registry._builder  # [the graph builder while generating, else None], set in place


def _wrap(data):
    t = object.__new__(Tensor)
    t._data = data
    t._tid = _next_id()
    return t


def _unwrap(x):
    return x._data if isinstance(x, Tensor) else x


class Tensor(ArrayMethods):
    """An array value. Operations return new tensors; `t[i] = v` is a functional update
    (the tensor object now holds the updated value, recorded on active tapes)."""

    __slots__ = ("_data", "_tid", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, data, dtype=None):
        if isinstance(data, Tensor):
            data = data._data
        # copy: later writes to the caller's array must not change an immutable tensor
        self._data = backend.asarray(data, dtype=dtype, copy=True)
        self._tid = _next_id()

    # ---------------------------------------------------------------- array facts
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    device = property(lambda self: backend.device_of(self._data))

    def numpy(self):
        """The value as a NumPy array (copied to the host when it lives on a GPU)."""
        return backend.to_device(self._data, "cpu") if self.device == "gpu" else self._data

    def item(self):
        return self._data.item()

    def tolist(self):
        return self.numpy().tolist()

    def to(self, device_name):
        """This value on `device_name` ('cpu' or 'gpu'): a transfer op, so tapes and graphs see it."""
        return F.to_device(self, device_name)

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(self.numpy())
        if dtype is not None:
            a = a.astype(dtype, copy=bool(copy))
        # a tensor's buffer is immutable: never hand out a writable alias when a copy is asked for
        return a.copy() if copy and a is self._data else a

    def __repr__(self):
        body = np.array2string(np.asarray(self.numpy()), separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={self.dtype})"

    def __format__(self, spec):
        # f"{loss:.4f}" works on scalar tensors as it does on NumPy scalars
        if spec and self._data.ndim == 0:
            return format(self._data.item(), spec)
        return format(str(self), spec)

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return (F.getitem(self, i) for i in range(len(self._data)))

    def __contains__(self, value):  # as NumPy: (array == value).any(), whatever the rank
        return value in self._data

    def __bool__(self):
        return bool(self._data)

    def __float__(self):
        return float(self._data)

    def __int__(self):
        return int(self._data)

    def __index__(self):
        return int(self._data)

    __hash__ = object.__hash__

    # ---------------------------------------------------------------- operators
    def __add__(self, o): return F.add(self, o)
    def __radd__(self, o): return F.add(o, self)
    def __sub__(self, o): return F.sub(self, o)
    def __rsub__(self, o): return F.sub(o, self)
    def __mul__(self, o): return F.mul(self, o)
    def __rmul__(self, o): return F.mul(o, self)
    def __truediv__(self, o): return F.div(self, o)
    def __rtruediv__(self, o): return F.div(o, self)
    def __pow__(self, o): return F.pow(self, o)
    def __rpow__(self, o): return F.pow(o, self)
    def __floordiv__(self, o): return F.floor_divide(self, o)
    def __rfloordiv__(self, o): return F.floor_divide(o, self)
    def __mod__(self, o): return F.remainder(self, o)
    def __rmod__(self, o): return F.remainder(o, self)
    def __matmul__(self, o): return F.matmul(self, o)
    def __rmatmul__(self, o): return F.matmul(o, self)
    def __neg__(self): return F.neg(self)
    def __pos__(self): return self
    def __abs__(self): return F.abs(self)
    def __lt__(self, o): return F.lt(self, o)
    def __le__(self, o): return F.le(self, o)
    def __gt__(self, o): return F.gt(self, o)
    def __ge__(self, o): return F.ge(self, o)
    def __eq__(self, o): return F.eq(self, o)
    def __ne__(self, o): return F.ne(self, o)

    def __getitem__(self, index):
        # An int or a slice with no tape recording and no graph being generated: the op's result
        # without its dispatch (~5 us on a small tensor). Errors take the op path, which names
        # the op, the shapes and the user's line.
        cls = index.__class__
        if (cls is int or cls is slice) and not _tapes and _builder[0] is None:
            try:  # _wrap, inlined (an RL policy's `float(probs(obs)[0])` on every environment step)
                t = _new(Tensor)
                t._data = self._data[index]
                t._tid = _next_id()
                return t
            except Exception:
                pass
        return F.getitem(self, index)

    def __setitem__(self, index, value):
        self._replace(F.index_update(self._snapshot(), index, value))

    # in-place operators are functional updates of this object
    def __iadd__(self, o): return self._inplace(F.add(self._snapshot(), o))
    def __isub__(self, o): return self._inplace(F.sub(self._snapshot(), o))
    def __imul__(self, o): return self._inplace(F.mul(self._snapshot(), o))
    def __itruediv__(self, o): return self._inplace(F.div(self._snapshot(), o))

    def _snapshot(self):
        """A tensor holding the current value and tape identity (before a functional update)."""
        t = object.__new__(Tensor)
        t._data, t._tid = self._data, self._tid
        return t

    def _replace(self, new):
        if isinstance(new, Tensor):
            self._data, self._tid = new._data, new._tid
        else:
            self._data, self._tid = new, _next_id()

    def _inplace(self, new):
        self._replace(new)
        return self

    # ---------------------------------------------------------------- methods
    def copy(self): return F.reshape_like(self, self)

    # ---------------------------------------------------------------- NumPy protocol
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.pop("out", None)
        if method == "__call__":
            result = _UFUNCS[ufunc](*inputs) if ufunc in _UFUNCS and not kwargs else None
        else:
            result = ufunc_method_op(ufunc, method, inputs, kwargs)
        if result is None and out is not None:  # NumPy must write: `where=` keeps old values, several outputs
            return _constant_call_out(getattr(ufunc, method), inputs, kwargs, out, ufunc.__name__)
        if result is None:
            result = _constant_call(getattr(ufunc, method), inputs, kwargs, ufunc.__name__)
        if out is not None:
            return _write_out(out, result)
        return result

    def __array_function__(self, func, types, args, kwargs):
        impl = _FUNCTIONS.get(func)
        if impl is not None:
            lo, hi, known = _PLAIN[func]
            if (lo <= len(args) <= hi and known.issuperset(kwargs)) or not _unusual_arguments(func, args, kwargs):
                return impl(*args, **kwargs)
        return _constant_call(func, args, kwargs, func.__name__)


def _write_out(out, result):
    target = out[0] if isinstance(out, tuple) else out
    if isinstance(target, Variable):
        target.assign(result)
    elif isinstance(target, Tensor):
        target._replace(result)
    else:
        np.copyto(target, _unwrap(result))
        return target
    return target


def _unwrap_tree(x):
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap_tree(i) for i in x)
    if isinstance(x, dict):
        return {k: _unwrap_tree(v) for k, v in x.items()}
    return x


def _constant_call(func, args, kwargs, name):
    """Run a NumPy function without a registered op on raw arrays; the result has no gradient."""
    if _tapes:
        warnings.warn(f"numpy.{name} has no gradient rule in janus_like; its result is a constant "
                      f"for GradientTape", stacklevel=3)
    res = func(*_unwrap_tree(args), **_unwrap_tree(kwargs))
    if isinstance(res, np.ndarray):
        return _wrap(res)
    if isinstance(res, tuple):
        return tuple(_wrap(r) if isinstance(r, np.ndarray) else r for r in res)
    return res


def _constant_call_out(func, args, kwargs, out, name):
    """`func(*args, out=...)` run by NumPy on array buffers, then stored into tensor targets."""
    targets = out if isinstance(out, tuple) else (out,)
    buffers = tuple(t._data.copy() if isinstance(t, Tensor) else t for t in targets)
    _constant_call(func, args, dict(kwargs, out=buffers), name)
    results = tuple(_write_out(t, _wrap(b)) if isinstance(t, Tensor) else t for t, b in zip(targets, buffers))
    return results if isinstance(out, tuple) and len(out) > 1 else results[0]


class Variable(Tensor):
    """Mutable state: `assign`, `assign_add`, `assign_sub` change the value in place. Every active
    GradientTape watches variables automatically."""

    __slots__ = ("name", "trainable")

    def __init__(self, initial_value, dtype=None, name=None, trainable=True):
        super().__init__(initial_value, dtype)
        self.name = name
        self.trainable = trainable

    def assign(self, value):
        value = _unwrap(value)
        if getattr(value, "shape", None) != self._data.shape:
            value = np.broadcast_to(value, self._data.shape)
        self._data = np.asarray(value, dtype=self._data.dtype).copy() if isinstance(value, np.ndarray) \
            else backend.array_module(value).asarray(value, dtype=self._data.dtype)
        return self

    def _assign_result(self, new):
        """`assign` of a value computed here from `self._data`: a new NumPy array of the
        variable's shape and dtype (what a float32 update usually gives) is kept as it is;
        assign's copy would only duplicate an array that nothing else references."""
        if type(new) is np.ndarray and new.base is None and new.dtype == self._data.dtype \
                and new.shape == self._data.shape:
            self._data = new
            return self
        return self.assign(new)

    def assign_add(self, delta):
        return self._assign_result(self._data + _unwrap(delta))

    def assign_sub(self, delta):
        return self._assign_result(self._data - _unwrap(delta))

    def __setitem__(self, index, value):
        new = self._data.copy()
        new[index] = _unwrap(value)
        self._data = new

    def __iadd__(self, o): return self.assign_add(o)
    def __isub__(self, o): return self.assign_sub(o)
    def __imul__(self, o): return self._assign_result(self._data * _unwrap(o))
    def __itruediv__(self, o): return self._assign_result(self._data / _unwrap(o))

    def value(self):
        """The current value as an immutable Tensor snapshot."""
        return self._snapshot()

    def __repr__(self):
        return f"Variable({self.name or ''}{', ' if self.name else ''}{Tensor.__repr__(self)})"


_registry._install_tensor_type(Tensor, _wrap)


def tensor(data, dtype=None):
    """Make a Tensor from array-like data (list, ndarray, scalar, Tensor)."""
    return Tensor(data, dtype)


# NumPy ufuncs and functions that map onto registered ops ----------------------------
_UFUNCS = {
    np.add: F.add, np.subtract: F.sub, np.multiply: F.mul, np.true_divide: F.div, np.power: F.power,
    np.negative: F.neg, np.exp: F.exp, np.log: F.log, np.tanh: F.tanh, np.sqrt: F.sqrt,
    np.absolute: F.abs, np.sin: F.sin, np.cos: F.cos, np.sign: F.sign, np.maximum: F.maximum,
    np.minimum: F.minimum, np.matmul: F.matmul, np.square: F.np_square, np.less: F.lt,
    np.less_equal: F.le, np.greater: F.gt, np.greater_equal: F.ge, np.equal: F.eq,
    np.not_equal: F.ne, np.logical_and: F.logical_and, np.logical_or: F.logical_or,
    np.logical_not: F.logical_not, np.positive: operator.pos, np.floor: F.floor, np.ceil: F.ceil,
    np.rint: F.rint, np.isnan: F.isnan, np.isinf: F.isinf, np.isfinite: F.isfinite,
    np.floor_divide: F.floor_divide, np.remainder: F.remainder, np.log1p: F.log1p, np.expm1: F.expm1,
    np.log2: F.log2, np.log10: F.log10, np.reciprocal: F.reciprocal, np.arctan: F.arctan, np.sinh: F.sinh,
    np.cosh: F.cosh, np.logaddexp: F.logaddexp, np.tan: F.tan, np.arcsin: F.arcsin, np.arccos: F.arccos,
    np.arctan2: F.arctan2, np.hypot: F.hypot, np.bitwise_and: F.bitwise_and, np.bitwise_or: F.bitwise_or,
    np.bitwise_xor: F.bitwise_xor, np.invert: F.invert, np.left_shift: F.left_shift, np.right_shift: F.right_shift,
}
_REDUCERS = {np.add: F.sum, np.maximum: F.max, np.minimum: F.min, np.multiply: F.prod}
_ACCUMULATORS = {np.add: F.cumsum}


def ufunc_method_op(ufunc, method, inputs, kwargs):
    """`ufunc.reduce(x, axis, keepdims=)` / `ufunc.accumulate(x, axis)` as the op computing it
    (NumPy's normalized arguments, axis 0 by default), or None: another method, ufunc or argument
    (`accumulate`'s axis None is eager's ValueError). Shared by Tensor's and the graph values'
    `__array_ufunc__`, so a tape follows the same ops eagerly and in a graph."""
    if method == "reduce" and ufunc in _REDUCERS and set(kwargs) <= {"axis", "keepdims"}:
        return _REDUCERS[ufunc](inputs[0], kwargs.get("axis", 0), kwargs.get("keepdims", False))
    if method == "accumulate" and ufunc in _ACCUMULATORS and set(kwargs) <= {"axis"} \
            and type(kwargs.get("axis", 0)) is int:
        return _ACCUMULATORS[ufunc](inputs[0], kwargs.get("axis", 0))
    return None


def _to_out(out, res):
    """NumPy's `out=`: the result written there (and `out` returned), or the result itself."""
    return res if out is None else _write_out(out, res)


def _np_sum(a, axis=None, dtype=None, out=None, keepdims=False):
    return _to_out(out, F.sum(a, axis, keepdims, dtype))


def _np_mean(a, axis=None, out=None, keepdims=False):
    return _to_out(out, F.mean(a, axis, keepdims))


def _np_var(a, axis=None, out=None, ddof=0, keepdims=False):
    return _to_out(out, F.var(a, axis, keepdims, ddof))


def _np_std(a, axis=None, out=None, ddof=0, keepdims=False):
    return _to_out(out, F.std(a, axis, keepdims, ddof))


def _np_max(a, axis=None, out=None, keepdims=False):
    return _to_out(out, F.max(a, axis, keepdims))


def _np_min(a, axis=None, out=None, keepdims=False):
    return _to_out(out, F.min(a, axis, keepdims))


def _np_clip(a, a_min=None, a_max=None, out=None, **kw):
    a_min = kw.get("min", a_min)
    a_max = kw.get("max", a_max)
    return _to_out(out, F.clip(a, a_min, a_max))


_FUNCTIONS = {
    np.sum: _np_sum, np.mean: _np_mean, np.max: _np_max, np.amax: _np_max, np.min: _np_min,
    np.amin: _np_min, np.var: _np_var, np.std: _np_std, np.dot: F.dot,
    np.linalg.norm: lambda x, axis=None, keepdims=False, ord=None: F.norm(x, axis, keepdims),
    np.linalg.solve: F.solve, np.linalg.inv: F.inv,
    np.any: lambda a, axis=None, keepdims=False: F.any(a, axis, keepdims),
    np.all: lambda a, axis=None, keepdims=False: F.all(a, axis, keepdims), np.matmul: F.matmul,
    np.tensordot: F.tensordot,
    np.einsum: F.einsum, np.clip: _np_clip, np.where: F.where, np.maximum: F.maximum,
    np.reshape: lambda a, newshape=None, shape=None, order="C": F.reshape(a, newshape if shape is None else shape),
    np.transpose: lambda a, axes=None: F.transpose(a, axes), np.swapaxes: F.swapaxes,
    np.expand_dims: F.expand_dims, np.squeeze: lambda a, axis=None: F.squeeze(a, axis),
    np.concatenate: lambda arrays, axis=0: F.concatenate(arrays, axis),
    np.stack: lambda arrays, axis=0: F.stack(arrays, axis), np.split: F.split,
    np.broadcast_to: lambda a, shape: F.broadcast_to(a, shape),
    np.take: lambda a, indices, axis=None: F.take(a, indices, axis),
    np.outer: F.outer, np.argmax: lambda a, axis=None, keepdims=False: F.argmax(a, axis, keepdims),
    np.argmin: lambda a, axis=None, keepdims=False: F.argmin(a, axis, keepdims),
    np.argsort: lambda a, axis=-1, kind=None, order=None, stable=None: F.argsort(a, axis),
    np.argpartition: lambda a, kth, axis=-1, kind="introselect", order=None: F.argpartition(a, kth, axis),
    np.zeros_like: lambda a, dtype=None: F.zeros_like(a, dtype),
    np.empty_like: lambda a, dtype=None: F.zeros_like(a, dtype),  # (its values are unspecified: zeros will do)
    np.ones_like: lambda a, dtype=None: F.ones_like(a, dtype),
    np.full_like: lambda a, fill_value, dtype=None: F.full_like(a, fill_value, dtype),
    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim,
    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
    # (np.copy of a NumPy scalar is a 0-d ndarray, where the scalar's own copy() is a scalar)
    np.copy: lambda a, order="K": a.copy() if isinstance(a, Tensor) else _registry.bind(_registry.P.copy_keep, a),
    np.pad: lambda array, pad_width, mode="constant", constant_values=0: F.pad(array, pad_width, constant_values),
    np.roll: lambda a, shift, axis=None: F.roll(a, shift, axis), np.flip: lambda m, axis=None: F.flip(m, axis),
    np.nan_to_num: F.nan_to_num, np.tile: lambda A, reps: F.tile(A, reps),
    np.round: F.round, np.around: F.round, np.cumsum: F.cumsum,
    np.prod: lambda a, axis=None, dtype=None, keepdims=False: F.prod(a, axis, keepdims, dtype),
    np.sort: lambda a, axis=-1, kind=None, order=None, stable=None: F.sort(a, axis), np.triu: F.triu, np.tril: F.tril,
    np.diff: F.diff, np.atleast_1d: lambda a: F.atleast_nd(a, 1), np.atleast_2d: lambda a: F.atleast_nd(a, 2),
    np.atleast_3d: lambda a: F.atleast_nd(a, 3),
    np.hstack: lambda tup, dtype=None, casting="same_kind": F.hstack(tup),
    np.vstack: lambda tup, dtype=None, casting="same_kind": F.concatenate([F.atleast_nd(a, 2) for a in tup], 0),
    np.ravel: lambda a, order="C": a.ravel(order) if getattr(a, "kind", None) == "array" else F.reshape(a, (-1,)),
    np.moveaxis: F.moveaxis,
}


# The arguments each entry above implements, in NumPy's order: how many may be positional, which
# keywords, and keywords accepted only at their NumPy default. Anything else (np.max(x, initial=0),
# np.mean(x, dtype=np.float64), np.reshape(x, s, order="F"), np.take(..., mode="clip")) is another
# computation: a Tensor runs NumPy itself on its data, a graph leaves the call eager with a reason.
_MAX_KEEPDIMS = (4, {"axis", "out", "keepdims"}, {})
_SIGNATURES = {
    np.sum: (5, {"axis", "dtype", "out", "keepdims"}, {}), np.mean: (2, {"axis", "out", "keepdims"}, {}),
    np.max: _MAX_KEEPDIMS, np.amax: _MAX_KEEPDIMS, np.min: _MAX_KEEPDIMS, np.amin: _MAX_KEEPDIMS,
    np.var: (2, {"axis", "out", "ddof", "keepdims"}, {}), np.std: (2, {"axis", "out", "ddof", "keepdims"}, {}),
    np.linalg.norm: (1, {"axis", "keepdims"}, {"ord": None}), np.linalg.solve: (2, set(), {}),
    np.linalg.inv: (1, set(), {}), np.any: (2, {"axis", "keepdims"}, {}), np.all: (2, {"axis", "keepdims"}, {}),
    np.dot: (2, set(), {}), np.matmul: (2, set(), {}), np.maximum: (2, set(), {}),
    np.tensordot: (3, {"axes"}, {}), np.einsum: (27, set(), {}),  # einsum: subscripts + 26 operands
    np.clip: (4, {"a_min", "a_max", "min", "max", "out"}, {}), np.where: (3, set(), {}),
    np.reshape: (2, {"newshape", "shape"}, {"order": "C"}), np.transpose: (2, {"axes"}, {}),
    np.swapaxes: (3, set(), {}), np.expand_dims: (2, {"axis"}, {}), np.squeeze: (2, {"axis"}, {}),
    np.concatenate: (2, {"axis"}, {}), np.stack: (2, {"axis"}, {}), np.split: (3, {"axis"}, {}),
    np.broadcast_to: (2, {"shape"}, {}), np.take: (3, {"axis"}, {}), np.outer: (2, set(), {}),
    np.argmax: (2, {"axis", "keepdims"}, {}), np.argmin: (2, {"axis", "keepdims"}, {}),
    np.zeros_like: (2, {"dtype"}, {}), np.ones_like: (2, {"dtype"}, {}), np.empty_like: (2, {"dtype"}, {}),
    np.full_like: (3, {"fill_value", "dtype"}, {"order": "K", "subok": True}), np.shape: (1, set(), {}),
    np.ndim: (1, set(), {}), np.size: (2, {"axis"}, {}), np.copy: (1, set(), {"order": "K"}),
    np.pad: (2, {"pad_width", "constant_values"}, {"mode": "constant"}), np.roll: (3, {"shift", "axis"}, {}),
    np.flip: (2, {"axis"}, {}),
    np.argsort: (2, {"axis"}, {"kind": None, "order": None, "stable": None}),
    np.argpartition: (3, {"kth", "axis"}, {"kind": "introselect", "order": None}),
    np.nan_to_num: (1, {"nan", "posinf", "neginf"}, {"copy": True}), np.tile: (2, {"reps"}, {}),
    np.round: (2, {"decimals"}, {}), np.around: (2, {"decimals"}, {}), np.cumsum: (3, {"axis", "dtype"}, {}),
    np.prod: (3, {"axis", "dtype", "keepdims"}, {}),
    np.sort: (2, {"axis"}, {"kind": None, "order": None, "stable": None}),
    np.triu: (2, {"k"}, {}), np.tril: (2, {"k"}, {}), np.diff: (3, {"n", "axis"}, {}),
    np.atleast_1d: (1, set(), {}), np.atleast_2d: (1, set(), {}), np.atleast_3d: (1, set(), {}),
    np.hstack: (1, set(), {"dtype": None, "casting": "same_kind"}),
    np.vstack: (1, set(), {"dtype": None, "casting": "same_kind"}), np.ravel: (1, set(), {"order": "C"}),
    np.moveaxis: (3, {"source", "destination"}, {}),
}
_MIN_POSITIONAL = {np.where: 3, np.einsum: 2, np.dot: 2, np.matmul: 2, np.maximum: 2, np.tensordot: 2,
                   np.outer: 2, np.full_like: 2, np.swapaxes: 3, np.split: 2, np.take: 2, np.pad: 2, np.roll: 2,
                   np.linalg.solve: 2}


# func -> (fewest, most positional arguments, keywords): the common call is checked inline in
# Tensor.__array_function__ (two comparisons and a set test), before unimplemented_arguments
_PLAIN = {f: (_MIN_POSITIONAL.get(f, 1), npos, frozenset(kw)) for f, (npos, kw, _) in _SIGNATURES.items()}


def unimplemented_arguments(func, args, kwargs):
    """The arguments of `func(*args, **kwargs)` its table entry does not implement, as text
    ("initial=", "3 positional arguments"); empty when the entry computes what NumPy would."""
    lo, hi, known = _PLAIN[func]
    if func is np.pad and not _one_number(kwargs.get("constant_values", args[3] if len(args) > 3 else 0)):
        return "constant_values= other than one number"  # (ops/api.pad takes one number)
    if lo <= len(args) <= hi and known.issuperset(kwargs):
        return ""
    return _unusual_arguments(func, args, kwargs)


def _one_number(v) -> bool:
    return type(v) in (int, float, bool) or isinstance(v, np.generic)


def _unusual_arguments(func, args, kwargs):
    """`unimplemented_arguments` for a call the common-case test did not pass: keywords given
    at their defaults are allowed."""
    npos, keywords, defaults = _SIGNATURES[func]
    bad = [f"{k}=" for k, v in kwargs.items() if k not in keywords and not (
        k in defaults and (v is defaults[k] or isinstance(v, str) and v == defaults[k]))]
    if len(args) > npos or len(args) < _MIN_POSITIONAL.get(func, 1):
        bad.append(f"{len(args)} positional arguments")
    return ", ".join(bad)
