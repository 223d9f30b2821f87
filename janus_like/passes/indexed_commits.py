"""Writes into the state's arrays at a window, committed as the writes themselves (memory
planning for index writes, after the elementwise donation of passes/donate.py).

A ring buffer written at its write index and read back (`buf.obs[i:i + n] = obs; x =
buf.obs[i:i + n]`, graphgen/windows.py: an integer-array window `i + arange(n)` guarded by an
assert that it lies inside the axis) made the plan copy the whole buffer to write the rows in
the copy (`v10 = v4.copy(); v10[v9,] = v1`), gather the rows back, and then the commit copied the
whole new buffer into the old one (`np.copyto`): two passes over a buffer that may hold a
million transitions, where eager writes n rows in place. Here:

- `forward_window_reads` (a pipeline pass): reading the window just written gives the written
  values, as a new array of the buffer's dtype (`getitem(index_update(a, w, v), w)` is
  `cast(v)`), when the window's positions are distinct (`start + arange(n)`, asserted inside
  the axis) and v has the window's shape.
- `indexed_commits` (after the passes, with the other memory planning): a state array whose new
  value is its old one with writes at asserted windows, at constant basic indices or at integer
  indices along one axis (`E[ids] -= lr * g`, a hand-written sparse embedding update: an assert
  added here checks them in bounds), read by nothing else, is committed by making those writes
  into it (`slots[k][w] = v`), in order, where the commit copied the whole array. A write at
  the commit must not fail half-way through the commit: the windows are asserted inside their
  axes by the graph, constant basic indices were checked on the shapes when the graph was
  generated, indices from the inputs by the assert, and a value of another dtype is cast by the
  plan first (its casting warnings and errors happen before the commit, as eager's). Only values
  sharing no memory with an array the commit writes are written there (a slice of the buffer
  itself would be read after an earlier write changed it), and NumPy values (a Python number is
  cast NumPy's way by the write).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import ir
from ..executor.buffers import COPYING
from .dce import dce
from .donate import view_closure
from .simplify import substitute


def _window(node, graph_asserts, size) -> bool:
    """`start + arange(n)` (either order) whose assert says it lies inside an axis of `size`
    (the indexed array's): distinct positions that a write at the commit cannot find out of
    bounds."""
    if not isinstance(node, ir.Node) or node.op != "add" or len(node.inputs) != 2:
        return False
    const, start = node.inputs if isinstance(node.inputs[0], ir.Node) and node.inputs[0].op == ir.CONST \
        else node.inputs[::-1]
    if not (isinstance(const, ir.Node) and const.op == ir.CONST and isinstance(start, ir.Node)):
        return False
    v = const.params.get("value")
    if type(v) is not np.ndarray or v.ndim != 1 or v.dtype != np.int64 or not np.array_equal(v, np.arange(len(v))):
        return False
    name = f"window_of_{len(v)}_within_{size}"
    return any(isinstance(a.inputs[0], ir.Node) and a.inputs[0].op == ir.PY_OP and start in a.inputs[0].inputs
               and getattr(a.inputs[0].params.get("fn"), "__name__", "") == name for a in graph_asserts)


def _window_index(n, asserts) -> bool:
    """n (getitem or index_update) indexes with full slices and one asserted window."""
    items, _single = n.params["index"]
    first = 1 if n.op == "getitem" else 2
    operands = n.inputs[first:]
    slots = [i for i in items if type(i) is tuple and i[0] == "slot"]
    slices_full = all(i == ("s", None, None, None) for i in items if type(i) is tuple and i[0] == "s")
    plain = all(type(i) is tuple for i in items)
    if not (plain and slices_full and len(slots) == 1 and len(operands) == 1):
        return False
    array = n.inputs[0]  # (the axis the window indexes: its assert must be of that axis's size)
    axis = items.index(slots[0])
    shape = array.aval[0] if isinstance(array, ir.Node) and array.aval is not None else ()
    return axis < len(shape) and _window(operands[0], asserts, shape[axis])


def forward_window_reads(graph: ir.Graph) -> ir.Graph:
    asserts = graph.asserts
    if not asserts:
        return graph
    mapping = {}
    added = []
    for g in graph.nodes:  # (top level)
        if g.op != "getitem" or not isinstance(g.inputs[0], ir.Node) or g.inputs[0].op != "index_update":
            continue
        u = g.inputs[0]
        if u.params["index"] != g.params["index"] or tuple(u.inputs[2:]) != tuple(g.inputs[1:]) \
                or not _window_index(g, asserts):
            continue
        v = u.inputs[1]
        if not isinstance(v, ir.Node) or v.aval is None or tuple(v.aval[0]) != tuple(g.aval[0]):
            continue
        dtype = np.dtype(g.aval[1])
        op, params = ("copy", {}) if np.dtype(v.aval[1]) == dtype else ("cast", {"dtype": dtype})
        new = ir.Node(op, (v,), params, g.aval, g.site)
        added.append((g, new))
        mapping[g.id] = new
    if mapping:
        at = {g.id: k for k, g in enumerate(graph.nodes)}
        for g, new in sorted(added, key=lambda p: -at[p[0].id]):
            graph.nodes.insert(at[g.id], new)
        substitute(graph, mapping)
    return graph


def _rows(n):
    """(index operand, axis size, site) of a write at integer indices along one axis, the other
    axes whole (`E[ids] = rows`, `buf[:, ids] = cols`): a write the commit may make once an
    assert has checked the indices in bounds (-size <= i < size, as NumPy's write requires;
    repeated indices are written in order, the last one's value kept, as eager's). None else."""
    items, _single = n.params["index"]
    operands = n.inputs[2:]
    if len(operands) != 1 or not all(type(i) is tuple for i in items) \
            or any(i[0] == "s" and i != ("s", None, None, None) for i in items):
        return None
    ids = operands[0]
    if not isinstance(ids, ir.Node) or ids.aval is None or np.dtype(ids.aval[1]).kind not in "iu":
        return None
    axis = next(k for k, i in enumerate(items) if i[0] == "slot")
    shape = n.inputs[0].aval[0] if isinstance(n.inputs[0], ir.Node) and n.inputs[0].aval is not None else ()
    if axis >= len(shape) or type(shape[axis]) is not int:
        return None
    return ids, shape[axis], n.site


@functools.lru_cache(maxsize=None)
def _in_bounds(size, one=False):
    """The bounds test of an index array, or of `one` index (a Python int or NumPy integer)."""
    def check(ids):
        return ids.size == 0 or bool(ids.min() >= -size and ids.max() < size)

    def check_one(i):
        return -size <= i < size
    chosen = check_one if one else check
    chosen.__name__ = f"{'index' if one else 'indices'}_within_{size}"
    return chosen


def _assert_in_bounds(gen, ids, size, site):
    from ..jit.assumptions import Assumption

    if ids.op == ir.CONST:  # (tried on the shapes when the graph was generated)
        return
    ok = ir.Node(ir.PY_OP, (ids,), {"fn": _in_bounds(size, tuple(ids.aval[0]) == ())}, ((), np.dtype(bool)), site)
    assumption = Assumption("shape", site, f"indices within an axis of {size}", path="index")
    gen.graph.nodes += [ok, ir.Node(ir.ASSERT, (ok,), {"expect": True, "assumption": assumption}, None, site)]
    gen.assumptions.append(assumption)


def _basic_constant(n) -> bool:
    """An index of slices and ints only (checked on the static shapes at generation)."""
    items, _single = n.params["index"]
    return not any(type(i) is tuple and i[0] == "slot" for i in items)


def _written_views(graph, slots) -> set:
    """Ids of the top-level values that may share memory with an input array the commit writes in
    place (input `slots`): the input, and its views (a slice, a transpose, a cast to its own dtype).
    Other inputs share none with those (the guards' check)."""
    written = {n.id for n in graph.nodes if n.op == ir.INPUT and n.params.get("slot") in slots}
    return written | view_closure(graph, written, COPYING)


def indexed_commits(gen) -> None:
    """Commit the index writes of state arrays (see the module docstring)."""
    from ..executor.scalars import readers

    graph, out = gen.graph, gen.outputs
    if graph.polymorphic:
        return
    users, _ = readers(graph)
    asserts = graph.asserts
    counts: dict = {}
    for o in out.nodes:
        counts[o.id] = counts.get(o.id, 0) + 1
    # a value that may be a written array's memory (a slice of this array, or of one an earlier
    # write of the commit changes) would be read after those writes; a Python number is cast
    # NumPy's way by the write (not by an op): neither is written at the commit
    shared = _written_views(graph, {slot for kind, slot, _i, _copy in out.commits if kind == "array"})
    commits = []
    for kind, slot, i, copy in out.commits:
        node = out.nodes[i]
        chain, n = [], node
        while isinstance(n, ir.Node) and n.op == "index_update":
            chain.append(n)
            n = n.inputs[0]
        if kind != "array" or not chain or not (isinstance(n, ir.Node) and n.op == ir.INPUT
                                                and n.params.get("slot") == slot) \
                or counts.get(node.id) != 1 or users.get(node.id) \
                or any(len(users.get(c.id, ())) != 1 for c in chain[1:]) \
                or not all(_basic_constant(c) or _window_index(c, asserts) or _rows(c) is not None for c in chain) \
                or not all(ir.numpy_typed(c.inputs[1]) and c.inputs[1].id not in shared for c in chain):
            commits.append((kind, slot, i, copy))
            continue
        writes = tuple(_commit_write(gen, c, n.aval[1], asserts) for c in reversed(chain))  # the first first
        out.nodes[i] = n  # (the array itself: nothing reads this position now)
        out.copied = [k for k in out.copied if k != i]
        commits.append(("index", slot, writes, copy))
    if commits != out.commits:
        out.commits = commits
        dce(graph)  # (the copies written at the windows, now unread)


def _commit_write(gen, c, dtype, asserts):
    """(index template, output positions of the value and the index operands) of the write
    `c` (an index_update) at the commit: its value cast to the array's `dtype` by the plan, its
    indices from the inputs asserted in bounds by the plan."""
    graph, out, v = gen.graph, gen.outputs, c.inputs[1]
    if np.dtype(v.aval[1]) != np.dtype(dtype):
        v = ir.Node("cast", (v,), {"dtype": np.dtype(dtype)}, (v.aval[0], np.dtype(dtype)), c.site)
        graph.nodes.append(v)
    rows = _rows(c)
    if rows is not None and not _window_index(c, asserts):
        _assert_in_bounds(gen, *rows)
    return c.params["index"], tuple([out.node_index(v)] + [out.node_index(o) for o in c.inputs[2:]])
