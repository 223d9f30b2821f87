"""Asserts as early as their inputs allow.

The generator emits an assert where the speculated code stood: a branch on a step counter at
the end of a training step (`if step % 100 == 0: log(...)`) asserts after the whole step was
computed. A call that fails it runs that work for nothing before the fallback or, for a branch
with one graph per outcome (jit/variants.py), before the graph of the other outcome runs: every
100th call paid the step twice. An assert only reads its input and either passes or stops the
run, which changes no state (the run works on copies), so:

- an assert whose input is computed from Python numbers and one-element values only (a step
  counter, a shape, a flag) goes to the front with that computation, as soon as its inputs are;
- any other assert goes right after the last node its input needs.

Only top-level nodes move, and only earlier; nodes keep their relative order otherwise.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .dce import effect_ops

_FREE = (ir.INPUT, ir.CONST)  # already at the front (inputs) or costless
_NOT_CHEAP = frozenset((ir.COND, ir.LOOP, ir.RANDOM, ir.ASSERT, ir.TUPLE_GET, ir.LOOP_VAR))


def hoist_asserts(graph: ir.Graph) -> ir.Graph:
    nodes = graph.nodes
    asserts = [n for n in nodes if n.op == ir.ASSERT]
    if not asserts:
        return graph
    top = {n.id: n for n in nodes}
    pullable: set = set()
    effects = effect_ops()  # RNG draws keep their order: never pulled
    for a in asserts:
        pullable.add(a.id)
        pullable |= _cheap_cone(a, top, effects)
    graph.nodes[:] = _pull_forward(nodes, pullable)
    return graph


def _cheap_cone(a, top, effects):
    """Ids of the top-level nodes computing a's input that compute on Python numbers and
    one-element values only (walked back from a until a node that is not such one)."""
    cone, todo = set(), [i for i in a.inputs if isinstance(i, ir.Node)]
    while todo:
        n = todo.pop()
        if n.id in cone or n.id not in top or n.op in _FREE or n.op in _NOT_CHEAP or n.op in effects:
            continue
        inputs = [i for i in n.inputs if isinstance(i, ir.Node)]
        if inputs and all(_size(i) <= 1 for i in inputs):
            cone.add(n.id)
            todo += inputs
    return cone


def _size(n):
    aval = n.aval
    return 1 if aval is None else int(np.prod(aval[0], dtype=np.int64))


def _pull_forward(nodes, pullable):
    """`nodes` with each pullable node placed as soon as the nodes it reads are (one without
    node inputs stays where it is), the others in their order."""
    ids = {n.id for n in nodes}
    users: dict = {}  # node id -> the pullable nodes reading it
    missing: dict = {}  # pullable node id -> how many of its inputs are not placed yet
    for n in nodes:
        if n.id in pullable:
            deps = {i.id for i in n.inputs if isinstance(i, ir.Node) and i.id in ids}
            if not deps:
                continue
            missing[n.id] = len(deps)
            for d in deps:
                users.setdefault(d, []).append(n)
    out = []
    for n in nodes:
        if n.id in missing:
            continue
        out.append(n)
        ready = [n]
        while ready:
            for u in users.get(ready.pop(0).id, ()):
                missing[u.id] -= 1
                if not missing[u.id]:
                    out.append(u)
                    ready.append(u)
    return out
