"""float64 scalar arithmetic as Python floats: a loop over an array's elements (discounted
returns, `g = r[t] + gamma * g`) unrolled into a plan reads NumPy scalars and computes on them,
and each NumPy scalar operation costs ~25 ns where the same operation on Python floats costs
~5 (NumPy 2.4). The plan reads such elements as Python floats (`x.item(t)`, or from one
`x.tolist()` when a value is read element by element), computes the chain with Python's
operators and gives a NumPy scalar back (`F64(u)`) only to nodes that need one; a Python float
written into a float array (`ret[t] = g`) needs none.

The values are bit for bit eager's: both are IEEE double operations in round-to-nearest. What
differs is what NumPy reports: a NumPy scalar operation warns (or raises, under np.errstate)
on overflow, an invalid operation, division by zero and, when asked, underflow; Python's
operators stay silent. So the plan checks, before anything outside the chain reads a value,
that the values are finite (`if u7 - u7: raise AF(...)`: zero for a finite value, NaN
otherwise). A non-finite value comes from such an event or from a non-finite input, and either
way the call fails the check and runs eagerly, which reports what NumPy reports. Non-finite
values propagate through +, -, * and a quotient's dividend (not its divisor: `1 / inf` is 0),
so checking the last values of a chain checks the values before them, and every value no check
covered is checked before the outputs leave. A zero divisor (Python would raise) gives NaN,
which fails the same check, and NumPy's underflow mode must be `ignore` (its default). A
signature whose calls keep failing the check gets graphs without Python floats
(`Graph.python_floats`, relaxed like any assumption).

Costs on this machine (ns): element read 30 as a NumPy scalar, 35 by `item`, 7 from a list;
`tolist()` of 64 floats 420; a NumPy scalar op 25, a Python float op 5; `np.float64(u)` 55;
`float(v)` 36. A chain is taken only where its estimate (`_GAIN`) saves time."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import ir
from .tiering import _FP_STATE

RELAX = ir.FLOATS_RELAX  # the relaxation key: graphs keep NumPy scalars
_F64 = np.dtype(np.float64)
_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_EXACT_INT = 2 ** 53  # Python ints mixed in convert to float exactly below this
# estimated ns saved per chain op, per element read (by `item`: -5; from a list: +23), and lost
# per NumPy scalar given back and per conversion of a NumPy scalar operand
_GAIN = {"op": 20, "item": -5, "list": 23, "boxed": -55, "converted": -36}
LIST_MIN_READS = 16  # element reads of one array before one tolist() pays (and at least a quarter of it)


@dataclass
class Floats:
    """The plan's Python-float values: `nodes` (id -> "read" / "op", held in local `u<id>`),
    `converted` (ids of NumPy scalar operands converted with float() at first use), `lists`
    (ids of arrays read from one tolist() -> their reads), `boxed` (ids also needed as NumPy
    scalars, `v<id>`),
    `sinks` (index_update ids writing a Python float), `checks` (position -> ids to check
    before the node there), `final` (ids to check before the outputs leave)."""

    nodes: dict = field(default_factory=dict)
    converted: set = field(default_factory=set)
    lists: dict = field(default_factory=dict)
    boxed: set = field(default_factory=set)
    sinks: set = field(default_factory=set)
    checks: dict = field(default_factory=dict)
    final: list = field(default_factory=list)
    assumption: object = None
    done: set = field(default_factory=set)  # (emission) ids of the conversions and lists already made
    under_checked: bool = False  # (emission) NumPy's underflow mode is checked at the first chain value
    assumption_name: str | None = None


def _f64_scalar(x) -> bool:
    return isinstance(x, ir.Node) and x.aval is not None and tuple(x.aval[0]) == () and np.dtype(x.aval[1]) == _F64


def _read(n) -> bool:
    """An element of a float64 NumPy array read by integer indices, one per axis."""
    if n.op != "getitem" or n.errstate is not None or not _f64_scalar(n) or not ir.numpy_typed(n):
        return False
    x = n.inputs[0]
    if not (isinstance(x, ir.Node) and ir.numpy_typed(x) and x.aval is not None and np.dtype(x.aval[1]) == _F64):
        return False
    items, _ = n.params["index"]
    if len(items) != len(x.aval[0]) or not items:
        return False
    for item in items:
        if type(item) is int:
            continue
        if not (type(item) is tuple and item[0] == "slot"):
            return False
        a = n.inputs[1 + item[1]]
        if not (isinstance(a, ir.Node) and a.aval is not None and tuple(a.aval[0]) == ()
                and np.dtype(a.aval[1]).kind in "iu"):
            return False
    return True


def _number(i) -> bool:
    return (type(i) is float and i - i == 0.0) or (type(i) is int and abs(i) < _EXACT_INT)


def _op(n, floats, convertible) -> bool:
    """+, -, *, / or negation of float64 scalars with a NumPy scalar result, on values held as
    Python floats, convertible NumPy scalars and finite Python numbers."""
    if n.op not in _OPS and n.op != "neg" or n.params or n.errstate is not None or not _f64_scalar(n) \
            or not ir.numpy_typed(n) or len(n.inputs) != (1 if n.op == "neg" else 2):
        return False
    return all(i.id in floats or i.id in convertible if isinstance(i, ir.Node) else _number(i) for i in n.inputs)


def _refs(n):
    """The nodes n reads, inside its blocks too, at any depth (passes/order.refs looks one block
    deep: enough for ordering, not for finding every reader of a value)."""
    refs = [i for i in n.inputs if isinstance(i, ir.Node)]
    if n.op in (ir.COND, ir.LOOP):
        for m in (m for b in ir.BLOCKS for m in n.params.get(b, [])):
            refs += _refs(m)
        refs += [o for k in ("then_outs", "else_outs", "body_outs") for o in n.params.get(k, [])
                 if isinstance(o, ir.Node)]
    return refs


def plan(graph, skip, first_write, static_shapes) -> Floats | None:
    """The Python-float values of `graph`'s top-level nodes before position `first_write` (the
    plan's first write into an array it does not own), none of them in `skip` (nodes the
    emitter writes in other forms); None when there are none worth it."""
    if not getattr(graph, "python_floats", True):
        return None
    nodes = graph.nodes[:first_write]
    pos = {n.id: p for p, n in enumerate(graph.nodes)}
    convertible = {n.id for n in nodes if _f64_scalar(n) and n.id not in skip and n.errstate is None
                   and n.op not in (ir.COND, ir.LOOP)}
    fl = Floats()
    for n in nodes:
        if n.id in skip:
            continue
        if _read(n):
            fl.nodes[n.id] = "read"
        elif _op(n, fl.nodes, convertible):
            fl.nodes[n.id] = "op"
    readers: dict = {}  # id -> the top-level nodes reading it (a block's readers: its cond/loop node)
    for n in graph.nodes:
        for i in _refs(n):
            readers.setdefault(i.id, []).append(n)
    # reads that no chain op reads are NumPy scalars as before
    for i in [i for i, kind in fl.nodes.items() if kind == "read"]:
        if not any(fl.nodes.get(r.id) == "op" for r in readers.get(i, ())):
            del fl.nodes[i]
    if not fl.nodes:
        return None
    by_id = {n.id: n for n in nodes}
    outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    for n in nodes:
        if n.op == "index_update" and isinstance(n.inputs[1], ir.Node) and n.inputs[1].id in fl.nodes \
                and n.id not in skip and n.errstate is None and ir.numpy_typed(n.inputs[0]) \
                and n.inputs[0].aval is not None and len(n.inputs[0].aval[0]) >= 1 \
                and np.dtype(n.inputs[0].aval[1]).kind == "f" and sum(1 for i in n.inputs if i is n.inputs[1]) == 1:
            fl.sinks.add(n.id)
    _boxed(fl, readers, outputs)
    _choose_lists(fl, by_id, static_shapes)
    _keep_gainful(fl, by_id)
    if not fl.nodes:
        return None
    _boxed(fl, readers, outputs)
    from ..jit.assumptions import Assumption

    site = next((by_id[i].site for i, kind in fl.nodes.items() if kind == "op" and by_id[i].site), graph.name)
    fl.assumption = Assumption("finite", site, "finite float64 scalars", relax=RELAX)
    fl.converted = {i.id for n in nodes if fl.nodes.get(n.id) == "op" for i in n.inputs
                    if isinstance(i, ir.Node) and i.id not in fl.nodes}
    _place_checks(fl, graph, pos, first_write)
    return fl


def _boxed(fl, readers, outputs):
    """The chain values something other than a chain op or a write into a float array reads."""
    fl.boxed = {i for i in fl.nodes if i in outputs or any(
        fl.nodes.get(r.id) != "op" and not (r.id in fl.sinks and r.inputs[1].id == i)
        for r in readers.get(i, ()))}


def _choose_lists(fl, by_id, static_shapes):
    """The arrays read from one tolist(): at least LIST_MIN_READS reads, all by constant indices,
    of at least a quarter of the array (a size known only at run time is checked then)."""
    reads: dict = {}  # array id -> (the array, its reads, all by constant indices)
    for i, kind in fl.nodes.items():
        if kind == "read":
            n = by_id[i]
            x, k, constant = reads.get(n.inputs[0].id, (n.inputs[0], 0, True))
            reads[x.id] = (x, k + 1, constant and all(type(item) is int for item in n.params["index"][0]))
    for x_id, (x, k, constant) in reads.items():
        shape = x.aval[0] if static_shapes and all(type(d) is int for d in x.aval[0]) else None
        if constant and k >= LIST_MIN_READS and (shape is None or 4 * k >= int(np.prod(shape))):
            fl.lists[x_id] = k


def _keep_gainful(fl, by_id):
    """Drop the connected groups of chain values whose estimated saving is not positive."""
    parent = {i: i for i in fl.nodes}

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, kind in fl.nodes.items():
        if kind == "op":
            for j in by_id[i].inputs:
                if isinstance(j, ir.Node) and j.id in fl.nodes:
                    parent[find(j.id)] = find(i)
    gain: dict = {}
    converted: dict = {}
    for i, kind in fl.nodes.items():
        root = find(i)
        n = by_id[i]
        g = _GAIN["op"] if kind == "op" else _GAIN["list" if n.inputs[0].id in fl.lists else "item"]
        g += _GAIN["boxed"] if i in fl.boxed else 0
        gain[root] = gain.get(root, 0) + g
        if kind == "op":
            for j in n.inputs:
                if isinstance(j, ir.Node) and j.id not in fl.nodes:
                    converted.setdefault(root, set()).add(j.id)
    for root, ids in converted.items():
        gain[root] += _GAIN["converted"] * len(ids)
    for i in list(fl.nodes):
        if gain[find(i)] <= 0:
            del fl.nodes[i]
    fl.sinks = {s for s in fl.sinks if by_id[s].inputs[1].id in fl.nodes}
    fl.lists = {x: k for x, k in fl.lists.items()
                if any(kind == "read" and by_id[i].inputs[0].id == x for i, kind in fl.nodes.items())}


def _place_checks(fl, graph, pos, first_write):
    """Where the finite checks go: before the first node outside the chains that reads a chain
    value, or an array a chain value was written into, checking the latest such values (each
    covers the values it was computed from, except through a divisor: `1 / inf` is 0); every
    value not checked by then before `first_write` and before the outputs leave: eager's NumPy
    scalar warned when it made the value, whoever reads it."""
    order = sorted(fl.nodes, key=pos.get)
    bit = {i: 1 << k for k, i in enumerate(order)}
    anc: dict = {}  # id -> bits of the chain values it was computed from, itself included
    verified = 0
    pending: dict = {}  # array id -> ids of the chain values written into it, unchecked

    def check(ids):
        nonlocal verified
        chosen = []
        for i in sorted(set(ids), key=pos.get, reverse=True):  # the latest first: they cover the earlier
            if not (bit[i] & verified):
                chosen.append(i)
                verified |= anc[i]
        return chosen

    for p, n in enumerate(graph.nodes[:first_write]):
        if n.id in fl.nodes:
            anc[n.id] = bit[n.id]
            for k, i in enumerate(n.inputs):
                if isinstance(i, ir.Node) and i.id in anc and not (n.op == "div" and k == 1):
                    anc[n.id] |= anc[i.id]
            continue
        refs = _refs(n)
        if n.op in ("index_update", "index_add") and isinstance(n.inputs[0], ir.Node):
            carried = pending.get(n.inputs[0].id, [])  # writing into an array reads none of its values
            if n.id in fl.sinks:
                carried = carried + [n.inputs[1].id]
            if carried:
                pending[n.id] = carried
            refs = [r for k, r in enumerate(n.inputs)
                    if k and isinstance(r, ir.Node) and not (k == 1 and n.id in fl.sinks)]
        ids = [r.id for r in refs if r.id in fl.nodes] + [i for r in refs for i in pending.get(r.id, ())]
        chosen = check(ids)
        if chosen:
            fl.checks[p] = chosen
    rest = check(fl.nodes) if first_write < len(graph.nodes) else []
    if rest:
        fl.checks.setdefault(first_write, []).extend(rest)
    fl.final = check(fl.nodes)


def first_write(graph, em) -> int:
    """The position of the plan's first write into an array the graph does not own: the donated
    arrays' write region, an SGD step on gathered rows (weight updates by blas.py come after
    every node)."""
    starts = [em.region.start] if em.region is not None else []
    starts += [p for p, n in enumerate(graph.nodes) if n.id in em.rows]
    return min(starts, default=len(graph.nodes))


# ---------------------------------------------------------------------------- emission
def _failed(em, fl) -> str:
    """The name of the plan's global holding the finite check's assumption."""
    if fl.assumption_name is None:
        fl.assumption_name = em.const(fl.assumption)
    return fl.assumption_name


def check_line(em, fl, ids) -> str:
    test = " + ".join(f"(u{i} - u{i})" for i in ids) if len(ids) > 1 else f"u{ids[0]} - u{ids[0]}"
    return f"    if {test}: raise AF({_failed(em, fl)})"


def operand(em, fl, i, lines) -> str:
    """The Python-float source of chain operand i (a conversion made at its first use goes
    into `lines`)."""
    if not isinstance(i, ir.Node):
        return repr(i)
    if i.id in fl.converted and i.id not in fl.done:
        fl.done.add(i.id)
        lines.append(f"u{i.id} = float({em.arg(i)})")
    return f"u{i.id}"


def emit(em, fl, n) -> list[str]:
    """The lines computing chain value n (`u<id>`), and its NumPy scalar when one is read."""
    lines: list[str] = []
    v = f"u{n.id}"
    first = []
    if not fl.under_checked:  # the first chain value: NumPy's underflow mode
        fl.under_checked = True
        first.append(f"    if not UNDER_OK(): raise AF({_failed(em, fl)})")
    if fl.nodes[n.id] == "read":
        x = n.inputs[0]
        items, _ = n.params["index"]
        parts = [repr(item) if type(item) is int else em.arg(n.inputs[1 + item[1]]) for item in items]
        if x.id in fl.lists:
            if x.id not in fl.done:
                fl.done.add(x.id)
                if not em.static_shapes:  # sizes known at run time: a large array fails the check
                    first.append(f"    if {em.arg(x)}.size > {4 * fl.lists[x.id]}: raise AF({_failed(em, fl)})")
                lines.append(f"L{x.id} = {em.arg(x)}.tolist()")
            lines.append(f"{v} = L{x.id}{''.join(f'[{p}]' for p in parts)}")
        else:
            lines.append(f"{v} = {em.arg(x)}.item({', '.join(parts)})")
    elif n.op == "neg":
        lines.append(f"{v} = -{operand(em, fl, n.inputs[0], lines)}")
    else:
        a, b = (operand(em, fl, i, lines) for i in n.inputs)
        if n.op == "div":  # Python raises on a zero divisor where NumPy warns: the check fails instead
            lines.append(f"{v} = {a} / {b} if {b} else {em.const(float('nan'))}")
        else:
            lines.append(f"{v} = {a} {_OPS[n.op]} {b}")
    if n.id in fl.boxed:
        lines.append(f"v{n.id} = F64({v})")
    return first + ["    " + "; ".join(lines)]


_under_seen = [object(), True]  # (NumPy's error state object, whether underflow is ignored under it)


def under_ignored() -> bool:
    """True when NumPy ignores underflow (its default): a NumPy scalar operation then reports
    nothing that a finite result hides."""
    state = _FP_STATE.get() if _FP_STATE is not None else None
    if state is None or state is not _under_seen[0]:
        _under_seen[0] = state if state is not None else object()
        _under_seen[1] = np.geterr()["under"] == "ignore"
    return _under_seen[1]
