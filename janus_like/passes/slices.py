"""Adjacent slices under one unary op: `op(x[:, a:b]), op(x[:, b:c])` -> `y = op(x[:, a:c])`, cut.

An LSTM step splits its gate pre-activations `z` into four column blocks (input, forget, cell,
output) and applies the sigmoid to three of them; the input and forget gates are adjacent, so one
sigmoid over `z[:, 0:2H]` computes both, and the two gates are column slices (views) of it. A
unary elementwise op computes every element on its own, so the result is the same bit for bit;
what is saved is one call's fixed cost (the plan's sigmoid is four ufunc calls and an errstate:
two (16, 128) gates 19.5-23.8 us, one (16, 256) block 14.9-15.1 us).

Input: the top-level nodes. A group is the unary elementwise nodes with the same op, parameters
and errstate whose operands are basic slices of one array along the same axis (not the first:
row blocks are for `lift_row_blocks`), with every other axis taken whole, static shapes, step 1;
runs of adjacent ranges (two or more) are merged. Each member node becomes a slice of the merged
result in place (its id and users stay), and the merged slice and op are placed before the run's
first member.
"""
from __future__ import annotations

from .. import ir
from ..ops.registry import REGISTRY
from .families import _FULL, _shape


def _column_cut(x):
    """(base, axis, start, stop, flag) when x is `base[:, ..., a:b]` (one sliced axis >= 1, the
    axes before it whole, nothing after it), else None."""
    if not (isinstance(x, ir.Node) and x.op == "getitem" and len(x.inputs) == 1):
        return None
    base = x.inputs[0]
    shape, out = _shape(base), _shape(x)
    if shape is None or out is None or len(shape) != len(out):
        return None
    items, flag = x.params["index"]
    if len(items) < 2 or any(i != _FULL for i in items[:-1]):
        return None
    last = items[-1]
    if type(last) is not tuple or len(last) != 4 or last[0] != "s" or last[3] not in (None, 1):
        return None
    axis = len(items) - 1
    start, stop, _ = slice(last[1], last[2]).indices(shape[axis])
    return (base, axis, start, stop, flag) if stop > start else None


def merge_slices(graph: ir.Graph) -> ir.Graph:
    if graph.polymorphic:  # avals hold one size only: the ranges would be those of one size
        return graph
    groups: dict = {}  # (op, params, errstate, dtype, base id, axis, flag) -> [(start, stop, node)]
    for n in graph.nodes:
        op = REGISTRY.get(n.op)
        if op is None or not op.elementwise or op.stateful or len(n.inputs) != 1 or _shape(n) is None:
            continue
        cut = _column_cut(n.inputs[0])
        if cut is None or _shape(n) != _shape(n.inputs[0]):
            continue
        base, axis, start, stop, flag = cut
        try:
            params = tuple(sorted(n.params.items()))
            errstate = None if n.errstate is None else tuple(sorted(n.errstate.items()))
            key = (n.op, params, errstate, n.aval[1], base.id, axis, flag)
            hash(key)
        except TypeError:
            continue
        groups.setdefault(key, []).append((start, stop, n))
    order = {n.id: k for k, n in enumerate(graph.nodes)}
    inserts: dict = {}  # member id -> nodes to place before it
    for (_, _, _, dtype, _, axis, flag), members in groups.items():
        for run in _runs(members):
            first = run[0][2]
            base = first.inputs[0].inputs[0]  # (read before the members become slices of the result)
            a, b = run[0][0], run[-1][1]
            shape = list(_shape(first))
            shape[axis] = b - a
            whole = (("s", a, b, None),)
            index = (tuple([_FULL] * axis) + whole, flag)
            cut = ir.Node("getitem", (base,), {"index": index}, (tuple(shape), first.inputs[0].aval[1]), first.site)
            merged = ir.Node(first.op, (cut,), dict(first.params), (tuple(shape), dtype), first.site,
                             errstate=first.errstate)
            earliest = min((m[2] for m in run), key=lambda m: order[m.id])
            inserts.setdefault(earliest.id, []).extend([cut, merged])
            for start, stop, n in run:
                n.op, n.inputs, n.errstate = "getitem", (merged,), None
                n.params = {"index": (tuple([_FULL] * axis) + (("s", start - a, stop - a, None),), flag)}
    if inserts:
        out = []
        for n in graph.nodes:
            out += inserts.get(n.id, [])
            out.append(n)
        graph.nodes[:] = out
    return graph


def _runs(members):
    """Maximal runs (two or more) of adjacent ranges, each range used once."""
    members = sorted(members, key=lambda m: (m[0], m[1]))
    runs, current = [], []
    for m in members:
        if current and m[0] == current[-1][1]:
            current.append(m)
            continue
        if len(current) >= 2:
            runs.append(current)
        current = [m]
    if len(current) >= 2:
        runs.append(current)
    return runs
