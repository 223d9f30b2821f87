"""Running sums, products, sorting and triangles: `np.cumsum` (discounted returns, positions from
a mask), `np.prod`, `np.sort` (a median or a trimmed mean by hand), `np.triu` / `np.tril` (a
causal mask applied to scores). Each calls NumPy's own function, so a graph gives eager's bits.

Gradients: a running sum's is the running sum of g taken from the other end; a product's is the
product of the other elements (computed without dividing by a zero element); a sort's sends each
g element back to where its value came from, through the permutation a stable argsort of x gives
(equal values may be matched to each other's places: any such choice is the same subgradient, and
the tape and the graph make the same one); a triangle's is the same triangle of g."""
from __future__ import annotations

import numpy as np

from . import api as F
from .primitives import _is_float, _restore
from .registry import register


def _cumsum(xp, x, axis=None, dtype=None):
    # for floats np.cumsum is np.add.accumulate behind a Python wrapper (small ints it widens);
    # the fold_row_chains pass makes this op too (a running sum over rows, axis 0)
    if xp is np and dtype is None and x.dtype.kind == "f":
        return np.add.accumulate(x.reshape(-1) if axis is None else x, axis=0 if axis is None else axis)
    return xp.cumsum(x, axis=axis, dtype=dtype)


def _in_dtype_of(x, g):
    """g in x's dtype (a `dtype=` made the result another float type than x)."""
    return g if g.dtype == x.dtype else F.cast(g, x.dtype)


def _cumsum_vjp(g, out, x, axis=None, dtype=None):
    if not _is_float(x) or not _is_float(out):
        return (None,)
    if axis is None:  # NumPy ran it over x flattened
        return (_in_dtype_of(x, F.reshape(F.flip(F.cumsum(F.flip(g, 0), 0), 0), tuple(x.shape))),)
    return (_in_dtype_of(x, F.flip(F.cumsum(F.flip(g, axis), axis), axis)),)


register("cumsum", _cumsum, vjp=_cumsum_vjp,
         doc="running sums along axis (of x flattened for None), NumPy's np.cumsum")


def _prod(xp, x, axis=None, keepdims=False, dtype=None):
    return xp.prod(x, axis=axis, keepdims=keepdims, dtype=dtype)


def _prod_vjp(g, out, x, axis=None, keepdims=False, dtype=None):
    """g times the product of the other elements of each element's group: out / x where the
    group has no zero; at a group's only zero, the product of the rest; 0 elsewhere."""
    if not _is_float(x) or not _is_float(out):
        return (None,)
    zero = F.eq(x, 0)
    safe = F.where(zero, 1, x)  # x with its zeros as ones: no division by zero below
    zeros = F.sum(F.cast(zero, x.dtype), axis=axis, keepdims=True)
    rest = F.prod(safe, axis=axis, keepdims=True)  # the product of each group's nonzero elements
    share = F.where(F.eq(zeros, 0), F.div(_restore(out, x, axis, keepdims), safe),
                    F.where(F.logical_and(zero, F.eq(zeros, 1)), rest, 0))
    return (_in_dtype_of(x, F.mul(_restore(g, x, axis, keepdims), share)),)


register("prod", _prod, vjp=_prod_vjp, doc="the product over axis (all elements for None), NumPy's np.prod")


def _sort_vjp(g, out, x, axis=-1):
    if not _is_float(x):
        return (None,)
    if axis is None:
        return (F.reshape(F.sort_permute(g, F.reshape(x, (-1,)), 0, True), tuple(x.shape)),)
    return (F.sort_permute(g, x, axis, True),)


register("sort", lambda xp, x, axis=-1: xp.sort(x, axis=axis), vjp=_sort_vjp,
         doc="x sorted along axis (x flattened for None), NumPy's np.sort with its default kind")


def _sort_permute(xp, v, x, axis, inverse):
    order = xp.argsort(x, axis=axis, kind="stable")
    if inverse:  # where each sorted place's value came from
        order = xp.argsort(order, axis=axis, kind="stable")
    return xp.take_along_axis(v, order, axis=axis)


register("sort_permute", _sort_permute,
         vjp=lambda g, out, v, x, axis, inverse: (F.sort_permute(g, x, axis, not inverse), None),
         doc="v put in the order a stable sort of x along axis takes (inverse: put back from it); a sort's gradient")
register("triu", lambda xp, x, k=0: xp.triu(x, k), vjp=lambda g, out, x, k=0: (F.triu(g, k),),
         doc="x with the elements below its k-th diagonal zeroed (np.triu)")
register("tril", lambda xp, x, k=0: xp.tril(x, k), vjp=lambda g, out, x, k=0: (F.tril(g, k),),
         doc="x with the elements above its k-th diagonal zeroed (np.tril)")
