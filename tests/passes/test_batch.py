import numpy as np

import janus_like as jl
from janus_like import F


def _rnn(reassociate):
    r = np.random.default_rng(0)
    wh = jl.Variable(r.standard_normal((32, 32)).astype(np.float32) * 0.2)
    wo = jl.Variable(r.standard_normal((32, 80)).astype(np.float32) * 0.2)

    def step(x):
        with jl.GradientTape() as tape:
            h = np.zeros((x.shape[1], 32), np.float32)
            loss = 0.0
            for t in range(x.shape[0]):
                h = np.tanh(x[t] + h @ wh)
                loss = loss + F.mean(F.log_softmax(h @ wo))  # independent of later steps
        g = tape.gradient(loss, [wh, wo])
        wh.assign_sub(0.1 * g[0])
        wo.assign_sub(0.1 * g[1])
        return loss

    return jl.jit(step, reassociate=reassociate), (wh, wo)


def test_independent_projections_are_batched_into_one_matmul():
    x = np.random.default_rng(1).standard_normal((6, 8, 32)).astype(np.float32)
    fast, (wh1, wo1) = _rnn(True)
    exact, (wh2, wo2) = _rnn(False)
    for _ in range(5):
        np.testing.assert_allclose(float(fast(x)), float(exact(x)), rtol=1e-5)
    np.testing.assert_allclose(wo1.numpy(), wo2.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(wh1.numpy(), wh2.numpy(), rtol=1e-4, atol=1e-6)
    shapes = [(n.inputs[0].aval[0], n.inputs[1].aval[0]) for n in fast.graphs()[0].graph.nodes if n.op == "matmul"]
    assert ((48, 32), (32, 80)) in shapes  # the 6 per-step (8,32)@(32,80) products, batched
    jl.ir.verify(fast.graphs()[0].graph)
    assert fast.stats()["graph_calls"] == 2


def _projections(columns):
    """x @ wq, x @ wk, x @ wv (one left operand, three weights of `columns` columns), summed."""
    r = np.random.default_rng(2)
    ws = [r.standard_normal((16, columns)) for _ in range(3)]

    def f(x):
        q, k, v = (x @ w for w in ws)
        return np.tanh(q) * k + v

    return jl.jit(f), f


def test_wide_products_sharing_their_left_operand_stay_separate():
    # concatenating the weights by columns would copy them every call and leave column slices
    # (not contiguous) for every op after them: slower (passes/batch.py, MAX_COLUMNS)
    for columns, batched in ((64, False), (4, True)):
        jf, f = _projections(columns)
        x = np.random.default_rng(3).standard_normal((256, 16))  # enough work per product (MIN_MACS)
        for _ in range(5):
            np.testing.assert_allclose(jf(x), f(x), rtol=1e-12)
        ops = [n.op for n in jf.graphs()[0].graph.nodes]
        assert ("concatenate" in ops) == batched, ops
        assert ops.count("matmul") + ops.count("dot") == (1 if batched else 3), ops
