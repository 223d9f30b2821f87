"""Variance and standard deviation (`np.var`, `np.std`, `x.var(axis=-1, keepdims=True)` in a
hand-written layer norm), the 2-norm (`np.linalg.norm(g)` in gradient clipping), and `any` /
`all` (a NaN check): ops of their own, computed by NumPy's own function, so a graph gives
eager's bits (NumPy's two-pass variance, its summation order and its `ddof` count)."""
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


def _norm_vjp(g, out, x, axis=None, keepdims=False):
    # x / ||x|| (0 where the norm is 0: the subgradient a clipping step wants)
    o = _restore(out, x, axis, keepdims)
    return (F.mul(_restore(g, x, axis, keepdims), F.div(x, F.where(F.eq(o, 0), F.ones_like(o), o))),)


register("norm", lambda xp, x, axis=None, keepdims=False: xp.linalg.norm(x, axis=axis, keepdims=keepdims),
         vjp=_norm_vjp, doc="the 2-norm over `axis` (all elements when None; NumPy's linalg.norm with ord=None)")
register("any", lambda xp, x, axis=None, keepdims=False: _arr(xp, x).any(axis=axis, keepdims=keepdims),
         doc="whether any element over `axis` is true (no gradient)")
register("all", lambda xp, x, axis=None, keepdims=False: _arr(xp, x).all(axis=axis, keepdims=keepdims),
         doc="whether every element over `axis` is true (no gradient)")
