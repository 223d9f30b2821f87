"""Gradient checks: every differentiable op against central finite differences in float64.

One helper, `check_grads(fn, *args)`, compares the GradientTape gradient of <fn(*args), u> (u a
fixed random projection, so the whole Jacobian is exercised, not only its column sums) with
central differences. `CASES` is the table: one hypothesis-driven generator per op that draws
shapes (broadcasting included) and values kept away from the op's non-differentiable points.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F

from grad_cases import CASES, COVERED_PRIMITIVES, _draw_case
from gradcheck import _is_float_array, _leaves, _projections, analytic_grads, check_grads, interleaved, normal, positive


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
    # forward supports all of NumPy's einsum; the gradient rule handles any number of operands and
    # '...', not an index repeated inside one operand (a trace, a diagonal): it says so
    square, rect = jl.tensor(np.ones((3, 3))), jl.tensor(np.ones((3, 2)))
    with jl.GradientTape() as tape:
        tape.watch([square, rect])
        y = F.sum(F.einsum("ii,ij->j", square, rect))
    np.testing.assert_array_equal(y.numpy(), np.sum(np.einsum("ii,ij->j", square.numpy(), rect.numpy())))
    with pytest.raises(NotImplementedError, match="einsum gradients do not support"):
        tape.gradient(y, [square, rect])


def test_einsum_of_three_operands_and_ellipsis_gradients():
    rng = np.random.default_rng(0)
    h, u, x = rng.standard_normal((4, 3)), rng.standard_normal((3, 3)), rng.standard_normal((2, 4, 3))
    check_grads(lambda h, u: F.einsum("bi,ij,bj->b", h, u, h), h, u)
    check_grads(lambda x, u: F.einsum("...ij,jk->...ik", x, u), x, u)
    t = jl.tensor(u)
    np.testing.assert_array_equal(F.einsum("ij->ji", t).numpy(), u.T)  # a fresh array, not a view
