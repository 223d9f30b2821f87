"""What generation no longer does (first-call cost), each checked against eager:

- no identity `sum_to`/`broadcast_like` nodes from a backward pass (the builder reuses the
  operand's node where shape and dtype stay);
- no quadratic folding of an add-chain of per-step products (`fold_accumulations` folds the
  root of each chain once);
- no cyclic garbage collection while a graph is generated (and the collector's state is given
  back as it was);
- no `np.unique` (whose first call imports numpy.ma) in `unique_scatters`.
"""
import gc
import importlib
import sys

import numpy as np
import pytest

import janus_like as jl
from janus_like import F, passes

from .harness import check, random_array

JF = sys.modules["janus_like.jit.generation"]  # (where graphs are made: optimize, Generator)
simplify_mod = importlib.import_module("janus_like.passes.simplify")  # the package's `simplify` is the pass


@pytest.fixture
def raw_graphs(monkeypatch):
    """Copies of (op, operand shapes) for every graph as generated, before the passes."""
    seen = []
    original = JF.optimize

    def capture(graph, *args):
        seen.append([(n.op, [getattr(i, "aval", None) for i in n.inputs], n.aval) for n in graph.all_nodes()])
        return original(graph, *args)

    monkeypatch.setattr(JF, "optimize", capture)
    return seen


def _mlp_step():
    w = jl.Variable(random_array(1, (4, 3)))
    b = jl.Variable(random_array(2, (3,)))

    def step(x, y):
        with jl.GradientTape() as tape:
            h = np.tanh(x @ w + b)  # b broadcasts: its gradient really is a sum_to
            loss = np.mean((h - y) ** 2)
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
        return loss

    return step, {"w": w, "b": b}


def test_backward_pass_emits_no_identity_reductions(raw_graphs):
    calls = [lambda s, i=i: (random_array(10 + i, (5, 4)), random_array(20 + i, (5, 3))) for i in range(6)]
    check(_mlp_step, calls, min_graph_calls=2)
    assert raw_graphs
    for nodes in raw_graphs:
        same = [op for op, ins, out in nodes if op in ("sum_to", "broadcast_like", "reshape_like")
                and ins[0] is not None and ins[1] is not None and tuple(ins[0][0]) == tuple(ins[1][0])
                and np.dtype(ins[0][1]) == np.dtype(out[1])]
        assert same == []
        # the bias gradient's real reduction is still there
        assert any(op == "sum_to" and tuple(ins[0][0]) == (5, 3) for op, ins, out in nodes)


def _chain_graph_sizes(monkeypatch, steps):
    sizes = []
    original = passes.fold_accumulations
    index = passes.REASSOCIATING.index(original)

    def counted(graph):
        before = len(graph.nodes)
        out = original(graph)
        sizes.append((before, len(graph.nodes), sum(1 for n in graph.nodes if n.op == "concatenate")))
        return out

    monkeypatch.setattr(passes, "REASSOCIATING", passes.REASSOCIATING[:index] + [counted]
                        + passes.REASSOCIATING[index + 1:])
    r = np.random.default_rng(0)
    w = jl.Variable(r.standard_normal((8, 8)).astype(np.float32) * 0.2)
    w2 = jl.Variable(w.numpy().copy())

    def make_step(w):
        def step(xs):
            with jl.GradientTape() as tape:
                h = np.zeros((2, 8), np.float32)
                for t in range(xs.shape[0]):
                    h = np.tanh(xs[t] @ w + h)
                loss = np.sum(h * h)
            w.assign_sub(0.1 * tape.gradient(loss, w))
            return loss
        return step

    jf, eager = jl.jit(make_step(w), reassociate=True), make_step(w2)
    xs = r.standard_normal((steps, 2, 8)).astype(np.float32)
    for _ in range(5):
        np.testing.assert_allclose(float(jf(xs)), float(eager(xs)), rtol=1e-5)
    np.testing.assert_allclose(w.numpy(), w2.numpy(), rtol=1e-5, atol=1e-6)
    assert jf.stats()["graph_calls"] == 2
    return sizes


def test_fold_accumulations_folds_each_chain_once(monkeypatch):
    (before, after, cats), = _chain_graph_sizes(monkeypatch, steps=12)
    # one fold of the 12-term weight-gradient chain: two concatenations and one product (a
    # prefix-by-prefix fold made 11 of each, all but the last dead)
    assert cats == 2
    assert after - before <= 3


def test_generation_runs_with_the_collector_paused(monkeypatch):
    states = []
    original = JF.Generator.generate

    def watched(self, args):
        states.append(gc.isenabled())
        return original(self, args)

    monkeypatch.setattr(JF.Generator, "generate", watched)
    f = jl.jit(lambda x: np.tanh(x) * 2)
    x = np.arange(3.0)
    was = gc.isenabled()
    try:
        gc.enable()
        for _ in range(5):
            np.testing.assert_array_equal(f(x), np.tanh(x) * 2)
        assert states == [False] and gc.isenabled()
        gc.disable()  # a caller that turned the collector off keeps it off
        g = jl.jit(lambda x: np.exp(x) + 1)
        for _ in range(5):
            np.testing.assert_array_equal(g(x), np.exp(x) + 1)
        assert states == [False, False] and not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("values, distinct", [([], True), ([3], True), ([0, 1, 2, 3], True), ([2, 0, 1], True),
                                              ([1, 2, 1], False), ([[0, 1], [1, 2]], False),
                                              ([-1, 0], False), ([-3, -1], True)])  # (-1 and n - 1: one row)
def test_distinct_without_np_unique(values, distinct):
    assert simplify_mod._distinct(np.asarray(values, np.int64)) is distinct


def test_cross_entropy_gradient_scatter_is_marked_unique():
    def make():
        w = jl.Variable(random_array(3, (4, 5)))

        def step(x, labels):
            with jl.GradientTape() as tape:
                logp = F.log_softmax(x @ w, axis=-1)
                loss = -np.mean(logp[np.arange(x.shape[0]), labels])
            w.assign_sub(0.5 * tape.gradient(loss, w))
            return loss
        return step, {"w": w}

    calls = [lambda s, i=i: (random_array(30 + i, (6, 4)), np.arange(6) % 5) for i in range(6)]
    jf = check(make, calls, min_graph_calls=2, reassociate=True)
    grads = [n for g in jf.compiled for n in g.graph.all_nodes() if n.op == "getitem_grad"]
    assert grads and all(n.params.get("unique") for n in grads)
