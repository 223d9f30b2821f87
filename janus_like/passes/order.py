"""Topological re-ordering that stays as close as possible to a preferred order.

Passes that insert or move nodes (matmul batching, row-block lifting) need a node order in
which every node comes after the values it uses (inside conditionals and loops too), and
effects (asserts, RNG draws, conditionals, loops) keep their relative order. The standard
library's `graphlib` does the topological sort; a heap picks, among the nodes that are ready,
the one that comes first in the preferred order (a lexicographic topological sort). networkx
has the same algorithm, but importing networkx costs about 0.25 s, half of the LSTM step's
first-call budget, so the JIT's hot path leaves it to the verifier and the reports. The
standard library's `graphlib` does the counting too, but its `prepare` always searches the whole
graph for a cycle first, and its bookkeeping per node measured a third of the LSTM step's pass
time (0.2 of 0.6 s profiled): the heap walk below counts predecessors itself (Kahn's algorithm),
and a cycle shows as nodes never reached.
"""
from __future__ import annotations

import heapq

from .. import ir
from .dce import effect_ops


_Node = ir.Node  # never subclassed: `__class__ is` is the cheap test on the ~5000 nodes a sort sees
_NESTED = frozenset((ir.COND, ir.LOOP))


def refs(n):
    """Nodes used by n, including uses inside a conditional's or loop's blocks."""
    out = [i for i in n.inputs if i.__class__ is _Node]
    if n.op in _NESTED:
        inner = [m for block in ir.BLOCKS for m in n.params.get(block, [])]
        for m in inner:
            out += [i for i in m.inputs if isinstance(i, ir.Node)]
        for key in ("then_outs", "else_outs", "body_outs"):
            out += [o for o in n.params.get(key, []) if isinstance(o, ir.Node)]
    return out


def dependencies(nodes) -> dict:
    """node id -> ids of the nodes it must come after: its operands, and the previous effect."""
    ids = {n.id for n in nodes}
    deps: dict = {}
    last_effect = None
    plain_effects = effect_ops()
    for n in nodes:
        op = n.op
        if op in _NESTED:
            before = {r.id for r in refs(n) if r.id in ids}
            effect = True
        else:  # the common case, inlined: ~5000 nodes per sort
            before = {i.id for i in n.inputs if i.__class__ is _Node and i.id in ids}
            effect = op in plain_effects
        if effect:
            if last_effect is not None:
                before.add(last_effect)
            last_effect = n.id
        deps[n.id] = before
    return deps


def stable_topological_order(nodes, key) -> list:
    """`nodes` in a valid order; among the nodes ready at each point, the smallest `key(id)`."""
    deps = dependencies(nodes)
    waiting = {}  # node id -> operands not yet placed
    users: dict = {}
    heap = []
    for i, before in deps.items():
        waiting[i] = len(before)
        if not before:
            heap.append((key(i), i))
        for j in before:
            if j in users:
                users[j].append(i)
            else:
                users[j] = [i]
    by_id = {n.id: n for n in nodes}
    heapq.heapify(heap)
    out = []
    pop, push, append = heapq.heappop, heapq.heappush, out.append
    while heap:
        i = pop(heap)[1]
        append(by_id[i])
        for u in users.get(i, ()):
            left = waiting[u] - 1
            waiting[u] = left
            if not left:
                push(heap, (key(u), u))
    if len(out) != len(by_id):
        raise ValueError(f"the graph has a cycle through {len(by_id) - len(out)} nodes")
    return out
