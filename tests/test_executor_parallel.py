"""The opt-in inter-op parallel plan computes exactly what the sequential plan and the reference
interpreter compute (a large product runs on a worker thread; its operands stay untouched)."""
import numpy as np

import janus_like as jl
from janus_like import F
from janus_like.executor import interpret
from janus_like.executor.buffers import ASYNC_GAP, plan_async
from janus_like.executor.codegen import compile_plan


def test_parallel_plan_matches_interpreter_and_sequential_plan():
    r = np.random.default_rng(0)
    w_big = jl.Variable(r.standard_normal((256, 512)).astype(np.float32) * 0.05)
    w = jl.Variable(r.standard_normal((32, 32)).astype(np.float32) * 0.1)

    def step(x, h):
        with jl.GradientTape() as tape:
            big = x @ w_big  # large product whose result is needed only at the end
            for _ in range(ASYNC_GAP + 4):
                h = np.tanh(h @ w + 0.1)
            loss = F.sum(h) + F.mean(big)
        g_big, g = tape.gradient(loss, [w_big, w])
        return loss, g_big, g

    jf = jl.jit(step, reassociate=False)
    x = r.standard_normal((64, 256)).astype(np.float32)
    h = r.standard_normal((4, 32)).astype(np.float32)
    for _ in range(5):
        jf(x, h)
    graph = jf.graphs()[0].graph
    assert plan_async(graph), "the cost rule should pick the big product"
    slots = jf.graphs()[0].last_slots
    ref = interpret(graph, slots)
    par = compile_plan(graph, parallel=True)
    assert "POOL.submit" in par.source
    for _ in range(3):
        for a, b, c in zip(ref, par(slots), compile_plan(graph, parallel=False)(slots)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
            np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
