"""`CASES`: one hypothesis-driven generator per differentiable op, drawing shapes (broadcasting
included) and values kept away from the op's non-differentiable points."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from janus_like import F

from gradcheck import (ND_SHAPES, SHAPES, _arr, _is_float_array, _projections, away_from_zero, axis_for,
                       broadcast_shapes, distinct, interleaved, normal, positive)

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
_binary("logaddexp", F.logaddexp)
_binary("div", F.div, make_b=away_from_zero)
_binary("pow", F.pow, make_a=positive)
_binary("maximum", F.maximum, lambda r, s: interleaved(r, s, 0.0), lambda r, s: interleaved(r, s, 1.0))
_binary("minimum", F.minimum, lambda r, s: interleaved(r, s, 1.0), lambda r, s: interleaved(r, s, 0.0))
# a / b kept away from integers (where a % b jumps): b near 1, a an integer plus a middle fraction
_binary("remainder", F.remainder, lambda r, s: r.integers(-3, 4, s) + r.uniform(0.3, 0.7, s),
        lambda r, s: r.uniform(0.95, 1.05, s))
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
_unary("square", F.np_square)
_unary("abs", F.abs, away_from_zero)
_unary("sin", F.sin, lambda r, s: normal(r, s, 2.0))
_unary("cos", F.cos, lambda r, s: normal(r, s, 2.0))
_unary("log1p", F.log1p, positive)
_unary("expm1", F.expm1)
_unary("log2", F.log2, positive)
_unary("log10", F.log10, positive)
_unary("reciprocal", F.reciprocal, away_from_zero)
_unary("arctan", F.arctan, lambda r, s: normal(r, s, 2.0))
_unary("sinh", F.sinh)
_unary("cosh", F.cosh)
_unary("tan", F.tan, lambda r, s: normal(r, s, 0.4))
_unary("arcsin", F.arcsin, lambda r, s: r.uniform(-0.8, 0.8, s))
_unary("arccos", F.arccos, lambda r, s: r.uniform(-0.8, 0.8, s))
_unary("nan_to_num", F.nan_to_num)
_binary("arctan2", F.arctan2, make_b=away_from_zero)
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
@case("norm")
def _(draw, rng):  # the 2-norm of all elements or along one axis (more axes are a matrix norm: other ords)
    shape = draw(ND_SHAPES)
    axis = draw(st.sampled_from([None] + list(range(-len(shape), len(shape)))))
    keepdims = draw(st.booleans())
    return (lambda x: F.norm(x, axis=axis, keepdims=keepdims)), (normal(rng, shape),)


_reduction("var", F.var)
_reduction("std", F.std)


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
                                       "ijk,j->ki", "ij,j->j", "ij,kj->ikj", "i,i",
                                       # one operand, three operands, '...' (broadcast included)
                                       "ij->ji", "ijk->k", "bi,ij,bj->b", "i,ij,jk->k", "...ij,...jk->...ik",
                                       "...j,j", "b...,b...->b..."]))
    sizes = {c: draw(st.integers(1, 3)) for c in "bijk"}
    ins = subscripts.split("->")[0].split(",")
    batch = [draw(st.sampled_from([(), (2,), (3, 2), (1, 2)])) for _ in ins]
    if subscripts == "b...,b...->b...":  # the same trailing dims, one of them possibly broadcast
        batch = [batch[0], tuple(1 if draw(st.booleans()) else d for d in batch[0])]
    operands = [normal(rng, (batch[n] if sub.startswith("...") else ())
                       + tuple(sizes[c] for c in sub.replace("...", ""))
                       + (batch[n] if sub.endswith("...") else ())) for n, sub in enumerate(ins)]
    return (lambda *xs: F.einsum(subscripts, *xs)), tuple(operands)


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


@case("to_device")
def _(draw, rng):  # a CPU-to-CPU transfer here; the GPU direction is in tests/test_devices.py
    return (lambda x: F.to_device(x, "cpu")), (normal(rng, draw(SHAPES)),)


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


@case("add_at")
def _(draw, rng):  # np.add.at: repeated rows add once per occurrence; a row broadcast to them too
    shape = draw(ND_SHAPES)
    ids = rng.integers(-shape[0], shape[0], size=draw(st.integers(1, 5)))
    rows = (len(ids),) + shape[1:] if draw(st.booleans()) else shape[1:]
    return (lambda x, v: F.add_at(x, ids, v)), (normal(rng, shape), normal(rng, rows))


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
    "sigmoid", "relu", "sqrt", "square", "abs", "sin", "cos", "clip", "cast", "sum", "mean", "var", "std", "max", "min",
    "matmul", "norm", "remainder", "log1p", "expm1", "log2", "log10", "reciprocal", "arctan", "sinh", "cosh",
    "dot", "tensordot", "einsum", "reshape", "reshape_like", "transpose", "expand_dims", "squeeze",
    "broadcast_to", "broadcast_like", "sum_to", "concatenate", "getitem", "getitem_grad", "index_update",
    "copy", "copy_keep", "to_device", "conv2d", "conv2d_grad_input", "conv2d_grad_weight", "max_pool2d",
    "max_pool2d_gather",
    "max_pool2d_scatter", "avg_pool2d", "avg_pool2d_grad", "pad", "add_at", "logaddexp", "roll", "flip", "solve", "inv",
    "tan", "arcsin", "arccos", "arctan2", "nan_to_num", "tile",
    "recursion",  # a staged recursive function: tests/jit/test_recursion_regions.py (finite differences)
}


def _draw_case(data, name):
    gen, tolerances = CASES[name]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    fn, args = gen(data.draw, rng)
    return fn, args, tolerances


def drawn_float_case(data, name):
    """(fn, args, projections of fn's outputs, the indices of args that are float arrays) of a
    drawn case, or None when no argument is a float array (nothing to differentiate)."""
    fn, args, _ = _draw_case(data, name)
    wrt = [i for i, a in enumerate(args) if _is_float_array(a)]
    return (fn, args, _projections(fn, args, 0), wrt) if wrt else None


import grad_cases_layout  # noqa: E402,F401  (registers the copy, padding, rearrangement and linear-system cases)
import grad_cases_scans  # noqa: E402,F401  (running sums, products, sorting, triangles, hypot)
