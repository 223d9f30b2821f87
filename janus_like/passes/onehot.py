"""Gradients of a gather, kept sparse: cross-entropy's backward without its dense one-hot.

The gradient of `logp[rows, labels]` is `G = getitem_grad(g, logp, rows, labels)`: zeros of
logp's shape with g written at the gathered positions. Log-softmax's backward then reads G three
times over the whole (N, C) array, as eager code does:

    dlogits = G + softmax * (-sum(G, axis=-1) / total)        # zeros, neg, sum, add: 4 passes

while the hand-written step does `dlogits = softmax; dlogits[rows, labels] -= 1` (one pass plus
the scattered positions). Three rewrites give the JIT that form:

1. `sum(neg(x))` is `neg(sum(x))` (exact: negation commutes with rounding); the negation of
   the full array becomes one of the reduced array.
2. The row sums of G, when `rows` is the constant `arange(N)` (each row holds exactly one
   scattered value), are g itself as a column: `g.reshape(N, 1)`. With g a constant (a mean's
   seed), the column folds away.
3. `G + D`, where G's index hits each position at most once, is `D` with g added at the index
   (`index_add`: in D's buffer when D is dead afterwards, else in a copy), for arrays of at
   least DENSE_MIN_ELEMENTS elements, or an index of one position (a batch of one), and
   static shapes.

4. `dense_row_sums`: the gradient of a small table's gathered rows, `T[ids]` (an embedding
   lookup), is the one-hot product `onehot(ids).T @ g` instead of `np.add.at`'s unbuffered
   loop (`ops/indexing.rows_by_product`): 21 against 45-54 us on char_rnn's (60, 100) table
   and 25 ids, 2x slower on the LSTM's (1000, 64) and 320 ids, hence the size rule below. It
   sums a repeated id's rows in the BLAS's order (a reassociation), and a non-finite g takes
   the exact scatter (0 * inf would reach rows the ids do not hit).

2, 3 and 4 differ from eager only in the sign of zero (4: and the order of a repeated id's
sums) (`0.0 + -0.0` is `+0.0`, which the sparse
forms keep as `-0.0`), so they run with the reassociating passes; 1 runs there too, next to
them. The forward gather `logp[rows, labels]` stays in the graph, so an index out of bounds
still raises where eager raises. On the LSTM step (N = 320 rows of C = 1000 logits) the four
dense passes cost about 0.4 ms of 11.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ops.indexing import is_basic
from ..executor.scalars import single_position
from .constfold import fold_nodes
from .families import _shape
from .fold import _uses


# Below this size the dense add is the cheaper form: on tiny_mlp's (1, 2) logits the copy and the
# fancy-index += cost ~1 us more than zeros, an assignment and an add (the plan, 56.6 against
# 55.7 us); on the LSTM's (320, 1000) they save ~0.3 ms of 11.6. One position (a batch of one)
# is a scalar `+=` in the plan (executor/scalars.py) and takes the sparse form at any size.
DENSE_MIN_ELEMENTS = 4096


def _size_one(g) -> bool:
    return _shape(g) is not None and int(np.prod(_shape(g))) == 1


def _reduced_axes(n):
    """The axes a sum or sum_to node reduces (sum_to's without leading axes), or None."""
    x = n.inputs[0]
    xs, out = _shape(x), _shape(n)
    if xs is None or out is None:
        return None
    if n.op == "sum_to":
        if len(out) != len(xs):
            return None
        return tuple(k for k, (a, b) in enumerate(zip(xs, out)) if a != b) if all(
            b in (a, 1) for a, b in zip(xs, out)) else None
    if n.op == "sum" and n.params.get("keepdims") and n.params.get("dtype") is None:
        axis = n.params.get("axis")
        axes = range(len(xs)) if axis is None else (axis,) if isinstance(axis, int) else axis
        return tuple(sorted(a % len(xs) for a in axes))
    return None


def _scatter(n):
    """(g, operands) when n is a getitem_grad writing each position at most once."""
    if not (isinstance(n, ir.Node) and n.op == "getitem_grad" and n.errstate is None):
        return None
    if not (n.params.get("unique") or is_basic(n.params["index"])):
        return None
    g = n.inputs[0]
    if not isinstance(g, ir.Node) or g.aval is None or np.dtype(g.aval[1]) != np.dtype(n.aval[1]):
        return None
    return g, n.inputs[2:]


def _row_column(graph, n, forward):
    """g as a column when n sums the one-hot G of `x[arange(N), labels]` along its rows."""
    if graph.polymorphic or _reduced_axes(n) != (1,):
        return None
    G = n.inputs[0]
    found = _scatter(G)
    if found is None or _shape(G) is None or len(_shape(G)) != 2:
        return None
    g, operands = found
    items = G.params["index"][0]
    if items != (("slot", 0), ("slot", 1)) or len(operands) != 2:
        return None
    rows, labels = operands
    length = _shape(G)[0]
    if not (isinstance(rows, ir.Node) and rows.op == ir.CONST and _shape(g) == (length,)
            and np.array_equal(np.asarray(rows.params["value"]), np.arange(length))):
        return None
    if (getattr(labels, "id", None), G.params["index"], _shape(G)) not in forward:
        return None  # no gather of the same shape checks these labels' bounds
    return ir.Node("reshape", (g,), {"shape": (length, 1)}, ((length, 1), np.dtype(n.aval[1])), n.site)


def sparse_onehot_grads(graph: ir.Graph) -> ir.Graph:
    if any(n.op in (ir.COND, ir.LOOP) for n in graph.nodes):
        return graph  # the top level only, and no block that could read a rewritten node
    uses = _uses(graph)
    forward = {(getattr(n.inputs[2], "id", None), n.params["index"], _shape(n.inputs[0]))
               for n in graph.nodes if n.op == "getitem" and len(n.inputs) == 3}
    out = []
    made = []  # row columns of a constant g (a mean's seed) and what negates them: folded below
    for n in graph.nodes:
        if n.op in ("sum", "sum_to") and n.errstate is None:
            x = n.inputs[0]
            if isinstance(x, ir.Node) and x.op == "neg" and x.errstate is None and uses.get(x.id, 0) == 1:
                # 1. sum(neg(x)) -> neg(sum(x)): a new sum of x, and n becomes its negation
                s = ir.Node(n.op, (x.inputs[0],) + n.inputs[1:], dict(n.params), n.aval, n.site)
                column = _row_column(graph, s, forward)
                if column is not None:
                    s = column
                    made += [s, n]
                out.append(s)
                n.op, n.inputs, n.params = "neg", (s,), {}
            else:
                column = _row_column(graph, n, forward)
                if column is not None:
                    n.op, n.inputs, n.params = column.op, column.inputs, column.params
                    made.append(n)
        elif n.op == "add" and n.errstate is None and _shape(n) is not None and not graph.polymorphic:
            for G, D in (n.inputs, n.inputs[::-1]):
                found = _scatter(G)
                if found is not None and isinstance(D, ir.Node) and _shape(G) == _shape(D) == _shape(n) \
                        and np.dtype(D.aval[1]) == np.dtype(n.aval[1]) \
                        and (int(np.prod(_shape(n))) >= DENSE_MIN_ELEMENTS
                             or single_position(G, G.params["index"], found[1]) and _size_one(found[0])):
                    g, operands = found
                    n.op, n.inputs, n.params = "index_add", (D, g) + tuple(operands), {"index": G.params["index"]}
                    break
        out.append(n)
    graph.nodes[:] = out
    if any(m.inputs and getattr(m.inputs[0], "op", None) == ir.CONST for m in made):
        fold_nodes(graph, made)  # in order: a column, then its negation once the column is a constant
    return graph


# a one-hot product for the rows' gradient when the one-hot is small and the rows are not
# (measured: (60, 25) one-hot x (25, 100) rows 21 us against add.at's 45-54 us; (1000, 320) x
# (320, 64) 2x slower than scatter_add's rounds)
PRODUCT_MAX_ONEHOT = 8192
PRODUCT_MIN_ROWS = 1024
_ROWS = ((("slot", 0),), True)  # T[ids]: one integer array on the first axis


def dense_row_sums(graph: ir.Graph) -> ir.Graph:
    if graph.polymorphic:
        return graph
    for n in graph.all_nodes():
        if n.op != "getitem_grad" or n.params.get("unique") or n.params.get("index") != _ROWS or len(n.inputs) != 3:
            continue
        g, x, ids = n.inputs
        gs, xs, ids_shape = _shape(g), _shape(x), _shape(ids)
        if gs is None or xs is None or ids_shape is None or len(ids_shape) != 1 or len(xs) < 1:
            continue
        dtype = np.dtype(n.aval[1])
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)) or np.dtype(g.aval[1]) != dtype \
                or np.dtype(x.aval[1]) != dtype or not np.issubdtype(np.dtype(ids.aval[1]), np.integer):
            continue
        if xs[0] * ids_shape[0] <= PRODUCT_MAX_ONEHOT and int(np.prod(gs)) >= PRODUCT_MIN_ROWS:
            n.params = dict(n.params, dense=True)
    return graph
