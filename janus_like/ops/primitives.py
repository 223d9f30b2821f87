"""Primitive ops: one registration each, implementation and gradient side by side.

Each `vjp(g, out, *inputs, **params)` returns one cotangent per input (None where the input
is not differentiable or is a Python constant). Gradient rules use only ops from `api` (F),
so the same rule runs eagerly on a tape and symbolically inside a graph.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import api as F
from .indexing import build_index, is_basic, rows_by_product, scatter_add
from .registry import P, bind, register, wants


def _elementwise(name, impl, vjp=None, doc=""):
    return register(name, impl, vjp=vjp, elementwise=True, doc=doc)


def _nd(x):
    return getattr(x, "ndim", 0)


def _is_float(x):
    dt = getattr(x, "dtype", None)
    return dt is None or np.issubdtype(dt, np.inexact)


def _unb(g, x):
    """Reduce a broadcast cotangent back to x's shape and dtype (None for Python constants)."""
    if not hasattr(x, "shape"):
        return None
    if not _is_float(x):
        return None
    return F.sum_to(g, x)


# ------------------------------------------------------------------ arithmetic
# `operator=True`: Python's operator, which on NumPy scalars is NumPy's scalar math. It differs
# from the ufunc in the last bit for complex products and powers, and it warns on integer
# overflow. Graphs set it where eager's code applied the operator to values of rank 0
# (graphgen/values._scalar_math).
# `wants(i) and ...`: an input the eager backward does not need gets no cotangent (False, as None)
_elementwise("add", lambda xp, a, b, operator=False: a + b if operator else xp.add(a, b),
             lambda g, o, a, b, **_: (wants(0) and _unb(g, a), wants(1) and _unb(g, b)))
_elementwise("sub", lambda xp, a, b, operator=False: a - b if operator else xp.subtract(a, b),
             lambda g, o, a, b, **_: (wants(0) and _unb(g, a), wants(1) and _unb(F.neg(g), b)))
_elementwise("mul", lambda xp, a, b, operator=False: a * b if operator else xp.multiply(a, b),
             lambda g, o, a, b, **_: (wants(0) and _unb(F.mul(g, b), a), wants(1) and _unb(F.mul(g, a), b)))
_elementwise("div", lambda xp, a, b, operator=False: a / b if operator else xp.true_divide(a, b),
             lambda g, o, a, b, **_: (wants(0) and _unb(F.div(g, b), a),
                                 wants(1) and _unb(F.neg(F.mul(g, F.div(o, b))), b)))


def _pow_vjp(g, out, a, b, **_):
    # a Python exponent stays a Python number (weakly typed): float32 bases keep float32
    b_minus_1 = F.sub(b, 1) if hasattr(b, "shape") else b - 1
    ga = _unb(F.mul(g, F.mul(b, F.pow(a, b_minus_1))), a) if hasattr(a, "shape") and wants(0) else None
    gb = None
    if hasattr(b, "shape") and _is_float(b) and wants(1):
        if hasattr(a, "shape") and not isinstance(a, np.generic):
            safe_log = F.where(F.gt(a, 0), F.log(F.where(F.gt(a, 0), a, 1)), 0)
        else:  # a constant base: its log is a NumPy scalar, which a GPU operand accepts (a 0-d host array not)
            safe_log = np.where(a > 0, np.log(np.where(a > 0, a, 1)), 0)[()]
        gb = _unb(F.mul(g, F.mul(safe_log, out)), b)
    return ga, gb


def _power(xp, a, b, operator=False, ufunc=False):
    """`a ** b`: on a NumPy array (not 0-d) with a Python-number exponent, the operator itself, which
    NumPy runs as np.square, np.sqrt or np.reciprocal for 2, 0.5 and -1 (the same values as
    np.power, but its floating-point warnings name those ufuncs); otherwise, and for an explicit
    `np.power(a, b)` (`ufunc`), np.power."""
    if operator or not ufunc and type(b) in (int, float) and type(a) is np.ndarray and a.ndim:
        return a ** b
    return xp.power(a, b)


_elementwise("pow", _power, _pow_vjp)
_elementwise("neg", lambda xp, a, operator=False: -a if operator else xp.negative(a),
             lambda g, o, a, **_: (F.neg(g),))
_elementwise("maximum", lambda xp, a, b: xp.maximum(a, b),
             lambda g, o, a, b: (wants(0) and _unb(F.where(F.ge(a, b), g, 0), a),
                                 wants(1) and _unb(F.where(F.ge(a, b), 0, g), b)))
_elementwise("minimum", lambda xp, a, b: xp.minimum(a, b),
             lambda g, o, a, b: (wants(0) and _unb(F.where(F.le(a, b), g, 0), a),
                                 wants(1) and _unb(F.where(F.le(a, b), 0, g), b)))
_elementwise("where", lambda xp, c, a, b: xp.where(c, a, b),
             lambda g, o, c, a, b: (None, _unb(F.where(c, g, 0), a), _unb(F.where(c, 0, g), b)))

# ------------------------------------------------------------------ unary math
_elementwise("exp", lambda xp, x: xp.exp(x), lambda g, o, x: (F.mul(g, o),))
_elementwise("log", lambda xp, x: xp.log(x), lambda g, o, x: (F.div(g, x),))
_elementwise("tanh", lambda xp, x: xp.tanh(x), lambda g, o, x: (F.mul(g, F.sub(1, F.mul(o, o))),))


try:  # NumPy 2 keeps the floating-point error state in a context variable
    from numpy._core._ufunc_config import _extobj_contextvar as _ERR_STATE
except ImportError:  # pragma: no cover - NumPy 1.x: np.errstate
    _ERR_STATE = None
_QUIET: dict = {}  # an error state -> the same state with overflow ignored
_ONE = {np.dtype(t): np.array(1, t) for t in (np.float16, np.float32, np.float64)}


def _over_ignored():
    """The current error state with overflow ignored: what `np.errstate(over="ignore")` sets,
    made once per state (a key stays referenced, so its id is never reused for another)."""
    state = _ERR_STATE.get()
    quiet = _QUIET.get(state)
    if quiet is None:
        with np.errstate(over="ignore"):
            quiet = _ERR_STATE.get()
        if len(_QUIET) >= 64:
            _QUIET.clear()
        _QUIET[state] = quiet
    return quiet


def sigmoid_one_buffer(x):
    """The sigmoid primitive's 1 / (1 + exp(-x)) on a float array, bit for bit, in one buffer:
    three ufuncs write in place where the primitive allocates four arrays (14.7 -> 10.5 us on a
    strided 16 x 128 LSTM gate). Only the exp runs with overflow ignored, and it sets that state
    directly: building, entering and leaving an `np.errstate` took ~2 us of the ~14 (the
    context variable's set and reset, ~0.4). The 1s are 0-d arrays of x's dtype, which NumPy
    does not convert at each call (the same loop and value as the Python int)."""
    t = np.negative(x)
    if _ERR_STATE is None:  # pragma: no cover
        with np.errstate(over="ignore"):
            np.exp(t, out=t)
    else:
        token = _ERR_STATE.set(_over_ignored())
        try:
            np.exp(t, out=t)
        finally:
            _ERR_STATE.reset(token)
    one = _ONE.get(t.dtype, 1)
    np.add(t, one, out=t)
    return np.true_divide(one, t, out=t)


def _sigmoid(xp, x):
    # 1 / (1 + exp(-x)) overflows harmlessly to 0 for very negative x; keep NumPy's dtype. A
    # float NumPy array takes the same ufuncs in one buffer (0.56-0.85 of the time, small to
    # (64, 256)), as the plan does.
    if xp is np and type(x) is np.ndarray and x.ndim and x.dtype in _ONE:
        return sigmoid_one_buffer(x)
    with np.errstate(over="ignore"):
        return 1 / (1 + xp.exp(-x))


FILLED_MAX_BYTES = 1 << 20  # per cached constant; 32 of them at most: 32 MiB
_FILLED: dict = {}  # (shape, dtype, number, its sign) -> the read-only array


def filled(shape, dtype, value):
    """A read-only array of the Python number `value` (cast to dtype) of `shape`, cached (32
    arrays at most; a lookup costs ~0.2 us, eager's relu asks on every call), or None above
    FILLED_MAX_BYTES. NumPy's maximum and minimum take their vectorized loop only when both
    operands are arrays of the result's shape: against a number (a 0-d operand, a stride-0
    broadcast) they loop element by element, 2-3.5x slower ((64, 256) float32: 7.4 against
    2.3 us; (8, 16, 32, 32): 53 against 18). The same values, NaN and -0.0 included."""
    key = (shape, dtype, value, math.copysign(1.0, value))  # 0.0 and -0.0 are different arrays
    out = _FILLED.get(key)
    if out is None:
        dt = np.dtype(dtype)
        if math.prod(shape) * dt.itemsize > FILLED_MAX_BYTES:
            return None
        out = np.full(tuple(int(d) for d in shape), np.array(value, dt), dt)
        out.flags.writeable = False  # shared by every call that reads it
        if len(_FILLED) >= 32:
            _FILLED.clear()
        _FILLED[key] = out
    return out


def _relu(xp, x):
    # from ~512 elements the vector loop saves more than the cached array's lookup costs
    if xp is np and type(x) is np.ndarray and x.size >= 512 and x.dtype in _ONE \
            and (zeros := filled(x.shape, x.dtype, 0)) is not None:
        return np.maximum(x, zeros)
    return xp.maximum(x, 0)


_elementwise("sigmoid", _sigmoid, lambda g, o, x: (F.mul(g, F.mul(o, F.sub(1, o))),))
# relu's gradient multiplies by the mask, as hand-written NumPy does (`d *= a > 0`): one fast
# ufunc instead of np.where (~4x slower on a (64, 256) float32 block). The one difference from a
# select: a NaN or infinite gradient at an inactive unit gives NaN instead of 0.
_elementwise("relu", lambda xp, x: _relu(xp, x), lambda g, o, x: (F.mul(g, F.gt(x, 0)),))
_elementwise("sqrt", lambda xp, x: xp.sqrt(x), lambda g, o, x: (F.div(g, F.mul(o, 2)),))
# np.square called by the user (its warnings name it; the library's own squares are products)
_elementwise("square", lambda xp, x: xp.square(x), lambda g, o, x: (F.mul(g, F.mul(x, 2)),))
_elementwise("abs", lambda xp, x, operator=False: abs(x) if operator else xp.abs(x),
             lambda g, o, x, **_: (F.mul(g, F.sign(x)),))
_elementwise("sin", lambda xp, x: xp.sin(x), lambda g, o, x: (F.mul(g, F.cos(x)),))
_elementwise("cos", lambda xp, x: xp.cos(x), lambda g, o, x: (F.neg(F.mul(g, F.sin(x))),))
_elementwise("clip", lambda xp, x, lo=None, hi=None: xp.clip(x, lo, hi),
             lambda g, o, x, lo=None, hi=None: (F.where(F.eq(o, x), g, 0),))
# np.clip itself with its bounds as operands: an integer array clipped by numbers the graph computes
# (NumPy drops a Python-int bound beyond the dtype's range, where maximum/minimum would raise)
register("clip_bounds", lambda xp, x, lo, hi: xp.clip(x, lo, hi))
_elementwise("cast", lambda xp, x, dtype: x.astype(dtype),
             lambda g, o, x, dtype: (F.cast(g, x.dtype) if _is_float(x) else None,))
_elementwise("stop_gradient", lambda xp, x: x)

# ------------------------------------------------------------------ not differentiable
for _name, _ufunc in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                      ("eq", "equal"), ("ne", "not_equal"), ("logical_and", "logical_and"),
                      ("logical_or", "logical_or")]:
    _elementwise(_name, (lambda u: lambda xp, a, b: getattr(xp, u)(a, b))(_ufunc))
_elementwise("logical_not", lambda xp, a: xp.logical_not(a))
_elementwise("sign", lambda xp, x: xp.sign(x))
register("argmax", lambda xp, x, axis=None, keepdims=False: xp.argmax(x, axis=axis, keepdims=keepdims))
register("argmin", lambda xp, x, axis=None, keepdims=False: xp.argmin(x, axis=axis, keepdims=keepdims))
register("zeros_like", lambda xp, x, dtype=None: xp.zeros_like(x, dtype=dtype))
register("ones_like", lambda xp, x, dtype=None: xp.ones_like(x, dtype=dtype))
register("full_like", lambda xp, x, value, dtype=None: xp.full_like(x, value, dtype=dtype),
         doc="an array shaped like x filled with value (a number, possibly one the graph computes)")


# ------------------------------------------------------------------ reductions
def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axis = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axis))


def _restore(g, x, axis, keepdims):
    """Re-insert reduced axes into g so it broadcasts against x."""
    if keepdims or _nd(x) == 0:
        return g
    return F.expand_dims(g, _axes(axis, _nd(x))) if _nd(g) or axis is not None else g


def _sum_vjp(g, out, x, axis=None, keepdims=False, dtype=None):
    return (F.broadcast_like(_restore(g, x, axis, keepdims), x),)


def _reduced_count(x, axes):
    """Elements a reduction over `axes` combines (>= 1); read at run time in a shape-generic graph."""
    if _shape_polymorphic(x):
        return bind(P.reduced_count, x, axes=axes)
    return max(int(np.prod([x.shape[a] for a in axes], dtype=np.int64)), 1)


def _mean_vjp(g, out, x, axis=None, keepdims=False):
    count = _reduced_count(x, _axes(axis, _nd(x)))
    return (F.div(F.broadcast_like(_restore(g, x, axis, keepdims), x), count),)


def _shape_polymorphic(x):
    from .registry import _builder

    b = _builder[0]
    return b is not None and getattr(b, "polymorphic", False) and b.claims((x,))


register("reduced_count", lambda xp, x, axes: max(int(np.prod([xp.shape(x)[a] for a in axes], dtype=np.int64)), 1),
         doc="the number of elements a reduction over `axes` combines, as a Python int (at run time)")
register("dim_of", lambda xp, x, axis: int(xp.shape(x)[axis]),
         doc="x.shape[axis] as a Python int, read at run time (graphs for unknown dimensions)")
register("arange", lambda xp, n: xp.arange(n), doc="np.arange(n) for a run-time n")
register("arange_like", lambda xp, x, axis=0: xp.arange(xp.shape(x)[axis]),
         doc="np.arange(x.shape[axis]) computed at run time")


def _minmax_vjp(g, out, x, axis=None, keepdims=False):
    o = _restore(out, x, axis, keepdims)
    mask = F.cast(F.eq(x, o), x.dtype)
    count = F.sum(mask, axis=axis, keepdims=True)
    share = F.div(_restore(g, x, axis, keepdims), count)
    return (F.mul(mask, share),)


def _arr(xp, x):
    return x if hasattr(x, "ndim") else xp.asarray(x)


# reductions call the array's own method: same result as xp.sum(x, ...), without NumPy's
# Python-level dispatch wrapper (about 1 µs per call on small arrays)
register("sum", lambda xp, x, axis=None, keepdims=False, dtype=None: _arr(xp, x).sum(axis=axis, keepdims=keepdims, dtype=dtype),
         vjp=_sum_vjp)
register("mean", lambda xp, x, axis=None, keepdims=False: _arr(xp, x).mean(axis=axis, keepdims=keepdims), vjp=_mean_vjp)
register("max", lambda xp, x, axis=None, keepdims=False: _arr(xp, x).max(axis=axis, keepdims=keepdims), vjp=_minmax_vjp)
register("min", lambda xp, x, axis=None, keepdims=False: _arr(xp, x).min(axis=axis, keepdims=keepdims), vjp=_minmax_vjp)


# ------------------------------------------------------------------ shapes
register("reshape", lambda xp, x, shape: xp.reshape(x, shape), vjp=lambda g, o, x, shape: (F.reshape_like(g, x),))
register("reshape_like", lambda xp, x, like: xp.reshape(x, xp.shape(like)),
         vjp=lambda g, o, x, like: (F.reshape_like(g, x), None))
register("transpose", lambda xp, x, axes=None: xp.transpose(x, axes),
         vjp=lambda g, o, x, axes=None: (F.transpose(g, None if axes is None else
                                                     tuple(int(i) for i in np.argsort([a % _nd(x) for a in axes]))),))
def _expand_dims(xp, x, axis):
    # one int axis of an ndarray as a reshape (the same view): np.expand_dims normalizes an
    # axis tuple first, ~3 µs a call, and a vector's matmul gradient makes two per tree node
    if type(axis) is int and type(x) is np.ndarray and -x.ndim - 1 <= axis <= x.ndim:
        shape = list(x.shape)
        shape.insert(axis if axis >= 0 else x.ndim + 1 + axis, 1)
        return x.reshape(shape)
    return xp.expand_dims(x, axis)


register("expand_dims", _expand_dims, vjp=lambda g, o, x, axis: (F.reshape_like(g, x),))
register("squeeze", lambda xp, x, axis=None: xp.squeeze(x, axis), vjp=lambda g, o, x, axis=None: (F.reshape_like(g, x),))
register("broadcast_to", lambda xp, x, shape: xp.broadcast_to(x, shape), vjp=lambda g, o, x, shape: (F.sum_to(g, x),))
register("broadcast_like", lambda xp, x, like: xp.broadcast_to(x, xp.shape(like)),
         vjp=lambda g, o, x, like: (F.sum_to(g, x), None))


@functools.lru_cache(maxsize=4096)
def sum_to_axes(g_shape, shape) -> tuple:
    """The axes `sum_to` reduces to bring a value of g_shape back to shape (its leading axes,
    and the axes where shape has 1 and g_shape does not). Generated code for unknown
    dimensions calls it on every run: cached (a lookup is ~0.1 us, the computation ~1.5 us)."""
    lead = len(g_shape) - len(shape)
    return tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and g_shape[i + lead] != 1)


def _sum_to(xp, g, like):
    shape = xp.shape(like)
    lead = xp.ndim(g) - len(shape)
    axes = sum_to_axes(xp.shape(g), shape)
    if axes:
        g = xp.sum(g, axis=axes, keepdims=True)
        if lead:
            g = g.reshape(shape)
    dt = getattr(like, "dtype", None)
    if dt is not None and g.dtype != dt and np.issubdtype(dt, np.inexact):
        g = g.astype(dt)
    return g


register("sum_to", _sum_to, vjp=lambda g, o, x, like: (F.broadcast_like(g, x), None),
         doc="reduce a broadcast value to the shape (and float dtype) of `like`")


def _concat_vjp(g, out, *xs, axis=0):
    grads, start = [], 0
    nd = _nd(xs[0])
    ax = axis % nd
    for x in xs:
        stop = start + x.shape[ax]
        index = (slice(None),) * ax + (slice(start, stop),)
        grads.append(F.getitem(g, index))
        start = stop
    return tuple(grads)


register("concatenate", lambda xp, *xs, axis=0: xp.concatenate(xs, axis=axis), vjp=_concat_vjp)


# ------------------------------------------------------------------ indexing
def _getitem(xp, x, *operands, index):
    return x[build_index(index, operands)]


def _getitem_grad(xp, g, x, *operands, index, unique=False, dense=False):
    # unique=True (set by a graph pass when the index provably hits each position once) lets a
    # plain assignment replace the much slower unbuffered add.at; dense=True (set by a
    # reassociating pass for a small table's rows) sums them as a one-hot product
    if dense and xp is np:
        return rows_by_product(np.shape(x), operands[0], g)
    out = xp.zeros(xp.shape(x), dtype=x.dtype if np.issubdtype(x.dtype, np.inexact) else g.dtype)
    idx = build_index(index, operands)
    if unique or is_basic(index):
        out[idx] = g
    elif xp is np:
        scatter_add(out, idx, g)
    else:
        xp.add.at(out, idx, g)
    return out


def _index_add(xp, x, v, *operands, index):
    # x with v added at an index that hits each position at most once (passes/onehot.py makes it
    # from `getitem_grad + x` only for such an index: a repeated position would be added once)
    y = x.copy(order="K")
    y[build_index(index, operands)] += v
    return y


def _index_update(xp, x, v, *operands, index):
    # (x's layout kept, as eager's write in place keeps it: a later reduction adds in its order)
    y = x.copy(order="K")
    y[build_index(index, operands)] = v
    return y


register("getitem", _getitem,
         vjp=lambda g, o, x, *ops, index: (F.getitem_grad(g, x, *ops, index=index),) + (None,) * len(ops))
register("index_add", _index_add, doc="x with v added at an index (a graph pass makes it; no gradient)")
register("getitem_grad", _getitem_grad,
         vjp=lambda g, o, gy, x, *ops, index, unique=False, dense=False:
         (F.getitem_raw(g, ops, index),) + (None,) * (1 + len(ops)))


def _index_update_vjp(g, out, x, v, *ops, index):
    gx = F.index_update_raw(g, 0, ops, index) if _is_float(x) else None
    gv = None
    if hasattr(v, "shape"):
        picked = F.getitem_raw(g, ops, index)
        if not is_basic(index):  # repeated positions: only the write that survives gets gradient
            picked = F.where(bind(P.last_write_mask, x, *ops, index=index), picked, 0)
        gv = _unb(picked, v)
    return (gx, gv) + (None,) * len(ops)


def _last_write_mask(xp, x, *operands, index):
    """True where an element of x[index] is the one an assignment x[index] = ... leaves in place:
    the same assignment, done with each element's position, tells which write survived."""
    idx = build_index(index, operands)
    shape = x[idx].shape
    order = xp.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    target = xp.full(xp.shape(x), -1, dtype=order.dtype)
    target[idx] = order
    return target[idx] == order


register("last_write_mask", _last_write_mask, doc="which writes of an advanced-index assignment survive")


register("index_update", _index_update, vjp=_index_update_vjp,
         doc="functional `y = x.copy(); y[index] = v`")
