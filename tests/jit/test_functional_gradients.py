"""`jl.grad(f)` and `jl.value_and_grad(f)` called in jitted code: the function they return is
plain Python on a GradientTape (autodiff.py marks it `_janus_inline`), so the generator inlines
it as it inlines the user's own tape code; `jl.grad(lambda ...)` made in jitted code is made at
generation (nothing runs then) and the lambda inlined where the gradient is taken. Eager and jit
side by side after every call."""
import pytest

import janus_like as jl
from janus_like import F

from .harness import call_sequence, check, random_array


def mse(w, x, y):
    return F.mean((x @ w - y) ** 2)


def scaled(a, b, s):
    return F.sum(a * b) * s + F.sum(b)


VG, G2, G0 = jl.value_and_grad(mse), jl.grad(scaled, argnums=(0, 1, 2)), jl.grad(mse, argnums=2)


def sgd_by_value_and_grad(st, x, y):
    loss, g = VG(st["w"], x, y)
    st["w"].assign_sub(0.1 * g)
    return loss


def gradients_of_arrays_and_a_float(st, x, y):
    ga, gb, gs = G2(x[:, :2], y[:, :2], float(st["n"]) * 0.5)  # arrays and a Python float become Tensors
    st["n"] += 1
    return ga, gb, gs, G0(st["w"], x, y)


def gradient_unused_argument(st, x, y):
    return jl.grad(lambda w, z: F.sum(w * 2.0), argnums=1)(st["w"], x)  # d/dz is zeros ("zero": unconnected)


@pytest.mark.parametrize("fn", [sgd_by_value_and_grad, gradients_of_arrays_and_a_float, gradient_unused_argument])
def test_functional_gradients_side_by_side(fn):
    def make():
        return fn, {"st": {"w": jl.Variable(random_array(1, (3, 2)) * 0.5, name="w"), "n": 1}}

    calls = call_sequence(8, lambda s, i: (s["st"], random_array(i, (4, 3)), random_array(20 + i, (4, 2))))
    check(make, calls, min_graph_calls=4)
