"""Gradient checks: every differentiable op against central finite differences in float64.

One helper, `check_grads(fn, *args)`, compares the GradientTape gradient of <fn(*args), u> (u a
fixed random projection, so the whole Jacobian is exercised, not only its column sums) with
central differences. `CASES` is the table: one hypothesis-driven generator per op that draws
shapes (broadcasting included) and values kept away from the op's non-differentiable points.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import janus_like as jl
from janus_like import F
from janus_like.ops import P, bind


# ------------------------------------------------------------------ the checker
def _is_float_array(a):
    return isinstance(a, (np.ndarray, np.floating)) and np.asarray(a).dtype.kind == "f"


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _projections(fn, args, seed):
    outs = _leaves(fn(*[jl.tensor(a) if _is_float_array(a) else a for a in args]))
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in outs]


def _project(out, us):
    """<out, u> as a scalar tensor, built from ops so the tape records it."""
    total = None
    for o, u in zip(_leaves(out), us):
        term = F.sum(F.mul(o, u))
        total = term if total is None else F.add(total, term)
    return total


def analytic_grads(fn, args, us):
    wrt = [i for i, a in enumerate(args) if _is_float_array(a)]
    ts = [jl.tensor(np.asarray(a)) if i in wrt else a for i, a in enumerate(args)]
    with jl.GradientTape() as tape:
        tape.watch([ts[i] for i in wrt])
        loss = _project(fn(*ts), us)
    grads = tape.gradient(loss, [ts[i] for i in wrt], unconnected_gradients="zero")
    return wrt, grads


def numeric_grads(fn, args, us, wrt, eps):
    def value(arrays):
        out = fn(*[jl.tensor(a.copy()) if i in wrt else a for i, a in enumerate(arrays)])
        return math.fsum(float(np.sum(np.asarray(o, dtype=np.float64) * u)) for o, u in zip(_leaves(out), us))

    arrays = [np.array(a, dtype=np.float64) if i in wrt else a for i, a in enumerate(args)]
    grads = []
    for i in wrt:
        x = arrays[i]
        g = np.zeros_like(x)
        for k in np.ndindex(x.shape):
            old = x[k]
            x[k] = old + eps
            up = value(arrays)
            x[k] = old - eps
            down = value(arrays)
            x[k] = old
            g[k] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def _grad_fn(fn, args, seed):
    """The function args -> d<fn(args), u>/d(float args), itself differentiable on an outer tape."""
    us = _projections(fn, args, seed)
    wrt = [i for i, a in enumerate(args) if _is_float_array(a)]

    def gradient_of_fn(*ts):
        with jl.GradientTape() as tape:
            tape.watch([ts[i] for i in wrt])
            loss = _project(fn(*ts), us)
        return tuple(tape.gradient(loss, [ts[i] for i in wrt], unconnected_gradients="zero"))

    return gradient_of_fn


def check_grads(fn, *args, order=1, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """Assert that GradientTape's gradient of fn matches central finite differences.

    Float ndarray arguments are wrapped as tensors and differentiated; every other argument is
    passed to `fn` unchanged. `fn` returns a tensor or a tuple of tensors. `order=2` checks the
    gradient function itself (the vjp of every vjp rule involved) the same way.
    """
    if order > 1:
        return check_grads(_grad_fn(fn, args, seed + order), *args, order=order - 1,
                           eps=eps, rtol=rtol, atol=atol, seed=seed)
    us = _projections(fn, args, seed)
    wrt, analytic = analytic_grads(fn, args, us)
    numeric = numeric_grads(fn, args, us, wrt, eps)
    for i, a, n in zip(wrt, analytic, numeric):
        assert isinstance(a, jl.Tensor), f"gradient of argument {i} is {type(a).__name__}"
        assert a.shape == np.shape(args[i]), f"gradient of argument {i}: shape {a.shape} != {np.shape(args[i])}"
        assert a.dtype == np.asarray(args[i]).dtype, f"gradient of argument {i}: dtype {a.dtype}"
        np.testing.assert_allclose(a.numpy(), n, rtol=rtol, atol=atol, err_msg=f"gradient of argument {i}")


# ------------------------------------------------------------------ value generators
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
ND_SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def _arr(x):
    return np.asarray(x, dtype=np.float64)


def normal(rng, shape, scale=1.0):
    return _arr(rng.standard_normal(shape) * scale)


def positive(rng, shape, lo=0.5, hi=2.0):
    return _arr(rng.uniform(lo, hi, shape))


def away_from_zero(rng, shape, lo=0.3, hi=2.0):
    return _arr(rng.uniform(lo, hi, shape) * np.where(rng.random(shape) < 0.5, -1.0, 1.0))


def distinct(rng, shape):
    """Values pairwise at least 0.08 apart, so max/min/argmax have no ties within eps."""
    n = int(np.prod(shape, dtype=np.int64))
    vals = rng.permutation(n) * 0.1 + rng.uniform(0, 0.02, n) - n * 0.05
    return _arr(vals.reshape(shape))


def interleaved(rng, shape, offset):
    """Values whose position modulo 2 lies in [offset, offset + 0.4]: two calls with offsets 0 and 1
    never come within 0.6 of each other, so maximum/minimum never see near-ties."""
    return _arr(rng.uniform(offset, offset + 0.4, shape) + 2 * rng.integers(-1, 2, shape))


def broadcast_shapes(draw, n=2):
    return draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3, min_side=1,
                                                  max_side=4)).input_shapes


def axis_for(draw, nd):
    """None, an int (possibly negative) or a tuple of distinct axes, valid for nd dims."""
    kind = draw(st.sampled_from(["none", "int", "tuple"])) if nd else "none"
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-nd, nd - 1))
    axes = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    return tuple(a - nd if draw(st.booleans()) else a for a in axes)


# ------------------------------------------------------------------ the table
CASES = {}


def case(name, **tolerances):
    def deco(gen):
        CASES[name] = (gen, tolerances)
        return gen
    return deco


def _binary(name, op, make_a=normal, make_b=normal):
    @case(name)
    def gen(draw, rng):
        sa, sb = broadcast_shapes(draw)
        return op, (make_a(rng, sa), make_b(rng, sb))


_binary("add", F.add)
_binary("sub", F.sub)
_binary("mul", F.mul)
_binary("div", F.div, make_b=away_from_zero)
_binary("pow", F.pow, make_a=positive)
_binary("maximum", F.maximum, lambda r, s: interleaved(r, s, 0.0), lambda r, s: interleaved(r, s, 1.0))
_binary("minimum", F.minimum, lambda r, s: interleaved(r, s, 1.0), lambda r, s: interleaved(r, s, 0.0))
_binary("operators", lambda a, b: (a + 1.5) * b - a / (b * b + 1.0) + 2.0 ** (-a) - (1.0 - b) ** 2)


@case("pow_scalar_exponent")
def _(draw, rng):
    exponent = draw(st.sampled_from([2, 3, -1, 0.5, 2.5]))
    shape = draw(SHAPES)
    base = positive(rng, shape) if isinstance(exponent, float) or exponent < 0 else normal(rng, shape)
    return (lambda x: x ** exponent), (base,)


@case("where")
def _(draw, rng):
    sc, sa, sb = broadcast_shapes(draw, 3)
    cond = rng.random(sc) < 0.5
    return (lambda a, b: F.where(cond, a, b)), (normal(rng, sa), normal(rng, sb))


def _unary(name, op, make=normal, **tolerances):
    @case(name, **tolerances)
    def gen(draw, rng):
        return op, (make(rng, draw(SHAPES)),)


_unary("neg", F.neg)
_unary("exp", F.exp)
_unary("log", F.log, positive)
_unary("tanh", F.tanh)
_unary("sigmoid", F.sigmoid, lambda r, s: normal(r, s, 3.0))
_unary("relu", F.relu, away_from_zero)
_unary("sqrt", F.sqrt, positive)
_unary("abs", F.abs, away_from_zero)
_unary("sin", F.sin, lambda r, s: normal(r, s, 2.0))
_unary("cos", F.cos, lambda r, s: normal(r, s, 2.0))
_unary("cast_longdouble", lambda x: F.cast(F.mul(F.cast(x, np.longdouble), 3.0), np.float64))
# float32 rounding makes the finite difference coarse: a larger step and tolerance
_unary("cast_float32", lambda x: F.mul(F.cast(x, np.float32), np.float32(2.0)), eps=1e-2, rtol=1e-4, atol=1e-4)


@case("clip")
def _(draw, rng):
    lo, hi = draw(st.sampled_from([(-0.5, 0.5), (None, 0.3), (-0.2, None)]))
    x = normal(rng, draw(SHAPES))
    for bound in (lo, hi):  # keep every value at least 0.05 from the kinks
        if bound is not None:
            x = _arr(np.where(np.abs(x - bound) < 0.05, x + 0.1, x))
    return (lambda t: F.clip(t, lo, hi)), (x,)


def _reduction(name, op, make=normal):
    @case(name)
    def gen(draw, rng):
        shape = draw(SHAPES)
        axis = axis_for(draw, len(shape))
        keepdims = draw(st.booleans())
        return (lambda x: op(x, axis=axis, keepdims=keepdims)), (make(rng, shape),)


_reduction("sum", F.sum)
_reduction("mean", F.mean)
_reduction("max", F.max, distinct)
_reduction("min", F.min, distinct)
_reduction("logsumexp", F.logsumexp)


@case("matmul")
def _(draw, rng):
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    kind = draw(st.sampled_from(["vv", "vm", "mv", "mm", "batched"]))
    if kind == "batched":
        ba, bb = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)).input_shapes
        sa, sb = ba + (n, k), bb + (k, m)
        if draw(st.booleans()):
            sa = (k,)  # a vector against a batch of matrices
    else:
        sa = (k,) if kind[0] == "v" else (n, k)
        sb = (k,) if kind[1] == "v" else (k, m)
    return F.matmul, (normal(rng, sa), normal(rng, sb))


@case("dot")
def _(draw, rng):
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    sa, sb = draw(st.sampled_from([((), (n, k)), ((n,), ()), ((k,), (k,)), ((n, k), (k,)), ((k,), (k, m)),
                                   ((n, k), (k, m)), ((2, n, k), (m, k, 2)), ((n, k), (2, k, m))]))
    return F.dot, (normal(rng, sa), normal(rng, sb))


@case("tensordot")
def _(draw, rng):
    p, q, r, s = (draw(st.integers(1, 3)) for _ in range(4))
    sa, sb, axes = draw(st.sampled_from([
        ((p, q), (r, s), 0), ((p, q), (q, r), 1), ((p, q, r), (q, r, s), 2),
        ((p, q, r), (r, s, p), ((0, 2), (2, 0))), ((q, p), (r, q), ((0,), (1,))),
        ((p, q, r), (s, q), ([1], [1]))]))
    return (lambda a, b: F.tensordot(a, b, axes=axes)), (normal(rng, sa), normal(rng, sb))


@case("einsum")
def _(draw, rng):
    subscripts = draw(st.sampled_from(["ij,jk->ik", "ij,ij->", "bij,bjk->bik", "i,j->ij", "ij,jk",
                                       "ijk,j->ki", "ij,j->j", "ij,kj->ikj", "i,i"]))
    sizes = {c: draw(st.integers(1, 3)) for c in "bijk"}
    ins = subscripts.split("->")[0].split(",")
    a, b = (normal(rng, tuple(sizes[c] for c in sub)) for sub in ins)
    return (lambda x, y: F.einsum(subscripts, x, y)), (a, b)


@case("reshape")
def _(draw, rng):
    shape = draw(SHAPES)
    size = int(np.prod(shape, dtype=np.int64))
    new = draw(st.sampled_from([(-1,), tuple(reversed(shape)), (1,) + shape, (size, 1), (1, -1)]))
    return (lambda x: F.reshape(x, new)), (normal(rng, shape),)


@case("transpose")
def _(draw, rng):
    shape = draw(SHAPES)
    nd = len(shape)
    perm = draw(st.permutations(range(nd)))
    axes = None if draw(st.booleans()) else [p - nd if draw(st.booleans()) else p for p in perm]
    return (lambda x: F.transpose(x, axes)), (normal(rng, shape),)


@case("swapaxes")
def _(draw, rng):
    shape = draw(ND_SHAPES)
    nd = len(shape)
    a, b = draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))
    return (lambda x: F.swapaxes(x, a, b)), (normal(rng, shape),)


@case("expand_dims")
def _(draw, rng):
    shape = draw(SHAPES)
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    return (lambda x: F.expand_dims(x, axis)), (normal(rng, shape),)


@case("squeeze")
def _(draw, rng):
    shape = draw(SHAPES)
    shape = tuple(1 if draw(st.booleans()) else n for n in shape)
    ones = [i for i, n in enumerate(shape) if n == 1]
    axis = draw(st.sampled_from([None] + ones))
    return (lambda x: F.squeeze(x, axis)), (normal(rng, shape),)


@case("broadcast_to")
def _(draw, rng):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    target = shapes.result_shape
    return (lambda x: F.broadcast_to(x, target)), (normal(rng, shapes.input_shapes[0]),)


@case("broadcast_like")
def _(draw, rng):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    like = np.zeros(shapes.result_shape, dtype=np.int8)  # supplies the shape only: not differentiated
    return (lambda x: F.broadcast_like(x, like)), (normal(rng, shapes.input_shapes[0]),)


@case("sum_to")
def _(draw, rng):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    like = np.zeros(shapes.input_shapes[0], dtype=np.int8)
    return (lambda g: F.sum_to(g, like)), (normal(rng, shapes.result_shape),)


@case("reshape_like")
def _(draw, rng):
    shape = draw(SHAPES)
    like = np.zeros(tuple(reversed(shape)), dtype=np.int8)
    return (lambda x: F.reshape_like(x, like)), (normal(rng, shape),)


@case("copy")
def _(draw, rng):
    return (lambda x: bind(P.copy, x)), (normal(rng, draw(SHAPES)),)


@case("concatenate")
def _(draw, rng):
    shape = draw(ND_SHAPES)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        s = list(shape)
        s[axis] = draw(st.integers(1, 3))
        parts.append(normal(rng, tuple(s)))
    return (lambda *xs: F.concatenate(list(xs), axis=axis)), tuple(parts)


@case("stack")
def _(draw, rng):
    shape = draw(SHAPES)
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    parts = tuple(normal(rng, shape) for _ in range(draw(st.integers(1, 3))))
    return (lambda *xs: F.stack(list(xs), axis=axis)), parts


@case("split")
def _(draw, rng):
    shape = list(draw(ND_SHAPES))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    if draw(st.booleans()):
        sections = draw(st.integers(1, 3))
        shape[axis] = sections * draw(st.integers(1, 2))
    else:
        sections = sorted(draw(st.lists(st.integers(0, shape[axis]), max_size=3)))
    return (lambda x: tuple(F.split(x, sections, axis=axis))), (normal(rng, tuple(shape)),)


def basic_index(draw, shape):
    """Ints, slices (any step), newaxis and at most one Ellipsis standing for the skipped middle dims."""
    groups = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "all", "newaxis"]))
        if kind == "int":
            groups.append([draw(st.integers(-n, n - 1))])
        elif kind == "slice":
            start, stop = (draw(st.one_of(st.none(), st.integers(-n - 1, n + 1))) for _ in range(2))
            groups.append([slice(start, stop, draw(st.sampled_from([None, 1, 2, -1, -2])))])
        elif kind == "all":
            groups.append([slice(None)])
        else:
            groups.append([None, slice(None)])
    front = draw(st.integers(0, len(groups)))
    back = draw(st.integers(0, len(groups) - front))
    items = [i for g in groups[:front] for i in g]
    if back or draw(st.booleans()):
        items += [Ellipsis] + [i for g in groups[len(groups) - back:] for i in g]
    return items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)


@case("getitem_basic")
def _(draw, rng):
    shape = draw(SHAPES)
    index = basic_index(draw, shape)
    return (lambda x: x[index]), (normal(rng, shape),)


@case("getitem_advanced")
def _(draw, rng):
    shape = draw(ND_SHAPES)
    n = shape[0]
    repeated = np.concatenate([rng.integers(-n, n, size=draw(st.integers(0, 5))), [n - 1, -1]])  # -1 repeats n-1
    kind = draw(st.sampled_from(["array", "list", "mask", "pair", "mixed", "ellipsis", "nested"]))
    if kind == "array":
        index = repeated
    elif kind == "list":
        index = [int(i) for i in repeated]
    elif kind == "mask":
        index = rng.random(shape) < 0.5
    elif kind == "nested":
        index = repeated.reshape(2, -1) if len(repeated) % 2 == 0 else repeated.reshape(1, -1)
    elif len(shape) == 1:
        index = (repeated,)
    elif kind == "pair":
        index = (repeated, rng.integers(0, shape[1], size=len(repeated)))
    elif kind == "mixed":
        index = (slice(None, None, -1), rng.integers(0, shape[1], size=4))
    else:
        index = (Ellipsis, rng.integers(-shape[-1], shape[-1], size=3))
    return (lambda x: x[index]), (normal(rng, shape),)


@case("take")
def _(draw, rng):
    shape = draw(ND_SHAPES)
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    ids = rng.integers(0, n, size=draw(st.sampled_from([(), (4,), (2, 3)])))
    return (lambda x: F.take(x, ids, axis=axis)), (normal(rng, shape),)


@case("embedding")
def _(draw, rng):
    vocab, dim = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    ids = rng.integers(0, vocab, size=(2, 4))
    ids[0, 0] = ids[1, 1] = 0  # a repeated id accumulates
    return (lambda table: F.embedding(table, ids)), (normal(rng, (vocab, dim)),)


@case("index_update")
def _(draw, rng):
    shape = draw(ND_SHAPES)
    kind = draw(st.sampled_from(["basic", "unique_array", "mask"]))
    if kind == "basic":
        index = basic_index(draw, shape)
    elif kind == "unique_array":  # repeated targets make the last write win: not differentiable as a set
        index = rng.permutation(shape[0])[:draw(st.integers(1, shape[0]))]
    else:
        index = rng.random(shape) < 0.5
    target = np.empty(shape)[index].shape
    value_shape = target[draw(st.integers(0, len(target))):]

    def fn(x, v):
        y = x * 1.0
        y[index] = v * 2.0  # Tensor.__setitem__: a functional update recorded on the tape
        return y * y

    return fn, (normal(rng, shape), normal(rng, value_shape))


def _softmax_like(name, op):
    @case(name)
    def gen(draw, rng):
        shape = draw(ND_SHAPES)
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        return (lambda x: op(x, axis=axis)), (normal(rng, shape, 2.0),)


_softmax_like("softmax", F.softmax)
_softmax_like("log_softmax", F.log_softmax)


@case("cross_entropy")
def _(draw, rng):
    n, c = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    labels = rng.integers(0, c, size=n)
    return (lambda logits: F.cross_entropy(logits, labels)), (normal(rng, (n, c), 2.0),)


@case("lstm_cell")
def _(draw, rng):
    b, i, h = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    args = (normal(rng, (b, i)), normal(rng, (b, h)), normal(rng, (b, h)), normal(rng, (i, 4 * h), 0.5),
            normal(rng, (h, 4 * h), 0.5), normal(rng, (4 * h,), 0.5))
    return F.lstm_cell, args


@case("gru_cell")
def _(draw, rng):
    b, i, h = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    args = (normal(rng, (b, i)), normal(rng, (b, h)), normal(rng, (i, 3 * h), 0.5), normal(rng, (h, 3 * h), 0.5),
            normal(rng, (3 * h,), 0.5), normal(rng, (3 * h,), 0.5))
    return F.gru_cell, args


def conv_setup(draw, rng):
    n, c, o = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = draw(st.sampled_from([1, 2, (1, 2), (2, 1)]))
    padding = draw(st.sampled_from([0, 1, (0, 1), (1, 0)]))
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    h, w = draw(st.integers(max(kh - 2 * ph, 1), 5)), draw(st.integers(max(kw - 2 * pw, 1), 5))
    return (n, c, h, w), (o, c, kh, kw), stride, padding


@case("conv2d")
def _(draw, rng):
    xs, ws, stride, padding = conv_setup(draw, rng)
    with_bias = draw(st.booleans())
    args = (normal(rng, xs), normal(rng, ws)) + ((normal(rng, (ws[0],)),) if with_bias else ())
    return (lambda x, w, *b: F.conv2d(x, w, *b, stride=stride, padding=padding)), args


def pool_setup(draw):
    size = draw(st.sampled_from([1, 2, 3, (2, 1), (1, 3)]))
    kh, kw = (size, size) if isinstance(size, int) else size
    stride = draw(st.sampled_from([None, 1, 2, (1, 2)]))
    padding = (draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1)))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(kh, 5)), draw(st.integers(kw, 5)))
    return shape, size, stride, padding


@case("max_pool2d")
def _(draw, rng):
    shape, size, stride, padding = pool_setup(draw)
    return (lambda x: F.max_pool2d(x, size, stride, padding)), (distinct(rng, shape),)


@case("avg_pool2d")
def _(draw, rng):
    shape, size, stride, padding = pool_setup(draw)
    return (lambda x: F.avg_pool2d(x, size, stride, padding)), (normal(rng, shape),)


# ops exercised above, by registry name: the completeness test below fails when a new
# differentiable primitive is registered without a gradient check
COVERED_PRIMITIVES = {
    "add", "sub", "mul", "div", "pow", "neg", "maximum", "minimum", "where", "exp", "log", "tanh",
    "sigmoid", "relu", "sqrt", "abs", "sin", "cos", "clip", "cast", "sum", "mean", "max", "min", "matmul",
    "dot", "tensordot", "einsum", "reshape", "reshape_like", "transpose", "expand_dims", "squeeze",
    "broadcast_to", "broadcast_like", "sum_to", "concatenate", "getitem", "getitem_grad", "index_update",
    "copy", "conv2d", "conv2d_grad_input", "conv2d_grad_weight", "max_pool2d", "max_pool2d_gather",
    "max_pool2d_scatter", "avg_pool2d", "avg_pool2d_grad",
}


def _draw_case(data, name):
    gen, tolerances = CASES[name]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    fn, args = gen(data.draw, rng)
    return fn, args, tolerances


# ------------------------------------------------------------------ the tests
@pytest.mark.parametrize("name", sorted(CASES))
@given(data=st.data())
def test_gradient_matches_finite_differences(name, data):
    fn, args, tolerances = _draw_case(data, name)
    check_grads(fn, *args, **tolerances)


def _squared(fn):
    """fn's outputs squared. The gradient of a linear op (getitem, pooling, ...) does not depend on
    its input, so its second derivative is zero and never runs the vjp of its vjp; squaring feeds
    the output back into the cotangent, so the second-order check exercises those rules."""
    return lambda *args: tuple(F.mul(o, o) for o in _leaves(fn(*args)))


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=5)
@given(data=st.data())
def test_second_order_gradient_matches_finite_differences(name, data):
    fn, args, tolerances = _draw_case(data, name)
    check_grads(_squared(fn), *args, order=2, **{"rtol": 1e-4, "atol": 1e-5, **tolerances})


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=25)
@given(data=st.data())
def test_many_examples_first_and_second_order(name, data):
    fn, args, tolerances = _draw_case(data, name)
    check_grads(fn, *args, **tolerances)
    check_grads(_squared(fn), *args, order=2, **{"rtol": 1e-4, "atol": 1e-5, **tolerances})


@pytest.mark.parametrize("name", sorted(set(CASES) - {"cast_float32", "cast_longdouble"}))
@settings(max_examples=5)
@given(data=st.data())
def test_float32_gradients_keep_dtype(name, data):
    """A float32 source gets a float32 gradient, close to the float64 one."""
    fn, args, _ = _draw_case(data, name)
    args32 = tuple(np.asarray(a, np.float32) if _is_float_array(a) else a for a in args)
    us = _projections(fn, args32, 0)
    _, g32 = analytic_grads(fn, args32, us)
    _, g64 = analytic_grads(fn, args, [u.astype(np.float64) for u in us])
    for a, b in zip(g32, g64):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-3, atol=2e-3)


def test_every_differentiable_primitive_is_checked():
    from janus_like.ops import REGISTRY

    differentiable = {name for name, op in REGISTRY.items() if op.differentiable}
    missing = differentiable - COVERED_PRIMITIVES
    assert not missing, f"differentiable ops without a gradient check: {sorted(missing)}"


# ------------------------------------------------------------------ fixed examples
@pytest.mark.parametrize("sa, sb", [((3, 1), (4,)), ((4,), (3, 1)), ((), (2, 3)), ((2, 1, 3), (4, 1)),
                                    ((1,), (5,)), ((2, 3), ())])
@pytest.mark.parametrize("op", [F.add, F.sub, F.mul, F.div, F.maximum, F.pow], ids=lambda f: f.__name__)
def test_broadcasting_examples(op, sa, sb):
    rng = np.random.default_rng(1)
    a = positive(rng, sa) if op is F.pow else interleaved(rng, sa, 0.0)
    b = interleaved(rng, sb, 1.0) if op is not F.pow else normal(rng, sb)
    check_grads(op, a, b)


def test_max_ties_split_gradient_evenly():
    x = jl.tensor(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
    with jl.GradientTape() as tape:
        tape.watch(x)
        y = F.sum(F.max(x, axis=1))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])


def test_getitem_repeated_indices_accumulate():
    x = jl.tensor(np.arange(4.0))
    with jl.GradientTape() as tape:
        tape.watch(x)
        y = F.sum(x[np.array([0, 0, 3, 0])])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 0.0, 0.0, 1.0])


def test_pow_gradient_with_respect_to_exponent_at_zero_base():
    # d(a**b)/db = log(a) * a**b is taken as 0 where a <= 0 (the limit for a -> 0+ with b > 0)
    a, b = jl.tensor(np.array([0.0, 2.0])), jl.tensor(np.array([2.0, 3.0]))
    with jl.GradientTape() as tape:
        tape.watch(b)
        y = F.sum(F.pow(a, b))
    np.testing.assert_allclose(tape.gradient(y, b).numpy(), [0.0, 8 * np.log(2.0)])


def test_index_update_with_repeated_indices_only_last_write_gets_gradient():
    check_grads(lambda x, v: F.index_update(x, np.array([0, 0, 2]), v), np.zeros(3), np.array([1.0, 2.0, 3.0]))


def test_einsum_gradient_limits_are_explicit():
    # forward supports all of NumPy's einsum; the gradient rule handles two operands without '...'
    # or an index repeated inside one operand, and says so instead of answering wrongly
    square, rect = jl.tensor(np.ones((3, 3))), jl.tensor(np.ones((3, 2)))
    for subscripts, a, b in [("...j,...j->...", rect, rect), ("ii,ij->j", square, rect)]:
        with jl.GradientTape() as tape:
            tape.watch([a, b])
            y = F.sum(F.einsum(subscripts, a, b))
        np.testing.assert_array_equal(y.numpy(), np.sum(np.einsum(subscripts, a.numpy(), b.numpy())))
        with pytest.raises(NotImplementedError, match="einsum gradients do not support"):
            tape.gradient(y, [a, b])
