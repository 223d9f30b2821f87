"""A transposed right operand read by several products is copied to C order once
(reassociating pipeline only).

The backward pass of `h @ W` multiplies by `W.T`, a transposed view of a C-ordered weight, and
NumPy hands BLAS the view as a transposed operand. OpenBLAS runs those products markedly slower
when the left operand has few rows. Measured with NumPy 2.4 and OpenBLAS 0.3.31, one thread:

    (16, 128) @ (512, 128).T    56 µs    31 µs with a C-ordered (128, 512) operand
    (16, 512) @ (128, 512).T    58 µs    30 µs
    (64, 256) @ (256, 256).T   121 µs    93 µs

An LSTM's backward multiplies each time step's gate gradients by `W_h.T`: twenty products read
one view. Copying it once to C order costs about one product's difference, so the rewrite

    t = transpose(W); matmul(a1, t); matmul(a2, t) ...   ->   c = ascontiguousarray(t); matmul(a1, c) ...

needs two or more products of MIN_ROWS rows or more (one inside a loop that the transpose is
outside of counts as two) with MIN_MACS multiply-adds among them. A single product gained nothing measurable (the LSTM's
output and input projections: level within noise), so it is left alone.

The copy changes the layout BLAS reads, not the arithmetic; the LSTM step's results were the
same bits. BLAS may still pick another kernel for another layout, so this runs only with
`reassociate=True`, whose contract allows rounding differences.
"""
from __future__ import annotations

import numpy as np

from .. import ir

_PRODUCTS = ("matmul", "dot")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
MIN_MACS = 1 << 18  # the tiny MLP's (1, 32) @ (32, 32).T products: a copy would cost more than it saves
# Products with fewer rows (BLAS's matrix-vector range) gained little and sometimes lost with the
# C-ordered operand: 0.8-1.5x the time at 1-4 rows of (320, 128), (128, 512) and (256, 256), and a
# tree LSTM whose eleven 1-3-row products shared one transpose ran 1.05x slower with the copy.
MIN_ROWS = 8


def _swapped_matrix(t) -> bool:
    if not (isinstance(t, ir.Node) and t.op == "transpose" and len(t.inputs) == 1 and t.aval is not None):
        return False
    (x,) = t.inputs
    return (isinstance(x, ir.Node) and x.aval is not None and len(x.aval[0]) == 2
            and t.params.get("axes") in (None, (1, 0)) and np.dtype(t.aval[1]) in _FLOATS
            and all(isinstance(d, (int, np.integer)) for d in t.aval[0]))


def _macs(a, t) -> int | None:
    if not (isinstance(a, ir.Node) and a.aval is not None and 1 <= len(a.aval[0]) <= 2):
        return None
    if not all(isinstance(d, (int, np.integer)) for d in a.aval[0]):
        return None
    rows = a.aval[0][0] if len(a.aval[0]) == 2 else 1
    if rows < MIN_ROWS:
        return None
    k, cols = t.aval[0]
    return int(rows) * int(k) * int(cols)


def _blocks(nodes, depth, owner, parent, out):
    """(block, loop depth, the COND or LOOP node holding it, the block holding that) for every
    node list in the graph."""
    out.append((nodes, depth, owner, parent))
    for n in nodes:
        for key in ir.BLOCKS:
            if key in n.params:
                _blocks(n.params[key], depth + (n.op == ir.LOOP), n, nodes, out)
    return out


def _hoistable(t, where) -> bool:
    """t sits directly in a loop's block and transposes a value from outside the loop."""
    _, depth, owner, _ = where[t.id]
    x = t.inputs[0]
    return owner is not None and owner.op == ir.LOOP and x.id in where and where[x.id][1] < depth


def contiguous_operands(graph: ir.Graph) -> ir.Graph:
    if graph.polymorphic:  # sizes of other calls are unknown: no cost to weigh
        return graph
    blocks = _blocks(graph.nodes, 0, None, None, [])
    where = {n.id: info for info in blocks for n in info[0]}
    readers: dict = {}  # transpose id -> (transpose, [(product, weight, weighted multiply-adds)])
    for block, depth, _, _ in blocks:
        for n in block:
            if n.op not in _PRODUCTS or len(n.inputs) != 2 or n.errstate is not None:
                continue
            a, t = n.inputs
            if not _swapped_matrix(t) or t.id not in where or (macs := _macs(a, t)) is None:
                continue
            # a product that runs more often than the transpose (in a loop the transpose is
            # outside of, or that it can be hoisted out of) counts twice
            weight = 2 if depth > where[t.id][1] or _hoistable(t, where) else 1
            readers.setdefault(t.id, (t, []))[1].append((n, weight, macs * weight))
    for t, uses in readers.values():
        if sum(w for _, w, _ in uses) < 2 or sum(m for _, _, m in uses) < MIN_MACS:
            continue
        block, _, owner, parent = where[t.id]
        if _hoistable(t, where):  # the copy is made once, before the loop
            t = ir.Node("transpose", t.inputs, dict(t.params), t.aval, t.site)
            block = parent
            block.insert(block.index(owner), t)
        c = ir.Node("ascontiguousarray", (t,), {}, t.aval, t.site)
        block.insert(block.index(t) + 1, c)
        for n, _, _ in uses:
            n.inputs = (n.inputs[0], c)
    return graph
