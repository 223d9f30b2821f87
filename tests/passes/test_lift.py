"""Row-block lifting: per-block row-wise chains become one op on the whole array; results stay
those of eager (within float32 reassociation) and of the reference interpreter."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, ir
from janus_like.executor import interpret
from janus_like.passes import lift_row_blocks


F32 = np.dtype(np.float32)


def _count(graph, op):
    return sum(1 for n in graph.all_nodes() if n.op == op)


def _blocked_graph(rows=(2, 3, 1), width=4, shared_full=False):
    """x (sum(rows), width) cut into row blocks; exp(block + b), its row max, a bias-gradient-like
    sum over rows per block accumulated in an add-tree, and the concatenation of the blocks."""
    total = sum(rows)
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, ((total, width), F32))
    b = ir.Node(ir.INPUT, (), {"slot": 1, "name": "b"}, (((rows[0], width) if shared_full else (width,)), F32))
    nodes, outs, acc, start = [x, b], [], None, 0
    for r in rows:
        cut = ir.Node("getitem", (x,), {"index": ((("s", start, start + r, None),), True)}, ((r, width), F32))
        y = ir.Node("add", (cut, b), {}, ((r, width), F32))
        e = ir.Node("exp", (y,), {}, ((r, width), F32))
        m = ir.Node("max", (e,), {"axis": -1, "keepdims": True}, ((r, 1), F32))
        d = ir.Node("div", (e, m), {}, ((r, width), F32))
        s = ir.Node("sum_to", (d, b), {}, ((width,), F32)) if not shared_full else d
        nodes += [cut, y, e, m, d] + ([s] if s is not d else [])
        outs.append(d)
        if not shared_full:
            acc = s if acc is None else ir.Node("add", (acc, s), {}, ((width,), F32))
            if acc is not s:
                nodes.append(acc)
        start += r
    cat = ir.Node("concatenate", tuple(outs), {"axis": 0}, ((total, width), F32))
    nodes.append(cat)
    g = ir.Graph("blocks", nodes, [cat] + ([acc] if acc is not None else []), 2)
    ir.verify(g)
    return g


def test_pass_lifts_block_chains_and_removes_the_concatenation():
    rng = np.random.default_rng(0)
    slots = [rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
    before = interpret(_blocked_graph(), slots)
    g = lift_row_blocks(_blocked_graph())
    ir.verify(g)
    after = interpret(g, slots)
    for a, b in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    live = jl.passes.dce(g)
    assert _count(live, "exp") == 1 and _count(live, "max") == 1 and _count(live, "div") == 1
    assert _count(live, "concatenate") == 0  # the blocks of the lifted result, in order, are the result
    assert _count(live, "sum_to") == 1  # three per-block bias sums -> one


def test_pass_leaves_a_full_height_shared_operand_alone():
    # every block adds the same (2, 4) array: lifting would need it repeated over the rows
    rng = np.random.default_rng(1)
    slots = [rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)]
    g = _blocked_graph(rows=(2, 2, 2), shared_full=True)
    before = interpret(g, slots)
    g = lift_row_blocks(g)
    ir.verify(g)
    for a, b in zip(before, interpret(g, slots)):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert _count(g, "add") == 3 and _count(g, "exp") == 3


def _rnn_params(seed, vocab, hidden, scale):
    """Embedding, recurrent and output weights and the output bias of a small RNN model."""
    r = np.random.default_rng(seed)
    shapes = [(vocab, hidden), (hidden, hidden), (hidden, vocab)]
    weights = [jl.Variable(r.standard_normal(s).astype(np.float32) * w) for s, w in zip(shapes, scale)]
    return weights + [jl.Variable(np.zeros(vocab, np.float32))]


def _lm(reassociate, vocab=64, hidden=32, batch=8):
    params = _rnn_params(0, vocab, hidden, (0.3, 0.2, 0.2))
    emb, wh, wo, bo = params

    def step(ids):
        with jl.GradientTape() as tape:
            h = np.zeros((ids.shape[0], hidden), np.float32)
            loss = 0.0
            for t in range(ids.shape[1] - 1):
                h = np.tanh(F.embedding(emb, ids[:, t]) + h @ wh)
                loss = loss + F.cross_entropy(h @ wo + bo, ids[:, t + 1])
            loss = loss / (ids.shape[1] - 1)
        for p, g in zip(params, tape.gradient(loss, params)):
            p.assign_sub(0.5 * g)
        return loss

    return (jl.jit(step, reassociate=reassociate) if reassociate is not None else step), params


def _against_eager(model, ids, calls=6):
    """model(True) jitted (reassociating) and model(None) eager, side by side on `calls` calls:
    losses and every parameter after each call agree to float32 reassociation."""
    fast, p_fast = model(True)
    eager, p_eager = model(None)
    for _ in range(calls):
        np.testing.assert_allclose(float(fast(ids)), float(eager(ids)), rtol=1e-5)
        for a, b in zip(p_fast, p_eager):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-4, atol=1e-6)
    return fast


def test_language_model_cross_entropy_runs_once_for_all_steps_and_matches_eager():
    ids = np.random.default_rng(2).integers(0, 64, (8, 7))
    fast = _against_eager(_lm, ids)
    cg = fast.graphs()[0]
    exact, _ = _lm(False)
    for _ in range(4):
        exact(ids)
    # 6 steps: six exps (softmax) per step chain in exact mode, one in the lifted graph
    assert _count(cg.graph, "exp") == 1 < _count(exact.graphs()[0].graph, "exp")
    assert fast.stats()["graph_calls"] == 3
    # the plan agrees with the reference interpreter on the same inputs
    for a, b in zip(cg.plan(list(cg.last_slots)), interpret(cg.graph, list(cg.last_slots))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


OPS = ("bias", "exp_norm", "tanh", "scale_rows", "square", "gather", "recurrent", "full_height")


def _program(ops, blocks, rows):
    r = np.random.default_rng(3)
    m = jl.Variable(r.standard_normal((blocks * rows, 5)).astype(np.float32))
    b = jl.Variable(r.standard_normal(5).astype(np.float32))
    full = r.standard_normal((rows, 5)).astype(np.float32)

    def f(idx):
        with jl.GradientTape() as tape:
            outs, loss, carry = [], 0.0, 0.0
            for t in range(blocks):
                x = m[t * rows:(t + 1) * rows]
                for op in ops:
                    if op == "bias":
                        x = x + b
                    elif op == "exp_norm":
                        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
                        x = e / np.sum(e, axis=-1, keepdims=True)
                    elif op == "tanh":
                        x = np.tanh(x)
                    elif op == "scale_rows":
                        x = x * np.mean(x, axis=1, keepdims=True)
                    elif op == "square":
                        x = x * x - 0.5
                    elif op == "gather":
                        loss = loss + np.mean(x[np.arange(rows), idx[t]])
                    elif op == "recurrent":
                        carry = np.tanh(x + carry)  # depends on the previous block: not liftable
                        x = carry
                    else:
                        x = x + full  # a full-height operand shared by all blocks: not liftable
                outs.append(x)
                loss = loss + np.sum(x * x)
        gm, gb = tape.gradient(loss, [m, b])
        m.assign_sub(0.01 * gm)
        if gb is not None:  # b is unused unless the program has a "bias" op
            b.assign_sub(0.01 * gb)
        return np.concatenate(outs), loss

    return f, (m, b)


@settings(deadline=None)  # examples: the HYPOTHESIS_PROFILE (ci: 25)
@given(ops=st.lists(st.sampled_from(OPS), min_size=1, max_size=5), blocks=st.integers(2, 4),
       rows=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_generated_block_programs_match_eager(ops, blocks, rows, seed):
    idx = np.random.default_rng(seed).integers(0, 5, (blocks, rows))
    eager, s_eager = _program(tuple(ops), blocks, rows)
    f, s_jit = _program(tuple(ops), blocks, rows)
    fast = jl.jit(f, reassociate=True)
    for _ in range(5):
        (ye, le), (yj, lj) = eager(idx), fast(idx)
        np.testing.assert_allclose(np.asarray(yj), np.asarray(ye), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(float(lj), float(le), rtol=1e-4, atol=1e-5)
        for a, b in zip(s_jit, s_eager):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    assert fast.stats()["graph_calls"] >= 2
    cg = fast.graphs()[0]
    ir.verify(cg.graph)
    for a, b in zip(cg.plan(list(cg.last_slots)), interpret(cg.graph, list(cg.last_slots))):
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-6)


def _char_rnn(reassociate, vocab=64, hidden=32, steps=8):  # 8 products of 32x64: batched
    params = _rnn_params(4, vocab, hidden, (0.3, 0.3, 0.3))
    wx, wh, wo, bo = params

    def step(ids):
        with jl.GradientTape() as tape:
            h = np.zeros(hidden, np.float32)
            loss = 0.0
            for t in range(steps):  # batch 1: every product is a vector times a matrix
                h = np.tanh(wx[ids[t]] + h @ wh)
                logits = F.reshape(h @ wo + bo, (1, -1))
                loss = loss + F.cross_entropy(logits, ids[t + 1:t + 2])
            loss = loss / steps
        for p, g in zip(params, tape.gradient(loss, params)):
            p.assign_sub(0.2 * F.clip(g, -5, 5))
        return loss

    return (jl.jit(step, reassociate=reassociate) if reassociate is not None else step), params


def test_batch_one_vector_products_are_stacked_and_their_rows_lifted():
    ids = np.random.default_rng(5).integers(0, 64, 9)
    fast = _against_eager(_char_rnn, ids)
    cg = fast.graphs()[0]
    assert _count(cg.graph, "exp") == 1  # one softmax for all 8 steps
    # and two gather gradients (the loss's, lifted, and the embedding's), not one per step: the
    # seed's -1/T spread over each step stays a broadcast (the same op on every block) until the
    # lifting is done, and folds after it (the loss's, added to the softmax's gradient, is an
    # index_add after sparse_onehot_grads)
    assert _count(cg.graph, "getitem_grad") + _count(cg.graph, "index_add") == 2
    assert fast.stats()["graph_calls"] == 3
    for a, b in zip(cg.plan(list(cg.last_slots)), interpret(cg.graph, list(cg.last_slots))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_rows_and_blocks_of_different_families_are_not_mixed():
    # y (2, 4): rows y[0], y[1]; v (8,): blocks v[0:4], v[4:8]; v_k * y[k] must stay per block
    y = ir.Node(ir.INPUT, (), {"slot": 0, "name": "y"}, ((2, 4), F32))
    v = ir.Node(ir.INPUT, (), {"slot": 1, "name": "v"}, ((8,), F32))
    nodes, outs = [y, v], []
    for k in range(2):
        row = ir.Node("getitem", (y,), {"index": ((k,), True)}, ((4,), F32))
        block = ir.Node("getitem", (v,), {"index": ((("s", 4 * k, 4 * k + 4, None),), True)}, ((4,), F32))
        prod = ir.Node("mul", (block, row), {}, ((4,), F32))
        nodes += [row, block, prod]
        outs.append(prod)
    slots = [np.arange(8, dtype=np.float32).reshape(2, 4), np.arange(8, dtype=np.float32) + 1]
    g = ir.Graph("mixed", nodes, outs, 2)
    before = interpret(g, slots)
    lift_row_blocks(g)
    ir.verify(g)
    for a, b in zip(before, interpret(g, slots)):
        np.testing.assert_array_equal(a, b)


def test_products_of_blocks_in_another_order_become_one_product_whose_consumers_lift():
    # cat(Z[3:6], Z[0:3]) @ W, cut back into its pieces, each added to the block of Y of the same
    # time step (Y[3:6] to the first piece): not liftable while the pieces are in the other order;
    # the product of Z itself, cut at Z's boundaries, lines up with Y, and one add remains
    z = ir.Node(ir.INPUT, (), {"slot": 0, "name": "z"}, ((6, 4), F32))
    w = ir.Node(ir.INPUT, (), {"slot": 1, "name": "w"}, ((4, 5), F32))
    y = ir.Node(ir.INPUT, (), {"slot": 2, "name": "y"}, ((6, 5), F32))

    def cut(x, a, cols):
        return ir.Node("getitem", (x,), {"index": ((("s", a, a + 3, None),), True)}, ((3, cols), F32))

    blocks = [cut(z, a, 4) for a in (0, 3)]
    cat = ir.Node("concatenate", (blocks[1], blocks[0]), {"axis": 0}, ((6, 4), F32))
    mm = ir.Node("matmul", (cat, w), {}, ((6, 5), F32))
    pieces = [cut(mm, a, 5) for a in (0, 3)]
    ys = [cut(y, a, 5) for a in (3, 0)]
    sums = [ir.Node("add", (p, q), {}, ((3, 5), F32)) for p, q in zip(pieces, ys)]
    g = ir.Graph("permuted", [z, w, y] + blocks + [cat, mm] + pieces + ys + sums, sums, 3)
    ir.verify(g)
    rng = np.random.default_rng(3)
    slots = [rng.standard_normal(s).astype(np.float32) for s in ((6, 4), (4, 5), (6, 5))]
    before = interpret(g, slots)
    g = jl.passes.dce(lift_row_blocks(g))
    ir.verify(g)
    for a, b in zip(before, interpret(g, slots)):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert _count(g, "concatenate") == 0 and _count(g, "matmul") == 1
    assert _count(g, "add") == 1  # lifted over the new product's cuts


def _gate_rows(k=3, h=4, odd_row=None):
    """y (k, 3h): per row y[j], sigmoid(y[j][0:h]) * tanh(y[j][h:2h]) + y[j][2h:3h:1]; row
    `odd_row` slices another column range for its first gate."""
    y = ir.Node(ir.INPUT, (), {"slot": 0, "name": "y"}, ((k, 3 * h), F32))
    nodes, outs = [y], []
    for j in range(k):
        row = ir.Node("getitem", (y,), {"index": ((j,), True)}, ((3 * h,), F32))
        lo = 1 if j == odd_row else 0
        gi = ir.Node("getitem", (row,), {"index": ((("s", lo, lo + h, None),), True)}, ((h,), F32))
        gu = ir.Node("getitem", (row,), {"index": ((("s", h, 2 * h, None),), False)}, ((h,), F32))
        go = ir.Node("getitem", (row,), {"index": ((("s", 2 * h, 3 * h, 1),), True)}, ((h,), F32))
        s = ir.Node("sigmoid", (gi,), {}, ((h,), F32))
        t = ir.Node("tanh", (gu,), {}, ((h,), F32))
        m = ir.Node("mul", (s, t), {}, ((h,), F32))
        o = ir.Node("add", (m, go), {}, ((h,), F32))
        nodes += [row, gi, gu, go, s, t, m, o]
        outs.append(o)
    g = ir.Graph("gates", nodes, outs, 1)
    ir.verify(g)
    return g


def test_column_slices_of_every_row_lift_to_one_view_and_the_cell_ops_follow():
    """A tree LSTM's leaves: the rows of one batched projection, each cut into its gates, each
    gate through the same ops. The slices become `y[:, a:b]` and each op runs once, with the
    interpreter's bits; where one row slices other columns, that gate stays per row."""
    slots = [np.random.default_rng(3).standard_normal((3, 12)).astype(np.float32)]
    for odd_row, lifted in ((None, True), (1, False)):
        g = _gate_rows(odd_row=odd_row)
        before = interpret(g, slots)
        lift_row_blocks(g)
        ir.verify(g)
        assert (_count(g, "sigmoid"), _count(g, "tanh")) == ((1, 1) if lifted else (3, 1))
        for a, b in zip(before, interpret(g, slots)):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _leaf_cells(reassociate):
    """Leaves of a tree LSTM: one product for all leaves (batched: 4 x 64 x 96 multiply-adds),
    the cell per leaf, its gates column slices of the leaf's row."""
    rng = np.random.default_rng(0)
    w = jl.Variable((rng.standard_normal((64, 96)) * 0.2).astype(np.float32), name="w")
    emb = jl.Variable(rng.standard_normal((9, 64)).astype(np.float32), name="emb")

    def step(words):
        with jl.GradientTape() as tape:
            loss = 0.0
            for k in words:
                z = emb[k] @ w
                c = F.sigmoid(z[0:32]) * np.tanh(z[64:96])
                loss = loss + F.sum(F.sigmoid(z[32:64]) * np.tanh(c))
        for p, gr in zip((w, emb), tape.gradient(loss, [w, emb])):
            p.assign_sub(0.1 * gr)
        return loss

    return (jl.jit(step, reassociate=reassociate) if reassociate is not None else step), (w, emb)


def test_a_batch_one_lstm_cell_on_batched_rows_matches_eager():
    """Losses and parameters side by side with eager (to float32 reassociation: the leaves'
    products are batched), over word lists that repeat and change; the cell's ops run once for
    all leaves, and the plan agrees with the interpreter."""
    fast, p_fast = _leaf_cells(True)
    eager, p_eager = _leaf_cells(None)
    words = [[1, 4, 2, 7], [3, 3, 0, 8]] * 3 + [[6, 5, 4, 1]] * 3
    for ids in words:
        np.testing.assert_allclose(float(fast(ids)), float(eager(ids)), rtol=1e-5)
        for a, b in zip(p_fast, p_eager):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-4, atol=1e-6)
    assert fast.stats()["graph_calls"] >= 4
    for cg in fast.graphs():
        assert _count(cg.graph, "sigmoid") == 2 and _count(cg.graph, "tanh") == 2  # 8 and 8 per leaf
        for a, b in zip(cg.plan(list(cg.last_slots)), interpret(cg.graph, list(cg.last_slots))):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
