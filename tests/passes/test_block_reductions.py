"""reduce_blocks: whole-block means and sums of a vector's equal blocks become one reduction of
its (T, B) reshape, bit for bit (signed zeros, NaN, infinities, strided vectors), and block sets
that do not tile the vector stay as they are."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, ir, passes
from janus_like.passes import reduce_blocks

from jit.harness import assert_same

from .exact import assert_exact_pass


def _node(op, *inputs, aval, **params):
    return ir.Node(op, tuple(inputs), params, aval)


def _case(count, size, dtype, op, strided, order, drop=None, chain=False):
    dt = np.dtype(dtype)
    n = count * size
    x = _node(ir.INPUT, aval=((2 * n if strided else n,), dt), slot=0, name="x")
    nodes = [x]
    if strided:  # every other element: a view with a stride
        x = _node("getitem", x, aval=((n,), dt), index=((("s", None, None, 2),), True))
        nodes.append(x)
    reds = {}
    for k in order:
        if k == drop:
            continue
        b = _node("getitem", x, aval=((size,), dt), index=((("s", k * size, (k + 1) * size, None),), True))
        r = _node(op, b, aval=((), dt), axis=None, keepdims=False)
        nodes += [b, r]
        reds[k] = r
    outputs = list(reds.values())
    if chain:  # the per-step loss sum the LSTM builds: ((0 + -r0) + -r1) + ...
        acc = 0.0
        for k in sorted(reds):
            t = _node("neg", reds[k], aval=((), dt))
            acc = _node("add", acc, t, aval=((), dt))
            nodes += [t, acc]
        outputs = [acc]
    return ir.Graph("g", nodes, outputs, 1), (2 * n if strided else n,)


@settings(deadline=None)
@given(count=st.integers(2, 6), size=st.integers(2, 9), dtype=st.sampled_from([np.float32, np.float64]),
       op=st.sampled_from(["mean", "sum"]), strided=st.booleans(), data=st.data(), seed=st.integers(0, 2**16),
       specials=st.booleans(), chain=st.booleans())
def test_block_reductions_become_rows_of_one_reduction_with_the_same_bits(count, size, dtype, op, strided, data, seed,
                                                                          specials, chain):
    order = data.draw(st.permutations(list(range(count))))
    g, shape = _case(count, size, dtype, op, strided, order, chain=chain)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 1e3).astype(dtype)
    if specials:
        x[rng.integers(0, x.size, 3)] = rng.choice([-0.0, 0.0, np.nan, np.inf, -np.inf, 3e38], 3)
    with np.errstate(all="ignore"):
        assert_exact_pass(g, [x], reduce_blocks, "block reductions")
    ops = [n.op for n in g.nodes]
    assert ops.count(op) == 1 and "reshape" in ops  # one reduction over the rows


@pytest.mark.parametrize("defect", ["missing", "unequal", "overlap"])
def test_blocks_that_do_not_tile_the_vector_stay(defect):
    g, shape = _case(4, 3, np.float32, "mean", False, [0, 1, 2, 3], drop=2 if defect == "missing" else None)
    x = g.nodes[0]
    if defect != "missing":  # one more block: of another length, or overlapping another
        cut = ("s", 0, 2, None) if defect == "unequal" else ("s", 1, 4, None)
        b = _node("getitem", x, aval=((cut[2] - cut[1],), np.dtype(np.float32)), index=((cut,), True))
        r = _node("mean", b, aval=((), np.dtype(np.float32)), axis=None, keepdims=False)
        g.nodes += [b, r]
        g.outputs.append(r)
    before = [n.op for n in g.nodes]
    reduce_blocks(g)
    assert [n.op for n in g.nodes] == before


def test_a_per_step_batch_loss_becomes_one_reduction_and_one_cumsum_and_matches_eager():
    # an RNN over batches of 8 (products big enough to batch) with a per-step mean cross-entropy: after batching and lifting the
    # per-step losses are means of 8-element blocks of one vector of picked log-probabilities
    rng = np.random.default_rng(0)
    w_x = jl.Variable((rng.standard_normal((48, 48)) * 0.3).astype(np.float32), name="w_x")
    w_h = jl.Variable((rng.standard_normal((48, 48)) * 0.3).astype(np.float32), name="w_h")
    w_y = jl.Variable((rng.standard_normal((48, 48)) * 0.3).astype(np.float32), name="w_y")
    params = [w_x, w_h, w_y]
    start = [p.numpy().copy() for p in params]

    def step(ids):
        with jl.GradientTape() as tape:
            h = np.zeros((8, 48), np.float32)
            loss = 0.0
            for t in range(8):
                h = F.tanh(F.embedding(w_x, ids[:, t]) + h @ w_h)
                loss = loss + F.cross_entropy(h @ w_y, ids[:, t + 1])
            loss = loss / 8
        for p, g in zip(params, tape.gradient(loss, params)):
            p.assign_sub(0.1 * g)
        return loss

    def run(without=None):
        for p, s in zip(params, start):
            p.assign(s)
        with pytest.MonkeyPatch.context() as mp:
            if without is not None:
                mp.setattr(passes, "REASSOCIATING", [p for p in passes.REASSOCIATING if p is not without])
            jf = jl.jit(step, reassociate=True, native="off")
            losses = [jf(np.random.default_rng(i).integers(0, 48, (8, 9))) for i in range(6)]
        return jf, losses, [p.numpy().copy() for p in params]

    jf, losses, final = run()
    (g,) = jf.graphs()
    assert jf.stats()["graph_calls"] >= 2
    assert sum(1 for n in g.graph.nodes if n.op == "mean" and n.params.get("axis") == (1,)) == 1
    assert any(n.op == "cumsum" for n in g.graph.nodes)
    jf2, losses2, final2 = run(without=reduce_blocks)
    assert len(jf2.graphs()[0].graph.nodes) > len(g.graph.nodes)
    assert_same(losses, losses2, "losses")  # the same bits as without the pass
    assert_same(final, final2, "parameters")
    for p, s in zip(params, start):  # and eager, up to the other passes' reassociation
        p.assign(s)
    for i, want in enumerate(losses):
        got = float(step(np.random.default_rng(i).integers(0, 48, (8, 9))))
        np.testing.assert_allclose(got, float(want), rtol=1e-5)
