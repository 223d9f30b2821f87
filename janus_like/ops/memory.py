"""Ops about buffers rather than math: an explicit copy (ndarray.copy() inside graphs) and a
transfer between devices (`Tensor.to(device)`, the transfer node of a graph)."""
from __future__ import annotations

import numpy as np

from .. import backend
from .registry import register

register("copy", lambda xp, x: xp.array(x, copy=True, order="C"), vjp=lambda g, o, x: (g,), elementwise=True,
         doc="a fresh C-ordered buffer with the same contents (NumPy's ndarray.copy): a reduction of it "
             "adds in the same order whatever the layout of x (a broadcast, a transpose)")

# Made by the contiguous_operands pass (after differentiation), and np.ascontiguousarray of an
# array in user code: no gradient rule.
register("ascontiguousarray", lambda xp, x: xp.ascontiguousarray(x),
         doc="x in C order (at least 1-d): a copy unless it already is, else x itself (a transposed operand "
             "read by several products)")


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
