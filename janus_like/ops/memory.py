"""Ops about buffers rather than math: an explicit copy (ndarray.copy() inside graphs) and a
transfer between devices (`Tensor.to(device)`, the transfer node of a graph)."""
from __future__ import annotations

import numpy as np

from .. import backend
from .registry import register

register("copy", lambda xp, x: xp.array(x, copy=True, order="C"), vjp=lambda g, o, x: (g,), elementwise=True,
         doc="a fresh C-ordered buffer with the same contents (NumPy's ndarray.copy): a reduction of it "
             "adds in the same order whatever the layout of x (a broadcast, a transpose)")

register("copy_keep", lambda xp, x: xp.array(x, copy=True, order="K"), vjp=lambda g, o, x: (g,),
         doc="a fresh buffer laid out as x (NumPy's np.copy, order='K'): a Fortran-ordered array's copy "
             "is summed in x's order")

# Made by the contiguous_operands pass (after differentiation), and np.ascontiguousarray of an
# array in user code: no gradient rule.
register("ascontiguousarray", lambda xp, x: xp.ascontiguousarray(x),
         doc="x in C order (at least 1-d): a copy unless it already is, else x itself (a transposed operand "
             "read by several products)")


def _strided_like(target):
    """A new NumPy array with target's shape, dtype and strides (a reversed or strided view's:
    `a[::-1]`, `a[:, ::2]`), on a buffer of its own that spans as many bytes as target does."""
    span = [(n - 1) * s for n, s in zip(target.shape, target.strides)]
    low = sum(min(0, d) for d in span)
    high = sum(max(0, d) for d in span) + target.itemsize
    return np.ndarray(target.shape, target.dtype, np.empty(high - low, np.uint8), -low, target.strides)


def _keep_layout(xp, value, target):
    """`value` laid out as `target` (graphgen/layouts.py): itself when the strides agree (so the
    op is one of ir.ALIASING_OPS, of its first operand), else a copy with target's strides. (On
    a GPU, `empty_like`'s: CuPy's kernels do not round by layout the way NumPy's reductions and
    products do.)"""
    if value.strides == target.strides:
        return value
    out = xp.empty_like(target)
    if out.strides != target.strides and xp is np and target.size:
        out = _strided_like(target)
    out[...] = value
    return out


def matmul_like(a, b, target):
    """`np.matmul(a, b, out=target)` into a new array with target's strides (graphgen/layouts.py):
    the same BLAS call eager makes, which for a Fortran-ordered `out` multiplies the transposes
    in the other order (other last bits than a C-ordered product copied into it)."""
    out = np.empty_like(target)
    if out.strides != target.strides and target.size:
        out = _strided_like(target)
    np.matmul(a, b, out=out)
    return out


register("keep_layout", _keep_layout,
         doc="the value an in-place write leaves in `target`, with target's strides (a Fortran-ordered "
             "weight stays so, a reversed view stays reversed): a later product or reduction rounds as eager's")


def _to_device(xp, x, device, source="cpu"):
    out = backend.to_device(x, device)
    return out.copy() if out is x else out  # always a fresh buffer, as a transfer is


def _to_device_vjp(g, out, x, device, source="cpu"):
    from . import api as F

    return (F.to_device(g, source, device),)  # the gradient goes back where x lives


register("to_device", _to_device, vjp=_to_device_vjp,
         doc="the value copied to `device` ('cpu' or 'gpu') from `source`; the transfer node of a graph")


register("view", lambda xp, x: x.view(),
         doc="x.view(): a new array object on x's memory (a write through either is seen by the other)")
register("asarray", lambda xp, x: xp.asarray(x),
         doc="np.asarray of a 0-d value: a NumPy scalar becomes a 0-d array, an array stays itself")
register("numpy_scalar", lambda xp, x, dtype: np.dtype(dtype).type(x),
         doc="a NumPy scalar type called on a 0-d value (np.float32(x)): a NumPy scalar of `dtype`")
# Views NumPy gives of an array (graphgen/numpy_calls.array_view): no gradient rule (a Tensor has no
# such method). The builder marks each result an opaque view of its operand: a write through it,
# or a read of it after a write to the operand, keeps the call eager.
register("diagonal", lambda xp, x, offset, axis1, axis2: xp.diagonal(x, offset, axis1, axis2),
         doc="np.diagonal(x, offset, axis1, axis2): a read-only view of x's diagonal")
register("real", lambda xp, x: xp.real(x),
         doc="x.real: a view of a complex array's real parts (of a real array, a view of all of it)")
register("imag", lambda xp, x: xp.imag(x),
         doc="x.imag: a view of a complex array's imaginary parts (of a real array, read-only zeros)")
register("sliding_window_view",
         lambda xp, x, window_shape, axis: xp.lib.stride_tricks.sliding_window_view(x, window_shape, axis),
         doc="np.lib.stride_tricks.sliding_window_view(x, window_shape, axis): a read-only view of x's windows")
