"""gather_rows: rows `T[A[c]]` over a run of consecutive c become rows of one gather (the same
bits); bias_first: `(X[k] + m_k) + b` becomes `(X[k] + b) + m_k` where b is shared by rows of
a family (reassociation: close to the unrewritten graph, and to eager)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from janus_like import ir
from janus_like.executor import interpret
from janus_like.passes import bias_first, dce, gather_rows, lift_row_blocks

from .exact import assert_exact_pass
from .rnn_case import assert_smaller_and_close_to_without, make_rnn, run_jit

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


def _node(op, *inputs, aval, **params):
    return ir.Node(op, tuple(inputs), params, aval)


@st.composite
def gathers(draw):
    """Rows of a table read through scalar positions of an id vector: consecutive, with gaps,
    repeated, negative, or partly through another id vector."""
    n_ids, width = draw(st.integers(3, 8)), draw(st.integers(1, 4))
    positions = draw(st.lists(st.integers(-n_ids, n_ids - 1), min_size=1, max_size=8))
    t = _node(ir.INPUT, aval=((6, width), F32), slot=0, name="t")
    a = _node(ir.INPUT, aval=((n_ids,), I64), slot=1, name="a")
    other = _node(ir.INPUT, aval=((n_ids,), I64), slot=2, name="other")
    nodes, rows = [t, a, other], []
    for p in positions:
        src = other if draw(st.integers(0, 5)) == 0 else a
        i = _node("getitem", src, aval=((), I64), index=((p,), True))
        row = _node("getitem", t, i, aval=((width,), F32), index=((("slot", 0),), True))
        nodes += [i, row]
        rows.append(row)
    acc = rows[0]
    for r in rows[1:]:  # the rows are used in order, each by the next step
        acc = _node("add", _node("mul", acc, 0.5, aval=((width,), F32)), r, aval=((width,), F32))
        nodes += [acc.inputs[0], acc]
    return nodes, [acc, rows[-1]], positions


@settings(deadline=None)
@given(case=gathers(), seed=st.integers(0, 2**16))
def test_gathered_rows_are_the_same_values(case, seed):
    nodes, outputs, positions = case
    rng = np.random.default_rng(seed)
    n_ids = nodes[1].aval[0][0]
    slots = [rng.standard_normal(nodes[0].aval[0]).astype(np.float32), rng.integers(0, 6, n_ids),
             rng.integers(0, 6, n_ids)]
    assert_exact_pass(ir.Graph("g", list(nodes), list(outputs), 3), slots, gather_rows, "gathered")


def test_a_run_of_positions_is_one_gather_and_a_gap_is_left_alone():
    t = _node(ir.INPUT, aval=((6, 2), F32), slot=0, name="t")
    a = _node(ir.INPUT, aval=((5,), I64), slot=1, name="a")

    def rows(positions):
        out = []
        for p in positions:
            i = _node("getitem", a, aval=((), I64), index=((p,), True))
            out += [i, _node("getitem", t, i, aval=((2,), F32), index=((("slot", 0),), True))]
        return out

    for positions, gathered in (([1, 2, 3], True), ([0, 2], False), ([4], False)):
        body = rows(positions)
        g = ir.Graph("g", [t, a, *body], body[1::2], 2)
        gather_rows(g)
        dce(g)
        gathers = [n for n in g.nodes if n.op == "getitem" and n.inputs[0] is t]
        assert len(gathers) == (1 if gathered else len(positions)), positions
        if gathered:
            assert gathers[0].aval[0] == (3, 2) and gathers[0].inputs[1].params["index"] == ((("s", 1, 4, None),), True)


def _bias_graph(shared=True, second_use=False, b_shape=(3,)):
    x = _node(ir.INPUT, aval=((4, 3), F32), slot=0, name="x")
    m = _node(ir.INPUT, aval=((3,), F32), slot=1, name="m")
    biases = [_node(ir.INPUT, aval=(b_shape, F32), slot=2 + k, name="b" if k == 0 else f"b{k}")
              for k in range(1 if shared else 4)]
    nodes, outs, h = [x, m, *biases], [], m
    for k in range(4):
        row = _node("getitem", x, aval=((3,), F32), index=((k,), True))
        inner = _node("add", row, h, aval=((3,), F32))
        shape = np.broadcast_shapes((3,), b_shape)
        h = _node("add", inner, biases[0 if shared else k], aval=(shape, F32))
        nodes += [row, inner, h]
        if second_use and k == 1:
            outs.append(inner)
        h = _node("tanh", h, aval=(shape, F32))
        nodes.append(h)
    return ir.Graph("g", nodes, [h, *outs], 2 + len(biases))


def _slots(g):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(n.aval[0]).astype(np.float32) for n in g.nodes if n.op == ir.INPUT]


def test_a_shared_bias_moves_next_to_the_rows_and_lifts():
    g = _bias_graph()
    slots = _slots(g)
    before = interpret(g, slots)
    bias_first(g)
    ir.verify(g)
    inners = [n for n in g.nodes if n.op == "add" and n.inputs[0].op == "getitem"]
    assert len(inners) == 4 and all(n.inputs[1].params.get("name") == "b" for n in inners)
    lift_row_blocks(g)
    dce(g)
    ir.verify(g)
    assert [n.op for n in g.nodes].count("add") == 1 + 4  # x + b once, then one add per step
    for b, a in zip(before, interpret(g, slots)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_what_cannot_lift_or_would_change_a_value_is_left_alone():
    for kwargs in (dict(shared=False), dict(second_use=True), dict(b_shape=(2, 3))):
        g = _bias_graph(**kwargs)
        slots = _slots(g)
        before = interpret(g, slots)
        adds = [(n.id, tuple(i.id for i in n.inputs)) for n in g.nodes if n.op == "add"]
        bias_first(g)
        if kwargs.get("second_use"):  # step 1's sum is returned: that step stays as it was
            kept = {i: ins for i, ins in adds}
            inner = g.outputs[1]
            assert tuple(i.id for i in inner.inputs) == kept[inner.id]
        else:  # a bias per step (nothing to lift), or a bias that broadcasts the row to 2-D
            assert [(n.id, tuple(i.id for i in n.inputs)) for n in g.nodes if n.op == "add"] == adds, kwargs
        for b, a in zip(before, interpret(g, slots)):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_an_rnn_with_a_bias_gathers_once_and_matches_the_jit_without_the_passes():
    make = make_rnn(bias=True)
    jf, losses, params = run_jit(make)
    (g,) = jf.graphs()
    table = [n for n in g.graph.nodes if n.op == ir.INPUT and "w_xh" in n.params.get("name", "")]
    row_reads = [n for n in g.graph.nodes if n.op == "getitem" and n.inputs and n.inputs[0] in table]
    assert len(row_reads) == 1 and row_reads[0].aval[0][0] == 12  # one gather of all 12 steps' rows
    assert jf.stats()["graph_calls"] >= 4
    assert_smaller_and_close_to_without(make, jf, losses, params, gather_rows)
