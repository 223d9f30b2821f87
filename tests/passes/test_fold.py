import numpy as np

import janus_like as jl
from janus_like import F


def _make(reassociate):
    r = np.random.default_rng(0)
    w = jl.Variable(r.standard_normal((32, 32)).astype(np.float32) * 0.2)
    emb = jl.Variable(r.standard_normal((10, 32)).astype(np.float32))

    def step(ids):
        with jl.GradientTape() as tape:
            h = np.zeros((ids.shape[0], 32), np.float32)
            for t in range(ids.shape[1]):
                h = np.tanh(F.embedding(emb, ids[:, t]) @ w + h)
            loss = np.sum(h * h)
        gw, gemb = tape.gradient(loss, [w, emb])
        w.assign_sub(0.1 * gw)
        emb.assign_sub(0.1 * gemb)
        return loss

    return jl.jit(step, reassociate=reassociate), step, (w, emb)


def test_fold_turns_per_step_weight_gradients_into_one_matmul_and_one_scatter():
    ids = np.random.default_rng(1).integers(0, 10, (2, 7))
    folded, _, (w1, e1) = _make(True)
    exact, _, (w2, e2) = _make(False)
    for _ in range(6):
        a, b = folded(ids), exact(ids)
        np.testing.assert_allclose(float(a), float(b), rtol=1e-5)
    np.testing.assert_allclose(w1.numpy(), w2.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e1.numpy(), e2.numpy(), rtol=1e-5, atol=1e-6)
    g_f, g_e = folded.graphs()[0].graph, exact.graphs()[0].graph
    count = lambda g, op: sum(1 for n in g.all_nodes() if n.op == op)  # noqa: E731
    assert count(g_f, "matmul") < count(g_e, "matmul")
    assert count(g_f, "getitem_grad") == 1 < count(g_e, "getitem_grad")
    assert folded.stats()["graph_calls"] == 3


def test_exact_mode_is_bit_identical_to_eager():
    ids = np.random.default_rng(1).integers(0, 10, (2, 7))
    exact, step, (w, _) = _make(False)
    _, eager_step, (w_e, _) = _make(False)
    for _ in range(5):
        assert float(exact(ids)) == float(eager_step(ids))
    np.testing.assert_array_equal(w.numpy(), w_e.numpy())


def test_split_backward_becomes_a_concatenation():
    r = np.random.default_rng(0)
    w = jl.Variable(r.standard_normal((8, 12)).astype(np.float32))

    def step(x):
        with jl.GradientTape() as tape:
            a, b, c = F.split(x @ w, 3, axis=-1)
            loss = np.sum(np.tanh(a) * np.exp(b) - c)
        return tape.gradient(loss, w)

    folded, exact = jl.jit(step, reassociate=True), jl.jit(step, reassociate=False)
    x = r.standard_normal((4, 8)).astype(np.float32)
    for _ in range(5):
        np.testing.assert_allclose(folded(x).numpy(), exact(x).numpy(), rtol=1e-6)
        np.testing.assert_array_equal(exact(x).numpy(), step(x).numpy())
    text = str(folded.graphs()[0].graph)
    assert "getitem_grad" not in text and "concatenate" in text


def test_scalar_row_gradients_merge_into_one_scatter():
    r = np.random.default_rng(0)
    emb = jl.Variable(r.standard_normal((50, 8)).astype(np.float32))

    def step(words):
        with jl.GradientTape() as tape:
            loss = 0.0
            for w in words:
                loss = loss + np.sum(np.tanh(emb[w]))
        emb.assign_sub(0.1 * tape.gradient(loss, emb))
        return loss

    folded = jl.jit(step, reassociate=True)
    exact = jl.jit(step, reassociate=False)
    e2 = jl.Variable(emb.numpy())
    for i in range(6):
        words = [int(x) for x in r.integers(0, 50, 5)]
        folded(words)
    count = sum(1 for n in folded.graphs()[0].graph.nodes if n.op == "getitem_grad")
    assert count == 1, folded.explain()
    assert exact is not None and e2 is not None
