"""Helpers of the generated plan. Run-time ones, bound as globals of the plan: a float mean from
a run-time count, a small broadcast as a copy, the `out=` buffer when the layouts agree. (The
sigmoid in one buffer, which eager shares, is `ops.primitives.sigmoid_one_buffer`.) And the
emitter's decisions about them: whether a broadcast may be a copy, a Python number as a 0-d
array of a dtype, Python's operators for Python-number nodes, the plan's NumPy functions bound as its globals."""
from __future__ import annotations

import operator
import re

import numpy as np

from .. import ir
from ..ops.registry import REGISTRY


def _broadcast_copy(x, shape):
    """np.broadcast_to's values as a new array (its view's Python wrapper costs more than the
    copy for small arrays)."""
    out = np.empty(shape, x.dtype)
    np.copyto(out, x)
    return out


def copy_is_exact(node, users) -> bool:
    """Whether every reader of `node` (top-level readers: `users` from scalars.readers) computes
    the same values from a contiguous copy as from the broadcast view: elementwise ops do, but a
    product or a reduction may take another loop (another rounding) on a stride-0 operand. And
    the same layout: another operand of the reader's shape is C-ordered (NumPy lays out a result
    of the stride-0 view alone by its strides, `np.broadcast_to(row, (3, 3)) * 1` in F order)."""
    readers = users.get(node.id)
    return bool(readers) and all(getattr(REGISTRY.get(u.op), "elementwise", False) and _c_operand(u, node)
                                 for u in readers)


def _c_operand(u, node) -> bool:
    """Node u has an operand other than `node`, of u's shape, that is surely C-ordered."""
    return u.aval is not None and any(i is not node and isinstance(i, ir.Node) and i.aval is not None
                                      and i.aval[0] == u.aval[0] and c_ordered(i) for i in u.inputs)


def out_buffer(buf, other):
    """`buf` as the `out=` of a binary ufunc whose other operand is `other`, when both have one
    memory layout; else None (a new array). NumPy lays a result out like its operands: a buffer
    laid out otherwise (C-ordered against a transposed, F-ordered operand) would give the value
    other strides than eager's, and a later product or reduction another rounding."""
    if buf.strides == other.strides:  # the common case: one shape, one layout
        return buf
    b, o = buf.flags, other.flags
    return buf if (b.c_contiguous and o.c_contiguous) or (b.f_contiguous and o.f_contiguous) else None


def _mean_axes(n, x):
    """(axis parameter, the axes it reduces, x's rank) of a mean node."""
    axis, nd = n.params.get("axis"), len(x.aval[0])
    axes = tuple(range(nd)) if axis is None else tuple(i % nd for i in (axis if isinstance(axis, tuple) else (axis,)))
    return axis, axes, nd


def _in_dtype(value, dt):
    """A Python int or float as a 0-d array of float dtype dt; None: another type, not finite or inexact in dt."""
    if type(value) not in (int, float):
        return None
    with np.errstate(all="ignore"):
        a = np.array(value, dt)
    return None if not np.isfinite(a) or (type(value) is int and int(a) != value) else a


def _mean(x, total, count, axis, keepdims):
    """A float mean from its sum and a run-time count; an empty one is left to ndarray.mean
    (its NaN and its warning)."""
    return total / count if count else x.mean(axis=axis, keepdims=keepdims)


# Python's operators written out for a PY_OP node (the same operation on the same objects as the
# operator module's function, without a call through a constant)
PY_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
             operator.floordiv: "//", operator.mod: "%", operator.lt: "<", operator.le: "<=", operator.gt: ">",
             operator.ge: ">=", operator.eq: "==", operator.ne: "!=", operator.and_: "&", operator.or_: "|"}
PY_FORMS = {**{fn: f"({{}} {symbol} {{}})" for fn, symbol in PY_BINARY.items()},
            operator.not_: "(not {})", operator.truth: "bool({})", operator.neg: "(-{})"}


_NUMPY_NAME = re.compile(r"\bnp\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")


def bind_numpy(lines, env):
    """`np.add(...)` -> `NP_add(...)`, `np.add.reduce` -> `NP_add_reduce`, with the function
    itself in the plan's globals: one dictionary lookup per call instead of a global lookup and
    one attribute lookup per dot (~50 ns each; a small graph's plan makes dozens per call)."""
    def bind(m):
        obj = np
        try:
            for part in m.group(1).split("."):
                obj = getattr(obj, part)
        except AttributeError:
            return m.group(0)
        name = "NP_" + m.group(1).replace(".", "_")
        if env.setdefault(name, obj) != obj:  # `np.add.reduce` is a new (equal) object each time
            return m.group(0)
        return name
    return [_NUMPY_NAME.sub(bind, line) for line in lines]


def control_lines(em, n, indent) -> None:
    """A COND or LOOP node as Python source, for an emitter `em` with `lines`, `arg(node)` and
    `emit(nodes, indent)` (the NumPy plan's and the GPU plan's): an if/else assigning the taken
    branch's outputs, or a bounded for loop carrying its placeholders."""
    pad, v = " " * indent, f"v{n.id}"

    def values(outs):
        return ", ".join(em.arg(o) for o in outs) + ("," if len(outs) == 1 else "")

    if n.op == ir.COND:
        em.lines.append(f"{pad}if {em.arg(n.inputs[0])}:")
        em.emit(n.params["then_nodes"], indent + 4)
        em.lines.append(f"{pad}    {v} = ({values(n.params['then_outs'])})")
        em.lines.append(f"{pad}else:")
        em.emit(n.params["else_nodes"], indent + 4)
        em.lines.append(f"{pad}    {v} = ({values(n.params['else_outs'])})")
        return
    phs = n.params["placeholders"]
    names = ", ".join(f"v{p.id}" for p in phs) + ("," if len(phs) == 1 else "")
    em.lines.append(f"{pad}{names} = {values(n.inputs)}")
    em.lines.append(f"{pad}for _it{n.id} in range({n.params['max_iter']}):")
    em.emit(n.params["cond_nodes"], indent + 4)
    em.lines.append(f"{pad}    if not v{n.params['cond'].id}: break")
    em.emit(n.params["body_nodes"], indent + 4)
    em.lines.append(f"{pad}    {names} = {values(n.params['body_outs'])}")
    em.lines.append(f"{pad}else:")
    em.lines.append(f"{pad}    raise RuntimeError('loop ran past {n.params['max_iter']} iterations')")
    em.lines.append(f"{pad}{v} = ({names})")


def draw_call(em, n) -> str:
    """A `draw_of` node as the method call itself: `np.random.choice(3, p=v8)`, `C4.normal(0.0,
    0.1, size=C5)` (the node's Generator a global of the plan, or `S[3]`: an input's), each of
    the node's inputs in its place in the arguments. The registry's kernel fills the arguments'
    templates at every call (~0.6 µs of a softmax policy's 9 µs step)."""
    from ..ops.draws import SlotRng

    rng = n.params["rng"]
    owner = "np.random" if rng is None else f"S[{rng.index}]" if rng.__class__ is SlotRng else em.const(rng)
    return filled_call(em, n, f"{owner}.{n.params['method']}")


def filled_call(em, n, callee) -> str:
    """`callee(...)` with the node's `args`/`kwargs` templates as text, each Hole its input
    (a `draw_of` node's method, a `numpy_call` node's function: `C4(v3, C5, axis=0)`)."""
    from ..ops.draws import Hole

    p = n.params

    def text(t):
        if t.__class__ is Hole:
            return em.arg(n.inputs[t.index])
        if t.__class__ is list:
            return "[" + ", ".join(text(v) for v in t) + "]"
        if t.__class__ is tuple:
            return "(" + "".join(text(v) + ", " for v in t) + ")"
        return em.const(t)

    parts = [text(a) for a in p["args"]] + [f"{k}={text(v)}" for k, v in p["kwargs"].items()]
    return f"{callee}({', '.join(parts)})"


_C_ORDERED_OPS = ("matmul", "dot", "copy")
# ops laid out as their first operand (NumPy's order "K": `np.zeros_like`, a copy written at an index)
_AS_FIRST_OPS = ("zeros_like", "ones_like", "full_like", "copy_keep", "index_update", "index_add")


def c_ordered(x, depth=6, known=frozenset(), strict=False) -> bool:
    """Whether node x's value is surely C-ordered when the plan runs (or has at most one axis
    longer than 1, where order does not matter): a product's, a C copy's, a constant's that is,
    `np.zeros_like`'s of such an operand (and other ops laid out as their operand), an input's
    whose guard checks it (`c_ordered` param, graphgen/layouts.py), an elementwise op's (or a
    cast's) of such operands, or of one such operand of the result's shape (NumPy lays a result
    out in C order when one full-size operand is: the others agree or conflict, and a conflict
    gives C order). An unchecked input or an index's result may be F-ordered (`x[:, idx]` is): a
    ufunc keeps its operands' order (`np.maximum(x, 0.0)` of an F-ordered x is F-ordered), and a
    reduction over it sums in that order. `known`: ids of nodes known to be C-ordered. `strict`:
    C-contiguous (an input or a view with one axis may have a negative or gapped stride)."""
    if not isinstance(x, ir.Node) or x.id in known:
        return True
    if x.aval is not None and sum(d != 1 for d in x.aval[0]) <= 1 and not (strict and x.op in ir.ALIASING_OPS):
        return True  # (one axis longer than 1: C and F order are one order)
    if x.op in _C_ORDERED_OPS:
        return True
    if x.op == ir.CONST:
        return bool(np.asarray(x.params["value"]).flags.c_contiguous)
    if x.op == ir.INPUT:
        return bool(x.params.get("c_ordered"))
    if x.op in ("stack", "concatenate"):  # (of C-ordered arrays; of Fortran-ordered ones, Fortran-ordered)
        return depth > 0 and all(c_ordered(i, depth - 1, known) for i in x.inputs)
    if x.op in _AS_FIRST_OPS:
        return depth > 0 and bool(x.inputs) and c_ordered(x.inputs[0], depth - 1, known)
    op = REGISTRY.get(x.op)
    if depth <= 0 or op is None or not op.elementwise or (x.params and x.op != "cast"):
        return False
    nodes = [i for i in x.inputs if isinstance(i, ir.Node)]
    full = [i for i in nodes if x.aval is not None and i.aval is not None and i.aval[0] == x.aval[0]]
    return any(c_ordered(i, depth - 1, known) for i in full) or all(c_ordered(i, depth - 1, known) for i in nodes)


def python_number(b) -> bool:
    """Operand b is a Python number when the plan runs: a constant, or an input read from one (a
    step's `p` argument). `x ** p` then takes NumPy's scalar fast path, as eagerly (np.sqrt for
    0.5, np.square for 2: their floating-point warnings name those ufuncs, not np.power)."""
    if isinstance(b, ir.Node):
        return b.op == ir.INPUT and bool(b.params.get("python")) and b.aval is not None and b.aval[0] == ()
    return type(b) in (int, float)
