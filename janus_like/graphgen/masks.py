"""Values whose size the data decides: `x[mask]`, `np.nonzero(mask)`, in graphs of unknown sizes.

`x[mask]` has as many rows as `mask` has True values, which no shape specialization can know. The
generator gives each mask it meets a *stand-in count* (`GraphBuilder.sizes`: 37, 43, 49, ... for
the first, second, third mask) and generates the graph as one for unknown sizes
(`ir.Graph.polymorphic`: sizes are read at run time, `len()` and `.shape` are nodes). The JIT then
generates it a second time with every stand-in one larger (jit/polymorphism.py) and keeps the graph
only if both are identical node for node: whatever baked a count in (a loop over the rows, a
`reshape` to it) shows up as a difference, and the step stays eager. Distinct masks get distinct
stand-ins, so combining two masks' selections elementwise (which works only when their counts
happen to agree) is refused while generating rather than trusted.

A mask's stand-in shape comes from running the op on integer indices instead of the mask: a
k-dimensional mask with n True values selects what k index arrays of length n select.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ops import api as F
from ..ops.indexing import _SLOT
from ..passes.cse import value_key
from .values import Sym, Unsupported

# The first mask's stand-in count (the probe generation adds one to each), and the gap between
# masks' counts, so two masks never share one. Sizes arrays rarely have: a size equal to a count
# in use is read at run time (GraphBuilder.fixed), which for a fixed size only costs a node, unless
# the two generations then differ (the step stays eager).
FIRST, STEP = 37, 6

# op -> how many leading inputs precede the index operands (the array indexed is input `x_at`)
_INDEX_OPS = {"getitem": (1, 0), "getitem_grad": (2, 1), "index_update": (2, 0), "index_add": (2, 0),
              "add_at": (2, 0), "last_write_mask": (1, 0)}
_SELECTING = {"getitem"}  # ops whose result's shape is the selection's (the others keep x's shape)


def mask_operand(op_name, inputs, params):
    """The position in `inputs` of a boolean array the graph computes used as an index, or None."""
    spec = _INDEX_OPS.get(op_name)
    if spec is None or "index" not in params:
        return None
    found = [k for k, i in enumerate(inputs) if k >= spec[0] and isinstance(i, ir.Node)
             and np.dtype(i.aval[1]).kind == "b"]
    return found[0] if found else None


def needs_count(op_name) -> bool:
    """True for ops whose result's shape depends on a mask's count (x[mask]); writes through a
    mask (x[mask] = v) keep x's shape and only need a count to check v."""
    return op_name in _SELECTING


def stand_in(builder, node) -> int:
    """The stand-in count of mask `node` in this generation (`builder.sizes`: FIRST, or one more
    in the probe generation)."""
    counts = builder.stand_ins
    # masks of the same values share a count (`s[~pos] @ X[~pos]`: two `~pos` nodes, one count,
    # so the product's shapes agree)
    key = value_key(node) or node.id
    if key not in counts:
        counts[key] = builder.sizes + STEP * len(counts)
    return counts[key]


def sized_aval(builder, op, reps, inputs, params, at):
    """(shape, dtype) of `op` with the mask at input `at` standing for `stand_in` True values."""
    first, x_at = _INDEX_OPS[op.name]
    items, single = params["index"]
    slot = at - first
    mask = inputs[at]
    k = len(mask.aval[0])
    x_shape = tuple(np.shape(reps[x_at]))
    where = [n for n, item in enumerate(items) if type(item) is tuple and item == (_SLOT, slot)]
    before = items[:where[0]] if where else ()
    # the axes the mask covers: only slices before it (x[m], x[:, m], x[m, 1:]); else no count
    if k == 0 or len(where) != 1 or any(not (type(i) is tuple and i[0] != _SLOT) for i in before):
        raise Unsupported("data-dependent-shape", f"op '{op.name}' with a boolean mask among other index kinds "
                                                  "(the result's size depends on the data)", builder.site)
    d = len(before)
    if tuple(mask.aval[0]) != x_shape[d:d + k]:
        raise Unsupported("op-error", f"op '{op.name}': a boolean index of shape {tuple(mask.aval[0])} does not "
                                      f"match the indexed array's axes {x_shape[d:d + k]}", builder.site)
    if 0 in x_shape[d:d + k]:
        raise Unsupported("data-dependent-shape", "a boolean mask over an empty axis", builder.site)
    n = stand_in(builder, mask)
    extra = len(reps) - first
    picks = [np.zeros(n, np.intp)] * k  # k index arrays of n zeros select what n True values select
    new_items = list(items[:where[0]]) + [(_SLOT, slot)] + [(_SLOT, extra + j) for j in range(k - 1)] \
        + list(items[where[0] + 1:])
    args = list(reps)
    args[at] = picks[0]
    args += picks[1:]
    template = (tuple(new_items), single and k == 1)
    try:
        out = op.impl(np, *args, **{**params, "index": template})
    except Exception as exc:
        raise Unsupported("op-error", f"op '{op.name}' fails on these shapes with a selection of {n} items "
                                      f"({exc})", builder.site) from exc
    arr = np.asarray(out)
    return tuple(arr.shape), arr.dtype


NONZERO = (np.nonzero, np.where, np.flatnonzero, np.argwhere)


def nonzero(gen, func, a):
    """`np.nonzero(a)` (and one-argument `np.where`, `np.flatnonzero`, `np.argwhere`) of a graph
    array: a constant grid of every element's index selected with `a != 0`. A mask selects in C
    order, as `np.nonzero` lists indices, so the values, their int64 (intp) dtype and their
    shapes are NumPy's."""
    name = f"numpy.{func.__name__}"
    if not (isinstance(a, Sym) and a.kind == "array"):
        raise Unsupported("unsupported-call", f"{name} of a {getattr(a, 'kind', type(a).__name__)} value", gen.site)
    shape = tuple(a.shape)
    if not shape:
        raise Unsupported("unsupported-call", f"{name} of a 0-d array", gen.site)
    mask = a if np.dtype(a.dtype) == np.bool_ else a != 0
    if func is np.flatnonzero:
        return gen.getitem(gen.lift(np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)), mask)
    grid = np.indices(shape, dtype=np.intp)
    if func is np.argwhere:  # (NumPy's: the transpose of the (ndim, n) stack of the indices, Fortran-ordered)
        return F.transpose(F.stack([gen.getitem(gen.lift(grid[k]), mask) for k in range(len(shape))]))
    if len(shape) == 1:
        return (gen.getitem(gen.lift(grid[0]), mask),)
    # (NumPy's: columns of one (n, ndim) array, views with its row stride)
    pairs = gen.getitem(gen.lift(np.ascontiguousarray(np.moveaxis(grid, 0, -1))), mask)
    return tuple(gen.getitem(pairs, (slice(None), k)) for k in range(len(shape)))


def unique(gen, args, kwargs):
    """`np.unique(x, return_index=, return_inverse=, return_counts=)` of a graph array (axis None):
    x's values sorted (stably, by an argsort, where the indices are asked for), then the first of
    each run of equal values selected (a mask of data-decided count). NaNs count as one value, the
    first kept, as NumPy's `equal_nan=True` does. The first index of each value is the sort's
    permutation at the same mask; the inverse (where each element's value is among the unique ones)
    is the running count of runs, put back in x's order by the permutation's inverse; the counts
    are the gaps between the runs' starts (one selection, so one count)."""
    import inspect

    from ..ops import api as F
    from .support import _as_kind

    try:
        given = inspect.signature(np.unique).bind(*args, **kwargs).arguments
    except TypeError as exc:
        raise Unsupported("user-error", f"numpy.unique(): {exc}", gen.site) from None
    x = given["ar"]
    flags = [given.get(k, False) for k in ("return_index", "return_inverse", "return_counts")]
    if not (isinstance(x, Sym) and x.kind == "array") or given.get("axis") is not None \
            or given.get("equal_nan", True) is not True or given.get("sorted", True) is not True \
            or any(type(f) is not bool for f in flags) \
            or any(flags) and np.dtype(x.dtype).kind == "c":
        raise Unsupported("unsupported-call", "numpy.unique with these arguments (axis=, equal_nan=, sorted=) or of "
                                              "this value", gen.site)
    if x.size == 0:  # nothing to select: NumPy's results for the shape are constants
        made = np.unique(np.empty(x.shape, x.dtype), *flags)
        return tuple(gen.lift(v) for v in made) if any(flags) else gen.lift(made)
    flat = _as_kind(F.reshape(x, (-1,)), "array")
    perm = None
    if flags[0] or flags[1]:  # NumPy's stable sort, so the first index of each value is its first
        perm = gen.library_node(np.argsort, "numpy.argsort", [flat], {"kind": "stable"})
        flat = gen.getitem(flat, perm)
    else:
        flat = _as_kind(F.sort(flat, -1), "array")
    later, earlier = gen.getitem(flat, slice(1, None)), gen.getitem(flat, slice(None, -1))
    new = later != earlier
    if np.dtype(flat.dtype).kind in "fc":
        new = new & ~(F.isnan(later) & F.isnan(earlier))
    keep = _as_kind(F.concatenate([gen.lift(np.ones(1, dtype=bool)), new], 0), "array")
    if not any(flags):
        return gen.getitem(flat, keep)
    out = [gen.getitem(flat, keep)]
    if flags[0]:
        out.append(gen.getitem(perm, keep))
    if flags[1]:
        runs = _as_kind(F.cumsum(keep, 0, np.intp), "array") - 1
        back = gen.library_node(np.argsort, "numpy.argsort", [perm], {})  # a permutation's inverse
        shape = np.unique(np.zeros(x.shape, x.dtype), return_inverse=True)[1].shape  # NumPy's, for this version
        out.append(_as_kind(F.reshape(gen.getitem(runs, back), shape), "array"))
    if flags[2]:
        n = flat.shape[0]
        starts = gen.getitem(gen.lift(np.arange(n, dtype=np.intp)), keep)
        ends = _as_kind(F.concatenate([gen.getitem(starts, slice(1, None)), gen.lift(np.full(1, n, np.intp))], 0),
                        "array")
        out.append(ends - starts)
    return tuple(out)


def bincount(gen, args, kwargs):
    """`np.bincount(x, weights=None, minlength=n)` of graph values with a constant `minlength`:
    n bins, speculated. An assert checks every value of x is below n (a call breaking it runs
    eagerly, where NumPy gives more bins), so the graph keeps fixed sizes."""
    from ..jit.assumptions import Assumption
    from ..ops.registry import P
    from .draws import templates
    from .support import _as_kind

    given = dict(zip(("x", "weights", "minlength"), args), **kwargs)
    if len(args) > 3 or set(given) - {"x", "weights", "minlength"} or "x" not in given:
        raise Unsupported("user-error", "numpy.bincount with these arguments", gen.site)
    x, weights, n = given["x"], given.get("weights"), given.get("minlength", 0)
    if not (isinstance(x, Sym) and x.kind == "array" and x.ndim == 1 and np.dtype(x.dtype).kind in "iu") \
            or isinstance(weights, Sym) and weights.kind != "array" or type(n) is not int:
        raise Unsupported("unsupported-call", "numpy.bincount of these values", gen.site)
    largest = n < 1  # as many bins as the largest value says: the warm-up's count, speculated
    if largest:
        key = ("bins", gen.pick_key)
        seen = gen.profile.values.get(key) if gen.profile is not None and gen.pick_key is not None else None
        if type(seen) is not int or seen < 1 or gen.profile.varies(key) or key in gen.relaxed:
            raise Unsupported("data-dependent-shape", "numpy.bincount without a constant minlength (as many bins as "
                                                      "the largest value says, which changed)", gen.site)
        n = seen
    t_args, t_kwargs, values = templates(args, kwargs, "numpy.bincount", gen.site)
    dtype = np.dtype(np.float64 if weights is not None else np.intp)
    out = gen.builder.emit(P.numpy_call, tuple(values), dict(fn=np.bincount, args=t_args, kwargs=t_kwargs),
                           aval=((n,), dtype))
    fits = (x < n).all()  # (true of no values: a mask's empty selection)
    if largest:
        fits = fits & (x == n - 1).any()
    gen.builder.assert_(gen.one_truth(fits), True,
                        Assumption("shape", gen.site, f"numpy.bincount's {n} bins (every value below "
                                                      f"{'the largest seen + 1' if largest else 'minlength'})",
                                   relax=key if largest else None))
    return _as_kind(out, "array")
