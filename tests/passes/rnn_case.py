"""A batch-1 character RNN step (benchmarks/models/char_rnn.py, smaller), for the passes that
rewrite per-step structure: sizes large enough for the batching pass to stack the steps'
products (see passes/batch.py)."""
import numpy as np
import pytest

import janus_like as jl
from janus_like import F, passes

from jit.harness import random_array


def make_rnn(bias=False, per_step_loss=True, clip=None):
    """() -> (step, params): h_t = tanh(W_xh[ids[t]] + h @ W_hh (+ b)); a per-step
    cross-entropy through W_hy, or sum(h*h) at the end; SGD, the gradient clipped if asked."""
    def make():
        names = ["w_xh", "w_hh"] + (["w_hy"] if per_step_loss else []) + (["b_h"] if bias else [])
        shapes = {"w_xh": (60, 100), "w_hh": (100, 100), "w_hy": (100, 60), "b_h": (100,)}
        v = {n: jl.Variable(random_array(k, shapes[n], np.float32) * 0.1, name=n) for k, n in enumerate(names)}
        b = v.get("b_h", 0.0)
        params = list(v.values())

        def step(ids):
            with jl.GradientTape() as tape:
                h = F.tanh(v["w_xh"][ids[0]] + b)
                loss = 0.0
                for t in range(1, 12):
                    h = F.tanh(v["w_xh"][ids[t]] + h @ v["w_hh"] + b)
                    if per_step_loss:
                        loss = loss + F.cross_entropy(F.reshape(h @ v["w_hy"], (1, -1)), ids[t + 1:t + 2])
                loss = loss / 11 if per_step_loss else F.sum(h * h)
            for p, g in zip(params, tape.gradient(loss, params)):
                p.assign_sub(0.1 * (g if clip is None else F.clip(g, -clip, clip)))
            return loss

        return step, params

    return make


def run_jit(make, without=None, calls=8):
    """(jit, losses, final parameters) over `calls` steps; `without`: a reassociating pass left out."""
    with pytest.MonkeyPatch.context() as mp:
        if without is not None:
            mp.setattr(passes, "REASSOCIATING", [p for p in passes.REASSOCIATING if p is not without])
        step, params = make()
        jf = jl.jit(step, reassociate=True, native="off")
        losses = [jf(np.random.default_rng(i).integers(0, 60, 13)) for i in range(calls)]
    return jf, losses, [p.numpy().copy() for p in params]


def assert_close_to_eager(make, losses):
    """Eager gives the same losses up to the passes' reassociation."""
    step, _ = make()
    for i, want in enumerate(losses):
        np.testing.assert_allclose(float(step(np.random.default_rng(i).integers(0, 60, 13))), float(want), rtol=1e-5)


def assert_smaller_and_close_to_without(make, jf, losses, params, without):
    """The graph with the pass is smaller than without it, and computes the same up to
    reassociation, as does eager."""
    jf2, losses2, params2 = run_jit(make, without=without)
    assert len(jf2.graphs()[0].graph.nodes) > len(jf.graphs()[0].graph.nodes)
    np.testing.assert_allclose([float(v) for v in losses], [float(v) for v in losses2], rtol=1e-6)
    for a, b in zip(params, params2):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert_close_to_eager(make, losses)
