"""contiguous_operands: a transposed right operand read by several products of 8+ rows is copied
to C order once (reassociating pipeline only). Checked on structure (which products are
rewired, which cases are left) and on values: the rewritten graph computes what it did, and the
plan matches the interpreter bit for bit; a jitted recurrent step stays within rounding of eager."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import ir
from janus_like.executor import compile_plan, interpret
from janus_like.passes import contiguous_operands, dce, operands

from jit.harness import random_array

F32 = np.dtype(np.float32)


def _input(slot, shape, dtype=F32):
    return ir.Node(ir.INPUT, (), {"slot": slot, "name": f"x{slot}"}, (tuple(shape), dtype))


def _graph(w_shape, lefts, op="matmul", axes=(1, 0)):
    """graph(W, A1, A2, ...) = [Ai @ W.T for each i]"""
    w = _input(0, w_shape)
    t = ir.Node("transpose", (w,), {"axes": axes}, (tuple(reversed(w_shape)), F32))
    nodes, outs = [w, t], []
    for i, sa in enumerate(lefts):
        a = _input(i + 1, sa)
        p = ir.Node(op, (a, t), {}, (tuple(sa[:-1]) + (w_shape[0],), F32))
        nodes += [a, p]
        outs.append(p)
    return ir.Graph("g", nodes, outs, len(lefts) + 1), t


def _slots(w_shape, lefts, seed=0):
    return [random_array(seed, w_shape, np.float32)] + [random_array(seed + 1 + i, s, np.float32)
                                                        for i, s in enumerate(lefts)]


def _rewritten(g, slots):
    """Rewrite; the values move by rounding only (BLAS may sum in another order for another
    layout): within the error bound of a k-term sum, (k + 2) eps (|A| @ |W.T|), elementwise."""
    w = np.abs(slots[0].astype(np.float64))
    bounds = [(w.shape[1] + 2) * np.finfo(np.float32).eps * (np.abs(a.astype(np.float64)) @ w.T) for a in slots[1:]]
    before = interpret(g, slots)
    contiguous_operands(g)
    dce(g)
    ir.verify(g)
    after, planned = interpret(g, slots), compile_plan(g)(slots)
    for b, a, p, bound in zip(before, after, planned, bounds):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.all(np.abs(a.astype(np.float64) - b) <= bound)
        np.testing.assert_array_equal(a, p)
    return g


def _copies(g):
    return [n for n in g.all_nodes() if n.op == "ascontiguousarray"]


@settings(deadline=None, max_examples=15)
@given(rows=st.lists(st.sampled_from([8, 16, 33]), min_size=2, max_size=4), k=st.sampled_from([64, 128]),
       n=st.sampled_from([256, 512]), op=st.sampled_from(["matmul", "dot"]))
def test_products_sharing_a_transposed_weight_read_one_c_ordered_copy(rows, k, n, op):
    lefts = [(r, n) for r in rows]
    g, t = _graph((k, n), lefts, op)
    _rewritten(g, _slots((k, n), lefts))
    (c,) = _copies(g)
    assert c.inputs == (t,) and g.nodes.index(c) == g.nodes.index(t) + 1
    assert all(o.inputs[1] is c for o in g.outputs)


@pytest.mark.parametrize("w_shape, lefts, why", [
    ((128, 512), [(16, 512)], "a single product"),
    ((128, 512), [(4, 512), (4, 512), (2, 512)], "matrix-vector sized products"),
    ((32, 32), [(8, 32), (8, 32), (8, 32)], "too few multiply-adds to pay for the copy"),
])
def test_left_alone(w_shape, lefts, why):
    g, _ = _graph(w_shape, lefts)
    _rewritten(g, _slots(w_shape, lefts))
    assert not _copies(g), why


def test_only_the_products_with_enough_rows_are_rewired():
    lefts = [(16, 512), (2, 512), (16, 512)]
    g, t = _graph((128, 512), lefts)
    _rewritten(g, _slots((128, 512), lefts))
    (c,) = _copies(g)
    assert [o.inputs[1] for o in g.outputs] == [c, t, c]


def test_polymorphic_graphs_are_left_alone():
    g, _ = _graph((128, 512), [(16, 512), (16, 512)])
    g.polymorphic = True
    contiguous_operands(g)
    assert not _copies(g)


def test_the_threshold_is_what_the_pass_reads(monkeypatch):
    monkeypatch.setattr(operands, "MIN_ROWS", 2)
    g, _ = _graph((128, 512), [(4, 512), (4, 512)])
    contiguous_operands(g)
    assert len(_copies(g)) == 1


def _recurrent(batch, hidden=128):
    def make():
        w = jl.Variable(random_array(0, (hidden, hidden), np.float32) * 0.1, name="w")

        def step(xs, n):
            with jl.GradientTape() as tape:
                h = np.tanh(xs[0] @ w)  # a Tensor before the loop, as inside it
                for t in range(n):
                    h = np.tanh(h @ w + xs[t % xs.shape[0]])
                loss = np.sum(h * h)
            w.assign_sub(0.01 * tape.gradient(loss, w))
            return loss

        return step, w

    return make


@pytest.mark.parametrize("varying", [False, True])
def test_a_recurrent_step_reads_the_copy_and_stays_close_to_eager(varying):
    # fixed trip count: the steps are unrolled and twelve backward products read w.T; varying:
    # the backward is a loop node whose body's product counts twice
    counts = [5, 7, 6, 5, 8, 6, 7, 5] if varying else [12] * 8
    xs = [random_array(10 + i, (3, 16, 128), np.float32) for i in range(len(counts))]
    step_e, w_e = _recurrent(16)()
    step_j, w_j = _recurrent(16)()
    jf = jl.jit(step_j, reassociate=True, native="off")
    for x, n in zip(xs, counts):
        np.testing.assert_allclose(float(jf(x, n)), float(step_e(x, n)), rtol=1e-4)
        np.testing.assert_allclose(w_j.numpy(), w_e.numpy(), rtol=1e-4, atol=1e-6)
    graphs = [g.graph for g in jf.graphs()]
    assert graphs and all(_copies(g) for g in graphs), jf.explain()
    for g in graphs:  # made once per call: at the top level, before any loop node
        assert all(c in g.nodes for c in _copies(g))
        assert any(n.op == ir.LOOP for n in g.nodes) == varying
    assert jf.stats()["graph_calls"] >= 3, jf.explain()
