"""Stack per-step values with one copy instead of one reshape per part (reassociating set).

Folding per-step weight gradients into one product (passes/fold.py) concatenates the steps'
vectors: `concatenate([h_1.reshape(1, H), ..., h_T.reshape(1, H)])`, T reshapes and a
concatenation of T two-dimensional parts; on a character RNN that is about a tenth of the step.
The same matrix is one concatenation of the vectors themselves, reshaped:

    concatenate([u_1[None], ..., u_T[None]], axis=0)   ->  concatenate([u_1, ..., u_T]).reshape(T, *row)
    concatenate([u_1[:, None], ..., u_T[:, None]], 1)  ->  concatenate([u_1, ..., u_T]).reshape(T, n).T
    concatenate([X[k:k+1] for k in a..b], axis=0)      ->  X[a:b+1]      (X[b:a-1:-1].copy() descending;
                                                                       X[k].reshape(1, ...) counts as X[k:k+1])
    concatenate([M_1.T, ..., M_T.T], axis=1)          ->  concatenate([M_1, ..., M_T]).T
    concatenate([T[i_1], ..., T[i_T]], axis=0)        ->  T[concatenate([i_1, ..., i_T])]

The first is the same array, bit for bit and in the same layout. The second and the fourth are
the same values as a transposed view, and the third a view of X's rows (or a copy of them
reversed); the matrix products that read them may round differently for another memory layout,
so the pass runs with the reassociating passes. The fourth is the batched weight gradient of an
LSTM: its hidden states and inputs, transposed per step, are `Hᵀ` and `Xᵀ` of the stacked states
the forward products already concatenated (CSE then keeps one copy: 2 of the LSTM step's 3
transposed stacks go, and the third copies contiguous rows instead of transposed columns).
The fifth is exact (the same rows copied once, not twice): an LSTM's per-step embedding rows,
stacked for the batched input projection, become one gather whose indices are the
concatenation the folded embedding gradient already scatters by (CSE keeps one).
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .chains import _gather, _index_of, _reshaped
from .gather import _GATHER


def _vectors(x, part_shape, shape):
    """The values u_k when every part of concatenation x is u_k (of `shape`) reshaped to
    `part_shape`: rows (1,) + row, or columns (n, 1) of vectors (n,)."""
    us = [_reshaped(p, part_shape, shape, x.aval[1]) for p in x.inputs]
    return None if None in us else us


def _transposed(x):
    """The matrices M_k when every part of x is M_k transposed (2-D, of x's dtype), else None."""
    ms = []
    for p in x.inputs:
        m = p.inputs[0] if p.op == "transpose" and len(p.inputs) == 1 else None
        axes = p.params.get("axes")
        if not isinstance(m, ir.Node) or m.aval is None or len(m.aval[0]) != 2 or m.aval[1] != x.aval[1] \
                or (axes is not None and tuple(axes) != (1, 0)):
            return None
        ms.append(m)
    return ms


def _slices(x):
    """(X, [k...]) when every part of x is X[k:k+1] (or X[k] as one row) of one X, with
    consecutive k (up or down)."""
    base, ks = None, []
    for p in x.inputs:
        k = _index_of(p, "block") if isinstance(p, ir.Node) else None
        if k is None and isinstance(p, ir.Node) and p.op in ("reshape", "expand_dims") and p.inputs \
                and isinstance(p.inputs[0], ir.Node) and p.aval is not None and p.aval[0][:1] == (1,):
            q = p.inputs[0]  # X[k] as a one-row block: X[k:k+1]
            k = _index_of(q, "int")
            if k is not None and q.aval is not None and tuple(p.aval[0]) == (1,) + tuple(q.aval[0]):
                p = q
            else:
                k = None
        if k is None or (base is not None and p.inputs[0] is not base):
            return None
        base = p.inputs[0]
        ks.append(k)
    step = 1 if ks[-1] >= ks[0] else -1
    return (base, ks) if ks == list(range(ks[0], ks[0] + step * len(ks), step)) else None


def _gathered(x):
    """(T, [i_k]) when every part of x is T[i_k] of one T, the i_k vectors of one integer dtype."""
    table, idx = None, []
    for p in x.inputs:
        if p.op != "getitem" or p.params.get("index") != _GATHER or len(p.inputs) != 2:
            return None
        t, i = p.inputs
        if (table is not None and t is not table) or not isinstance(i, ir.Node) or i.aval is None \
                or len(i.aval[0]) != 1 or np.dtype(i.aval[1]).kind not in "iu" or (idx and i.aval[1] != idx[0].aval[1]):
            return None
        table = t
        idx.append(i)
    return table, idx


def _gather_rows_once(graph, x) -> bool:
    """Rewrite concatenation x of gathered rows `T[i_k]` as one gather (in place); True if done."""
    found = _gathered(x)
    if found is None:
        return False
    table, idx = found
    flat = ir.Node("concatenate", tuple(idx), {"axis": 0}, ((x.aval[0][0],), idx[0].aval[1]), x.site)
    graph.nodes.insert(graph.nodes.index(x), flat)
    x.op, x.inputs, x.params = "getitem", (table, flat), {"index": _GATHER}
    return True


def stack_parts(graph: ir.Graph) -> ir.Graph:
    if graph.polymorphic:  # avals hold one size only
        return graph
    outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}  # returned or committed: a fresh,
    for x in list(graph.nodes):                                          # C-ordered array, as eager's
        if x.op != "concatenate" or x.id in outputs or len(x.inputs) < 2 or x.aval is None or x.errstate is not None \
                or not all(isinstance(p, ir.Node) and p.aval is not None for p in x.inputs):
            continue
        shape, dtype, site = tuple(x.aval[0]), x.aval[1], x.site
        axis = x.params.get("axis", 0) % len(shape)
        k = len(x.inputs)
        new, last = [], None
        found = _slices(x) if axis == 0 else None  # rows of one array: a view (or one copy)
        if found is not None and found[0].aval is not None and len(found[0].aval[0]) == len(shape):
            base, ks = found
            new = _gather(base, ks, site)
            if ks[-1] > ks[0]:  # ascending: x is the slice itself
                (g,) = new
                x.op, x.inputs, x.params = g.op, g.inputs, g.params
                continue
            last = ("copy", (new[-1],), {})  # descending: a reversed view, copied for the products
        if axis == 0 and not new and _gather_rows_once(graph, x):
            continue
        us = _vectors(x, (1,) + shape[1:], shape[1:]) if axis == 0 and len(shape) >= 2 and last is None else None
        if us is not None:
            flat = ir.Node("concatenate", tuple(us), {"axis": 0}, ((k * shape[1],) + shape[2:], dtype), site)
            new, last = [flat], ("reshape", (flat,), {"shape": shape})
        cols = _vectors(x, (shape[0], 1), (shape[0],)) if axis == 1 and len(shape) == 2 else None
        if cols is not None:
            flat = ir.Node("concatenate", tuple(cols), {"axis": 0}, ((k * shape[0],), dtype), site)
            rows = ir.Node("reshape", (flat,), {"shape": (k, shape[0])}, ((k, shape[0]), dtype), site)
            new, last = [flat, rows], ("transpose", (rows,), {"axes": (1, 0)})
        mats = _transposed(x) if axis == 1 and len(shape) == 2 and not new else None
        if mats is not None:
            rows = ir.Node("concatenate", tuple(mats), {"axis": 0}, ((shape[1], shape[0]), dtype), site)
            new, last = [rows], ("transpose", (rows,), {"axes": (1, 0)})
        if not new:
            continue
        pos = graph.nodes.index(x)
        graph.nodes[pos:pos] = new
        if mats is not None:  # transposed per-step gathers: one gather, transposed
            _gather_rows_once(graph, new[-1])
        if last is not None:
            x.op, x.inputs, x.params = last
    return graph
