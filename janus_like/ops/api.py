"""The functional API (imported as `F`): one thin function per primitive, plus compositions.

Every function here works on Tensors eagerly (recording on active tapes) and on symbolic graph
values while a graph is being generated, because all of them go through `bind`. Compositions
(softmax, cross-entropy, LSTM and GRU cells, dropout, ...) are built from primitives only, so
they need no gradient rule of their own.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import backend
from .indexing import split_index
from . import registry as _registry
from .registry import P, _tapes, bind


def _frozen(v):
    """Make list-valued params hashable (graph params are CSE keys)."""
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, tuple):
        return tuple(_frozen(x) for x in v)
    return v


# ------------------------------------------------------------------ elementwise
def add(a, b): return bind(P.add, a, b)
def sub(a, b): return bind(P.sub, a, b)
def mul(a, b): return bind(P.mul, a, b)
def div(a, b): return bind(P.div, a, b)
def pow(a, b): return bind(P.pow, a, b)  # noqa: A001 - `a ** b`
def power(a, b): return bind(P.pow, a, b, ufunc=True)  # np.power itself (`a ** b` may run np.square)
def neg(a): return bind(P.neg, a)
def exp(x): return bind(P.exp, x)
def log(x): return bind(P.log, x)
def tanh(x): return bind(P.tanh, x)
def sigmoid(x): return bind(P.sigmoid, x)
def relu(x): return bind(P.relu, x)
def sqrt(x): return bind(P.sqrt, x)
def abs(x): return bind(P.abs, x)  # noqa: A001
def sin(x): return bind(P.sin, x)
def cos(x): return bind(P.cos, x)
def sign(x): return bind(P.sign, x)
def floor(x): return bind(P.floor, x)
def ceil(x): return bind(P.ceil, x)
def rint(x): return bind(P.rint, x)
def isnan(x): return bind(P.isnan, x)
def isinf(x): return bind(P.isinf, x)
def isfinite(x): return bind(P.isfinite, x)
def floor_divide(a, b): return bind(P.floor_divide, a, b)
def remainder(a, b): return bind(P.remainder, a, b)
def logaddexp(a, b): return bind(P.logaddexp, a, b)
def log1p(x): return bind(P.log1p, x)
def expm1(x): return bind(P.expm1, x)
def log2(x): return bind(P.log2, x)
def log10(x): return bind(P.log10, x)
def reciprocal(x): return bind(P.reciprocal, x)
def arctan(x): return bind(P.arctan, x)
def sinh(x): return bind(P.sinh, x)
def cosh(x): return bind(P.cosh, x)
def tan(x): return bind(P.tan, x)
def arcsin(x): return bind(P.arcsin, x)
def arccos(x): return bind(P.arccos, x)
def arctan2(a, b): return bind(P.arctan2, a, b)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """np.nan_to_num: NaN to `nan`, infinities to `posinf`/`neginf` (the dtype's largest by default)."""
    return bind(P.nan_to_num, x, nan=float(nan), posinf=None if posinf is None else float(posinf),
                neginf=None if neginf is None else float(neginf))


def tile(x, reps):
    """np.tile: x repeated `reps` times along each axis (a new array)."""
    return bind(P.tile, x, reps=_ints(reps) if isinstance(reps, (tuple, list)) else (int(reps),))


def hypot(a, b): return bind(P.hypot, a, b)
def bitwise_and(a, b): return bind(P.bitwise_and, a, b)
def bitwise_or(a, b): return bind(P.bitwise_or, a, b)
def bitwise_xor(a, b): return bind(P.bitwise_xor, a, b)
def invert(x): return bind(P.invert, x)
def left_shift(a, b): return bind(P.left_shift, a, b)
def right_shift(a, b): return bind(P.right_shift, a, b)


def round(x, decimals=0):  # noqa: A001
    """np.round: to `decimals` places, halves to even (a new array, also of integers)."""
    return bind(P.round, x, decimals=int(decimals))


def cumsum(x, axis=None, dtype=None):
    """np.cumsum: running sums along axis (over x flattened for None)."""
    return bind(P.cumsum, x, axis=None if axis is None else int(axis), dtype=None if dtype is None else np.dtype(dtype))


def prod(x, axis=None, keepdims=False, dtype=None):
    return bind(P.prod, x, axis=_ints(axis), keepdims=bool(keepdims), dtype=None if dtype is None else np.dtype(dtype))


def sort(x, axis=-1):
    """np.sort: a sorted copy along axis (x flattened for None)."""
    return bind(P.sort, x, axis=None if axis is None else int(axis))


def sort_permute(v, x, axis, inverse): return bind(P.sort_permute, v, x, axis=int(axis), inverse=bool(inverse))
def triu(x, k=0): return bind(P.triu, x, k=int(k))
def tril(x, k=0): return bind(P.tril, x, k=int(k))


def diff(x, n=1, axis=-1):
    """np.diff: x[1:] - x[:-1] along axis, n times (for booleans `!=`, as NumPy); x itself for n = 0."""
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if not len(x.shape):
        raise ValueError("diff requires input that is at least one dimensional")
    axis = int(axis) % len(x.shape)
    before, after = (slice(None),) * axis + (slice(1, None),), (slice(None),) * axis + (slice(None, -1),)
    for _ in range(int(n)):
        x = (ne if np.dtype(x.dtype) == np.bool_ else sub)(getitem(x, before), getitem(x, after))
    return x


def atleast_nd(x, ndim):
    """np.atleast_1d / 2d / 3d of one array: x itself when it has the dimensions, else a view
    reshaped as NumPy does (a 1-d x is a row; for 3-d, a 2-d x gains a last axis)."""
    shape = tuple(x.shape)
    if len(shape) >= ndim:
        return x
    if ndim == 3 and len(shape) == 2:
        return reshape(x, shape + (1,))
    if ndim == 3 and len(shape) == 1:
        return reshape(x, (1,) + shape + (1,))
    return reshape(x, (1,) * (ndim - len(shape)) + shape)


def maximum(a, b): return bind(P.maximum, a, b)
def minimum(a, b): return bind(P.minimum, a, b)
def where(c, a, b): return bind(P.where, c, a, b)
def lt(a, b): return bind(P.lt, a, b)
def le(a, b): return bind(P.le, a, b)
def gt(a, b): return bind(P.gt, a, b)
def ge(a, b): return bind(P.ge, a, b)
def eq(a, b): return bind(P.eq, a, b)
def ne(a, b): return bind(P.ne, a, b)
def logical_and(a, b): return bind(P.logical_and, a, b)
def logical_or(a, b): return bind(P.logical_or, a, b)
def logical_not(a): return bind(P.logical_not, a)
def stop_gradient(x): return bind(P.stop_gradient, x)
def square(x): return bind(P.mul, x, x)
def np_square(x): return bind(P.square, x)
def zeros_like(x, dtype=None): return bind(P.zeros_like, x, dtype=dtype)
def ones_like(x, dtype=None): return bind(P.ones_like, x, dtype=dtype)
def full_like(x, value, dtype=None): return bind(P.full_like, x, value, dtype=dtype)


def to_device(x, device, source=None):
    """`x` on `device` ('cpu' or 'gpu'): a transfer (a graph node when generating)."""
    if source is None:
        source = getattr(x, "device", None)  # a Tensor's or a graph value's: "cpu" or "gpu"
        if source not in ("cpu", "gpu"):  # a raw array (CuPy's .device is a Device object)
            source = backend.device_of(x)
    return bind(P.to_device, x, device=backend.normalize(device), source=source)


def cast(x, dtype):
    return bind(P.cast, x, dtype=np.dtype(dtype))


def clip(x, lo=None, hi=None):
    """np.clip. Array-valued bounds are compositions of maximum/minimum."""
    if hasattr(lo, "shape") or hasattr(hi, "shape"):
        if np.dtype(getattr(x, "dtype", np.float64)).kind in "iub":  # (no gradient: NumPy's own rules)
            return bind(P.clip_bounds, x, lo, hi)
        out = x
        if lo is not None:  # NumPy's order: minimum(maximum(x, lo), hi), so hi wins when lo > hi
            out = maximum(out, lo)
        if hi is not None:
            out = minimum(out, hi)
        return out
    return bind(P.clip, x, lo=lo, hi=hi)


# ------------------------------------------------------------------ reductions
def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def sum(x, axis=None, keepdims=False, dtype=None):  # noqa: A001
    return bind(P.sum, x, axis=_axis(axis), keepdims=keepdims, dtype=None if dtype is None else np.dtype(dtype))


def mean(x, axis=None, keepdims=False):
    return bind(P.mean, x, axis=_axis(axis), keepdims=keepdims)


def var(x, axis=None, keepdims=False, ddof=0):
    return bind(P.var, x, axis=_axis(axis), keepdims=keepdims, ddof=ddof)


def std(x, axis=None, keepdims=False, ddof=0):
    return bind(P.std, x, axis=_axis(axis), keepdims=keepdims, ddof=ddof)


def pad(x, pad_width, constant_values=0):
    """Zeros (np.pad's default) or another number around x: pad_width an int, a (before, after)
    pair, or one pair per axis, as NumPy takes it."""
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (len(x.shape), 2))
    if type(constant_values) not in (int, float, bool) and not isinstance(constant_values, np.generic):
        raise TypeError("np.pad with constant_values other than one number has no graph op")
    more = {"constant_values": constant_values} if constant_values != 0 else {}  # (no parameter for zeros)
    return bind(P.pad, x, pad_width=tuple((int(b), int(a)) for b, a in widths), **more)


def roll(x, shift, axis=None):
    """np.roll: an int shift and axis, or a tuple of shifts for a tuple of axes."""
    return bind(P.roll, x, shift=_ints(shift), axis=_ints(axis))


def flip(x, axis=None):
    return bind(P.flip, x, axis=_ints(axis))


def _ints(v):
    """An int, a tuple of ints or None, as op parameters hold them (no NumPy integers)."""
    return None if v is None else tuple(int(k) for k in v) if isinstance(v, (tuple, list)) else int(v)


def argsort(x, axis=-1):
    return bind(P.argsort, x, axis=axis)


def argpartition(x, kth, axis=-1):
    return bind(P.argpartition, x, kth=_ints(kth), axis=axis)  # (a graph value: int() of it says so)


def norm(x, axis=None, keepdims=False):
    return bind(P.norm, x, axis=_axis(axis), keepdims=keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001
    return bind(P.any, x, axis=_axis(axis), keepdims=keepdims)


def all(x, axis=None, keepdims=False):  # noqa: A001
    return bind(P.all, x, axis=_axis(axis), keepdims=keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return bind(P.max, x, axis=_axis(axis), keepdims=keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return bind(P.min, x, axis=_axis(axis), keepdims=keepdims)


def argmax(x, axis=None, keepdims=False): return bind(P.argmax, x, axis=axis, keepdims=keepdims)
def argmin(x, axis=None, keepdims=False): return bind(P.argmin, x, axis=axis, keepdims=keepdims)


def logsumexp(x, axis=None, keepdims=False):
    m = stop_gradient(max(x, axis=axis, keepdims=True))
    out = add(log(sum(exp(sub(x, m)), axis=axis, keepdims=True)), m)
    if keepdims:
        return out
    return squeeze(out, axis) if axis is not None else reshape(out, ())


# ------------------------------------------------------------------ linear algebra
def matmul(a, b): return bind(P.matmul, a, b)
def dot(a, b): return bind(P.dot, a, b)
def solve(a, b): return bind(P.solve, a, b)
def inv(a): return bind(P.inv, a)


def tensordot(a, b, axes=2):
    return bind(P.tensordot, a, b, axes=_frozen(axes))


def einsum(subscripts, *operands):
    if not isinstance(subscripts, str):  # (a graph takes NumPy's sublist form as its string: numpy_forms.py)
        raise TypeError("einsum of Tensors takes a subscripts string, not the sublist form")
    return bind(P.einsum, *operands, subscripts=subscripts)


def outer(a, b):
    return mul(reshape(a, (-1, 1)), reshape(b, (1, -1)))


# ------------------------------------------------------------------ shapes
def reshape(x, shape, *more):
    if more:
        shape = (shape,) + more
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    return bind(P.reshape, x, shape=shape)


def reshape_like(x, like): return bind(P.reshape_like, x, like)
def broadcast_like(x, like): return bind(P.broadcast_like, x, like)
def sum_to(x, like):
    # Eager, with no tape recording: a cotangent that already has like's shape and dtype is its
    # own sum (every elementwise rule asks, ~5 us a call through the op; half the LSTM's eager
    # backward calls are such). Tapes and graphs still see the op.
    if (not _tapes and _registry._builder[0] is None and type(x) is _registry.Tensor
            and isinstance(like, _registry.Tensor)):
        a, b = x._data, like._data
        if a.shape == b.shape and a.dtype == b.dtype:
            return x
    return bind(P.sum_to, x, like)


def broadcast_to(x, shape):
    return bind(P.broadcast_to, x, shape=tuple(shape) if not isinstance(shape, int) else (shape,))


def transpose(x, axes=None):
    return bind(P.transpose, x, axes=None if axes is None else tuple(int(a) for a in axes))


def swapaxes(x, a, b):
    nd = x.ndim
    axes = list(range(nd))
    axes[a % nd], axes[b % nd] = axes[b % nd], axes[a % nd]
    return transpose(x, axes)


def expand_dims(x, axis): return bind(P.expand_dims, x, axis=_frozen(axis))
def squeeze(x, axis=None): return bind(P.squeeze, x, axis=_frozen(axis))


def concatenate(xs, axis=0):
    return bind(P.concatenate, *xs, axis=axis)


def hstack(xs):
    """np.hstack: 1-d arrays end to end, others along their second axis (0-d ones as 1-d)."""
    arrays = [atleast_nd(x, 1) for x in xs]
    return concatenate(arrays, 0 if arrays and len(arrays[0].shape) == 1 else 1)


def moveaxis(x, source, destination):
    """np.moveaxis as the transpose it makes: the other axes in order, each moved one at its place."""
    from numpy.lib.array_utils import normalize_axis_tuple

    nd = len(x.shape)
    source, destination = normalize_axis_tuple(source, nd), normalize_axis_tuple(destination, nd)
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(nd) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(x, tuple(order))


def stack(xs, axis=0):
    return concatenate([expand_dims(x, axis) for x in xs], axis=axis)


def split(x, indices_or_sections, axis=0):
    n = x.shape[axis]
    if isinstance(indices_or_sections, int) and indices_or_sections > 0 and n % indices_or_sections:
        raise ValueError(f"{_UNEQUAL}: {n} into {indices_or_sections}")  # (np.split's text, and the sizes)
    return [getitem(x, index) for index in split_indices(x.shape, indices_or_sections, axis)]


_UNEQUAL = "array split does not result in an equal division"


def split_indices(shape, indices_or_sections, axis=0, unequal=False):
    """The basic indices of np.split's parts (`unequal`: np.array_split's), views of x as NumPy's, raising as it."""
    n = shape[axis]
    if getattr(indices_or_sections, "ndim", None) == 0 and not isinstance(indices_or_sections, np.floating):
        indices_or_sections = operator.index(indices_or_sections)  # (a graph value: its own error)
    if isinstance(indices_or_sections, int) and unequal and indices_or_sections > 0:
        each, extra = divmod(n, indices_or_sections)  # (the first `extra` parts are one longer)
        bounds = [k * each + (k if k < extra else extra) for k in range(indices_or_sections + 1)]
    elif isinstance(indices_or_sections, int):
        if indices_or_sections < 0 or n % indices_or_sections:  # (n % 0: the ZeroDivisionError np.split raises)
            raise ValueError(_UNEQUAL if indices_or_sections > 0 else "number sections must be larger than 0.")
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    ax = axis % len(shape)
    return [(slice(None),) * ax + (slice(lo, hi),) for lo, hi in zip(bounds[:-1], bounds[1:])]


# ------------------------------------------------------------------ indexing
def _is_operand(v):
    return hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, np.generic)


def getitem(x, index):
    template, operands = split_index(index, _is_operand)
    return bind(P.getitem, x, *operands, index=template)


def getitem_raw(x, operands, template): return bind(P.getitem, x, *operands, index=template)
def getitem_grad(g, x, *operands, index): return bind(P.getitem_grad, g, x, *operands, index=index)


def add_at(x, index, value):
    """np.add.at(x, index, value) on a copy of x: the updated copy."""
    template, operands = split_index(index, _is_operand)
    return bind(P.add_at, x, value, *operands, index=template)


def index_update(x, index, value):
    """Functional `x[index] = value`: returns the updated copy."""
    template, operands = split_index(index, _is_operand)
    return bind(P.index_update, x, value, *operands, index=template)


def index_update_raw(x, value, operands, template):
    return bind(P.index_update, x, value, *operands, index=template)


def take(x, indices, axis=None):
    if axis is None:
        return getitem(reshape(x, (-1,)), indices)
    ax = operator.index(axis) % x.ndim  # (an axis the graph computes: its own error)
    out, many = getitem(x, (slice(None),) * ax + (indices,)), len(np.shape(indices)) > 0
    if many and ax or not many and x.ndim > 1:  # NumPy's take is a new C-ordered array:
        out = bind(P.copy, out)  # `x[:, idx]` is not C-ordered, `x[:, 2]` and `x[2]` are views
    return out


def embedding(table, ids):
    """Rows of `table` selected by integer `ids` (any shape): take(table, ids, axis=0)."""
    return getitem(table, ids)


# ------------------------------------------------------------------ compositions for nn
def softmax(x, axis=-1):
    z = sub(x, stop_gradient(max(x, axis=axis, keepdims=True)))
    e = exp(z)
    return div(e, sum(e, axis=axis, keepdims=True))


def log_softmax(x, axis=-1):
    z = sub(x, stop_gradient(max(x, axis=axis, keepdims=True)))
    return sub(z, log(sum(exp(z), axis=axis, keepdims=True)))


def cross_entropy(logits, labels):
    """Mean negative log-likelihood of integer `labels` (shape (N,)) under `logits` (N, C)."""
    logp = log_softmax(logits, axis=-1)
    rows = _rows(logits)
    picked = getitem(logp, (rows, labels))
    return neg(mean(picked))


def _rows(x):
    """np.arange(len(x)); a graph node when the graph must work for any batch size."""
    b = _registry._builder[0]
    if b is not None and getattr(b, "polymorphic", False) and b.claims((x,)):
        return bind(P.arange_like, x, axis=0)
    return np.arange(x.shape[0])


def mse(pred, target):
    d = sub(pred, target)
    return mean(mul(d, d))


def linear(x, w, b=None):
    y = matmul(x, w)
    return y if b is None else add(y, b)


def lstm_cell(x, h, c, w_x, w_h, b):
    """One LSTM step; gates ordered (input, forget, cell, output) along the last axis."""
    z = add(add(matmul(x, w_x), matmul(h, w_h)), b)
    i, f, g, o = split(z, 4, axis=-1)
    c_new = add(mul(sigmoid(f), c), mul(sigmoid(i), tanh(g)))
    h_new = mul(sigmoid(o), tanh(c_new))
    return h_new, c_new


def gru_cell(x, h, w_x, w_h, b_x, b_h):
    """One GRU step; gates ordered (reset, update, new) along the last axis."""
    zx = add(matmul(x, w_x), b_x)
    zh = add(matmul(h, w_h), b_h)
    rx, ux, nx = split(zx, 3, axis=-1)
    rh, uh, nh = split(zh, 3, axis=-1)
    r = sigmoid(add(rx, rh))
    u = sigmoid(add(ux, uh))
    n = tanh(add(nx, mul(r, nh)))
    return add(mul(sub(1, u), n), mul(u, h))


def dropout(x, rate, rng, training=True):
    """Inverted dropout with an explicit `numpy.random.Generator` (never the global RNG)."""
    if not training or rate == 0:
        return x
    keep = ge(bind(P.random_uniform, rng=rng, shape=tuple(x.shape), dtype=np.dtype(x.dtype)), rate)
    return div(mul(x, keep), 1 - rate)
