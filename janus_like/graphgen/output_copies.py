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

READ_ONLY_VIEWS = ir.READ_ONLY_VIEWS


def root(node):
    """The node whose array node's value may be (or be a view of): through reshapes, transposes,
    basic indexing ... down to an input, a constant or the op that made it."""
    while node.op in ir.ALIASING_OPS and node.op not in (ir.INPUT, ir.CONST) and node.inputs \
            and isinstance(node.inputs[0], ir.Node):
        node = node.inputs[0]
    return node


def copy(val):
    """A copy of val (an array's in its layout, as eager's new array has it)."""
    if isinstance(val, np.ndarray):
        return val.copy(order="K")
    method = getattr(val, "copy", None)
    return val if method is None else method()


def view(val, graphs=None, base=None):
    """Another view of the array `val` views (eager's second `h[0]`), as a new object; with
    `graphs` (the graph's value val was copied from, or val) and `base` (the graph's value of the
    array it was made from), where graphs shares base's memory (NumPy's reshape gave a view),
    else a copy."""
    if graphs is not None and not np.may_share_memory(graphs, base):
        return copy(val)
    return val.view() if isinstance(val, np.ndarray) else val


def _read_only(node, base) -> bool:
    """node's value is a view NumPy makes read-only (`np.diagonal`), of base through views."""
    while node is not base:
        if node.op in READ_ONLY_VIEWS:
            return True
        node = node.inputs[0]
    return False


def plan(out):
    """(copied positions, {view position: first position}, groups) for `out` after the passes.

    Positions are grouped by the array eager code keeps them in (`out.made_from`, read before
    the passes). An array's positions use the graph's values as they are when its node's value
    is new each call and no earlier array took it; else (the node is an input or a constant, or
    common subexpressions merged two of eager's arrays into one node: `st["v"] = x * 2.0` in two
    trips of a loop) they get one copy and views of it (`groups`: [(source, ((position,
    read-only), ...))], source the position of the array itself, ("const", value), ("slot", k)
    for the input in slot k, or ("owner",): the memory the first position views)."""
    by_array: dict = {}
    for i in range(len(out.nodes)):
        by_array.setdefault(out.made_from[i], []).append(i)
    at = {}  # node id -> its first position
    for i, node in enumerate(out.nodes):
        at.setdefault(node.id, i)
    claimed, copied, viewed, groups = set(), set(), {}, []
    for members in by_array.values():
        bases = {array_root(out.nodes[i]) for i in members}
        made = out.made[members[0]]
        if len(bases) > 1:  # (not one array any more)
            _apart(out, members, at, copied, viewed)
            continue
        base = bases.pop()
        if not made or base.op not in (ir.INPUT, ir.CONST) and base.id not in claimed \
                and not _merged_constants(base):
            claimed.add(base.id)
            _apart(out, members, at, copied, viewed, base)  # (`st["y"] = h[0]` in two trips: two views of h)
            continue
        built = [i for i in members if i in out._built]
        copied.update(built)
        if not built:
            continue
        whole = [i for i in built if out.nodes[i] is base]
        if whole:
            source = whole[0]
        elif base.op == ir.CONST:
            source = ("const", base.params["value"])
        elif base.op == ir.INPUT:
            source = ("slot", base.params["slot"])
        elif base.id in at:
            source = at[base.id]
        else:
            source = ("owner",)
        groups.append((source, tuple((i, _read_only(out.nodes[i], base)) for i in built)))
    return copied, viewed, groups


def _apart(out, members, at, copied, viewed, base=None):
    """Positions each as it is, copied where it is an input's or a constant's eager made anew,
    or its node an earlier position's: then another view of that one's array where both view
    one array (`st["y"] = h[0]` in two trips; `st["r"] = f.reshape(1, 4)`, a view where NumPy's
    reshape gives one: decided on the run's value), a copy where NumPy copies (`h[t]` of a 0-d
    array t, an index by arrays). viewed: {position: (first position, the position of the array
    `base` its view is decided against, or None)}."""
    for i in members:
        node = out.nodes[i]
        if at[node.id] != i or out.made[i] and array_root(node).op in (ir.INPUT, ir.CONST):
            copied.add(i)
            first = at[node.id]
            if first == i:
                continue
            if out.bases[i] is not None and out.bases[i] == out.bases[first]:
                viewed[i] = (first, None)
            elif base is not None and base.id in at and out.made_from[i] == out.made_from[first] and _may_view(node):
                viewed[i] = (first, at[base.id])  # (a reshape's view or copy: does it share the base's memory?)


def _may_view(node) -> bool:
    """Whether node's value may be a view of its root's (no index by arrays on the way)."""
    return array_root(node) is root(node)


def _gathers(node) -> bool:
    """An index by arrays (or bools): NumPy's result is a new array."""
    return node.op == "getitem" and any(isinstance(i, ir.Node) and (i.aval is None or len(i.aval[0]) > 0
                                                                    or np.dtype(i.aval[1]).kind == "b")
                                        for i in node.inputs[1:])


def _merge(node) -> bool:
    """A conditional's or loop node's result: by the outcome, one of several values."""
    return node.op == ir.TUPLE_GET and isinstance(node.inputs[0], ir.Node) and node.inputs[0].op in (ir.COND, ir.LOOP)


def array_root(node):
    """`root`, stopping at an index by arrays (`h[[0, 2]]`: eager's new array) and at a
    conditional's or loop node's result (by the outcome, one array or another)."""
    while node.op in ir.ALIASING_OPS and node.op not in (ir.INPUT, ir.CONST) and node.inputs \
            and isinstance(node.inputs[0], ir.Node) and not _gathers(node) and not _merge(node):
        node = node.inputs[0]
    return node


def _merged_constants(node, depth=0) -> list:
    """The constants a conditional's or loop node's result `node` may be (or view), by the
    outcome (`v = np.ones(3) if k else np.zeros(3)`, `acc = np.zeros(3)` before a loop that may
    run no trip): the node passes that object through, which eager makes anew each call."""
    if not _merge(node) or depth > 32:
        return []
    owner, k = node.inputs[0], node.params["index"]
    if owner.op == ir.COND:
        outs = [owner.params["then_outs"][k], owner.params["else_outs"][k]]
    else:
        outs = [owner.inputs[k], owner.params["body_outs"][k]]
    found = []
    for o in outs:
        if isinstance(o, ir.Node):
            o = array_root(o)
            found += [o.params["value"]] if o.op == ir.CONST else _merged_constants(o, depth + 1)
    return found


def _address(a):
    return a.__array_interface__["data"][0]


def shared_copy(base, members, readonly) -> list:
    """`members` (the array `base` itself, or views of it) as eager's new array and its views:
    one copy of base, its layout kept, and each view the same view of the copy (`readonly`:
    NumPy's read-only view, `np.diagonal`'s). Members that share no memory with base (an index
    by arrays, a reshape or `np.ascontiguousarray` that copied) and one array between them (that
    copy and a view of it: `t = np.ascontiguousarray(a.T); return t, t[0]`) are that array's copy
    and its views the same way; any other member is copied alone, and so is every member when
    base is not one block of memory."""
    whole = isinstance(base, np.ndarray) and (base.flags.c_contiguous or base.flags.f_contiguous)
    own = base.copy(order="K") if whole else None
    memory = owner(base) if whole else None
    out, apart = [], {}  # apart: {id of an array other than base's: [positions of members in it]}
    for k, (val, frozen) in enumerate(zip(members, readonly)):
        if val is base and own is not None:
            out.append(own if not any(o is own for o in out) else own.view())  # (eager's are two objects)
        elif own is not None and isinstance(val, np.ndarray) and val.base is not None and val.base is memory:
            v = np.ndarray(val.shape, val.dtype, buffer=own, offset=_address(val) - _address(base),
                           strides=val.strides)
            if frozen:
                v.flags.writeable = False
            out.append(v)
        else:
            out.append(None)
            if isinstance(val, np.ndarray) and isinstance(base, np.ndarray) and not np.may_share_memory(val, base):
                apart.setdefault(id(owner(val)), []).append(k)
            else:
                out[k] = copy(val)
    for ks in apart.values():
        array = owner(members[ks[0]])
        for k, c in zip(ks, shared_copy(array, [members[k] for k in ks], [readonly[k] for k in ks])
                        if len(ks) > 1 else [copy(members[ks[0]])]):
            out[k] = c
    return out


def _source(source, values, slots, first):
    if isinstance(source, int):
        return values[source]
    if source[0] == "owner":
        return owner(first)
    return source[1] if source[0] == "const" else slots[source[1]]


def own_values(out, values, slots) -> list:
    """values with `out`'s copied positions copied (`Outputs._own`)."""
    graphs, values, grouped = values, list(values), set()
    for source, members in out.groups:  # (from the graph's values: a group before may have replaced one)
        base = _source(source, graphs, slots, graphs[members[0][0]])
        copies = shared_copy(base, [graphs[i] for i, _ in members], [frozen for _, frozen in members])
        for (i, _), c in zip(members, copies):
            values[i] = c
            grouped.add(i)
    for i in out.copied:  # (in order: a view's first position is copied before it)
        if i not in grouped:
            if i in out.viewed:
                first, base = out.viewed[i]
                values[i] = view(values[first], *((graphs[first], graphs[base]) if base is not None else ()))
            else:
                values[i] = copy(values[i])
    return values


def owner(val):
    """The array val views (NumPy keeps the one that owns the memory), or val itself."""
    return val if getattr(val, "base", None) is None else val.base


def copied_value(out, i) -> str:
    """Position i's value in the compiled finish."""
    return f"_v{i}" if i in out.copied else f"values[{i}]"


def copy_lines(out, const) -> list:
    """The compiled finish's copies, as `own_values` makes them."""
    grouped = {i for _, members in out.groups for i, _ in members}
    lines = []
    for source, members in out.groups:
        base = f"values[{source}]" if isinstance(source, int) else const(source[1]) if source[0] == "const" \
            else f"slots[{source[1]}]" if source[0] == "slot" else f"_owner(values[{members[0][0]}])"
        names = "".join(f"_v{i}, " for i, _ in members)
        values = "".join(f"values[{i}], " for i, _ in members)
        lines.append(f"{names}= _shared_copy({base}, ({values}), {tuple(frozen for _, frozen in members)})")
    for i in out.copied:
        if i in grouped:
            continue
        if i in out.viewed:
            first, base = out.viewed[i]
            decided = f", values[{first}], values[{base}]" if base is not None else ""
            lines.append(f"_v{i} = _view({copied_value(out, first)}{decided})")
        else:
            lines.append(f"_v{i} = _copy(values[{i}])")
    return lines
