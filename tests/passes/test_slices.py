"""merge_slices: one unary op over adjacent column slices of an array instead of one per slice;
the values are the same bits (each element is computed on its own), and what is not a run of
adjacent slices under the same op stays as it was."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, ir
from janus_like.passes import merge_slices

from jit.harness import check

from .exact import assert_exact_pass

FULL = ("s", None, None, None)


def _count(graph, op):
    return sum(1 for n in graph.nodes if n.op == op)


@st.composite
def sliced(draw):
    """x (rows, width) or (k, rows, width), cut along its last axis into consecutive ranges (some
    written with negative or open bounds); each range goes through a unary op, some ranges twice
    or under other ops, errstates or dtypes."""
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64])))
    lead = draw(st.sampled_from([(), (2,)]))
    rows, width = draw(st.integers(1, 4)), draw(st.integers(2, 9))
    shape = lead + (rows, width)
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, (shape, dtype))
    cuts = sorted(draw(st.sets(st.integers(1, width - 1), max_size=width - 1)))
    bounds = list(zip([0] + cuts, cuts + [width]))
    nodes, outs = [x], []
    for a, b in bounds:
        lo = draw(st.sampled_from([a, a - width])) if a else draw(st.sampled_from([0, None]))
        hi = None if b == width and draw(st.booleans()) else b
        index = (tuple([FULL] * (len(shape) - 1)) + (("s", lo, hi, None),), False)
        part = shape[:-1] + (b - a,)
        cut = ir.Node("getitem", (x,), {"index": index}, (part, dtype))
        nodes.append(cut)
        for _ in range(draw(st.integers(1, 2))):
            op = draw(st.sampled_from(["sigmoid", "tanh", "exp", "neg", "abs", "log"]))
            errstate = {"all": "ignore"} if op in ("log", "exp") and draw(st.booleans()) else None
            y = ir.Node(op, (cut,), {}, (part, dtype), errstate=errstate)
            nodes.append(y)
            outs.append(y)
    g = ir.Graph("slices", nodes, outs, 1)
    ir.verify(g)
    values = draw(st.lists(st.sampled_from([0.0, -0.0, 1.5, -3.0, 80.0, -100.0, 1e-30, np.inf, -np.inf, np.nan]),
                           min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return g, np.array(values, dtype).reshape(shape)


@settings(deadline=None, max_examples=60)
@given(sliced())
def test_merged_slices_give_the_same_bits_as_one_op_per_slice(case):
    g, x = case
    with np.errstate(all="ignore"):
        assert_exact_pass(g, [x], merge_slices, "merge_slices")


def test_adjacent_gates_share_one_op_and_gaps_or_other_ops_do_not():
    # sigmoid over [0:2] and [2:4] merges; [5:6] is not adjacent; tanh over [4:5] is another op
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, ((3, 6), np.dtype(np.float32)))
    nodes, outs = [x], []
    for a, b, op in ((0, 2, "sigmoid"), (2, 4, "sigmoid"), (4, 5, "tanh"), (5, 6, "sigmoid")):
        cut = ir.Node("getitem", (x,), {"index": ((FULL, ("s", a, b, None)), False)}, ((3, b - a), x.aval[1]))
        y = ir.Node(op, (cut,), {}, cut.aval)
        nodes += [cut, y]
        outs.append(y)
    g = ir.Graph("gates", nodes, outs, 1)
    x_value = np.linspace(-3, 3, 18, dtype=np.float32).reshape(3, 6)
    g = assert_exact_pass(g, [x_value], merge_slices, "merge_slices")
    assert _count(g, "sigmoid") == 2 and _count(g, "tanh") == 1
    merged = [n for n in g.nodes if n.op == "sigmoid" and n.aval[0] == (3, 4)]
    assert len(merged) == 1


def test_row_blocks_are_left_to_lifting():
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, ((4, 3), np.dtype(np.float32)))
    cuts = [ir.Node("getitem", (x,), {"index": ((("s", a, a + 2, None),), True)}, ((2, 3), x.aval[1])) for a in (0, 2)]
    ys = [ir.Node("tanh", (c,), {}, c.aval) for c in cuts]
    g = ir.Graph("rows", [x] + cuts + ys, ys, 1)
    g = assert_exact_pass(g, [np.ones((4, 3), np.float32)], merge_slices, "merge_slices")
    assert _count(g, "tanh") == 2


def _lstm(hidden=8, vocab=12):
    def make():
        rng = np.random.default_rng(0)
        shapes = [(vocab, 4), (4, 4 * hidden), (hidden, 4 * hidden), (4 * hidden,)]
        params = [jl.Variable((rng.standard_normal(s) * 0.4).astype(np.float32)) for s in shapes]
        emb, w_x, w_h, b = params

        def step(ids):
            with jl.GradientTape() as tape:
                h = np.zeros((ids.shape[0], hidden), np.float32)
                c = np.zeros((ids.shape[0], hidden), np.float32)
                for t in range(ids.shape[1]):
                    h, c = F.lstm_cell(F.embedding(emb, ids[:, t]), h, c, w_x, w_h, b)
                loss = F.mean(h * h)
            for p, gr in zip(params, tape.gradient(loss, params)):
                p.assign_sub(0.5 * gr)
            return loss

        return step, params
    return make


def test_an_lstm_step_computes_its_input_and_forget_gates_in_one_sigmoid_and_matches_eager():
    rng = np.random.default_rng(1)
    calls = [(lambda ids: (lambda state: (ids,)))(rng.integers(0, 12, (3, 4))) for _ in range(6)]
    for reassociate in (False, True):
        jf = check(_lstm(), calls, reassociate=reassociate, native="off")
        graph = jf.compiled[-1].graph
        sigmoids = [n for n in graph.nodes if n.op == "sigmoid"]
        assert len(sigmoids) == 2 * 4, [n.aval[0] for n in sigmoids]  # (i, f) and o, per step
        assert sorted({n.aval[0] for n in sigmoids}) == [(3, 8), (3, 16)]
