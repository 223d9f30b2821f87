"""Unknown dimensions: after a dimension took several sizes, one graph serves every size —
unless the code depends on the size, in which case each size keeps its own graph."""
import numpy as np

import janus_like as jl
from janus_like import F

from .harness import side_by_side

LENGTHS = [5, 7, 9, 12, 15, 20, 8, 33, 41, 6, 50, 17]


def _episodes(s, t, seed):
    r = np.random.default_rng(seed)
    return r.standard_normal((t, 4)).astype(np.float32), r.integers(0, 2, t), r.standard_normal(t).astype(np.float32)


def _make_update():
    """A policy-gradient update over an episode of any length, and its Variable."""
    w = jl.Variable(np.full((4, 2), 0.1, np.float32))

    def update(states, actions, returns):
        with jl.GradientTape() as tape:
            loss = F.cross_entropy(states @ w, actions) * F.mean(returns)
        w.assign_sub(0.05 * tape.gradient(loss, w))
        return loss

    return update, {"w": w}


def test_policy_gradient_update_over_episodes_of_any_length_uses_one_graph():
    jf = side_by_side(_make_update, [lambda s, t=t, k=k: _episodes(s, t, k) for k, t in enumerate(LENGTHS)])
    st = jf.stats()
    assert st["graphs_cached"] == 1 and st["graph_calls"] >= 7, jf.explain()
    assert "'?'" in jf.explain()


def test_sizes_read_by_the_code_become_run_time_values():
    def make():
        def f(x):
            n = x.shape[0]  # a Python int that differs per call: read at run time in the graph
            return np.tanh(x).sum() / n + np.arange(len(x))[-1]

        return f, {}

    xs = [np.ones(t) * 0.1 for t in LENGTHS[:8]]
    jf = side_by_side(make, [lambda s, x=x: (x,) for x in xs])
    assert jf.stats()["graphs_cached"] == 1 and jf.stats()["graph_calls"] >= 3, jf.explain()


def test_code_that_needs_a_fixed_size_keeps_one_graph_per_size():
    def make():
        def f(x):
            return x + np.ones(x.shape[0])  # np.ones of a run-time size is not converted

        return f, {}

    xs = [np.ones(t) * 0.1 for t in LENGTHS[:8]]
    jf = side_by_side(make, [lambda s, x=x: (x,) for x in xs])
    assert jf.stats()["graphs_cached"] > 1
    assert any(fb.reason == "shape-dependent" for fb in jf.fallbacks()), jf.explain()


def test_graph_that_only_works_for_some_sizes_is_detected_by_the_probe():
    def make():
        def f(x):
            return F.reshape(x, (2, -1)).sum(axis=1)  # fine for even lengths only

        return f, {}

    xs = [np.arange(2 * t, dtype=np.float64) for t in (3, 4, 5, 6, 7, 8, 9)]
    jf = side_by_side(make, [lambda s, x=x: (x,) for x in xs])
    assert jf.stats()["graphs_cached"] > 1  # one graph per size, as before
    assert any(fb.reason == "shape-dependent" for fb in jf.fallbacks()), jf.explain()


def test_size_independent_reshape_is_polymorphic():
    def make():
        def f(x):
            return F.reshape(x, (-1, 2)).sum(axis=1)

        return f, {}

    xs = [np.arange(2 * t, dtype=np.float64).reshape(t, 2) for t in (3, 4, 5, 6, 7, 8, 9)]
    jf = side_by_side(make, [lambda s, x=x: (x,) for x in xs])
    assert jf.stats()["graphs_cached"] == 1 and jf.stats()["graph_calls"] >= 3, jf.explain()


def test_a_failure_while_compiling_the_unknown_dimension_graph_falls_back_to_graphs_per_size(monkeypatch):
    from janus_like import executor

    real = executor.CompiledGraph

    def broken(gen, *a, **k):  # a bug in compiling polymorphic graphs must not reach the user
        if gen.graph.polymorphic:
            raise RuntimeError("simulated compiler bug")
        return real(gen, *a, **k)

    monkeypatch.setattr(executor, "CompiledGraph", broken)
    jf = side_by_side(_make_update, [lambda s, t=t, k=k: _episodes(s, t, k) for k, t in enumerate(LENGTHS)])
    assert "simulated compiler bug" in jf.explain() and jf.stats()["graph_calls"] >= 3, jf.explain()
