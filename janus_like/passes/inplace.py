"""Weight updates the plan may write into the weight's own buffer (executor/blas.py).

A Variable committed as `w - a @ b` or `w - lr * (a @ b)` (SGD's update of a weight matrix,
the learning rate on an operand or on the product, as `scale_smaller_operand` left it) can be
computed by one GEMM into w's memory when no one else sees w. This pass finds such updates and
records them in `graph.inplace`; the code generator emits, for each, the check and the GEMM
next to the plan's ordinary product, scaling and subtraction. It also moves every such update,
with the nodes it replaces, after all other nodes: once a weight was written, no node that
reads the old value, and no node that could fail, is left to run.

An update qualifies when
- its value is committed to a Variable (`assign_sub`, SGD) and used by nothing else: not read by
  another node, not returned, not committed twice, not copied at the commit;
- it subtracts, from the array read from that same Variable, a 2-D product (times a float
  number or a 0-d value) read by nothing else, all of w's float dtype; w itself is not an
  output of the graph;
- w has at least `MIN_ELEMENTS` elements (measured: a GEMM through ctypes costs ~6 µs more
  than NumPy's call; below ~64 K elements the saved pass over w does not pay for it);
- the graph has static shapes, no NumPy error state around the update, and may reassociate
  (the GEMM adds w in before the product's last blocks when its inner dimension is long, and
  scales the product inside the GEMM).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ir

MIN_ELEMENTS = 65536
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_PRODUCTS = ("matmul", "dot")  # (`small_products` writes small 2-D matmuls as np.dot)


def inplace_updates(gen) -> dict:
    """Mark and move the in-place weight updates of GeneratedGraph `gen` (after `optimize` and
    `plan_copies`); returns `gen.graph.inplace`: update node id -> (product node, the scale
    (a node, a number) or None, the nodes the update replaces: the product and the scaling)."""
    from ..executor.scalars import readers

    graph, outs = gen.graph, gen.outputs
    graph.inplace = {}
    if graph.polymorphic:
        return graph.inplace
    users, _ = readers(graph)
    top = {n.id for n in graph.nodes}
    as_output: dict = {}
    for o in graph.outputs:
        if isinstance(o, ir.Node):
            as_output[o.id] = as_output.get(o.id, 0) + 1
    for kind, slot, i, copy in outs.commits:
        if kind != "var":
            continue
        n = outs.nodes[i]
        if copy or i in outs.copied or outs.sink_count.get(n.id) != 1 \
                or as_output.get(n.id) != 1 or users.get(n.id) or n.id not in top:
            continue
        found = _update_product(n, gen.slots, slot, users, top, as_output)
        if found is not None:
            graph.inplace[n.id] = found
    if graph.inplace:
        moved = set(graph.inplace) | {m.id for _, _, between in graph.inplace.values() for m in between}
        graph.nodes[:] = [n for n in graph.nodes if n.id not in moved] + \
                         [n for n in graph.nodes if n.id in moved]
    return graph.inplace


def _update_product(n, slots, var_slot, users, top, as_output):
    """(product node, scale or None, the nodes between) of update `n` (`w - product` or
    `w - scale * product`, w read from the Variable in `var_slot`), or None when `n` does not
    qualify."""
    if n.op != "sub" or n.params or n.errstate is not None or len(n.inputs) != 2:
        return None
    w, p = n.inputs
    if not (isinstance(w, ir.Node) and w.op == ir.INPUT and isinstance(p, ir.Node)):
        return None
    s = slots[w.params["slot"]]
    if s.step != ("data",) or s.parent is None or s.parent.index != var_slot or w.id in as_output:
        return None
    consumed, scale = [], None
    if p.op == "mul" and len(p.inputs) == 2 and _only_use(p, users, top, as_output):
        scales = [x for x in p.inputs if _scalar(x)]
        products = [x for x in p.inputs if isinstance(x, ir.Node) and x.op in _PRODUCTS]
        if len(scales) == 1 and len(products) == 1:
            consumed, scale, p = [p], scales[0], products[0]
    if p.op not in _PRODUCTS or not _only_use(p, users, top, as_output) or len(p.inputs) != 2 \
            or not all(isinstance(x, ir.Node) and x.aval is not None for x in p.inputs):
        return None
    if w.aval is None or n.aval is None:
        return None
    (ws, wt), (a_shape, _), (b_shape, _) = w.aval, p.inputs[0].aval, p.inputs[1].aval
    wt = np.dtype(wt)
    if wt not in _FLOATS or any(np.dtype(x.aval[1]) != wt for x in (*p.inputs, n, *consumed)):
        return None
    if len(ws) != 2 or len(a_shape) != 2 or len(b_shape) != 2 or tuple(ws) != (a_shape[0], b_shape[1]) \
            or a_shape[1] != b_shape[0] or tuple(n.aval[0]) != tuple(ws):
        return None
    if not all(isinstance(d, int) for d in (*ws, *a_shape)) or math.prod(ws) < MIN_ELEMENTS:
        return None
    return p, scale, [p] + consumed


def _only_use(x, users, top, as_output) -> bool:
    """x is a top-level node read by one node and not an output."""
    return not x.params and x.errstate is None and x.id in top and x.id not in as_output \
        and len(users.get(x.id, ())) == 1


def _scalar(x) -> bool:
    """A learning rate: a Python float or int, a 0-d float array, or a node of shape ()."""
    if isinstance(x, ir.Node):
        return x.aval is not None and tuple(x.aval[0]) == () and np.dtype(x.aval[1]).kind == "f"
    if isinstance(x, np.ndarray):
        return x.shape == () and x.dtype.kind == "f"
    return type(x) in (float, int) or isinstance(x, np.floating)
