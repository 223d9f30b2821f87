"""Variance and standard deviation in graphs (`janus_like/ops/statistics.py`): a hand-written
layer norm and a standardisation, trained side by side with eager (exact mode and the default
reassociating one), shapes changing between calls. Before these ops, `x.var(...)` kept the whole
function eager."""
import numpy as np
import pytest

import janus_like as jl
from janus_like import optim

from .harness import check, within


def _layer_norm_step(eps=1e-5):
    def make():
        gamma = jl.Variable(np.ones(8, np.float32), name="gamma")
        beta = jl.Variable(np.zeros(8, np.float32), name="beta")
        w = jl.Variable(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32) * 0.3, name="w")
        opt = optim.SGD(0.1)

        def step(x, y):
            with jl.GradientTape() as tape:
                h = x @ w
                mu = h.mean(axis=-1, keepdims=True)
                var = np.var(h, axis=-1, keepdims=True)
                z = (h - mu) / np.sqrt(var + eps) * gamma + beta
                loss = np.mean((z - y) ** 2) + 0.01 * np.std(z)
            params = [gamma, beta, w]
            opt.apply_gradients(zip(tape.gradient(loss, params), params))
            return loss

        return step, {"gamma": gamma, "beta": beta, "w": w}

    return make


def _batches(n_calls=8):
    def call(k):
        r = np.random.default_rng(k)
        n = 4 if k < 6 else 6  # a new batch size: a new graph
        return r.standard_normal((n, 8)).astype(np.float32), r.standard_normal((n, 8)).astype(np.float32)

    return [lambda s, k=k: call(k) for k in range(n_calls)]


def test_layer_norm_training_step_exact():
    check(_layer_norm_step(), _batches(), min_graph_calls=3)


def test_layer_norm_training_step_reassociating():
    with within(rtol=1e-5, atol=1e-6):  # float32
        check(_layer_norm_step(), _batches(), min_graph_calls=3, reassociate=True)


@pytest.mark.parametrize("ddof", [0, 1])
def test_standardised_features_with_ddof(ddof):
    def make():
        def f(x):
            return (x - x.mean(0)) / x.std(0, ddof=ddof), np.var(x, ddof=ddof), x.var()

        return f, {}

    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal((5 + k // 4, 3)),) for k in range(8)]
    check(make, calls, min_graph_calls=3)


def test_gradient_clipping_by_norm_with_a_nan_check():
    """`np.linalg.norm` of each gradient, scaled down when above a bound (a branch on it), and a
    NaN check with `np.any` / `not`: a clipping SGD step side by side."""
    def make():
        w = jl.Variable(np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32), name="w")

        def step(x, y, max_norm):
            with jl.GradientTape() as tape:
                loss = np.mean((np.tanh(x @ w) - y) ** 2)
            g = tape.gradient(loss, w)
            norm = np.linalg.norm(g)
            if norm > max_norm:
                g = g * (max_norm / norm)
            if not np.any(np.isnan(g)):
                w.assign_sub(0.5 * g)
            return loss, norm

        return step, {"w": w}

    def call(k):
        r = np.random.default_rng(k)
        x, y = r.standard_normal((4, 8)).astype(np.float32), r.standard_normal((4, 8)).astype(np.float32)
        return x, y * (1 + k % 3), 0.05 if k % 2 else 10.0

    check(make, [lambda s, k=k: call(k) for k in range(10)], min_graph_calls=4)
