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


def _make_pg(exact):
    """REINFORCE's update: log-probabilities picked with `[np.arange(T), actions]`."""
    w = jl.Variable(np.full((4, 2), 0.1, np.float32))

    def update(states, actions, returns):
        with jl.GradientTape() as tape:
            logp = F.log_softmax(states @ w)
            loss = -F.mean(logp[np.arange(actions.shape[0]), actions] * returns)
        w.assign_sub(0.05 * tape.gradient(loss, w))
        return loss

    return update, {"w": w}


def test_arange_paired_with_its_own_index_scatters_by_assignment_at_every_size():
    calls = [lambda s, t=t, k=k: _episodes(s, t, k) for k, t in enumerate(LENGTHS + [1, 3, 1])]
    jf = side_by_side(lambda: _make_pg(False), calls, reassociate=True, native="off")
    (g,) = jf.graphs()
    assert g.graph.polymorphic
    scatters = [n for n in g.graph.all_nodes() if n.op == "getitem_grad"]
    assert scatters and all(n.params.get("unique") for n in scatters)
    assert "SCATTER_ADD" not in g.plan.source


def test_arange_of_another_index_keeps_add_at():
    """arange over another value's length may be 1 where the other index is longer: the pairs
    repeat, so the scatter must add."""
    def make():
        w = jl.Variable(np.full((6, 2), 0.1, np.float32))

        def f(states, actions, returns):
            with jl.GradientTape() as tape:
                picked = (states @ w[:4])[np.arange(returns.shape[0]), actions]
                loss = F.sum(picked * returns)
            w.assign_sub(0.05 * tape.gradient(loss, w))
            return loss

        return f, {"w": w}

    def call(k, t):  # returns of length 1: arange(1) broadcast against t actions repeats rows
        return lambda s: _episodes(s, t, k)[:2] + (_episodes(s, 1, k)[2],)

    jf = side_by_side(make, [call(k, t) for k, t in enumerate(LENGTHS)], reassociate=True, native="off")
    scatters = [n for g in jf.graphs() if g.graph.polymorphic for n in g.graph.all_nodes() if n.op == "getitem_grad"]
    assert scatters and not any(n.params.get("unique") for n in scatters)


def test_rank_zero_constants_fold_in_graphs_for_unknown_dimensions():
    calls = [lambda s, t=t, k=k: _episodes(s, t, k) for k, t in enumerate(LENGTHS)]
    jf = side_by_side(lambda: _make_pg(False), calls, native="off")
    (g,) = jf.graphs()
    assert g.graph.polymorphic
    assert not any(n.op == "ones_like" for n in g.graph.all_nodes())  # the backward seed is a constant


def test_squeeze_of_an_axis_of_unknown_size_that_turns_out_one_runs_eagerly():
    """`x.squeeze()` in the graph for every batch size drops the axes of length one at
    generation; an assert checks that no other axis has length one when it runs, since eager's
    squeeze would drop it too (a last batch of one). Before, the graph kept the rank: `ndim` 1
    where eager's is 0, a guard `if p.ndim == 0: p = p[None]` skipped, `mean(0)` where eager
    raises. A mask selecting one row (`x[m].squeeze()`) is the same."""
    def make():
        def f(x, m):
            p = x.squeeze()
            if p.ndim == 0:
                p = p[None]
            return p * 2.0, x[m].squeeze().ndim
        return f, {}

    sizes = [4, 5, 6, 7, 8, 9, 3, 1, 5, 1]
    r = np.random.default_rng(0)
    xs = [r.standard_normal((b, 1)) for b in sizes]
    ms = [np.arange(b) % 2 == 0 for b in sizes[:-3]] + [np.array([True]), np.array([0, 0, 1, 0, 0], bool),
                                                      np.array([True])]
    jf = side_by_side(make, [lambda s, x=x, m=m: (x, m) for x, m in zip(xs, ms)])
    assert jf.stats()["graph_calls"] >= 2, jf.explain()
