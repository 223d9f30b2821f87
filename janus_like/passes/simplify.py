"""Algebraic simplification that is exact (no change in any bit of any value).

* `sum_to(g, like)`, `broadcast_like(g, like)` and `reshape_like(g, like)` where g already has
  like's shape (and, for sum_to, a dtype it keeps) are the identity;
* `cast(x, dtype)` to x's own dtype is the identity (for an x with a new array's strides: of a
  reversed or strided view, eager's result is laid out otherwise);
* `stop_gradient(x)` is the identity once the graph exists (gradients are already nodes);
* an elementwise op's operand `broadcast_like(x, like)` is x when the op's result keeps its shape
  (the op broadcasts by itself) and x is NumPy-typed (a Python number's weak type would change
  the result dtype);
* `x * 1` and `x / 1` (a mean's gradient over a batch of one) are x when the dtype stays and x
  is not 0-d (NumPy's product of a 0-d array is a NumPy scalar, not the array), for such an x.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..executor.plan_helpers import c_ordered
from ..ops.registry import REGISTRY


def _sum_to_as_reshape(n):
    """sum_to that only drops axes of length 1 sums one element per output: a reshape."""
    if n.op != "sum_to":
        return None
    x, like = n.inputs
    if not (isinstance(x, ir.Node) and isinstance(like, ir.Node) and x.aval and like.aval and n.aval):
        return None
    xs, ls = tuple(x.aval[0]), tuple(like.aval[0])
    if np.dtype(n.aval[1]) != np.dtype(x.aval[1]) or int(np.prod(xs, dtype=np.int64)) != int(np.prod(ls, dtype=np.int64)):
        return None
    lead = len(xs) - len(ls)
    if lead < 0 or any(d != 1 for d in xs[:lead]):
        return None
    if any(a != b and a != 1 for a, b in zip(xs[lead:], ls)):
        return None
    return ir.Node("reshape_like", (x, like), {}, n.aval, n.site)


# `v * 1` or `v.astype(v.dtype)` of a view NumPy makes read-only (ir.READ_ONLY_VIEWS: repeated
# elements, strides of 0) is eager's new, writeable array in its own layout, which the commit's
# copy of the view (graphgen/output_copies.py) would not give: those stay.


def _laid_out_as_new(x) -> bool:
    """x's value has the strides of a new array of its layout (positive, no gaps): a value an op
    made, or one surely C-contiguous. `x[::-1] * 1` is a new array in logical order, where x's
    view runs backwards: a dot product of it adds in another order (another rounding)."""
    return x.op not in ir.ALIASING_OPS or c_ordered(x, strict=True)


def _identity_input_rest(n):
    if n.op == "cast":
        x = n.inputs[0]
        if isinstance(x, ir.Node) and x.aval and np.dtype(x.aval[1]) == np.dtype(n.params["dtype"]) \
                and x.op not in ir.READ_ONLY_VIEWS and _laid_out_as_new(x):
            return x
    elif n.op == "stop_gradient":
        x = n.inputs[0]
        if isinstance(x, ir.Node):
            return x
    return None


def _identity(n):
    return ir.identity_operand(n.op, n.inputs, n.aval) or _identity_input_rest(n)


def _resolve(v, mapping):
    """What `mapping` replaces v by, after every replacement in turn."""
    while isinstance(v, ir.Node) and v.id in mapping:
        v = mapping[v.id]
    return v


def substitute(graph: ir.Graph, mapping: dict) -> None:
    """Replace every use of node id k by mapping[k] (a Node), everywhere in the graph."""
    if not mapping:
        return
    Node = ir.Node

    def resolve(v):
        return _resolve(v, mapping)

    for n in graph.all_nodes():
        # most nodes use nothing that is replaced: test before building a new tuple
        for i in n.inputs:
            if isinstance(i, Node) and i.id in mapping:
                n.inputs = tuple(resolve(i) for i in n.inputs)
                break
        if n.op == ir.COND:
            n.params["then_outs"] = [resolve(o) for o in n.params["then_outs"]]
            n.params["else_outs"] = [resolve(o) for o in n.params["else_outs"]]
        elif n.op == ir.LOOP:
            n.params["body_outs"] = [resolve(o) for o in n.params["body_outs"]]
            n.params["cond"] = resolve(n.params["cond"])
    graph.outputs[:] = [resolve(o) for o in graph.outputs]


def _unbroadcast_operands(n, symbolic=False):
    """An elementwise op broadcasts by itself: an operand `broadcast_like(x, like)` (or
    `broadcast_to`) can be x when the result's shape stays the same. With `symbolic` (a graph
    for unknown dimensions, whose avals hold one size only) only when every other operand is
    `like` itself or a number, so the shapes agree whatever the sizes."""
    op = REGISTRY.get(n.op)
    if op is None or not op.elementwise or n.aval is None:
        return False
    changed = False
    for k, b in enumerate(n.inputs):
        if not (isinstance(b, ir.Node) and b.op in ("broadcast_like", "broadcast_to") and ir.numpy_typed(b.inputs[0])):
            continue
        x = b.inputs[0]
        if symbolic and not (b.op == "broadcast_like" and all(
                i is b.inputs[1] or not isinstance(i, ir.Node) for j, i in enumerate(n.inputs) if j != k)):
            continue
        others = [i.aval[0] if isinstance(i, ir.Node) else np.shape(i) for j, i in enumerate(n.inputs) if j != k]
        if any(o is None for o in others) or np.dtype(x.aval[1]) != np.dtype(b.aval[1]):
            continue
        try:
            shape = np.broadcast_shapes(tuple(x.aval[0]), *[tuple(o) for o in others])
        except ValueError:
            continue
        if shape == tuple(n.aval[0]):
            n.inputs = n.inputs[:k] + (x,) + n.inputs[k + 1:]
            changed = True
    return changed


def _times_one(n):
    """x * 1, 1 * x and x / 1 are x (bit for bit, -0.0 and NaN included) when the dtype stays (and
    x has an axis: of a 0-d array, the product is a NumPy scalar)."""
    if n.op not in ("mul", "div") or len(n.inputs) != 2 or n.aval is None:
        return None
    a, b = n.inputs
    for x, one in ((a, b), (b, a)) if n.op == "mul" else ((a, b),):
        if type(one) is int and one == 1 and isinstance(x, ir.Node) and x.aval is not None \
                and tuple(x.aval[0]) == tuple(n.aval[0]) != () and np.dtype(x.aval[1]) == np.dtype(n.aval[1]) \
                and np.issubdtype(np.dtype(x.aval[1]), np.inexact) and ir.numpy_typed(x) \
                and x.op not in ir.READ_ONLY_VIEWS and _laid_out_as_new(x):
            return x
    return None


def simplify(graph: ir.Graph) -> ir.Graph:
    mapping = {}
    for n in graph.all_nodes():
        _unbroadcast_operands(n, symbolic=graph.polymorphic)
        target = _identity(n) or _times_one(n)
        if target is not None:
            mapping[n.id] = target
    _keep_block_results(graph, mapping)
    if mapping:
        substitute(graph, mapping)
    return graph


def _keep_block_results(graph, mapping):
    """A conditional's or loop's result is eager's new array (`v = x * 1` in a branch, an
    `astype` to the same dtype): as the value of an array from outside the block, the node would
    hand that array's own object on. Such results keep their op."""
    for n in graph.all_nodes():
        if n.op == ir.COND:
            blocks = (("then_nodes", "then_outs"), ("else_nodes", "else_outs"))
        elif n.op == ir.LOOP:
            blocks = (("body_nodes", "body_outs"),)
        else:
            continue
        for nodes, outs in blocks:
            inside = {m.id for m in n.params[nodes]}
            for o in n.params[outs]:
                if isinstance(o, ir.Node) and o.id in mapping and _resolve(o, mapping).id not in inside:
                    del mapping[o.id]


def sum_to_reshape(graph: ir.Graph) -> ir.Graph:
    """sum_to that only drops length-1 axes -> reshape (a view, no pass over memory). Not exact:
    NumPy's sum of the single element -0.0 is +0.0, a reshape keeps -0.0, so this runs with
    the reassociating passes."""
    _rewrite_sum_to(graph.nodes)
    return graph


def _rewrite_sum_to(nodes):
    for k, n in enumerate(nodes):
        if n.op == "sum_to":
            r = _sum_to_as_reshape(n)
            if r is not None:  # rewrite in place so every user sees the reshape
                n.op, n.inputs, n.params = r.op, r.inputs, r.params
        for block in ir.BLOCKS:
            if block in n.params:
                _rewrite_sum_to(n.params[block])


def unique_scatters(graph: ir.Graph) -> ir.Graph:
    """getitem_grad whose advanced index pairs a constant of distinct integers (np.arange(n), as
    in cross-entropy's `logp[arange(n), labels]`) with other 1-D indices of the same length hits
    every position at most once: assignment instead of add.at. Not exact in one corner (0.0 +
    -0.0 is +0.0, an assignment keeps -0.0), so it runs with the reassociating passes.

    In a graph for unknown dimensions the same index is `arange(dim_of(x, 0))` paired with x
    itself (`logp[np.arange(len(actions)), actions]`): equal lengths at every size."""
    for n in graph.all_nodes():
        if n.op != "getitem_grad" or len(n.inputs) < 3 or n.params.get("unique"):
            continue
        ops = n.inputs[2:]
        if not all(isinstance(o, ir.Node) and o.aval is not None and len(o.aval[0]) == 1 for o in ops):
            continue
        if graph.polymorphic:
            if _arange_of_partner(ops):
                n.params = dict(n.params, unique=True)
            continue
        lengths = {o.aval[0][0] for o in ops}
        distinct = any(o.op == ir.CONST and np.issubdtype(np.asarray(o.params["value"]).dtype, np.integer)
                       and _distinct(o.params["value"]) for o in ops)
        if len(lengths) == 1 and distinct:
            n.params = dict(n.params, unique=True)
    return graph


def _distinct(values) -> bool:
    """No position twice: no value twice, and no negative value beside non-negative ones (-1 and
    n - 1 are one position). (np.unique answers too, but its first call imports numpy.ma: 15-20 ms
    of the first graph's generation.)"""
    v = np.sort(np.ravel(values))
    return bool((v[1:] != v[:-1]).all() and (v.size == 0 or v[0] >= 0 or v[-1] < 0))


def _arange_of_partner(ops) -> bool:
    """Two 1-D index operands, one of them `arange(dim_of(other, 0))`: distinct pairs."""
    if len(ops) != 2:
        return False
    for a, x in (ops, ops[::-1]):
        d = a.inputs[0] if a.op == "arange" and a.inputs else None
        if isinstance(d, ir.Node) and d.op == "dim_of" and d.params.get("axis") == 0 and d.inputs[0] is x:
            return True
    return False
