"""Whole-block reductions of a vector's equal blocks become one reduction over its rows (exact).

Row-block lifting leaves the LSTM's per-step losses as reductions of equal blocks of one vector
(the 320 picked log-probabilities, 16 per time step):

    loss_t = mean(picked[16 t : 16 t + 16])          for t = 0 .. 19: 20 slices, 20 reductions

When blocks of one length B tile the vector's T·B elements in order, every block's reduction is
one row of

    R = mean(picked.reshape(T, B), axis=1)           loss_t = R[t]

NumPy sums each row of the reshaped view with the same pairwise loop, over the same elements in
the same order, as it sums the block on its own, and a mean divides each row's sum by B as it
divides the block's: the same bits (the test compares them, strided vectors included). The
per-step terms are then rows of one array, which the running-sum fold (`chains.py`) turns into
one cumulative sum: on the LSTM step about 100 small operations become 5.

Only 1-D float32/float64 vectors of static length, reduced over all axes (`axis=None`, no
`keepdims` or `dtype`): a multi-dimensional block's reduction order depends on its memory layout
(NumPy sums an F-ordered block in memory order), and float16 means accumulate in float32.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .families import _row_cut, _shape

MIN_BLOCKS = 2
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _block(n):
    """(vector, start, stop) when n is a whole-block mean or sum of a vector's slice, else None."""
    if n.op not in ("mean", "sum") or n.params.get("axis") is not None or n.params.get("keepdims") \
            or n.params.get("dtype") is not None or len(n.inputs) != 1 or not isinstance(n.inputs[0], ir.Node):
        return None
    b = n.inputs[0]
    cut = _row_cut(b)
    x = b.inputs[0] if cut is not None and not cut[2] else None
    shape = _shape(x)
    if shape is None or len(shape) != 1 or np.dtype(x.aval[1]) not in _FLOATS or n.aval is None \
            or np.dtype(n.aval[1]) != np.dtype(x.aval[1]) or not ir.numpy_typed(x):
        return None
    return x, cut[0], cut[1]


def reduce_blocks(graph: ir.Graph) -> ir.Graph:
    groups: dict = {}
    for n in graph.nodes:
        found = _block(n)
        if found is not None:
            x, start, stop = found
            groups.setdefault((x.id, n.op), (x, []))[1].append((start, stop, n))
    mapping, extra = {}, {}
    position = {n.id: k for k, n in enumerate(graph.nodes)}
    for (_, op), (x, members) in groups.items():
        members.sort(key=lambda m: m[0])
        size = members[0][1] - members[0][0]
        count = len(members)
        if count < MIN_BLOCKS or size < 2 or count * size != x.aval[0][0] \
                or any(m[0] != k * size or m[1] != m[0] + size for k, m in enumerate(members)):
            continue  # not equal blocks tiling the vector once each, in order
        dt = x.aval[1]
        site = members[0][2].site
        rows = ir.Node("reshape", (x,), {"shape": (count, size)}, ((count, size), dt), site)
        r = ir.Node(op, (rows,), {"axis": (1,), "keepdims": False}, ((count,), dt), site)
        new = [rows, r]
        for k, (_, _, n) in enumerate(members):
            piece = ir.Node("getitem", (r,), {"index": ((k,), True)}, n.aval, n.site)
            new.append(piece)
            mapping[n.id] = piece
        first = min((m[2] for m in members), key=lambda n: position[n.id])
        extra[first.id] = new  # where the earliest of the reductions was: x is computed by then
    if not mapping:
        return graph
    from .simplify import substitute

    nodes = []
    for n in graph.nodes:
        nodes.extend(extra.get(n.id, ()))
        if n.id not in mapping:
            nodes.append(n)
    substitute(graph, mapping)
    graph.nodes[:] = nodes
    return graph
