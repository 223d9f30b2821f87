"""A step that times itself: `t0 = time.perf_counter()` ... `log.append(time.perf_counter() - t0)`.
Each read of a standard-library clock is a node that reads the clock when the graph runs, where
the program reads it among the ops, so the elapsed time covers the graph's work in between. The
readings cannot equal eager's, so these tests run eager and jit side by side on everything else
(results, weights, the RNG) and check the readings for what a clock promises.
"""
import time

import numpy as np
import pytest

import janus_like as jl
from janus_like import F

from .harness import assert_same, random_array


def _model():
    r = np.random.default_rng(0)
    return {"w1": jl.Variable(r.standard_normal((6, 16)).astype(np.float32) * 0.3),
            "w2": jl.Variable(r.standard_normal((16, 1)).astype(np.float32) * 0.3), "times": [], "it": 0}


def timed_step(m, x, y):
    t0 = time.perf_counter()
    with jl.GradientTape() as tape:
        loss = F.mean((np.tanh(x @ m["w1"]) @ m["w2"] - y) ** 2)
    vs = [m["w1"], m["w2"]]
    for v, g in zip(vs, tape.gradient(loss, vs)):
        v.assign_sub(0.1 * g)
    m["it"] += 1
    m["times"].append((time.time(), time.perf_counter() - t0, time.monotonic_ns()))
    return loss


def test_a_step_that_times_itself_is_one_graph():
    me, mj = _model(), _model()
    jf = jl.jit(timed_step)
    for i in range(12):
        x, y = random_array(i, (8, 6)).astype(np.float32), random_array(50 + i, (8, 1)).astype(np.float32)
        before = time.time()
        out_e, out_j = timed_step(me, x, y), jf(mj, x, y)
        assert_same(out_e, out_j, f"call {i} result")
        assert_same({k: me[k] for k in ("w1", "w2", "it")}, {k: mj[k] for k in ("w1", "w2", "it")}, f"call {i} state")
        stamp, elapsed, mono = mj["times"][-1]
        assert type(stamp) is float and type(elapsed) is float and type(mono) is int
        assert before <= stamp <= time.time() and 0.0 <= elapsed < 5.0
        assert i == 0 or mono >= mj["times"][-2][2]
    assert jf.stats()["graph_calls"] >= 8, jf.explain()


def test_a_reading_stays_where_the_program_reads_it():
    """The second reading comes after the products it times, not wherever the plan has room."""
    def step(a, b):
        t0 = time.perf_counter()
        c = a @ b
        for _ in range(3):
            c = np.tanh(c @ b)
        return float(np.sum(c)), time.perf_counter() - t0

    jf = jl.jit(step)
    a, b = random_array(1, (20, 20)), random_array(2, (20, 20)) * 0.1
    for _ in range(5):
        assert jf(a, b)[0] == step(a, b)[0]
    lines = jf.graphs()[0].plan.source.splitlines()
    reads = [k for k, line in enumerate(lines) if "= K" in line and "()" in line]
    products = [k for k, line in enumerate(lines) if "NP_matmul(" in line or "NP_dot(" in line]
    assert len(reads) == 2 and len(products) == 4, "\n".join(lines)
    assert reads[0] < products[0] and products[-1] < reads[1], "\n".join(lines)


@pytest.mark.parametrize("clock", [time.sleep, time.strftime])
def test_other_time_functions_stay_eager(clock):
    def step(x):
        clock(0.0) if clock is time.sleep else clock("%Y")
        return x * 2.0

    jf = jl.jit(step)
    for i in range(5):
        assert np.array_equal(jf(random_array(i, (3,))), random_array(i, (3,)) * 2.0)
    assert jf.stats()["graph_calls"] == 0
