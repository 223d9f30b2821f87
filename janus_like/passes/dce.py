"""Dead-code elimination: drop nodes whose values reach no output.

Asserts, RNG draws and conditionals that contain them are effects and always kept (an assert
guards the result; an RNG draw advances state that eager code would also advance), and so are
operations that can raise on the values they get (`_may_raise`): Python operations, conversions,
linear algebra, NumPy's own functions and indexing by computed indices. A call that raises
eagerly then raises in the graph too (and re-runs eagerly to raise there), where the value that
would have raised is unused (`try: np.linalg.cholesky(A) except LinAlgError: ...`).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import ir
from ..ops.registry import REGISTRY


def effect_ops() -> frozenset:
    """Names of the ops that are effects on their own, as `_has_effect` decides for a node that
    is not a conditional or loop (a set for loops over thousands of nodes; built per call, as
    ops may be registered later)."""
    return frozenset([ir.ASSERT, ir.RANDOM] + [name for name, op in REGISTRY.items() if op.stateful])


def _has_effect(n) -> bool:
    if n.op in (ir.ASSERT, ir.RANDOM):
        return True
    if n.op == ir.COND:
        return any(_has_effect(m) for m in n.params["then_nodes"] + n.params["else_nodes"])
    if n.op == ir.LOOP:
        return any(_has_effect(m) for m in n.params["cond_nodes"] + n.params["body_nodes"])
    op = REGISTRY.get(n.op)
    return op is not None and op.stateful


# Python operations that cannot raise: other PY_OPs (`k / t`, `t % n`, `math.log(v)`) and `int()`
# of a value (`int(nan)`) are kept though their value is dead, so a call that raises eagerly
# (ZeroDivisionError, ValueError) raises in the graph too, and re-runs eagerly to raise there
_SAFE_PY = frozenset((operator.add, operator.sub, operator.mul, operator.neg, operator.pos, operator.abs,
                      operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
                      operator.not_, operator.truth, operator.and_, operator.or_, operator.xor, operator.invert,
                      abs, bool, min, max))


# ops indexing with operands after the first `k` inputs: an index the graph computes may be out of
# bounds (`x[int(np.argmax(x)) + 2]`, `np.take(x, idx + 1)`), as eager's IndexError says
_INDEXING = {"getitem": 1, "index_update": 2, "index_add": 2}
# ops that raise where their window does not fit the input (a graph of varying sizes)
_WINDOWED = frozenset(("conv2d", "conv2d_grad_input", "conv2d_grad_weight", "im2col", "conv2d_cols",
                       "conv2d_grad_weight_cols", "max_pool2d", "max_pool2d_gather", "max_pool2d_scatter",
                       "avg_pool2d", "avg_pool2d_grad"))


def _may_raise(n, sized=False, checks=None) -> bool:
    """`sized`: the graph's sizes vary (a mask's selection): an integer index may be out of bounds.
    `checks`: the ids of the values the function computed and did not use that may raise (None:
    the graph as generated, where every such value is one); a value a pass's rewrite left unused
    (rows gathered by one gather of all the indices) raised where the rewrite's own op raises."""
    if n.op == ir.PY_OP:
        return n.params.get("fn") not in _SAFE_PY
    if n.op == ir.TO_PY and n.params.get("type") is int:
        return True
    if n.op == ir.COND:
        return any(_may_raise(m, sized, checks) for m in n.params["then_nodes"] + n.params["else_nodes"])
    if n.op == ir.LOOP:
        return any(_may_raise(m, sized, checks) for m in n.params["cond_nodes"] + n.params["body_nodes"])
    return _raises_on_values(n, sized) and (checks is None or n.id in checks)


def _raises_on_values(n, sized) -> bool:
    if n.op == ir.TO_PY:  # float(x) of a 1-d array or of a complex value (TypeError)
        x = n.inputs[0]
        shape, dtype = x.aval if isinstance(x, ir.Node) and x.aval is not None else ((), np.float64)
        return len(shape) != 0 or np.dtype(dtype).kind == "c"
    op = REGISTRY.get(n.op)
    if op is not None and op.raises:  # (a singular matrix; NumPy's own function: np.linalg.cholesky of a
        return True  # matrix that is not positive definite, np.digitize of unsorted bins)
    if sized and n.op in _WINDOWED:  # a window larger than an input of another size
        return True
    if n.op == "getitem" and _reads_its_write(n):
        return False
    if n.op in _INDEXING:  # (a constant index was tried at generation; a boolean mask's shape is fixed)
        if sized and any(type(i) is int for i in n.params["index"][0]):  # (`x[x > 0][0]`)
            return True
        return any(isinstance(i, ir.Node) and (sized or i.op != ir.CONST)
                   and (i.aval is None or np.dtype(i.aval[1]) != np.bool_) for i in n.inputs[_INDEXING[n.op]:])
    return False


def _reads_its_write(n) -> bool:
    """`x[i]` of an array just written at `x[i]` (a view's value read again after its write, as
    statements.refresh_views makes it): the write raised first where the index is out of bounds."""
    x = n.inputs[0]
    return isinstance(x, ir.Node) and x.op in ("index_update", "index_add") \
        and x.params.get("index") == n.params.get("index") and tuple(x.inputs[2:]) == tuple(n.inputs[1:])


def _sweep(nodes, live, sized=False, checks=None, found=None):
    """The nodes kept; `found` collects the unused ones kept as they may raise (checks is None)."""
    kept = []
    for n in reversed(nodes):
        if n.id in live or _has_effect(n) or _may_raise(n, sized, checks):
            if found is not None and n.id not in live and _raises_on_values(n, sized):
                found.add(n.id)
            if n.op == ir.COND:
                for block, outs in (("then_nodes", "then_outs"), ("else_nodes", "else_outs")):
                    for o in n.params[outs]:
                        if isinstance(o, ir.Node):
                            live.add(o.id)
                    n.params[block] = _sweep(n.params[block], live, sized, checks, found)
            if n.op == ir.LOOP:  # everything the loop carries or tests is live
                live.update(o.id for o in n.params["body_outs"])
                live.add(n.params["cond"].id)
                n.params["body_nodes"] = _sweep(n.params["body_nodes"], live, sized, checks, found)
                n.params["cond_nodes"] = _sweep(n.params["cond_nodes"], live, sized, checks, found)
            for i in n.inputs:
                if isinstance(i, ir.Node):
                    live.add(i.id)
            kept.append(n)
    kept.reverse()
    return kept


def dce(graph: ir.Graph) -> ir.Graph:
    """The first call on a graph finds the unused values that may raise (`graph.checks`); later
    calls keep those and drop what a pass's rewrite left unused."""
    live = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    checks = getattr(graph, "checks", None)
    found = set() if checks is None else None
    graph.nodes[:] = _sweep(graph.nodes, live, bool(getattr(graph, "polymorphic", False)), checks, found)
    if found is not None:
        graph.checks = frozenset(found)
    graph.n_inputs = sum(1 for n in graph.nodes if n.op == ir.INPUT)
    return graph
