"""NumPy's array constructors and scalar types applied to graph values.

    np.asarray(loss)                 a 0-d float64 array, even of a Python float
    np.array(x, dtype=np.float64)    a fresh array, cast
    np.float32(lr)                   a NumPy scalar (an array of another dtype: a cast copy)
    np.array([loss, acc])            a fresh array built from graph scalars (or same-shape arrays)

Each gives what NumPy gives for the same objects eagerly, including the Python type of the
result (Python number, NumPy scalar, 0-d array), which later promotions depend on: a Python
float is weak in `float * float32_array` (float32 result) where a 0-d float64 array is not
(float64). The dtype and shape of `np.array([...])` come from NumPy itself, called on stand-ins
of the same Python types, shapes and dtypes as the graph values (a list of a Python float and a
float32 scalar is float64; nested lists stack). A Tensor converts to an ndarray, so the result
is cut from any gradient tape, as it is eagerly.
"""
from __future__ import annotations

import functools

import numpy as np

from ..executor.plan_helpers import c_ordered
from ..ops import api as F
from ..ops.registry import P, bind
from .support import _any_abstract, _as_kind
from .values import OPAQUE, TENSOR_BUFFER, Sym, Unsupported, array_copy

_CONSTRUCTORS = (np.asarray, np.asanyarray, np.array)


def is_conversion(func) -> bool:
    return func in _CONSTRUCTORS or _scalar_type(func) is not None


def _scalar_type(func):
    """The dtype of a NumPy scalar type used as a function (np.float32, np.int64, np.bool_)."""
    if isinstance(func, type) and issubclass(func, np.generic):
        dtype = np.dtype(func)
        return dtype if dtype.kind in "biufc" else None
    return None


def convert(func, args, kwargs, site):
    """The graph value of `func(*args, **kwargs)` for an array constructor or a scalar type
    with graph values among its arguments; Unsupported for the forms not handled."""
    name = f"numpy.{func.__name__}"
    if "copy" in kwargs and func in (np.array, np.asarray) and not _any_abstract(kwargs["copy"]):
        func, kwargs = _copy_argument(func, args, dict(kwargs), name, site)
    if len(args) == 2 and func in _CONSTRUCTORS and "dtype" not in kwargs:
        args, kwargs = args[:1], {**kwargs, "dtype": args[1]}  # np.asarray(x, np.float32)
    if len(args) != 1 or set(kwargs) - {"dtype"} or _any_abstract(kwargs):
        raise Unsupported("unsupported-call", f"{name} of graph values with {len(args)} arguments and keywords "
                                              f"{sorted(kwargs)} (a value and a constant dtype= have graph ops)", site)
    x, dtype = _host(args[0]), kwargs.get("dtype")
    if any(_on_gpu(v) for v in _leaves(x)):
        raise Unsupported("device-mismatch", f"{name} of a GPU array (CuPy makes no implicit host copies)", site)
    scalar = _scalar_type(func)
    if scalar is not None:
        if not isinstance(x, Sym) or dtype is not None:
            raise Unsupported("unsupported-call", f"{name} of a structure of graph values", site)
        return _scalar(_detach(x), scalar)
    dtype = None if dtype is None else np.dtype(dtype)
    if isinstance(x, Sym):
        out = _one(func, _detach(x), dtype)
        if x.kind == "tensor" and func is not np.array and out.dtype == x.dtype and out.shape:
            out.view = (OPAQUE, TENSOR_BUFFER)  # the Tensor's own buffer: a write through it changes the Tensor
        return out
    if isinstance(x, (list, tuple)):
        return _nested(x, dtype, name, site)
    raise Unsupported("unsupported-call", f"{name} of a {type(x).__name__} holding graph values", site)


def _copy_argument(func, args, kwargs, name, site):
    """NumPy 2's `copy=` of np.array / np.asarray as the constructor that does the same: True
    always copies (np.array), None copies only when it must (np.asarray), False never copies,
    which the graph takes only for an array already of the dtype asked (else eager's ValueError)."""
    copy = kwargs.pop("copy")
    if copy is None:
        return np.asarray, kwargs
    if copy is False:
        x, dtype = (args[0] if args else None), kwargs.get("dtype", args[1] if len(args) > 1 else None)
        same_dtype = dtype is None or np.dtype(dtype) == getattr(x, "dtype", None)
        if not (isinstance(x, Sym) and x.kind == "array" and x.shape != () and same_dtype):
            raise Unsupported("unsupported-call", f"{name}(..., copy=False) of a value it would have to copy", site)
        return np.asarray, kwargs
    return np.array, kwargs


def _leaves(x):
    if isinstance(x, (list, tuple)):
        for e in x:
            yield from _leaves(e)
    else:
        yield x


def _host(x):
    """A GPU Tensor converts through Tensor.__array__, a host copy (a CuPy array does not)."""
    if isinstance(x, (list, tuple)):
        return type(x)(_host(e) for e in x)
    return x.numpy() if isinstance(x, Sym) and x.kind == "tensor" and x.device == "gpu" else x


def _on_gpu(x):
    return isinstance(x, Sym) and x.kind != "py" and x.device == "gpu"


def _detach(x):
    """A Tensor's values as an ndarray: no gradient flows through the conversion."""
    return _as_kind(F.stop_gradient(x), "array") if x.kind == "tensor" else x


def _scalar(x, dtype):
    if x.kind != "py" and x.shape != ():
        # np.float32(array): the array itself when the dtype matches, else a cast copy
        return x if x.dtype == dtype else _as_kind(F.cast(x, dtype), "array")
    return _as_kind(bind(P.numpy_scalar, x, dtype=dtype), "array")


def _one(func, x, dtype):
    """np.asarray / np.array of one graph value."""
    _int_asserted(x, dtype)
    if x.kind == "py" or (func is np.array and x.shape == ()):
        out = _as_kind(array_copy(Sym(x.node, "array")), "array")  # a fresh 0-d array (NumPy scalars too)
    elif x.shape == ():
        out = _as_kind(bind(P.asarray, x), "array")  # a NumPy scalar becomes a 0-d array
    elif func is np.array:
        if dtype is not None and dtype != x.dtype:
            return _as_kind(F.cast(x, dtype), "array")  # astype copies
        out = _as_kind(bind(P.copy_keep, x), "array")  # (np.array copies in order "K": a Fortran x stays so)
    else:
        out = x  # np.asarray of an array is the array
    if dtype is not None and dtype != out.dtype:
        out = _as_kind(F.cast(out, dtype), "array")
    return out


def _in_range(low, high, v) -> bool:
    return low <= v <= high


def _int_asserted(x, dtype):
    """Assert that x, a Python int the graph computes given to NumPy, is in the range of the
    integer `dtype` it is made (or of int64, with no dtype): past it, eager's array holds
    objects (`np.full(2, k * 4)`, `np.array([1.0, k])`) or NumPy raises OverflowError
    (`np.array(-k, dtype=np.uint64)`), where the graph's conversion would overflow or wrap."""
    from ..jit.assumptions import Assumption
    from .values import _builder

    if x.kind != "py" or np.dtype(x.dtype).kind not in "iu" or dtype is not None and np.dtype(dtype).kind not in "iu":
        return
    info, b = np.iinfo(np.int64 if dtype is None else dtype), _builder()
    within = b.py_op(functools.partial(_in_range, int(info.min), int(info.max)), x, sample=True)
    b.assert_(within, True, Assumption("type", b.site, f"int (in {info.dtype}'s range)", "a Python int given to NumPy"))


def _stand_in(x):
    """A concrete object of x's Python type, shape and dtype, for NumPy to discover the result."""
    if isinstance(x, Sym):
        if x.kind == "py":
            return np.zeros((), x.dtype).item()
        return np.zeros((), x.dtype)[()] if x.shape == () else np.zeros(x.shape, x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_stand_in(e) for e in x)
    return x


def _nested(rows, dtype, name, site):
    """np.array(rows) with graph values among the (nested) elements: each element converted to
    the result's dtype, then stacked level by level."""
    try:
        probe = np.array(_stand_in(rows), dtype=dtype)
    except (TypeError, ValueError) as e:
        raise Unsupported("unsupported-call", f"{name} of these graph values: {e}", site) from None
    if probe.dtype == object:
        raise Unsupported("unsupported-call", f"{name} of graph values gives an object array", site)
    target = probe.dtype

    def build(x):
        if isinstance(x, (list, tuple)) and _any_abstract(x):
            return F.stack([build(e) for e in x], axis=0)
        if not isinstance(x, Sym):
            return np.array(x, dtype=target)  # a constant part
        x = _detach(x)
        if x.kind == "py":
            _int_asserted(x, dtype)
            x = _as_kind(array_copy(Sym(x.node, "array")), "array")
        return x if x.dtype == target else F.cast(x, target)

    out = _as_kind(build(rows), "array")
    if isinstance(out, Sym) and not c_ordered(out.node):  # np.array of a list is C-ordered, a stack of
        out = _as_kind(array_copy(out), "array")  # Fortran-ordered arrays is not
    if out.shape != probe.shape or out.dtype != target:  # the stacking did not reproduce NumPy's
        raise Unsupported("unsupported-call", f"{name} of graph values of shape {out.shape} {out.dtype}, "
                                              f"where NumPy builds {probe.shape} {target}", site)
    return out
