"""np.cumsum, np.prod, np.sort, np.diff, np.round, np.triu / np.tril, np.hypot, np.atleast_*d and
the reducing ufunc methods on Tensors: NumPy's values, shapes and dtypes (the ops call NumPy's own
functions), and a product's gradient where elements are exactly zero."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import janus_like as jl
from janus_like import F

from gradcheck import check_grads
from test_parity import DTYPES, assert_same, t, values

SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)


def _axis_or_none(draw, nd):
    return draw(st.sampled_from([None] + list(range(-nd, nd))))


@given(shape=SHAPES, data=st.data(), dtype=st.sampled_from(DTYPES + [np.bool_]), seed=st.integers(0, 2**32 - 1))
def test_running_sums_products_sorts_and_differences_match_numpy(shape, data, dtype, seed):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, np.float64) > 0 if dtype is np.bool_ else values(rng, shape, dtype)
    axis = _axis_or_none(data.draw, len(shape))
    assert_same(np.cumsum(t(x), axis), np.cumsum(x, axis))
    assert_same(t(x).cumsum(axis), x.cumsum(axis))
    assert_same(np.cumsum(t(x), axis, np.float32), np.cumsum(x, axis, np.float32))
    keepdims = data.draw(st.booleans())
    assert_same(np.prod(t(x), axis, keepdims=keepdims), np.prod(x, axis, keepdims=keepdims))
    assert_same(t(x).prod(axis, keepdims=keepdims), x.prod(axis, keepdims=keepdims))
    assert_same(np.multiply.reduce(t(x), axis=axis), np.multiply.reduce(x, axis=axis))
    sort_axis = data.draw(st.sampled_from([None, -1, 0]))
    assert_same(np.sort(t(x), sort_axis), np.sort(x, sort_axis))
    n, diff_axis = data.draw(st.integers(0, 3)), data.draw(st.integers(-len(shape), len(shape) - 1))
    assert_same(np.diff(t(x), n, diff_axis), np.diff(x, n, diff_axis))
    for k in (1, 2, 3):
        atleast = getattr(np, f"atleast_{k}d")
        assert_same(atleast(t(x)), atleast(x))
        assert_same(atleast(t(x[(0,) * len(shape)])), atleast(x[(0,) * len(shape)]))


@given(shape=SHAPES, dtype=st.sampled_from(DTYPES), decimals=st.integers(-2, 3), k=st.integers(-2, 2),
       seed=st.integers(0, 2**32 - 1))
def test_rounding_triangles_and_hypot_match_numpy(shape, dtype, decimals, k, seed):
    rng = np.random.default_rng(seed)
    x, y = values(rng, shape, dtype) * 7, values(rng, shape[-1:], dtype)
    assert_same(np.round(t(x), decimals), np.round(x, decimals))
    assert_same(np.around(t(x), decimals), np.around(x, decimals))
    assert_same(t(x).round(decimals), x.round(decimals))
    if len(shape) >= 2:
        assert_same(np.triu(t(x), k), np.triu(x, k))
        assert_same(np.tril(t(x), k), np.tril(x, k))
    assert_same(np.hypot(t(x), t(y)), np.hypot(x, y))
    assert_same(np.hypot(t(x), 2.0), np.hypot(x, 2.0))


def test_numpy_edge_cases_match():
    x = np.array([[3.0, np.nan, -1.0], [0.0, -0.0, 2.5]])
    assert_same(np.sort(t(x), axis=None), np.sort(x, axis=None))  # NaN last
    assert_same(np.round(t(np.array([0.5, 1.5, 2.5, -0.5]))), np.array([0.0, 2.0, 2.0, -0.0]))  # halves to even
    assert_same(np.add.accumulate(t(x), axis=1), np.add.accumulate(x, axis=1))
    assert_same(np.diff(t(x > 0)), np.diff(x > 0))  # booleans: `!=`
    with pytest.raises(ValueError):
        np.diff(t(np.float64(1.0)))


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, True), ((0, 1), False), (-1, False)])
def test_the_gradient_of_a_product_with_zeros_is_the_product_of_the_others(axis, keepdims):
    # one zero in a row (its gradient: the others' product), two (all zero), none (out / x)
    x = np.array([[0.0, 2.0, -1.5, 0.5], [1.2, 0.0, 0.0, 3.0], [0.7, -1.1, 2.0, 1.3]])
    check_grads(lambda v: F.prod(v, axis, keepdims), x)
    check_grads(lambda v: F.prod(v, axis, keepdims), x.T.copy())
    t_ = jl.tensor(np.array([0.0, 2.0, 3.0]))
    with jl.GradientTape() as tape:
        tape.watch(t_)
        p = F.prod(t_)
    np.testing.assert_array_equal(tape.gradient(p, t_).numpy(), [6.0, 0.0, 0.0])


def test_a_sorts_gradient_follows_the_values():
    x = jl.tensor(np.array([[3.0, 1.0, 2.0], [0.5, -1.0, 4.0]]))
    with jl.GradientTape() as tape:
        tape.watch(x)
        y = F.sum(F.mul(F.sort(x, axis=1), np.array([1.0, 10.0, 100.0])))
    # each element's gradient is the weight of the place its value was sorted into
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[100.0, 1.0, 10.0], [10.0, 1.0, 100.0]])


@pytest.mark.parametrize("fn", [lambda v: F.cumsum(v, 0, np.float32), lambda v: F.prod(v, 1, dtype=np.float32),
                                lambda v: F.cumsum(F.cast(v, np.float32), None, np.float64)])
def test_a_gradient_through_another_result_dtype_has_the_inputs_dtype(fn):
    x = jl.tensor(np.array([[0.5, 2.0, -1.5], [1.2, 0.7, 3.0]]))
    with jl.GradientTape() as tape:
        tape.watch(x)
        y = F.sum(fn(x))
    g = tape.gradient(y, x)
    assert g.dtype == np.float64 and g.shape == (2, 3)
