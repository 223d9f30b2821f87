"""The commit's copies of graph values that eager code made anew (outputs.Outputs.plan_copies).

A position of the outputs (a returned or stored value) whose graph node is an input or a
constant, or a view of one, where eager code made a new array (`v = np.zeros(4)`, or
`a.astype(a.dtype)` a pass took as `a`), or whose node an earlier position already holds (common
subexpressions merged), gets its own copy before the commit, which may write an input in place.
Copies keep what eager code shares: the positions eager made as one new array and its views
(`st["a"] = v; st["b"] = v[1:]`, `e, np.diagonal(e)`) are one copy and views of it at the same
offsets (`shared_copy`), and a second view of one array (`st["y"] = h[0]` in two trips of a
loop) is a view of the first position's copy.
"""
from __future__ import annotations

import numpy as np

from .. import ir

READ_ONLY_VIEWS = frozenset({"diagonal", "broadcast_to", "broadcast_like", "sliding_window_view"})


def root(node):
    """The node whose array node's value may be (or be a view of): through reshapes, transposes,
    basic indexing ... down to an input, a constant or the op that made it."""
    while node.op in ir.ALIASING_OPS and node.op not in (ir.INPUT, ir.CONST) and node.inputs \
            and isinstance(node.inputs[0], ir.Node):
        node = node.inputs[0]
    return node


def copy(val):
    method = getattr(val, "copy", None)
    return val if method is None else method()


def view(val):
    """Another view of the array `val` views (eager's second `h[0]`), as a new object."""
    return val.view() if isinstance(val, np.ndarray) else val


def _read_only(node, base) -> bool:
    """node's value is a view NumPy makes read-only (`np.diagonal`), of base through views."""
    while node is not base:
        if node.op in READ_ONLY_VIEWS:
            return True
        node = node.inputs[0]
    return False


def copy_groups(out) -> list:
    """The copied positions of `out` eager made as one new array and its views: in the graph
    all are the constant's or the input's, and copied one by one they would share nothing.
    [(source, ((position, read-only), ...))]: source the position of the array itself,
    ("const", value) for a constant no position is, or ("slot", k) for the input array in slot
    k (`x.T.astype(x.dtype)`, taken as `x.T`, and views of it)."""
    groups: dict = {}  # (eager's arrays are the generator's nodes: `x * 1` twice, two arrays, one node now)
    for i in out.copied:
        if out.made[i] and root(out.nodes[i]).op in (ir.INPUT, ir.CONST):
            groups.setdefault(out.made_from[i], []).append(i)
    found = []
    for members in groups.values():
        bases = {root(out.nodes[i]) for i in members}
        if len(members) < 2 or len(bases) > 1:
            continue
        base = bases.pop()
        whole = [i for i in members if out.nodes[i] is base]
        if whole:
            source = whole[0]
        elif base.op == ir.CONST:
            source = ("const", base.params["value"])
        else:
            source = ("slot", base.params["slot"])
        found.append((source, tuple((i, _read_only(out.nodes[i], base)) for i in members)))
    return found


def _address(a):
    return a.__array_interface__["data"][0]


def shared_copy(base, members, readonly) -> list:
    """`members` (the array `base` itself, or views of it) as eager's new array and its views:
    one copy of base, its layout kept, and each view the same view of the copy (`readonly`:
    NumPy's read-only view, `np.diagonal`'s). A member that shares no memory with base (an index
    by arrays, a reshape that copied) is copied alone; so is every member when base is not one
    block of memory."""
    whole = isinstance(base, np.ndarray) and (base.flags.c_contiguous or base.flags.f_contiguous)
    own = base.copy(order="K") if whole else None
    owner = base if whole and base.base is None else getattr(base, "base", None)
    out = []
    for val, frozen in zip(members, readonly):
        if val is base and own is not None:
            out.append(own)
        elif own is not None and isinstance(val, np.ndarray) and val.base is not None and val.base is owner:
            v = np.ndarray(val.shape, val.dtype, buffer=own, offset=_address(val) - _address(base),
                           strides=val.strides)
            if frozen:
                v.flags.writeable = False
            out.append(v)
        else:
            out.append(copy(val))
    return out


def _source(source, values, slots):
    if isinstance(source, int):
        return values[source]
    return source[1] if source[0] == "const" else slots[source[1]]


def own_values(out, values, slots) -> list:
    """values with `out`'s copied positions copied (`Outputs._own`)."""
    values, grouped = list(values), set()
    for source, members in out.groups:
        base = _source(source, values, slots)
        copies = shared_copy(base, [values[i] for i, _ in members], [frozen for _, frozen in members])
        for (i, _), c in zip(members, copies):
            values[i] = c
            grouped.add(i)
    for i in out.copied:  # (in order: a view's first position is copied before it)
        if i not in grouped:
            values[i] = view(values[out.viewed[i]]) if i in out.viewed else copy(values[i])
    return values


def copied_value(out, i) -> str:
    """Position i's value in the compiled finish."""
    return f"_v{i}" if i in out.copied else f"values[{i}]"


def copy_lines(out, const) -> list:
    """The compiled finish's copies, as `own_values` makes them."""
    grouped = {i for _, members in out.groups for i, _ in members}
    lines = []
    for source, members in out.groups:
        base = f"values[{source}]" if isinstance(source, int) else \
            const(source[1]) if source[0] == "const" else f"slots[{source[1]}]"
        names = "".join(f"_v{i}, " for i, _ in members)
        values = "".join(f"values[{i}], " for i, _ in members)
        lines.append(f"{names}= _shared_copy({base}, ({values}), {tuple(frozen for _, frozen in members)})")
    for i in out.copied:
        if i not in grouped:
            lines.append(f"_v{i} = _view({copied_value(out, out.viewed[i])})" if i in out.viewed
                         else f"_v{i} = _copy(values[{i}])")
    return lines
