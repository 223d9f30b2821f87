"""Forward parity: every op on tensors gives exactly NumPy's result on the underlying arrays
(same values, same dtype), whether called through F, a Tensor operator or NumPy's own function."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import janus_like as jl
from janus_like import F

DTYPES = [np.float32, np.float64, np.int64]
FLOATS = [np.float32, np.float64]


def assert_same(got, expected):
    """`got` is a Tensor equal to `expected` in value, shape and dtype (NaNs equal)."""
    if isinstance(expected, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e)
        return
    assert isinstance(got, jl.Tensor), f"expected a Tensor, got {type(got).__name__}"
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, f"dtype {got.dtype} != NumPy's {expected.dtype}"
    assert got.shape == expected.shape, f"shape {got.shape} != NumPy's {expected.shape}"
    np.testing.assert_array_equal(np.asarray(got.numpy()), expected, strict=False)


def values(rng, shape, dtype, kind="any"):
    if np.issubdtype(dtype, np.integer):
        lo = 1 if kind in ("positive", "nonzero") else -5
        out = rng.integers(lo, 6, size=shape)
        if kind == "nonzero":
            out = out * np.where(rng.random(shape) < 0.5, -1, 1)
        return np.asarray(out, dtype=dtype)
    x = rng.standard_normal(shape)
    if kind == "positive":
        x = np.abs(x) + 0.5
    elif kind == "nonzero":
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    return np.asarray(x, dtype=dtype)


def t(a):
    return jl.tensor(a)


# ------------------------------------------------------------------ elementwise, through three doors
BINARY = {  # name: (F function, operator form, NumPy function, kind of the second operand)
    "add": (F.add, lambda a, b: a + b, np.add, "any"),
    "sub": (F.sub, lambda a, b: a - b, np.subtract, "any"),
    "mul": (F.mul, lambda a, b: a * b, np.multiply, "any"),
    "div": (F.div, lambda a, b: a / b, np.true_divide, "nonzero"),
    "pow": (F.pow, lambda a, b: a ** b, np.power, "positive"),
    "maximum": (F.maximum, None, np.maximum, "any"),
    "minimum": (F.minimum, None, np.minimum, "any"),
    "lt": (F.lt, lambda a, b: a < b, np.less, "any"),
    "le": (F.le, lambda a, b: a <= b, np.less_equal, "any"),
    "gt": (F.gt, lambda a, b: a > b, np.greater, "any"),
    "ge": (F.ge, lambda a, b: a >= b, np.greater_equal, "any"),
    "eq": (F.eq, lambda a, b: a == b, np.equal, "any"),
    "ne": (F.ne, lambda a, b: a != b, np.not_equal, "any"),
    "floor_divide": (F.floor_divide, lambda a, b: a // b, np.floor_divide, "nonzero"),
    "remainder": (F.remainder, lambda a, b: a % b, np.remainder, "nonzero"),
    "logaddexp": (F.logaddexp, None, np.logaddexp, "any"),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
       dtypes=st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)), seed=st.integers(0, 2**32 - 1))
def test_binary_parity(name, shapes, dtypes, seed):
    f, operator, np_f, kind = BINARY[name]
    rng = np.random.default_rng(seed)
    (sa, sb), (da, db) = shapes.input_shapes, dtypes
    a = values(rng, sa, da, "positive" if name == "pow" else "any")
    b = values(rng, sb, db, kind)
    expected = np_f(a, b)
    assert_same(f(t(a), t(b)), expected)
    assert_same(np_f(t(a), t(b)), expected)  # NumPy's ufunc on tensors
    assert_same(np_f(a, t(b)), expected)  # an ndarray beside a tensor
    if operator is not None:
        assert_same(operator(t(a), t(b)), expected)
        assert_same(operator(a, t(b)), expected)  # ndarray on the left defers to the tensor


UNARY = {  # name: (F function, NumPy reference, NumPy function applied to a tensor, input kind, dtypes)
    "neg": (F.neg, np.negative, np.negative, "any", DTYPES),
    "exp": (F.exp, np.exp, np.exp, "any", DTYPES),
    "log": (F.log, np.log, np.log, "positive", DTYPES),
    "tanh": (F.tanh, np.tanh, np.tanh, "any", DTYPES),
    "sqrt": (F.sqrt, np.sqrt, np.sqrt, "positive", DTYPES),
    "abs": (F.abs, np.abs, np.abs, "any", DTYPES),
    "sin": (F.sin, np.sin, np.sin, "any", DTYPES),
    "cos": (F.cos, np.cos, np.cos, "any", DTYPES),
    "sign": (F.sign, np.sign, np.sign, "any", DTYPES),
    "square": (F.square, np.square, np.square, "any", DTYPES),
    "sigmoid": (F.sigmoid, lambda x: 1 / (1 + np.exp(-x)), None, "any", FLOATS),
    "relu": (F.relu, lambda x: np.maximum(x, 0), None, "any", DTYPES),
    "logical_not": (F.logical_not, np.logical_not, np.logical_not, "any", DTYPES),
    "floor": (F.floor, np.floor, np.floor, "any", DTYPES), "ceil": (F.ceil, np.ceil, np.ceil, "any", DTYPES),
    "rint": (F.rint, np.rint, np.rint, "any", DTYPES), "isnan": (F.isnan, np.isnan, np.isnan, "any", DTYPES),
    "isinf": (F.isinf, np.isinf, np.isinf, "any", DTYPES),
    "isfinite": (F.isfinite, np.isfinite, np.isfinite, "any", DTYPES),
    "log1p": (F.log1p, np.log1p, np.log1p, "positive", DTYPES),
    "expm1": (F.expm1, np.expm1, np.expm1, "any", DTYPES), "log2": (F.log2, np.log2, np.log2, "positive", DTYPES),
    "log10": (F.log10, np.log10, np.log10, "positive", DTYPES),
    "reciprocal": (F.reciprocal, np.reciprocal, np.reciprocal, "nonzero", FLOATS),
    "arctan": (F.arctan, np.arctan, np.arctan, "any", DTYPES), "sinh": (F.sinh, np.sinh, np.sinh, "any", DTYPES),
    "cosh": (F.cosh, np.cosh, np.cosh, "any", DTYPES), "tan": (F.tan, np.tan, np.tan, "any", DTYPES),
    "arcsin": (F.arcsin, np.arcsin, np.arcsin, "any", DTYPES),
    "arccos": (F.arccos, np.arccos, np.arccos, "any", DTYPES),
    "nan_to_num": (F.nan_to_num, np.nan_to_num, np.nan_to_num, "any", DTYPES),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_unary_parity(name, shape, data, seed):
    f, reference, np_f, kind, dtypes = UNARY[name]
    x = values(np.random.default_rng(seed), shape, data.draw(st.sampled_from(dtypes)), kind)
    expected = reference(x)
    assert_same(f(t(x)), expected)
    if np_f is not None:
        assert_same(np_f(t(x)), expected)


def test_tensor_methods_match_numpy():
    x = np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4) / 7
    tx = t(x)
    assert_same(-tx, -x)
    assert_same(abs(tx - 1), abs(x - 1))
    assert_same(tx.exp(), np.exp(x))
    assert_same(tx.log(), np.log(x))
    assert_same(tx.tanh(), np.tanh(x))
    assert_same(tx.T, x.T)
    assert_same(tx.astype(np.float64), x.astype(np.float64))
    assert_same(tx.clip(0.2, 1.0), x.clip(0.2, 1.0))
    assert_same(tx.flatten(), x.flatten())
    assert_same(tx.reshape(4, 3), x.reshape(4, 3))
    assert_same(tx.transpose(1, 0), x.transpose(1, 0))
    assert_same(tx.sum(axis=0), x.sum(axis=0))
    assert_same(tx.mean(), x.mean())
    assert_same(tx.argmax(axis=1), x.argmax(axis=1))
    assert_same(tx @ tx.T, x @ x.T)
    assert_same(tx.dot(tx.T), x.dot(x.T))
    assert_same(tx.copy(), x.copy())
    assert_same(tx[1:, ::-2], x[1:, ::-2])


@given(dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1))
def test_where_and_clip_parity(dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = values(rng, (3, 1), dtype), values(rng, (4,), dtype)
    c = rng.random((3, 4)) < 0.5
    assert_same(F.where(c, t(a), t(b)), np.where(c, a, b))
    assert_same(np.where(t(c), t(a), b), np.where(c, a, b))
    assert_same(F.clip(t(a), -1, 1), np.clip(a, -1, 1))
    assert_same(np.clip(t(a), -1, 1), np.clip(a, -1, 1))
    assert_same(np.clip(t(a), a_min=None, a_max=0), np.clip(a, None, 0))
    assert_same(F.clip(t(a), t(b), 2), np.clip(a, b, 2))  # array bounds: a composition of maximum/minimum


# ------------------------------------------------------------------ reductions
def _axis(draw, nd):
    kind = draw(st.sampled_from(["none", "int", "tuple"])) if nd else "none"
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-nd, nd - 1))
    return tuple(draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)))


REDUCTIONS = {
    "sum": (F.sum, np.sum), "mean": (F.mean, np.mean), "max": (F.max, np.max), "min": (F.min, np.min),
    "var": (F.var, np.var), "std": (F.std, np.std), "any": (F.any, np.any), "all": (F.all, np.all),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), data=st.data(),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1))
def test_reduction_parity(name, shape, data, dtype, seed):
    f, np_f = REDUCTIONS[name]
    x = values(np.random.default_rng(seed), shape, dtype)
    axis, keepdims = _axis(data.draw, len(shape)), data.draw(st.booleans())
    expected = np_f(x, axis=axis, keepdims=keepdims)
    assert_same(f(t(x), axis=axis, keepdims=keepdims), expected)
    assert_same(np_f(t(x), axis=axis, keepdims=keepdims), expected)


@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_argmax_argmin_logsumexp_parity(shape, data, seed):
    x = values(np.random.default_rng(seed), shape, data.draw(st.sampled_from(FLOATS)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert_same(F.argmax(t(x), axis=axis), np.argmax(x, axis=axis))
    assert_same(np.argmin(t(x), axis=axis), np.argmin(x, axis=axis))
    assert_same(np.argmax(t(x)), np.argmax(x))
    m = np.max(x, axis=axis, keepdims=True)
    expected = np.squeeze(np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m, axis)
    assert_same(F.logsumexp(t(x), axis=axis), expected)


def test_reducing_ufunc_methods():
    x = np.arange(6.0).reshape(2, 3)
    assert_same(np.add.reduce(t(x), axis=1), np.add.reduce(x, axis=1))
    assert_same(np.maximum.reduce(t(x), axis=0), np.maximum.reduce(x, axis=0))
    assert_same(np.sum(t(x), axis=1), np.sum(x, axis=1))
    assert_same(F.sum(t(x.astype(np.int32)), dtype=np.int64), np.sum(x.astype(np.int32), dtype=np.int64))


# ------------------------------------------------------------------ linear algebra
@given(n=st.integers(1, 4), k=st.integers(1, 4), m=st.integers(1, 4), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**32 - 1))
def test_linear_algebra_parity(n, k, m, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b, v = values(rng, (n, k), dtype), values(rng, (k, m), dtype), values(rng, (k,), dtype)
    batch = values(rng, (2, n, k), dtype)
    for fa, fb in [(a, b), (v, b), (a, v), (v, v), (batch, b), (v, batch.swapaxes(-1, -2))]:
        assert_same(F.matmul(t(fa), t(fb)), np.matmul(fa, fb))
        assert_same(np.matmul(t(fa), t(fb)), np.matmul(fa, fb))
        assert_same(t(fa) @ fb, fa @ fb)
    for fa, fb in [(a, b), (v, b), (a, v), (v, v), (batch, b), (a, 2), (3, v)]:
        assert_same(np.dot(t(fa) if hasattr(fa, "shape") else fa, t(fb) if hasattr(fb, "shape") else fb),
                    np.dot(fa, fb))
    assert_same(np.tensordot(t(batch), t(b), axes=1), np.tensordot(batch, b, axes=1))
    assert_same(F.tensordot(t(batch), t(a), axes=([1, 2], [0, 1])), np.tensordot(batch, a, axes=([1, 2], [0, 1])))
    for sub, x, y in [("ij,jk->ik", a, b), ("bij,jk", batch, b), ("i,i->", v, v), ("ij,j->i", a, v)]:
        assert_same(np.einsum(sub, t(x), t(y)), np.einsum(sub, x, y))
        assert_same(F.einsum(sub, t(x), t(y)), np.einsum(sub, x, y))
    assert_same(np.outer(t(v), t(v)), np.outer(v, v))


# ------------------------------------------------------------------ shapes and indexing
def test_shape_function_parity():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    tx = t(x)
    assert_same(np.reshape(tx, (4, 6)), np.reshape(x, (4, 6)))
    assert_same(F.reshape(tx, -1), x.reshape(-1))
    assert_same(np.transpose(tx), np.transpose(x))
    assert_same(np.transpose(tx, (2, 0, 1)), np.transpose(x, (2, 0, 1)))
    assert_same(F.transpose(tx, (-1, 0, 1)), np.transpose(x, (-1, 0, 1)))
    assert_same(np.swapaxes(tx, 0, -1), np.swapaxes(x, 0, -1))
    assert_same(np.expand_dims(tx, 1), np.expand_dims(x, 1))
    assert_same(F.expand_dims(tx, (0, -1)), np.expand_dims(x, (0, -1)))
    assert_same(np.squeeze(t(x[:1, :, :1])), np.squeeze(x[:1, :, :1]))
    assert_same(F.squeeze(t(x[:1]), 0), np.squeeze(x[:1], 0))
    assert_same(np.broadcast_to(t(x[:, :1]), (5, 2, 3, 4)), np.broadcast_to(x[:, :1], (5, 2, 3, 4)))
    assert_same(np.concatenate([tx, tx[:1]]), np.concatenate([x, x[:1]]))
    assert_same(np.concatenate([tx, x], axis=-1), np.concatenate([x, x], axis=-1))  # a tensor beside an array
    assert_same(F.concatenate([t(x.astype(np.float64)), tx], axis=1), np.concatenate([x.astype(np.float64), x], 1))
    assert_same(np.stack([tx, tx], axis=1), np.stack([x, x], axis=1))
    assert_same(F.stack([tx, tx], axis=-1), np.stack([x, x], axis=-1))
    assert_same(np.split(tx, 2), np.split(x, 2))
    assert_same(np.split(tx, [1, 3], axis=2), np.split(x, [1, 3], axis=2))
    assert_same(np.take(tx, [0, 5, 5]), np.take(x, [0, 5, 5]))
    assert_same(np.take(tx, np.array([[2, 0]]), axis=1), np.take(x, np.array([[2, 0]]), axis=1))
    assert_same(np.zeros_like(tx), np.zeros_like(x))
    assert_same(np.ones_like(tx, dtype=np.int32), np.ones_like(x, dtype=np.int32))
    assert np.shape(tx) == x.shape and np.ndim(tx) == 3 and np.size(tx) == 24


INDICES = [
    1, -1, slice(None), (0, 1), (slice(1, None), 2), (Ellipsis, 1), (None, 0), (slice(None, None, -1), slice(0, 3, 2)),
    np.array([0, 0, 1]), [1, 0, 1], (np.array([0, 1]), np.array([2, 0])), (slice(None), np.array([[2, 2], [0, 1]])),
    (Ellipsis, np.array([3, 0])), np.array([True, False]), (np.int64(1), np.array([1, 1])),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_and_index_update_parity(index):
    x = np.arange(24.0).reshape(2, 3, 4)
    assert_same(t(x)[index], x[index])
    assert_same(F.getitem(t(x), index), x[index])
    y, ty = x.copy(), t(x)
    y[index] = -1.5
    ty[index] = -1.5
    assert_same(ty, y)
    assert_same(F.index_update(t(x), index, t(np.asarray(7.0))), np.where(y == -1.5, 7.0, x))


def test_getitem_with_tensor_index():
    x = np.arange(10.0)
    idx = np.array([3, 3, 1])
    assert_same(t(x)[t(idx)], x[idx])
    assert_same(t(x)[t(x > 4)], x[x > 4])


def test_softmax_and_losses_match_numpy_formulas():
    x = np.random.default_rng(0).standard_normal((3, 5))
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    assert_same(F.softmax(t(x)), e / np.sum(e, axis=-1, keepdims=True))
    assert_same(F.log_softmax(t(x)), z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True)))
    labels = np.array([0, 4, 2])
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    assert_same(F.cross_entropy(t(x), labels), -np.mean(logp[np.arange(3), labels]))
    assert_same(F.mse(t(x), t(x[::-1])), np.mean((x - x[::-1]) * (x - x[::-1])))


# ------------------------------------------------------------------ dtype promotion
PROMOTIONS = [
    # (left, right, dtype NumPy gives and the tensor must give)
    (np.ones(3, np.float32), 2.5, np.float32),  # a Python float is weak
    (np.ones(3, np.float32), 2, np.float32),
    (np.ones((), np.float32), 2.5, np.float32),  # also for 0-d tensors
    (np.ones(3, np.int32), 2, np.int32),
    (np.ones(3, np.int64), 2.5, np.float64),
    (np.ones(3, np.int64), np.ones(3, np.float32), np.float64),
    (np.ones(3, np.int8), np.ones(3, np.float32), np.float32),
    (np.ones(3, np.float32), np.ones(3, np.float64), np.float64),
    (np.ones(3, np.float32), np.ones((), np.float64), np.float64),
    (np.ones(3, np.float32), np.float64(2.0), np.float64),  # NumPy scalars are strong (NEP 50)
    (np.ones(3, bool), np.ones(3, np.int16), np.int16),
    (np.ones(3, np.float16), 1e3, np.float16),
]


@pytest.mark.parametrize("left, right, dtype", PROMOTIONS, ids=lambda v: str(getattr(v, "dtype", v)))
@pytest.mark.parametrize("op", [np.add, np.multiply, np.subtract], ids=lambda f: f.__name__)
def test_dtype_promotion(op, left, right, dtype):
    expected = op(left, right)
    assert expected.dtype == dtype
    right_t = t(right) if isinstance(right, np.ndarray) else right
    assert_same(op(t(left), right_t), expected)
    assert_same(F.add(t(left), right_t), np.add(left, right))
    assert_same(t(left) * right_t, left * right)
    assert_same(right_t - t(left), right - left)  # reflected operators promote the same way


def test_integer_division_and_mean_give_float64():
    a = np.arange(1, 5, dtype=np.int32)
    assert_same(t(a) / 2, a / 2)
    assert_same(t(a) / t(a), a / a)
    assert_same(F.mean(t(a)), np.mean(a))
    assert_same(t(a) ** 2, a ** 2)


def test_tensor_construction_dtypes():
    assert_same(jl.tensor([1.0, 2.0]), np.asarray([1.0, 2.0]))
    assert_same(jl.tensor([1, 2]), np.asarray([1, 2]))
    assert_same(jl.tensor(3.0), np.asarray(3.0))
    assert_same(jl.tensor([1, 2], dtype=np.float32), np.asarray([1, 2], dtype=np.float32))
    assert_same(F.cast(jl.tensor([1.7, -1.7]), np.int32), np.asarray([1.7, -1.7]).astype(np.int32))
