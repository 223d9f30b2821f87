"""Plan forms for values of one element: a batch-1 step's loss, its one label, a step counter.

On such values NumPy's per-call setup is the whole cost, and each form below computes the same
value in the same dtype without it (NumPy 2.4, one tiny_mlp step):

- `operator`: add, sub, mul, div, neg and abs of rank-0 NumPy values (and Python numbers) as
  Python operators. On NumPy scalars that is NumPy's scalar math, the same IEEE operation in the same
  dtype (`np.add(c, 1)` 1.06 us, `c + 1` 0.04 us on an int64 counter); a 0-d array operand
  goes through the ufunc as before. The result dtype is checked at compile time by running both
  forms on sample values, so a NumPy whose promotion rules differ keeps the ufunc call. Integer
  scalar math warns on overflow where the ufunc wraps silently, so an integer NumPy scalar
  operand takes the operator only in a node made from eager's operator (`operator=True`,
  graphgen/values._scalar_math: `v * v` warns, `np.multiply(v, v)` does not, as eagerly). Such
  a node is also the only one given a power or complex operands: there NumPy's scalar math
  differs from the ufunc in the last bit. One difference remains: an explicit ufunc call on
  float NumPy scalars runs as the operator, the same value, whose overflow warning says
  "scalar multiply" where eager's says "multiply".
- `reduce`: sum, mean, max or min over every axis of a float array of one element, as the
  element (`x[0, 0]`, plus a zero of its dtype for sum and mean, whose reduction starts from 0.0
  and so turns -0.0 into 0.0): 1.2 against 0.1 us.
- `index`: an index whose array operands are integer arrays of shape (1,) (one example's label,
  a constant row) and which addresses single elements, as scalar indices (`x[0, y[0]]`, the
  result made a (1,) array again with `[None]`): 1.7 against 0.7 us for a gather, 1.4 against
  0.5 us for the one-hot gradient it scatters into zeros, and a scalar `+=` for the sparse
  cross-entropy gradient (passes/onehot.py) at any size. An index out of range raises
  IndexError either way (and the plan's caller then runs the call eagerly).
- `scalar_pairs` / `pair_scalar`: a two-class softmax's keepdims max and sum over one row held
  as NumPy scalars where every reader is a binary ufunc whose other operand has the result's
  shape (an RL policy's call: 12.4 against 11.5 us).
- `packed_numbers` / `pack`: an integer array concatenated from Python numbers (a tree's word
  ids) as one `np.array` call.
"""
from __future__ import annotations

import math
import operator as _op

import numpy as np

from .. import ir
from .buffers import _known

_OPERATORS = {"add": (_op.add, "+", np.add), "sub": (_op.sub, "-", np.subtract),
              "mul": (_op.mul, "*", np.multiply), "div": (_op.truediv, "/", np.true_divide),
              "pow": (_op.pow, "**", np.power)}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))
_INTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                    np.uint64))
_ONE_OPERAND = {"neg": (_op.neg, "(-{})", np.negative), "abs": (abs, "abs({})", np.abs)}  # (its form's text)


def _first(em, x, rank) -> str:
    """Source of x's first element, `x[0, 0]` for rank 2 (a NumPy scalar)."""
    return f"{em.arg(x)}[{', '.join(['0'] * rank)}]"


def _rank0(x) -> bool:
    return isinstance(x, ir.Node) and ir.numpy_typed(x) and x.aval is not None and tuple(x.aval[0]) == ()


def operator(em, n) -> str | None:
    """`(a + b)` / `(-a)` / `abs(a)` for an elementwise node of rank-0 NumPy operands, or None.
    A node made from eager's operator (`operator=True`: a power, a complex product) takes any
    number operands, Python numbers held in the graph among them."""
    made = n.params == {"operator": True}
    if n.params and not made or n.aval is None or tuple(n.aval[0]) != () \
            or n.op not in (*_OPERATORS, *_ONE_OPERAND) or n.op == "pow" and not made:
        return None
    if len(n.inputs) != (1 if n.op in _ONE_OPERAND else 2):
        return None
    py, sym, uf = _ONE_OPERAND[n.op] if n.op in _ONE_OPERAND else _OPERATORS[n.op]
    allowed = _FLOATS + (_INTS + _COMPLEX if made else _INTS if n.op != "div" else ())
    samples = []
    for i in n.inputs:
        if isinstance(i, ir.Node):
            if made and not ir.numpy_typed(i) and i.aval is not None and tuple(i.aval[0]) == () \
                    and np.dtype(i.aval[1]).kind in "iufc":  # a Python number held in the graph
                samples.append(np.dtype(i.aval[1]).type(1).item())
                continue
            if not _rank0(i) or np.dtype(i.aval[1]) not in allowed:
                return None
            if not made and np.dtype(i.aval[1]) in _INTS and ir.numpy_scalar_node(i):
                return None  # an explicit ufunc call's: it wraps silently, where the operator warns
            samples.append(np.dtype(i.aval[1]).type(1))
        elif type(i) in (int, float) or made and (type(i) is complex or isinstance(i, np.generic)):
            samples.append(i)
        else:
            return None
    if not any(isinstance(i, ir.Node) and ir.numpy_typed(i) or isinstance(i, np.generic) for i in n.inputs):
        return None
    if made:  # its kernel applies the operator too (ops/primitives.py): only the result dtype is checked
        uf = py
    try:
        with np.errstate(all="ignore"):
            a, b = py(*samples), uf(*samples)
    except Exception:  # an int that does not fit the array's dtype: the ufunc's own error
        return None
    if type(a) is not type(b) or not isinstance(a, np.generic) or np.dtype(type(a)) != np.dtype(n.aval[1]):
        return None
    if n.op in _ONE_OPERAND:
        return sym.format(em.arg(n.inputs[0]))
    return f"({em.arg(n.inputs[0])} {sym} {em.arg(n.inputs[1])})"


def reduce(em, n) -> str | None:
    """The element of a one-element float array reduced over every axis, or None."""
    x = n.inputs[0] if n.inputs else None
    shape = _known(x) if em.static_shapes else None
    if n.op not in ("sum", "mean", "max", "min") or not shape or len(n.inputs) != 1 or not ir.numpy_typed(x) \
            or int(np.prod(shape)) != 1 or np.dtype(x.aval[1]) not in _FLOATS or n.aval is None \
            or np.dtype(n.aval[1]) != np.dtype(x.aval[1]) or tuple(n.aval[0]) != ():
        return None
    p = n.params
    axis = p.get("axis")
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    if p.get("keepdims") or p.get("dtype") is not None or set(p) - {"axis", "keepdims", "dtype"} \
            or sorted(a % len(shape) for a in axes) != list(range(len(shape))):
        return None
    element = _first(em, x, len(shape))
    if n.op in ("max", "min"):
        return element
    zero = em.const(np.dtype(x.aval[1]).type(0.0))
    return f"({element} + {zero})"


def single_position(x, template, operands) -> bool:
    """True when `x[template]` picks one element of x (of known shape) through integer arrays
    of shape (1,), and integers: an index each scalar form below can take."""
    items, _ = template
    shape = _known(x)
    if not shape or not ir.numpy_typed(x) or len(items) != len(shape):
        return False
    arrays = 0
    for item in items:
        if type(item) is int:
            continue
        if not (type(item) is tuple and item[0] == "slot"):
            return False  # a slice, None or Ellipsis keeps its axis
        a = operands[item[1]]
        if not (isinstance(a, ir.Node) and ir.numpy_typed(a) and _known(a) == (1,)
                and np.dtype(a.aval[1]).kind in "iu"):
            return False
        arrays += 1
    return arrays > 0


def index(em, x, template, operands) -> str | None:
    """The source of a scalar index equal to `template` on operands (`single_position`), or None."""
    if not em.static_shapes or not single_position(x, template, operands):
        return None
    items, single = template
    parts = []
    for item in items:
        a = operands[item[1]] if type(item) is tuple else item
        if not isinstance(a, ir.Node):
            parts.append(repr(a))
        elif a.op == ir.CONST:
            parts.append(repr(int(np.asarray(a.params["value"]).reshape(-1)[0])))
        else:
            parts.append(f"{em.arg(a)}[0]")
    return parts[0] if single else ", ".join(parts)


def element(em, g) -> str | None:
    """g's one element (a NumPy scalar), or None when g may hold more."""
    if not em.static_shapes or not isinstance(g, ir.Node) or not ir.numpy_typed(g):
        return None
    shape = _known(g)
    if shape is None or int(np.prod(shape)) != 1:
        return None
    if g.op == ir.CONST:
        return em.const(np.asarray(g.params["value"]).reshape(-1)[0])
    return em.arg(g) if shape == () else _first(em, g, len(shape))


# binary ufuncs whose result shape a full-shape operand decides, whatever the other's shape;
# unary ones that keep a NumPy scalar a scalar
_BINARY = {"add", "sub", "mul", "div", "maximum", "minimum"}
_UNARY = {"log", "exp", "neg", "sqrt", "tanh", "abs"}


def readers(graph: ir.Graph) -> tuple[dict, set]:
    """({node id: the top-level nodes that read it}, ids of the graph's outputs). A conditional
    or loop reads what its blocks and outputs use (order.refs; imported here, since
    passes/onehot.py imports this module)."""
    from ..passes.order import refs

    users: dict = {}
    for n in graph.nodes:
        for i in refs(n):
            users.setdefault(i.id, []).append(n)
    return users, {o.id for o in graph.outputs if isinstance(o, ir.Node)}


def scalar_pairs(graph: ir.Graph, read: tuple[dict, set]) -> set:
    """Ids of one-element pair reductions (`pair_reduce` with keepdims: a two-class softmax's
    max and sum, (1,) or (1, 1)) that the plan may hold as NumPy scalars: every reader, or
    every reader of a unary op in between (a log), is a binary ufunc whose other operand has
    the reader's shape and all share one float dtype, so its values, shape and dtype stay
    the same. The broadcast then takes NumPy's scalar loop (0.92 against 1.46 us for a (2,)
    minus a (1,)), and a sum is the scalars' `+` (0.23 against 0.80 us). `read`: `readers(graph)`."""
    users, outputs = read
    chosen: set = set()

    def dtype_of(x):
        return np.dtype(x.aval[1]) if isinstance(x, ir.Node) and x.aval is not None else None

    def holds(n) -> bool:  # n may be a scalar: every reader gets the same result from one
        dt, readers = dtype_of(n), users.get(n.id, [])
        if n.id in outputs or not readers:
            return False
        for u in readers:
            if u.params or u.errstate is not None or dtype_of(u) != dt:
                return False
            if u.op in _UNARY and len(u.inputs) == 1 and _known(u) == _known(n):
                if not holds(u):
                    return False
            elif u.op in _BINARY and len(u.inputs) == 2 and sum(i is n for i in u.inputs) == 1:
                # the other operand keeps the reader's shape: more than one element, or a
                # constant (another pair held as a scalar would make the reader a scalar)
                other = u.inputs[1] if u.inputs[0] is n else u.inputs[0]
                shape = _known(other)
                if not (ir.numpy_typed(other) and shape == _known(u) and dtype_of(other) == dt
                        and (math.prod(shape) > 1 or other.op == ir.CONST)):
                    return False
            else:
                return False
        return True

    for n in graph.nodes:
        x = n.inputs[0] if n.inputs else None
        shape, xs = _known(n), _known(x)
        if n.op not in ("sum", "max", "min") or not n.params.get("keepdims") or shape is None or xs is None \
                or math.prod(shape) != 1 or sorted(xs) != [1] * (len(xs) - 1) + [2] or dtype_of(n) not in _FLOATS \
                or not ir.numpy_typed(x) or dtype_of(x) != dtype_of(n) or n.params.get("dtype") is not None \
                or (n.op == "sum" and x.op != "exp") or n.errstate is not None:
            continue
        if holds(n):
            chosen.add(n.id)
    return chosen


def pair_scalar(em, n, x) -> str | None:
    """A chosen pair reduction (`scalar_pairs`) as the ufunc, or `+`, of x's two elements."""
    if n.id not in em.scalar_nodes:
        return None
    xs = _known(x)
    second = ["0"] * len(xs)
    second[xs.index(2)] = "1"  # the other axes have length 1
    a, b = _first(em, x, len(xs)), f"{em.arg(x)}[{', '.join(second)}]"
    if n.op == "sum":
        return f"({a} + {b})"
    # NumPy's float32/float64 maximum keeps its first operand only where it is greater or NaN
    # (the second when they are equal: maximum(0.0, -0.0) is -0.0); the same test on the two
    # NumPy scalars gives the same object's value without a ufunc call (0.2 against 0.8-1.1 us)
    p, q, cmp = f"a{n.id}", f"b{n.id}", ">" if n.op == "max" else "<"
    return f"({p} if ({p} := {a}) {cmp} ({q} := {b}) or {p} != {p} else {q})"


def packed_numbers(graph: ir.Graph, read: tuple[dict, set]) -> tuple[dict, set]:
    """Integer arrays made of Python numbers: a `concatenate` on axis 0 of `reshape(k, (1,))`
    of Python ints or bools (a TreeRNN's embedding rows to scatter into, one word id per leaf,
    batched by a pass). The plan makes them as `np.array((k0, k1, ...), dtype)`: one call, where
    each `np.reshape` of a Python int took ~2.7 us and the concatenate more. The same values and
    dtype (reshape gives the dtype NumPy picks for the number, which the aval recorded).
    Returns ({concatenate id: [number nodes]}, ids of reshapes nothing else reads); `read`:
    `readers(graph)`."""
    users, outputs = read

    def number(r, dt):  # the Python number r reshapes to (1,), or None
        k = r.inputs[0] if isinstance(r, ir.Node) and r.op == "reshape" and len(r.inputs) == 1 else None
        if (k is None or tuple(r.params.get("shape", ())) != (1,) or r.aval is None or np.dtype(r.aval[1]) != dt
                or not isinstance(k, ir.Node) or k.aval is None or tuple(k.aval[0]) != () or ir.numpy_typed(k)):
            return None
        return k

    packed: dict = {}
    for n in graph.nodes:
        if n.op != "concatenate" or n.params.get("axis", 0) != 0 or n.aval is None or len(n.inputs) < 2:
            continue
        dt = np.dtype(n.aval[1])
        if dt.kind not in "biu":
            continue
        numbers = [number(r, dt) for r in n.inputs]
        if None not in numbers:
            packed[n.id] = numbers
    unread = {r.id for n in graph.nodes if n.id in packed for r in n.inputs
              if r.id not in outputs and all(u.id in packed for u in users.get(r.id, ()))}
    return packed, unread


def pack(em, n) -> str:
    """The plan's expression for a concatenate `packed_numbers` chose."""
    numbers = ", ".join(em.arg(k) for k in em.packed[n.id])
    return f"np.array(({numbers},), {em.const(np.dtype(n.aval[1]))})"
