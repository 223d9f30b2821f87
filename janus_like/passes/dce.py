"""Dead-code elimination: drop nodes whose values reach no output.

Asserts, RNG draws and conditionals that contain them are effects and always kept (an assert
guards the result; an RNG draw advances state that eager code would also advance), and so are
Python operations that can raise (`_may_raise`).
"""
from __future__ import annotations

import operator

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


def _may_raise(n) -> bool:
    if n.op == ir.PY_OP:
        return n.params.get("fn") not in _SAFE_PY
    if n.op == ir.TO_PY:
        return n.params.get("type") is int
    if n.op == ir.COND:
        return any(_may_raise(m) for m in n.params["then_nodes"] + n.params["else_nodes"])
    if n.op == ir.LOOP:
        return any(_may_raise(m) for m in n.params["cond_nodes"] + n.params["body_nodes"])
    return False


def _sweep(nodes, live):
    kept = []
    for n in reversed(nodes):
        if n.id in live or _has_effect(n) or _may_raise(n):
            if n.op == ir.COND:
                for block, outs in (("then_nodes", "then_outs"), ("else_nodes", "else_outs")):
                    for o in n.params[outs]:
                        if isinstance(o, ir.Node):
                            live.add(o.id)
                    n.params[block] = _sweep(n.params[block], live)
            if n.op == ir.LOOP:  # everything the loop carries or tests is live
                live.update(o.id for o in n.params["body_outs"])
                live.add(n.params["cond"].id)
                n.params["body_nodes"] = _sweep(n.params["body_nodes"], live)
                n.params["cond_nodes"] = _sweep(n.params["cond_nodes"], live)
            for i in n.inputs:
                if isinstance(i, ir.Node):
                    live.add(i.id)
            kept.append(n)
    kept.reverse()
    return kept


def dce(graph: ir.Graph) -> ir.Graph:
    live = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    graph.nodes[:] = _sweep(graph.nodes, live)
    graph.n_inputs = sum(1 for n in graph.nodes if n.op == ir.INPUT)
    return graph
