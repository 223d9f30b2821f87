"""Memory layouts of arrays written in place.

An in-place write keeps the array's strides: `w -= lr * g` of a Fortran-ordered `w` (a
transposed weight) leaves `w` Fortran-ordered, and a later `(w ** 2).sum()` or `x @ w` adds in
that order. The graph computes the new value as a node (`w - lr * g`), which NumPy lays out in C
order when the operands disagree; a reduction or a product of it may then round otherwise, and
the result differs from eager's in the last bits.

So the value a write leaves is laid out as its target:

- where the target is surely C-ordered when the graph runs, and so is the value, nothing is
  added. An input array is, by a guard (`flags.c_contiguous`) that this module adds when the
  array was C-ordered at generation: an array in another layout fails it and gets a graph of
  its own. A node of the graph is, by `executor.plan_helpers.c_ordered`;
- otherwise a `keep_layout` node (ops/memory.py) gives the value the target's strides when the
  graph runs: the value itself when they agree, else a copy into `np.empty_like(target)`, or,
  for a target with strides `empty_like` does not give (a reversed or strided view, `a[::-1]`,
  `a[:, ::2]`), into a new array with those strides on a buffer of its own.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..executor.plan_helpers import c_ordered
from ..ops.registry import P, bind
from .support import _as_kind
from .values import Sym


def _pinned(ev, node) -> bool:
    """Whether input node `node` is C-ordered when the graph runs: it is a NumPy array that was
    C-ordered at generation, and a guard now checks it."""
    if node.op != ir.INPUT or "slot" not in node.params:
        return False
    if node.params.get("c_ordered"):
        return True
    slot = ev.prog.slots[node.params["slot"]]
    if type(slot.value) is not np.ndarray or not slot.value.flags.c_contiguous:
        return False
    ev.prog.check_c_order(slot, ev.site)
    node.params["c_ordered"] = True
    return True


def kept_layout(ev, target, value):
    """The value an in-place write into `target` leaves there, laid out as `target` (see above)."""
    if not isinstance(target, Sym) or not isinstance(value, Sym) or target.kind != "array":
        return value
    t, v = target.node, value.node
    known = ev.builder.c_nodes  # nodes found C-ordered here before (a chain of writes, `h += x` in a loop)
    if (c_ordered(t, known=known, strict=True) or _pinned(ev, t)) and c_ordered(v, known=known, strict=True):
        known.add(v.id)
        return value
    return _as_kind(bind(P.keep_layout, value, target), "array")


def unordered(ev, target) -> bool:
    """Whether `target` (an `out=` array) may be laid out otherwise than in C order when the graph
    runs: `np.matmul(x, w, out=target)` is then NumPy's own call into target's layout
    (ops/memory.matmul_like), whose BLAS call rounds by that layout."""
    return isinstance(target, Sym) and target.kind == "array" and target.ndim >= 2 and not (
        c_ordered(target.node, known=ev.builder.c_nodes, strict=True) or _pinned(ev, target.node))
