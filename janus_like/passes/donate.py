"""State arrays the plan may overwrite: a Variable's old value, dead once its last reader ran,
receives an elementwise result (`m *= beta1` in the optimizer's own buffer).

An optimizer's update reads each state array once and commits a new one: Adam's
`m = 0.9 * m + 0.1 * g` computes the product into a new array, although the old m is never read
again and is replaced at the commit. Hand-written NumPy writes `m *= 0.9; m += 0.1 * g` in m's
memory. This pass finds the Variable arrays (`graph.donated`) whose buffers the plan may hand to
the elementwise op that reads them last (executor/donation.py, codegen's memory planning): a
state array's new value then stays in the same memory, and a pass over a cold new array per
update disappears (the Adam MLP step: 1.09 -> 1.00 of hand NumPy, RESULTS.md).

Eager code rebinds the Variable to a new array, so writing into the old one is the same only
when nothing else can see the old one (its reference count, checked when the plan runs) and
when nothing that could fail runs after the first write: the plan then cannot fall back to
eager with a half-written state. So, as for the in-place GEMM (passes/inplace.py), the writes
happen in the plan's *write region*, which holds only elementwise ufuncs. This pass moves every
node that is not such a ufunc and does not depend on a write (an assert, a scalar computation,
a reduction of a gradient), with what it reads, before the first write; when a node that depends on a write is not
an elementwise ufunc (the norm of the new state, a product), nothing is donated. The region's
own allocations are made before its first write (executor/donation.py).

A candidate is the array read from a Variable that the graph commits anew, of a static shape
with at least MIN_ELEMENTS elements (a smaller array lives in the cache either way), read only
by top-level nodes, not an output, and read last by an elementwise ufunc of its own shape and
dtype that reads it once; a view of it (the transposed weight of a backward product) may not be
returned and must be read before that last reader (the plan drops it before its writes). Graphs of unknown dimensions,
with random draws, or with in-place GEMM updates donate nothing.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ir
from .order import refs

MIN_ELEMENTS = 16384
# the elementwise ufuncs a write region may hold (executor/buffers.py's _INPLACE)
REGION_OPS = frozenset(("add", "sub", "mul", "div", "maximum", "minimum", "neg", "exp", "log", "tanh", "sqrt",
                        "abs", "sin", "cos", "square"))
_DRAWS = frozenset((ir.RANDOM, "random_uniform", "draw_of"))


def donations(gen) -> list:
    """Mark the donatable state arrays of GeneratedGraph `gen` (after `optimize`, `plan_copies`
    and `inplace_updates`) and move the nodes that may not run in the write region before it.
    Returns `gen.graph.donated`: the ids of the INPUT nodes whose buffers may be written."""
    from ..executor.buffers import COPYING
    from ..executor.scalars import readers

    graph = gen.graph
    graph.donated = []
    if graph.polymorphic or graph.inplace or any(n.op in _DRAWS for n in graph.all_nodes()):
        return graph.donated
    users, outputs = readers(graph)
    top = {n.id: pos for pos, n in enumerate(graph.nodes)}
    inner = {i.id for n in graph.nodes if n.op in (ir.COND, ir.LOOP) for i in refs(n)}  # read in a block
    committed = {slot for kind, slot, _i, _copy in gen.outputs.commits if kind == "var"}
    writers = {}  # candidate INPUT id -> its last reader
    for x in graph.nodes:
        if x.op != ir.INPUT or x.id in outputs or x.id in inner or not _big(x):
            continue
        s = gen.slots[x.params["slot"]]
        if s.step != ("data",) or s.parent is None or s.parent.index not in committed:
            continue
        read = users.get(x.id, [])
        if not read:
            continue
        last = max(read, key=lambda r: top[r.id])
        views = view_closure(graph, x.id, COPYING)
        if any(v in outputs or v in inner or v not in top for v in views) or last.id in views \
                or any(top[r.id] >= top[last.id] for v in views for r in users.get(v, [])):
            continue  # a view of x is returned, or read at or after x's last reader
        if _region_op(last) and sum(1 for i in last.inputs if i is x) == 1 \
                and tuple(last.aval[0]) == tuple(x.aval[0]) and np.dtype(last.aval[1]) == np.dtype(x.aval[1]):
            writers[x.id] = last
    if not writers:
        return graph.donated
    start = min(top[w.id] for w in writers.values())
    after = {w.id for w in writers.values()}  # nodes that depend on a write, from `start` on
    for n in graph.nodes[start:]:
        if n.id in after or any(isinstance(i, ir.Node) and i.id in after for i in refs(n)):
            after.add(n.id)
            if not _region_op(n):
                return graph.donated  # the region would hold an op that may fail or allocate
    # before the region: every other node that is not an elementwise ufunc or has a small result
    # (a bias's update: the region would give it a buffer made in advance, and NumPy's `out=`
    # costs more than allocating a small array), and what it reads
    tail = graph.nodes[start:]
    hoist = {n.id for n in tail if n.id not in after and (not _region_op(n) or not _big(n))}
    for n in reversed(tail):
        if n.id in hoist:
            hoist.update(i.id for i in refs(n) if i.id in top and top[i.id] >= start)
    graph.nodes[start:] = [n for n in tail if n.id in hoist] + [n for n in tail if n.id not in hoist]
    graph.donated = sorted(writers)
    return graph.donated


def view_closure(graph, x_id, copying) -> set:
    """Ids of the top-level values that may be views of the value `x_id` (made from it, or
    from such a value, by an op not in `copying`: a transpose, a reshape, a slice); `x_id` may
    be a set of ids (views of any of them)."""
    roots = x_id if isinstance(x_id, (set, frozenset)) else {x_id}
    views: set = set()
    for n in graph.nodes:
        if n.op not in copying and any(isinstance(i, ir.Node) and (i.id in roots or i.id in views) for i in n.inputs):
            views.add(n.id)
    return views


def _big(x) -> bool:
    if x.aval is None or not all(type(d) is int for d in x.aval[0]) or len(x.aval[0]) == 0:
        return False
    return np.dtype(x.aval[1]).kind in "fciu" and math.prod(x.aval[0]) >= MIN_ELEMENTS


def _region_op(n) -> bool:
    """An elementwise ufunc the write region may run into a given buffer: no error state of its
    own, a static shape of one or more dimensions, a numeric dtype."""
    return n.op in REGION_OPS and not n.params and n.errstate is None and n.aval is not None \
        and len(n.aval[0]) >= 1 and all(type(d) is int for d in n.aval[0]) and np.dtype(n.aval[1]).kind in "fciu"
