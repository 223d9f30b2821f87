"""Variance and standard deviation (`np.var`, `np.std`, `x.var(axis=-1, keepdims=True)` in a
hand-written layer norm), the 2-norm (`np.linalg.norm(g)` in gradient clipping), `any` / `all`
(a NaN check), `argsort` and `argpartition` (a top-k): ops of their own, computed by NumPy's own function, so a
graph gives eager's bits (NumPy's two-pass variance, its summation order and its `ddof` count)."""
from __future__ import annotations

from . import api as F
from .primitives import _arr, _axes, _nd, _reduced_count, _restore
from .registry import register


def _deviation_share(g, x, axis, keepdims, ddof):
    """(x - mean(x)) * g / (n - ddof), g restored to x's rank: the derivative of the variance
    is twice this."""
    count = _reduced_count(x, _axes(axis, _nd(x)))
    if ddof:
        count = F.sub(count, ddof) if hasattr(count, "shape") else count - ddof
    centered = F.sub(x, F.mean(x, axis=axis, keepdims=True))
    return F.div(F.mul(centered, _restore(g, x, axis, keepdims)), count)


def _var_vjp(g, out, x, axis=None, keepdims=False, ddof=0):
    return (F.mul(_deviation_share(g, x, axis, keepdims, ddof), 2.0),)


def _nonzero(o):
    """o with its zeros replaced by ones: where a deviation or a norm is 0 the numerator is 0
    too (one element, equal elements, a zero vector), and the gradient is 0, not 0 / 0."""
    return F.where(F.eq(o, 0), F.ones_like(o), o)


def _std_vjp(g, out, x, axis=None, keepdims=False, ddof=0):
    return (F.div(_deviation_share(g, x, axis, keepdims, ddof), _nonzero(_restore(out, x, axis, keepdims))),)


register("var", lambda xp, x, axis=None, keepdims=False, ddof=0: _arr(xp, x).var(axis=axis, keepdims=keepdims,
                                                                                ddof=ddof),
         vjp=_var_vjp, doc="variance over `axis` (NumPy's ndarray.var), divided by n - ddof")
register("std", lambda xp, x, axis=None, keepdims=False, ddof=0: _arr(xp, x).std(axis=axis, keepdims=keepdims,
                                                                                ddof=ddof),
         vjp=_std_vjp, doc="standard deviation over `axis` (NumPy's ndarray.std), divided by n - ddof")


def _norm_vjp(g, out, x, axis=None, keepdims=False):  # g x / ||x||
    return (F.mul(_restore(g, x, axis, keepdims), F.div(x, _nonzero(_restore(out, x, axis, keepdims)))),)


register("norm", lambda xp, x, axis=None, keepdims=False: xp.linalg.norm(x, axis=axis, keepdims=keepdims),
         vjp=_norm_vjp, doc="the 2-norm over `axis` (all elements when None; NumPy's linalg.norm with ord=None)")
register("any", lambda xp, x, axis=None, keepdims=False: _arr(xp, x).any(axis=axis, keepdims=keepdims),
         doc="whether any element over `axis` is true (no gradient)")
register("all", lambda xp, x, axis=None, keepdims=False: _arr(xp, x).all(axis=axis, keepdims=keepdims),
         doc="whether every element over `axis` is true (no gradient)")
register("argsort", lambda xp, x, axis=-1: xp.argsort(x, axis=axis),
         doc="the indices that sort x along `axis` (NumPy's default kind; no gradient): a top-k by hand")
register("argpartition", lambda xp, x, kth, axis=-1: xp.argpartition(x, kth, axis=axis),
         doc="indices that put the kth element of x in its sorted place along `axis`, the smaller before it "
             "(NumPy's introselect, its order within each side included; no gradient): a beam's top k")
