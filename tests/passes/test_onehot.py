"""sparse_onehot_grads: cross-entropy's backward without the dense one-hot gradient.

`sum(neg(x))` becomes `neg(sum(x))`, the row sums of `getitem_grad(g, x, arange(N), labels)`
become g as a column, and `getitem_grad + D` becomes D with g added at the index. The jitted
step (reassociating passes on) is compared with eager after every call, through labels that
wrap, repeat, go out of bounds, a batch of another size and non-finite logits."""
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, ir
from janus_like.passes import onehot, sparse_onehot_grads

from jit.harness import check

from .exact import assert_exact_pass

F32 = np.dtype(np.float32)


def _make(n_in, n_classes, permuted=False):
    def make():
        w = jl.Variable(np.random.default_rng(0).standard_normal((n_in, n_classes)).astype(np.float32))

        def step(x, labels):
            with jl.GradientTape() as tape:
                logp = F.log_softmax(x @ w)
                r = np.array([2, 0, 3, 1]) if permuted else np.arange(x.shape[0])
                loss = -F.mean(logp[r, labels])
            (gw,) = tape.gradient(loss, [w])
            w.assign_sub(0.5 * gw)
            return loss

        return step, w
    return make


def _any_size():
    """index_add for arrays of any size (by default only from DENSE_MIN_ELEMENTS on)."""
    return mock.patch.object(onehot, "DENSE_MIN_ELEMENTS", 0)


def _call(x, labels):
    return lambda state: (x, labels)


def _ops(jf):
    return {n.op for g in jf.compiled for n in g.graph.all_nodes()}


@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 12), c=st.integers(2, 9), scale=st.sampled_from([1.0, 30.0]))
def test_cross_entropy_steps_agree_with_eager(seed, n, c, scale):
    rng = np.random.default_rng(seed)

    def batch(m):
        x = (rng.standard_normal((m, 3)) * scale).astype(np.float32)
        return _call(x, rng.integers(-c, c, m))  # negative labels wrap, as in eager

    calls = [batch(n) for _ in range(6)] + [batch(n + 1), batch(n)]
    with _any_size():
        jf = check(_make(3, c), calls, reassociate=True)
    ops = _ops(jf)
    assert "index_add" in ops and "getitem_grad" not in ops, ops


def test_out_of_bounds_labels_raise_as_in_eager_and_non_finite_logits_agree():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    bad = x.copy()
    bad[1, 2] = np.inf
    calls = [_call(x, np.array([0, 1, 2, 3]))] * 5 + [_call(x, np.array([0, 9, 1, 1])),
                                                      _call(bad, np.array([1, 1, 2, 0])),
                                                      _call(x, np.array([3, 2, 1, 0]))]
    with np.errstate(all="ignore"), _any_size():
        jf = check(_make(3, 5), calls, reassociate=True)
    assert "index_add" in _ops(jf)


def test_rows_that_are_not_arange_keep_the_row_sum():
    """A permutation of the rows still hits each position once (index_add), but the row sums of
    the one-hot are not g in order: that rewrite is left alone."""
    rng = np.random.default_rng(2)
    calls = [_call(rng.standard_normal((4, 3)).astype(np.float32), rng.integers(0, 4, 4)) for _ in range(6)]
    with _any_size():
        jf = check(_make(3, 4, permuted=True), calls, reassociate=True)
    graph_ops = [n.op for g in jf.compiled for n in g.graph.nodes]
    assert "index_add" in graph_ops and "getitem_grad" in graph_ops


def test_by_default_only_large_one_hots_become_sparse():
    """(64, 80) logits: index_add; (4, 5): the dense add stays (cheaper at that size), while the
    row sums still become the column."""
    rng = np.random.default_rng(5)
    for (n, c), sparse in (((64, 80), True), ((4, 5), False)):
        calls = [_call(rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, c, n)) for _ in range(5)]
        ops = _ops(check(_make(3, c), calls, reassociate=True))
        assert ("index_add" in ops) is sparse and ("getitem_grad" in ops) is not sparse, ops
        assert "sum_to" not in ops, ops  # the one-hot's row sums are the column, at either size


def test_a_batch_of_one_takes_the_sparse_form_at_any_size():
    """One row: the gradient's one position is a scalar `+=` into the softmax's buffer (no
    zeros, no dense add); labels that wrap and one out of bounds agree with eager."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 3)).astype(np.float32)
    calls = [_call(x, np.array([k])) for k in (1, 4, 0, -2, 3, 2)] + [_call(x, np.array([5])), _call(x, np.array([-5]))]
    jf = check(_make(3, 5), calls, reassociate=True)
    assert "index_add" in _ops(jf) and "getitem_grad" not in _ops(jf)
    assert any("[0]] += " in g.plan.source for g in jf.compiled)


def _node(op, *inputs, aval, **params):
    return ir.Node(op, tuple(inputs), params, aval)


@pytest.mark.parametrize("op", ["sum", "sum_to"])
def test_the_sum_of_a_negation_is_the_negation_of_the_sum_bit_for_bit(op):
    x = _node(ir.INPUT, aval=((5, 7), F32), slot=0, name="x")
    like = _node(ir.INPUT, aval=((5, 1), F32), slot=1, name="like")
    neg = _node("neg", x, aval=((5, 7), F32))
    total = _node("sum_to", neg, like, aval=((5, 1), F32)) if op == "sum_to" else \
        _node("sum", neg, aval=((5, 1), F32), axis=1, keepdims=True)
    g = ir.Graph("g", [x, like, neg, total], [total], 2)
    rng = np.random.default_rng(3)
    slots = [(rng.standard_normal((5, 7)) * 1e3).astype(np.float32), np.zeros((5, 1), np.float32)]
    assert_exact_pass(g, slots, sparse_onehot_grads, "negated sum")
    assert [n.op for n in g.nodes if n.op in ("neg", "sum", "sum_to")] == [op, "neg"]


def test_a_negation_with_other_users_is_left_alone():
    x = _node(ir.INPUT, aval=((4,), F32), slot=0, name="x")
    neg = _node("neg", x, aval=((4,), F32))
    total = _node("sum", neg, aval=((1,), F32), axis=0, keepdims=True)
    g = ir.Graph("g", [x, neg, total], [total, neg], 1)
    sparse_onehot_grads(g)
    assert total.op == "sum" and total.inputs == (neg,)


def test_a_scatter_added_to_a_broadcast_operand_stays_dense():
    """`G + b` with b of another shape (broadcast): not an index_add."""
    x = _node(ir.INPUT, aval=((3, 4), F32), slot=0, name="x")
    g = _node(ir.INPUT, aval=((3,), F32), slot=1, name="g")
    rows = _node(ir.CONST, aval=((3,), np.dtype(np.int64)), value=np.arange(3))
    cols = _node(ir.INPUT, aval=((3,), np.dtype(np.int64)), slot=2, name="cols")
    G = _node("getitem_grad", g, x, rows, cols, aval=((3, 4), F32), index=((("slot", 0), ("slot", 1)), False),
              unique=True)
    b = _node(ir.INPUT, aval=((4,), F32), slot=3, name="b")
    out = _node("add", G, b, aval=((3, 4), F32))
    graph = ir.Graph("g", [x, g, rows, cols, G, b, out], [out], 4)
    sparse_onehot_grads(graph)
    assert out.op == "add"


def test_index_add_writes_into_its_operand_only_when_nothing_reads_it_later():
    from janus_like.executor import compile_plan, interpret

    x = _node(ir.INPUT, aval=((8, 16), F32), slot=0, name="x")
    g = _node(ir.INPUT, aval=((8,), F32), slot=1, name="g")
    cols = _node(ir.INPUT, aval=((8,), np.dtype(np.int64)), slot=2, name="cols")
    rows = _node(ir.CONST, aval=((8,), np.dtype(np.int64)), value=np.arange(8))
    outs = []
    nodes = [x, g, cols, rows]
    for keep in (True, False):  # D read again after the add (an output), or dead after it
        d = _node("mul", x, 2.0, aval=((8, 16), F32))
        G = _node("getitem_grad", g, x, rows, cols, aval=((8, 16), F32),
                  index=((("slot", 0), ("slot", 1)), False), unique=True)
        out = _node("add", d, G, aval=((8, 16), F32))
        nodes += [d, G, out]
        outs += [out, d] if keep else [out]
    graph = ir.Graph("g", nodes, outs, 3)
    rng = np.random.default_rng(4)
    slots = [rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal(8).astype(np.float32),
             np.array([1, -1, 0, 15, 3, 3, -16, 7])]
    before = interpret(graph, slots)
    with _any_size():
        sparse_onehot_grads(graph)
    assert [n.op for n in graph.nodes].count("index_add") == 2
    plan = compile_plan(graph)
    assert "v{0} = v{1}; v{0}[".format(outs[2].id, outs[2].inputs[0].id) in plan.source  # in place when dead
    for b, p in zip(before, plan(slots)):
        np.testing.assert_array_equal(b, p)


# ------------------------------------------------------------------ dense_row_sums
@settings(deadline=None, max_examples=40)
@given(rows=st.integers(1, 30), width=st.integers(1, 40), n=st.integers(1, 30), seed=st.integers(0, 2**16),
       negative=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]))
def test_rows_by_product_sums_the_rows_add_at_sums(rows, width, n, seed, negative, dtype):
    from janus_like.ops.indexing import rows_by_product

    rng = np.random.default_rng(seed)
    idx = rng.integers(-rows if negative else 0, rows, n)
    g = (rng.standard_normal((n, width)) * 10.0 ** rng.integers(-3, 4, (n, 1))).astype(dtype)
    want = np.zeros((rows, width), dtype)
    np.add.at(want, idx, g)
    got = rows_by_product((rows, width), idx, g)
    assert got.dtype == want.dtype and got.shape == want.shape
    # the same sums in another order: within a few ulps of the row's magnitude
    scale = np.zeros((rows, width))
    np.add.at(scale, idx, np.abs(g).astype(np.float64))
    assert np.all(np.abs(got - want) <= 4 * np.finfo(dtype).eps * scale)


def test_rows_by_product_takes_the_exact_scatter_for_non_finite_rows_and_bad_ids():
    from janus_like.ops.indexing import rows_by_product

    g = np.ones((3, 2), np.float32)
    g[1, 0] = np.inf
    want = np.zeros((4, 2), np.float32)
    np.add.at(want, np.array([0, 2, 2]), g)
    got = rows_by_product((4, 2), np.array([0, 2, 2]), g)
    assert np.array_equal(got, want) and np.isfinite(got[[1, 3]]).all()  # no 0 * inf = NaN elsewhere
    with pytest.raises(IndexError) as product_error:
        rows_by_product((4, 2), np.array([0, 7, 1]), np.ones((3, 2), np.float32))
    with pytest.raises(IndexError) as add_at_error:
        np.add.at(np.zeros((4, 2), np.float32), np.array([0, 7, 1]), np.ones((3, 2), np.float32))
    assert str(product_error.value) == str(add_at_error.value)


def test_a_small_tables_row_gradient_is_a_product_close_to_the_scatter_and_eager():
    from .rnn_case import assert_close_to_eager, make_rnn, run_jit

    make = make_rnn()
    jf, losses, params = run_jit(make)
    grads = [n for n in jf.graphs()[0].graph.nodes if n.op == "getitem_grad" and n.inputs[1].aval[0] == (60, 100)]
    assert len(grads) == 1 and grads[0].params.get("dense"), grads
    jf2, losses2, params2 = run_jit(make, without=onehot.dense_row_sums)
    assert not any(n.params.get("dense") for n in jf2.graphs()[0].graph.nodes)
    np.testing.assert_allclose([float(v) for v in losses], [float(v) for v in losses2], rtol=1e-6)
    for a, b in zip(params, params2):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert_close_to_eager(make, losses)


def test_a_large_table_or_narrow_rows_keep_the_scatter():
    def grad_node(rows, width, n):
        g = _node(ir.INPUT, aval=((n, width), F32), slot=0, name="g")
        x = _node(ir.INPUT, aval=((rows, width), F32), slot=1, name="x")
        ids = _node(ir.INPUT, aval=((n,), np.dtype(np.int64)), slot=2, name="ids")
        out = _node("getitem_grad", g, x, ids, aval=((rows, width), F32), index=((("slot", 0),), True))
        onehot.dense_row_sums(ir.Graph("g", [g, x, ids, out], [out], 3))
        return out.params.get("dense", False)

    assert grad_node(60, 100, 25)  # char_rnn's table
    assert not grad_node(1000, 64, 320)  # the LSTM's: (1000, 320) one-hot, slower than the rounds
    assert not grad_node(60, 2, 25)  # 50 values: add.at is as fast


@pytest.mark.parametrize("n", [1, 4])
def test_the_constant_seeds_row_column_and_its_negation_fold(n):
    # a mean's seed g is a constant: its row column g.reshape(N, 1) and the negation of it are
    # constants too, not two ops on every call; the steps agree with eager
    rng = np.random.default_rng(n)
    calls = [_call(rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 5, n)) for _ in range(6)]
    jf = check(_make(3, 5), calls, reassociate=True)
    nodes = [m for g in jf.compiled for m in g.graph.all_nodes()]
    assert not [m for m in nodes if m.op in ("reshape", "neg")
                and all(isinstance(i, ir.Node) and i.op == ir.CONST for i in m.inputs)]
