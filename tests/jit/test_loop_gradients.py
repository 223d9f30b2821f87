"""Gradients through loop nodes (trip counts known only at run time), side by side with eager:
results and all state must be bit-identical after every call, including calls with another
trip count and with zero trips (asserted away: eager has no gradient then)."""
import numpy as np

import janus_like as jl
from janus_like import ir

from .harness import check


def _loop_nodes(jf):
    return [n for g in jf.compiled for n in g.graph.all_nodes() if n.op == ir.LOOP]


def _rnn_make(shape=(3, 4)):
    def make():
        r = np.random.default_rng(0)
        w = jl.Variable(r.standard_normal((shape[1], shape[1])) * 0.3, name="w")
        u = jl.Variable(r.standard_normal((shape[1],)) * 0.1, name="u")

        def f(xs, n):
            with jl.GradientTape() as tape:
                h = xs[0] + u  # a Tensor before the loop, as inside it
                for t in range(n):  # n varies from call to call: a loop node once relaxed
                    h = np.tanh(h @ w + xs[t % xs.shape[0]] + u) * 1.5
                loss = np.sum(h * h) + np.sum(w * w) * 0.01  # w is also used outside the loop
            gw, gu = tape.gradient(loss, [w, u])
            w.assign_sub(0.1 * gw)
            u.assign_sub(0.1 * gu)
            return loss, h

        return f, {"w": w, "u": u}

    return make


def test_for_range_of_a_graph_value_differentiates_through_the_loop_node():
    xs = np.random.default_rng(1).standard_normal((5, 3, 4))
    counts = [2, 5, 3, 4, 6, 2, 7, 3, 3, 5, 1, 4]
    calls = [lambda s, n=n, i=i: (xs[i % 5], n) for i, n in enumerate(counts)]
    jf = check(_rnn_make(), calls)
    assert _loop_nodes(jf), jf.explain()
    backward = [n for n in _loop_nodes(jf) if any(p.params.get("name") == "<i>" for p in n.params["placeholders"])]
    assert backward, "no backward loop node was generated"
    s = jf.stats()
    assert s["graph_calls"] >= 5, jf.explain()
    assert "varying-trip-count" not in {fb.reason for fb in jf.fallbacks()}, jf.explain()


def test_zero_trips_fall_back_to_eager_and_results_still_match():
    xs = np.random.default_rng(2).standard_normal((5, 3, 4))
    counts = [2, 5, 3, 4, 0, 6, 0, 3, 2, 4]
    calls = [lambda s, n=n, i=i: (xs[i % 5], n) for i, n in enumerate(counts)]
    jf = check(_rnn_make(), calls)
    assert jf.stats()["graph_calls"] >= 3, jf.explain()


def test_while_loop_with_a_data_dependent_trip_count():
    def make():
        w = jl.Variable(np.array([[0.9, 0.2], [-0.1, 0.8]]), name="w")

        def f(x):
            with jl.GradientTape() as tape:
                h = x @ w  # a Tensor before the loop, as inside it
                while np.sum(np.abs(h)) > 0.5:  # trips depend on the data (always ends: |h| -> 0.4)
                    h = h * 0.5 + np.tanh(h @ w) * 0.1
                loss = np.sum(h)
            g = tape.gradient(loss, w)
            w.assign_sub(0.05 * g)
            return loss

        return f, {"w": w}

    scales = [3.0, 8.0, 1.5, 20.0, 5.0, 2.0, 40.0, 3.0, 9.0, 1.2]
    calls = [lambda s, sc=sc: (np.array([sc, -0.5 * sc]),) for sc in scales]
    jf = check(make, calls)
    assert _loop_nodes(jf) and jf.stats()["graph_calls"] >= 3, jf.explain()


def test_gradient_with_respect_to_the_initial_carried_value():
    def make():
        x = jl.Variable(np.linspace(-1, 1, 3), name="x")

        def f(n):
            with jl.GradientTape() as tape:
                h = x * 1.0  # the loop's initial value; its gradient flows back to x
                for _ in range(n):
                    h = h * h * 0.25 + np.sin(h)
                loss = np.sum(h)
            g = tape.gradient(loss, x)
            x.assign_sub(0.01 * g)
            return loss, g

        return f, {"x": x}

    counts = [1, 3, 2, 4, 2, 5, 3, 1, 6, 2]
    calls = [lambda s, n=n: (n,) for n in counts]
    jf = check(make, calls)
    assert _loop_nodes(jf), jf.explain()
