"""GradientTape semantics (TensorFlow Eager's): nesting, persistence, structures, variables."""
from collections import namedtuple

import numpy as np
import pytest

import janus_like as jl
from janus_like import F, GradientTape
from janus_like.errors import GradientError


def value(t):
    return np.asarray(t.numpy())


# ------------------------------------------------------------------ higher order
@pytest.mark.parametrize("f, x0, first, second", [
    (lambda x: x * x, 3.0, 6.0, 2.0),
    (lambda x: x * x + x * x + x * x, 2.0, 12.0, 6.0),  # a value used three times: summed, not in place
], ids=["x_times_x", "used_three_times"])
def test_second_derivative(f, x0, first, second):
    x = jl.tensor(x0)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    assert float(dy) == first
    assert float(outer.gradient(dy, x)) == second


def test_third_derivative_of_cube():
    x = jl.tensor(np.array([2.0, -1.0]))
    with GradientTape() as t3:
        t3.watch(x)
        with GradientTape() as t2:
            t2.watch(x)
            with GradientTape() as t1:
                t1.watch(x)
                y = F.sum(x ** 3)
            d1 = t1.gradient(y, x)  # 3x^2
            s1 = F.sum(d1)
        d2 = t2.gradient(s1, x)  # 6x
        s2 = F.sum(d2)
    d3 = t3.gradient(s2, x)  # 6
    np.testing.assert_allclose(value(d1), 3 * value(x) ** 2)
    np.testing.assert_allclose(value(d2), 6 * value(x))
    np.testing.assert_allclose(value(d3), [6.0, 6.0])


def test_hessian_vector_product_of_tanh_network():
    rng = np.random.default_rng(0)
    w = jl.tensor(rng.standard_normal((3, 3)))
    x = jl.tensor(rng.standard_normal(3))
    v = rng.standard_normal(3)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = F.sum(F.tanh(F.matmul(w, x)))
        g = inner.gradient(y, x)
        gv = F.sum(F.mul(g, v))
    hv = outer.gradient(gv, x)
    # analytic: H = W^T diag(-2 tanh(z) (1 - tanh(z)^2)) W with z = W x
    z = value(w) @ value(x)
    d = -2 * np.tanh(z) * (1 - np.tanh(z) ** 2)
    np.testing.assert_allclose(value(hv), value(w).T @ (d * (value(w) @ v)), rtol=1e-12)


# ------------------------------------------------------------------ persistence
def test_persistent_tape_allows_several_gradients():
    x = jl.tensor(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == 32.0
    assert float(tape.gradient(y, x)) == 4.0
    assert float(tape.gradient(z, y)) == 8.0


def test_non_persistent_tape_raises_on_second_gradient():
    x = jl.tensor(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(GradientError, match="only be called once"):
        tape.gradient(y, x)


def test_tape_stops_recording_on_exit():
    x = jl.tensor(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 3.0
    z = y * y  # after the block: not recorded
    assert float(tape.gradient(y, x)) == 3.0
    assert tape.gradient(z, x) is None


def test_gradient_inside_the_block_still_works():
    x = jl.tensor(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
        g = tape.gradient(y, x)
    assert float(g) == 4.0


# ------------------------------------------------------------------ unconnected and structures
def test_unconnected_sources_give_none_or_zeros():
    x, u = jl.tensor(np.ones(3, np.float32)), jl.tensor(np.ones((2, 2), np.float32))
    with GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = F.sum(x * 2.0)
    gx, gu = tape.gradient(y, [x, u])
    np.testing.assert_array_equal(value(gx), [2, 2, 2])
    assert gu is None
    zero = tape.gradient(y, u, unconnected_gradients="zero")
    assert isinstance(zero, jl.Tensor) and zero.shape == (2, 2) and zero.dtype == np.float32
    assert not value(zero).any()


def test_unwatched_tensor_is_unconnected():
    x = jl.tensor(2.0)
    with GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_gradient_of_target_with_respect_to_itself_is_one():
    x = jl.tensor(np.array([1.0, 2.0]))
    with GradientTape() as tape:
        tape.watch(x)
    np.testing.assert_array_equal(value(tape.gradient(x, x, output_gradients=np.ones(2))), [1, 1])


def test_sources_keep_their_structure():
    Pair = namedtuple("Pair", "first second")
    a, b, c = jl.tensor(1.0), jl.tensor(2.0), jl.tensor(3.0)
    with GradientTape() as tape:
        tape.watch([a, b, c])
        y = a * b * c
    grads = tape.gradient(y, {"a": a, "rest": [b, (c, Pair(a, c))]})
    assert set(grads) == {"a", "rest"}
    assert isinstance(grads["rest"], list) and isinstance(grads["rest"][1], tuple)
    assert isinstance(grads["rest"][1][1], Pair)
    assert float(grads["a"]) == 6.0
    assert float(grads["rest"][0]) == 3.0
    assert float(grads["rest"][1][0]) == 2.0
    assert [float(g) for g in grads["rest"][1][1]] == [6.0, 2.0]


def test_watch_accepts_structures_and_rejects_non_tensors():
    a, b = jl.tensor(1.0), jl.tensor(2.0)
    with GradientTape() as tape:
        tape.watch({"a": a, "b": [b]})
        y = a + b
        with pytest.raises(TypeError, match="expects tensors"):
            tape.watch(np.ones(2))
    assert [float(g) for g in tape.gradient(y, (a, b))] == [1.0, 1.0]


def test_several_targets_add_up():
    x = jl.tensor(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        y1, y2 = x * x, x * 3.0
    assert float(tape.gradient([y1, y2], x)) == 7.0


def test_output_gradients_weight_a_non_scalar_target():
    x = jl.tensor(np.array([1.0, 2.0, 3.0]))
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=jl.tensor(np.array([1.0, 0.0, -1.0])))
    np.testing.assert_array_equal(value(g), [2.0, 0.0, -6.0])


def test_output_gradients_for_several_targets():
    x = jl.tensor(np.array([1.0, 2.0]))
    with GradientTape() as tape:
        tape.watch(x)
        y1, y2 = x * 2.0, F.sum(x * x)
    g = tape.gradient([y1, y2], x, output_gradients=[np.array([1.0, 1.0]), None])
    np.testing.assert_array_equal(value(g), [4.0, 6.0])


def test_reused_input_accumulates():
    x = jl.tensor(np.array([1.0, 2.0]))
    with GradientTape() as tape:
        tape.watch(x)
        y = F.sum(x * x + F.exp(x) + x)
    np.testing.assert_allclose(value(tape.gradient(y, x)), 2 * value(x) + np.exp(value(x)) + 1)


def test_repeated_uses_sum_into_a_new_array_and_leave_aliases_alone():
    # Gradients of a value used several times are summed in place after the first sum; the rules
    # of add and of an identity sum_to hand back their own cotangent, so a first contribution
    # (a user's seed, or another value's gradient) must never be the array written to.
    x = jl.tensor(np.array([1.0, 2.0, 3.0]))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        a = x + x
        h = a * 3.0
        y = F.sum(h + h + h * x)
        z = x + 0.0
        w1, w2 = z + 0.0, z + 0.0
    gx, gh, ga = tape.gradient(y, [x, h, a])
    xv = value(x)
    np.testing.assert_array_equal(value(gh), 2.0 + xv)
    np.testing.assert_array_equal(value(ga), 3.0 * (2.0 + xv))
    np.testing.assert_array_equal(value(gx), 12.0 + 12.0 * xv)
    seeds = [np.array([1.0, 2.0, 4.0]), np.array([8.0, 16.0, 32.0]), np.array([64.0, 128.0, 256.0])]
    seed_tensors = [jl.tensor(s) for s in seeds]
    gz, gx2 = tape.gradient([z, w1, w2], [z, x], output_gradients=seed_tensors)
    np.testing.assert_array_equal(value(gz), sum(seeds))
    np.testing.assert_array_equal(value(gx2), sum(seeds))
    for s, t in zip(seeds, seed_tensors):
        np.testing.assert_array_equal(value(t), s)


def test_gradient_keeps_source_dtype_with_wider_output_gradients():
    x = jl.tensor(np.array([1.0, 2.0], np.float32))
    with GradientTape() as tape:
        tape.watch(x)
        y = F.exp(x)
    g = tape.gradient(y, x, output_gradients=np.array([1.0, 1.0]))  # float64 seed
    assert g.dtype == np.float32


# ------------------------------------------------------------------ variables
def test_variables_are_watched_automatically():
    v = jl.Variable(np.array([1.0, 2.0]), name="w")
    with GradientTape() as tape:
        y = F.sum(v * v)
    np.testing.assert_array_equal(value(tape.gradient(y, v)), [2.0, 4.0])


def test_variables_through_numpy_functions_are_watched():
    v = jl.Variable(np.array([0.5, -0.5]))
    with GradientTape() as tape:
        y = np.sum(np.tanh(v))
    np.testing.assert_allclose(value(tape.gradient(y, v)), 1 - np.tanh([0.5, -0.5]) ** 2)


def test_watch_accessed_variables_false_and_non_trainable():
    v = jl.Variable(2.0)
    frozen = jl.Variable(3.0, trainable=False)
    with GradientTape(watch_accessed_variables=False) as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    with GradientTape() as tape:
        y = frozen * frozen
    assert tape.gradient(y, frozen) is None
    with GradientTape() as tape:
        tape.watch(frozen)  # explicitly watched: differentiated after all
        y = frozen * frozen
    assert float(tape.gradient(y, frozen)) == 6.0


def test_assign_after_read_does_not_change_the_recorded_value():
    v = jl.Variable(2.0)
    with GradientTape() as tape:
        y = v * v  # reads 2
        v.assign(3.0)
        z = y * v  # reads 3: z = v0^2 * v1
    # both reads are the same variable: dz/dv = 2 v0 v1 + v0^2 = 12 + 4
    assert float(tape.gradient(z, v)) == 16.0
    assert float(v) == 3.0


def test_variable_assign_ops_are_in_place():
    v = jl.Variable(np.array([1.0, 2.0], np.float32))
    v.assign_add(1)
    v -= np.array([0.5, 0.5])
    v *= 2
    assert v.dtype == np.float32
    np.testing.assert_array_equal(value(v), [3.0, 5.0])


# ------------------------------------------------------------------ functional updates of tensors
def test_tensor_setitem_is_recorded():
    x = jl.tensor(np.array([1.0, 2.0, 3.0]))
    v = jl.tensor(5.0)
    with GradientTape() as tape:
        tape.watch([x, v])
        y = x * 2.0
        y[1] = v * v  # overwrites the entry that came from x[1]
        loss = F.sum(y * y)
    gx, gv = tape.gradient(loss, [x, v])
    np.testing.assert_array_equal(value(gx), [8.0, 0.0, 24.0])  # d(2x)^2 = 8x, but x[1] no longer reaches loss
    assert float(gv) == 2 * 25.0 * 2 * 5.0


def test_setitem_after_use_does_not_change_earlier_gradients():
    x = jl.tensor(np.array([1.0, 2.0]))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 1.0
        z = F.sum(y * y)  # uses y before the update
        y[0] = 10.0
        w = F.sum(y)
    np.testing.assert_array_equal(value(tape.gradient(z, x)), [2.0, 4.0])
    np.testing.assert_array_equal(value(tape.gradient(w, x)), [0.0, 1.0])


def test_inplace_operators_on_tensors_are_recorded():
    x = jl.tensor(np.array([1.0, 2.0]))
    with GradientTape() as tape:
        tape.watch(x)
        y = x * 1.0
        y += x
        y *= x
        loss = F.sum(y)  # 2 x^2
    np.testing.assert_array_equal(value(tape.gradient(loss, x)), [4.0, 8.0])


# ------------------------------------------------------------------ functional forms
def test_grad_and_value_and_grad():
    f = lambda x, y: F.sum(x * x * y)  # noqa: E731
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_array_equal(value(jl.grad(f)(x, y)), [6.0, 16.0])
    val, (gx, gy) = jl.value_and_grad(f, argnums=(0, 1))(x, y)
    assert float(val) == 3.0 + 16.0
    np.testing.assert_array_equal(value(gx), [6.0, 16.0])
    np.testing.assert_array_equal(value(gy), [1.0, 4.0])
    assert float(jl.grad(lambda x: x ** 3)(2.0)) == 12.0
    assert float(jl.grad(lambda x, c: c * 1.0, argnums=0)(2.0, jl.tensor(5.0))) == 0.0  # unconnected: zero


def test_grad_is_composable_for_higher_order():
    d2 = jl.grad(lambda x: jl.grad(lambda y: F.sin(y))(x))
    np.testing.assert_allclose(float(d2(0.5)), -np.sin(0.5))


def test_relu_gradient_is_the_mask_product_as_in_numpy_code():
    # documented choice (ops/primitives.py): g * (x > 0), so a non-finite upstream gradient at an
    # inactive unit gives NaN, as `d *= a > 0` does in hand-written NumPy
    x = jl.Variable(np.array([-1.0, 2.0, -3.0]))
    with np.errstate(invalid="ignore"), jl.GradientTape() as tape:
        loss = F.sum(F.relu(x) * np.array([np.inf, 3.0, 1.0]))
        g = tape.gradient(loss, x).numpy()
    assert np.isnan(g[0]) and g[1] == 3.0 and g[2] == 0.0
