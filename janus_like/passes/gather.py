"""Rows gathered one step at a time, and invariant addends moved next to them.

A recurrence written step by step, `h = tanh(W_xh[ids[t]] + h @ W_hh + b)`, reads one row of
the embedding per step (two ops: `ids[t]`, then the row) and adds the bias to every step's sum,
where the hand-written step gathers all rows once and adds the bias to all of them at once
(`W_xh[ids[:-1]] + b`, then one add per step):

1. `gather_rows` (exact): the rows `T[A[c]]` for every c of a run lo..hi (A a vector of ints,
   each `A[c]` a scalar) become the rows of one gather: `X = T[A[lo:hi + 1]]`, then `X[c - lo]`
   (the same values; one gather, and one view per step instead of two ops). The rows of X form
   a family for row-block lifting (`families.py`).
2. `bias_first` (reassociating: another rounding order): `(X[k] + m_k) + b`, with b the same
   node for several rows of one family, becomes `(X[k] + b) + m_k`; `lift_row_blocks` then adds
   b to all rows with one op.

Both run in the reassociating set before `lift_row_blocks`.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .families import _find_families, _shape
from .fold import _uses
from .order import stable_topological_order
from .simplify import substitute

_GATHER = ((("slot", 0),), True)  # T[i], i an operand


def _scalar_of(i):
    """(A, c) when node i is `A[c]`: a constant int index into a vector of ints."""
    if not (isinstance(i, ir.Node) and i.op == "getitem" and len(i.inputs) == 1):
        return None
    items, _ = i.params["index"]
    a = i.inputs[0]
    shape = _shape(a)
    if len(items) != 1 or type(items[0]) is not int or shape is None or len(shape) != 1:
        return None
    if not np.issubdtype(np.dtype(a.aval[1]), np.integer):
        return None
    c = items[0] + shape[0] if items[0] < 0 else items[0]
    return (a, c) if 0 <= c < shape[0] else None


def gather_rows(graph: ir.Graph) -> ir.Graph:
    if graph.polymorphic:
        return graph
    runs: dict = {}  # (T id, A id) -> (T, A, {c: [gather nodes]})
    for n in graph.nodes:  # top level: a branch's nodes may not run
        if n.op != "getitem" or n.params.get("index") != _GATHER or len(n.inputs) != 2 or _shape(n) is None:
            continue
        t, i = n.inputs
        found = _scalar_of(i)
        if found is None or _shape(t) is None or len(_shape(t)) < 1:
            continue
        a, c = found
        runs.setdefault((t.id, a.id), (t, a, {}))[2].setdefault(c, []).append(n)
    mapping, order = {}, {n.id: k for k, n in enumerate(graph.nodes)}
    added = []
    for t, a, by_c in runs.values():
        cs = sorted(by_c)
        if len(cs) < 2 or cs[-1] - cs[0] + 1 != len(cs):  # a run of consecutive positions only
            continue
        lo, k = cs[0], len(cs)
        first = min((n for ns in by_c.values() for n in ns), key=lambda n: order[n.id])
        idx = ir.Node("getitem", (a,), {"index": ((("s", lo, lo + k, None),), True)}, ((k,), a.aval[1]), first.site)
        rows = ir.Node("getitem", (t, idx), {"index": _GATHER}, ((k,) + tuple(_shape(t)[1:]), t.aval[1]), first.site)
        for node in (idx, rows):
            order[node.id] = order[first.id] - 0.5
            added.append(node)
        for c, ns in by_c.items():
            for n in ns:
                row = ir.Node("getitem", (rows,), {"index": ((c - lo,), True)}, n.aval, n.site)
                order[row.id] = order[n.id]
                added.append(row)
                mapping[n.id] = row
    if mapping:
        graph.nodes[:] = [n for n in graph.nodes if n.id not in mapping] + added
        substitute(graph, mapping)
        graph.nodes[:] = stable_topological_order(graph.nodes, order.__getitem__)
    return graph


def _same_kind(*nodes):
    avals = [x.aval for x in nodes]
    return all(v is not None for v in avals) and len({np.dtype(v[1]) for v in avals}) == 1


def _row_plus_bias(n, fam, uses, outputs):
    """(family, inner, row, m, b) when n is `(row + m) + b` (either operand order) with row a
    family member, the inner sum used by n alone, and b broadcasting into row's shape."""
    if n.op != "add" or n.errstate is not None:
        return None
    for inner, b in (n.inputs, n.inputs[::-1]):
        if not (isinstance(inner, ir.Node) and isinstance(b, ir.Node) and inner.op == "add") \
                or inner.errstate is not None or inner.id in outputs or uses.get(inner.id, 0) != 1:
            continue
        for row, m in (inner.inputs, inner.inputs[::-1]):
            member = fam.member.get(getattr(row, "id", None))
            if member is not None and isinstance(m, ir.Node) and _same_kind(n, inner, row, m, b) \
                    and _shape(row) == _shape(n) and _shape(b) is not None \
                    and np.broadcast_shapes(_shape(row), _shape(b)) == _shape(row):
                return member[0], inner, row, m, b
    return None


def bias_first(graph: ir.Graph) -> ir.Graph:
    fam = _find_families(graph.nodes)
    uses = _uses(graph)
    outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    groups: dict = {}  # (family, b id) -> [(outer, inner, row, m, b)]
    for n in graph.nodes:
        found = _row_plus_bias(n, fam, uses, outputs)
        if found is not None:
            family, inner, row, m, b = found
            groups.setdefault((family, b.id), []).append((n, inner, row, m, b))
    order = None
    late = False  # an inner sum now placed before its new operand b
    for group in groups.values():
        if len(group) < 2:  # only where the lifting can add b once for many rows
            continue
        if order is None:
            order = {n.id: k for k, n in enumerate(graph.nodes)}
        for n, inner, row, m, b in group:
            inner.inputs = (row, b)
            n.inputs = (inner, m)  # m came before inner, so before n
            late = late or order.get(b.id, -1) > order[inner.id]
    if late:
        graph.nodes[:] = stable_topological_order(graph.nodes, order.__getitem__)
    return graph
