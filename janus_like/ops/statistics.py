"""Variance and standard deviation (`np.var`, `np.std`, `x.var(axis=-1, keepdims=True)` in a
hand-written layer norm): ops of their own, computed by the array's own method, so a graph gives
eager's bits (NumPy's two-pass formula, its summation order and its `ddof` count)."""
from __future__ import annotations

import numpy as np

from . import api as F
from .primitives import _arr, _axes, _nd, _restore, _shape_polymorphic
from .registry import P, bind, register


def _deviation_share(g, x, axis, keepdims, ddof):
    """(x - mean(x)) * g / (n - ddof), g restored to x's rank: the derivative of the variance
    is twice this."""
    axes = _axes(axis, _nd(x))
    if _shape_polymorphic(x):  # a graph valid for any size of some dimension: count at run time
        count = bind(P.reduced_count, x, axes=axes)
        count = F.sub(count, ddof) if ddof else count
    else:
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) - ddof
    centered = F.sub(x, F.mean(x, axis=axis, keepdims=True))
    return F.div(F.mul(centered, _restore(g, x, axis, keepdims)), count)


def _var_vjp(g, out, x, axis=None, keepdims=False, ddof=0):
    return (F.mul(_deviation_share(g, x, axis, keepdims, ddof), 2.0),)


def _std_vjp(g, out, x, axis=None, keepdims=False, ddof=0):
    # where the deviation is 0 every centred value is 0 (one element, equal elements): gradient 0,
    # not 0 / 0
    o = _restore(out, x, axis, keepdims)
    return (F.div(_deviation_share(g, x, axis, keepdims, ddof), F.where(F.eq(o, 0), F.ones_like(o), o)),)


register("var", lambda xp, x, axis=None, keepdims=False, ddof=0: _arr(xp, x).var(axis=axis, keepdims=keepdims,
                                                                                ddof=ddof),
         vjp=_var_vjp, doc="variance over `axis` (NumPy's ndarray.var), divided by n - ddof")
register("std", lambda xp, x, axis=None, keepdims=False, ddof=0: _arr(xp, x).std(axis=axis, keepdims=keepdims,
                                                                                ddof=ddof),
         vjp=_std_vjp, doc="standard deviation over `axis` (NumPy's ndarray.std), divided by n - ddof")
