"""How the commit (outputs.Outputs) describes what it builds and writes: spec trees (a list, a
dict, an object, a view of an input, a graph value...), which of their containers appear more than
once (one object, built once), and a state write as a line of the compiled finish."""
from __future__ import annotations

import keyword

from .. import ir


def new_object(cls, names, values):
    """A dataclass object as its written `__init__` leaves it (support.plain_dataclass): its
    fields set as the object's own setattr would not (a frozen class refuses it)."""
    obj = object.__new__(cls)
    for name, value in zip(names, values):
        object.__setattr__(obj, name, value)
    return obj


def _spec_token(spec):
    """The token of a list, dict, dataclass object or input view spec (one object however often
    it appears)."""
    tag = spec[0]
    if tag in ("list", "dict", "object"):
        return spec[-1]
    if tag in ("index", "viewop", "dynindex"):
        return spec[3]
    return None


def _children(spec) -> list:
    """The specs `spec` is built from (a dict's and an object's values, not their keys: a key
    "const" or "index" is no spec)."""
    tag = spec[0]
    if tag in ("list", "tuple"):
        return spec[1]
    if tag == "dict":
        return [item for _, item in spec[1]]
    if tag == "object":
        return [item for _, item in spec[2]]
    if tag == "namedtuple":
        return spec[2]
    if tag in ("index", "viewop", "varsnap"):
        return [spec[1]]
    if tag == "dynindex":
        return [spec[1], *spec[2]]
    if tag == "str":
        return [part[0] for part in spec[1] if not isinstance(part, str)]
    return []


def shared_tokens(specs) -> dict:
    """{token: None} for each list or dict that appears more than once in `specs`."""
    counts: dict = {}

    def walk(spec):
        token = _spec_token(spec)
        if token is not None:
            counts[token] = counts.get(token, 0) + 1
            if counts[token] > 1:
                return
        for child in _children(spec):
            walk(child)

    for s in specs:
        walk(s)
    return {t: None for t, n in counts.items() if n > 1}


def op_line(op, expr, const) -> str:
    """One state write of `Outputs.ops` as a line of the compiled finish (as `finish` does it)."""
    tag = op[0]
    if tag == "setattr":
        name = op[2]
        if name.isidentifier() and not keyword.iskeyword(name):
            return f"slots[{op[1]}].{name} = {expr(op[3])}"
        return f"setattr(slots[{op[1]}], {const(name)}, {expr(op[3])})"
    if tag == "setitem":
        return f"slots[{op[1]}][{const(op[2])}] = {expr(op[3])}"
    if tag == "call":
        args = [expr(a) for a in op[3]] + [f"{k}={expr(a)}" for k, a in op[4].items()]
        return f"getattr(slots[{op[1]}], {const(op[2])})({', '.join(args)})"
    if tag == "global":
        return f"{const(op[1])}[{const(op[2])}] = {expr(op[3])}"
    if tag == "cell":
        return f"{const(op[1])}.cell_contents = {expr(op[3])}"
    raise LookupError(tag)


_VIEW_OPS = frozenset({"transpose", "expand_dims", "squeeze", "broadcast_to", "diagonal", "real", "imag"})


def view_base(node):
    """The id of the node whose array `node`'s value is surely a view of (through basic
    indexing with ints and slices, transposes, ...), or None where it may be a new array (an
    index by arrays, a reshape that copies) or is no view. Two outputs merged into one node
    (`st["v"] = h[0]` in each trip of a loop) that view one eager array are two views of it."""
    base = None
    while isinstance(node, ir.Node) and node.inputs and isinstance(node.inputs[0], ir.Node) and (
            node.op in _VIEW_OPS or node.op == "getitem" and all(type(i) is int for i in node.inputs[1:])):
        # (an index the graph computes may be a 0-d array, which NumPy reads as an array index: a copy)
        node = base = node.inputs[0]
    return None if base is None else base.id
