"""stack_parts: a concatenation of per-step vectors (as rows or columns) or of consecutive unit
slices becomes one copy; the values are the same bits (no arithmetic changes), and what the
pass cannot prove stays a concatenation."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from janus_like import ir
from janus_like.executor import compile_plan, interpret
from janus_like.passes import dce, stack_parts

from jit.harness import assert_same

from .rnn_case import assert_smaller_and_close_to_without, make_rnn, run_jit

F32 = np.dtype(np.float32)


def _node(op, *inputs, aval, **params):
    return ir.Node(op, tuple(inputs), params, aval)


@st.composite
def stacks(draw):
    kind = draw(st.sampled_from(["rows", "rows2d", "columns", "up", "down", "mixed", "ints", "transposed"]))
    k, n = draw(st.integers(2, 6)), draw(st.integers(1, 4))
    x = _node(ir.INPUT, aval=((k + 2, n), F32), slot=0, name="x")
    nodes, parts = [x], []
    for i in range(k):
        if kind == "transposed":  # per-step matrices transposed, side by side: (M_1 ... M_k)ᵀ
            m = _node("mul", x, float(i + 2), aval=((k + 2, n), F32))
            p = _node("transpose", m, aval=((n, k + 2), F32), axes=(1, 0) if i % 2 else None)
            nodes += [m, p]
        elif kind == "ints":  # X[k] reshaped to one row: a unit slice too
            u = _node("getitem", x, aval=((n,), F32), index=((k - i,), True))
            p = _node("reshape", u, aval=((1, n), F32), shape=(1, n))
            nodes += [u, p]
        elif kind in ("up", "down", "mixed"):
            j = i if kind == "up" else k - 1 - i if kind == "down" else (i * 2) % k
            p = _node("getitem", x, aval=((1, n), F32), index=((("s", j + 1, j + 2, None),), True))
            nodes.append(p)
        else:
            u = _node("getitem", x, aval=((n,), F32), index=((i,), True))
            u2 = _node("mul", u, 2.0, aval=((n,), F32))  # a fresh per-step vector
            nodes += [u, u2]
            if kind == "rows2d":
                u2 = _node("reshape", u2, aval=((1, n), F32), shape=(1, n))
                nodes.append(u2)
                p = _node("expand_dims", u2, aval=((1, 1, n), F32), axis=0)
            elif kind == "rows":
                p = _node("reshape", u2, aval=((1, n), F32), shape=(1, n))
            else:
                p = _node("expand_dims", u2, aval=((n, 1), F32), axis=-1)
            nodes.append(p)
        parts.append(p)
    axis = 1 if kind in ("columns", "transposed") else 0
    shape = (n, k) if kind == "columns" else (n, k * (k + 2)) if kind == "transposed" else \
        (k, 1, n) if kind == "rows2d" else (k, n)
    cat = _node("concatenate", *parts, aval=(shape, F32), axis=axis)
    ident = _node("mul", cat, 1.0, aval=(shape, F32))  # the pass leaves graph outputs as they are
    out = _node("matmul", cat, _node(ir.CONST, aval=((shape[-1], 3), F32), value=np.ones((shape[-1], 3), F32)),
                aval=(shape[:-1] + (3,), F32)) if len(shape) == 2 else cat
    nodes += [cat, ident] + ([out.inputs[1], out] if out is not cat else [])
    return nodes, [ident, out] if out is not cat else [ident], kind


@settings(deadline=None)
@given(case=stacks(), seed=st.integers(0, 2**16))
def test_stacked_parts_are_the_same_values(case, seed):
    nodes, outputs, kind = case
    x = np.random.default_rng(seed).standard_normal(nodes[0].aval[0]).astype(np.float32)
    g = ir.Graph("g", list(nodes), list(outputs), 1)
    before = interpret(g, [x])
    stack_parts(g)
    dce(g)
    ir.verify(g)
    after, planned = interpret(g, [x]), compile_plan(g)([x])
    assert_same(before[0], after[0], "stacked")
    assert_same(before[0], planned[0], "plan")
    for b, a in zip(before[1:], after[1:]):  # products of the restacked matrix: rounding may differ
        np.testing.assert_allclose(a, b, rtol=1e-6)
    cats = [n for n in g.nodes if n.op == "concatenate"]
    if kind == "mixed" and len(nodes[1:-1]) > 2:
        assert cats  # not consecutive slices: left alone (k = 2 is consecutive either way)
    elif kind in ("up", "down", "ints"):
        assert not cats
    elif kind != "mixed":  # one concatenation of the vectors (or matrices) themselves
        shape = tuple(outputs[0].aval[0])
        flat = (shape[0], shape[2]) if kind == "rows2d" else shape[::-1] if kind == "transposed" else \
            (shape[0] * shape[1],)
        assert len(cats) == 1 and tuple(cats[0].aval[0]) == flat
    if kind == "rows":  # the same layout as the concatenation
        assert [n for n in g.nodes if n.op == "reshape" and n.inputs[0] is cats[0]]


def test_a_returned_concatenation_stays_one():
    x = _node(ir.INPUT, aval=((4, 3), F32), slot=0, name="x")
    parts = [_node("getitem", x, aval=((1, 3), F32), index=((("s", k, k + 1, None),), True)) for k in range(3)]
    cat = _node("concatenate", *parts, aval=((3, 3), F32), axis=0)
    g = ir.Graph("g", [x, *parts, cat], [cat], 1)
    stack_parts(g)
    assert cat.op == "concatenate"  # not a view of the caller's array


def test_transposes_of_matrices_of_another_dtype_or_rank_stay_concatenated():
    x = _node(ir.INPUT, aval=((2, 3), F32), slot=0, name="x")
    y = _node("cast", x, aval=((2, 3), np.dtype(np.float64)), dtype=np.float64)
    parts = [_node("transpose", x, aval=((3, 2), F32), axes=(1, 0)),
             _node("transpose", y, aval=((3, 2), np.dtype(np.float64)), axes=(1, 0))]
    cat = _node("concatenate", *parts, aval=((3, 4), np.dtype(np.float64)), axis=1)
    out = _node("mul", cat, 2.0, aval=((3, 4), np.dtype(np.float64)))
    g = ir.Graph("g", [x, y, *parts, cat, out], [out], 1)
    stack_parts(g)
    assert cat.op == "concatenate" and cat.inputs == tuple(parts)


def test_an_lstm_step_stacks_its_states_once_for_the_weight_gradients():
    # the hidden states and inputs, transposed per step, are the forward pass's stacked states:
    # no concatenation of transposes is left
    import janus_like as jl
    from benchmarks.models import lstm_lm
    state = lstm_lm.make(0, quick=True)
    step = lstm_lm.janus_step(state, jit=lambda f: jl.jit(f, native="off"))
    for _ in range(5):
        step()
    (g,) = step.fn.graphs()
    cats = [n for n in g.graph.nodes if n.op == "concatenate"]
    assert cats and not [n for n in cats if any(isinstance(p, ir.Node) and p.op == "transpose" for p in n.inputs)]
    assert [n for n in g.graph.nodes if n.op == "transpose" and n.inputs[0] in cats]


def test_an_rnn_step_stacks_its_steps_once_and_matches_the_unstacked_jit():
    # the hidden states and the dz are concatenated for the folded weight gradients, the
    # targets are unit slices of the ids
    make = make_rnn()
    jf, losses, params = run_jit(make)
    (g,) = jf.graphs()
    per_part = [n for n in g.graph.nodes if n.op == "concatenate"
                and any(isinstance(p, ir.Node) and p.op in ("reshape", "expand_dims") for p in n.inputs)]
    assert not per_part and jf.stats()["graph_calls"] >= 4
    assert_smaller_and_close_to_without(make, jf, losses, params, stack_parts)


I64 = np.dtype(np.int64)


@st.composite
def gathers(draw):
    """A concatenation of rows T[i_k] gathered from one table by k index vectors (inputs of the
    graph, lengths 0..5, any valid index, negative ones too)."""
    m, n, k = draw(st.integers(1, 6)), draw(st.integers(1, 4)), draw(st.integers(2, 5))
    table = _node(ir.INPUT, aval=((m, n), F32), slot=0, name="t")
    lengths = draw(st.lists(st.integers(0, 5), min_size=k, max_size=k))
    idx = [_node(ir.INPUT, aval=((length,), I64), slot=1 + j, name=f"i{j}") for j, length in enumerate(lengths)]
    rows = [_node("getitem", table, i, aval=((len_,) + (n,), F32), index=((("slot", 0),), True))
            for i, len_ in zip(idx, lengths)]
    cat = _node("concatenate", *rows, aval=((sum(lengths), n), F32), axis=0)
    out = _node("mul", cat, 1.0, aval=((sum(lengths), n), F32))
    values = [draw(st.lists(st.integers(-m, m - 1), min_size=length, max_size=length)) for length in lengths]
    return [table, *idx, *rows, cat, out], out, [np.array(v, np.int64) for v in values]


@settings(deadline=None)
@given(case=gathers(), seed=st.integers(0, 2**16))
def test_gathered_rows_are_one_gather_of_the_concatenated_indices(case, seed):
    nodes, out, idx = case
    table = np.random.default_rng(seed).standard_normal(nodes[0].aval[0]).astype(np.float32)
    g = ir.Graph("g", list(nodes), [out], 1 + len(idx))
    before = interpret(g, [table, *idx])
    dce(g)  # (as the pipeline runs it before the reassociating passes: what the function left unused)
    stack_parts(g)
    dce(g)
    ir.verify(g)
    gathers_left = [n for n in g.nodes if n.op == "getitem"]
    assert len(gathers_left) == 1 and gathers_left[0].inputs[1].op == "concatenate"
    assert_same(before[0], interpret(g, [table, *idx])[0], "gathered")
    assert_same(before[0], compile_plan(g)([table, *idx])[0], "plan")


def test_rows_gathered_by_indices_of_two_dtypes_or_from_two_tables_stay_concatenated():
    t1 = _node(ir.INPUT, aval=((4, 3), F32), slot=0, name="t1")
    t2 = _node(ir.INPUT, aval=((4, 3), F32), slot=1, name="t2")
    i1 = _node(ir.INPUT, aval=((2,), I64), slot=2, name="i1")
    i2 = _node(ir.INPUT, aval=((2,), np.dtype(np.int32)), slot=3, name="i2")
    for (ta, ia), (tb, ib) in (((t1, i1), (t1, i2)), ((t1, i1), (t2, i1))):
        rows = [_node("getitem", t, i, aval=((2, 3), F32), index=((("slot", 0),), True))
                for t, i in ((ta, ia), (tb, ib))]
        cat = _node("concatenate", *rows, aval=((4, 3), F32), axis=0)
        out = _node("mul", cat, 2.0, aval=((4, 3), F32))
        g = ir.Graph("g", [t1, t2, i1, i2, *rows, cat, out], [out], 4)
        stack_parts(g)
        assert cat.op == "concatenate" and cat.inputs == tuple(rows)


def test_an_lstm_step_gathers_its_embedding_rows_once_and_stacks_each_value_once(monkeypatch):
    # the per-step embedding rows, stacked for the batched input projection, are one gather by
    # the indices the embedding gradient scatters by; the gate gradients are stacked once, in
    # time order, for the weight gradients and for the embedding gradient alike
    import janus_like as jl
    from benchmarks.models import lstm_lm
    # big enough for the per-step input projections to be batched (passes/batch.py, MIN_MACS)
    monkeypatch.setattr(lstm_lm, "QUICK", dict(vocab=50, embed=64, hidden=32, batch=8, steps=5, n_batches=2))
    state = lstm_lm.make(0, quick=True)
    step = lstm_lm.janus_step(state, jit=lambda f: jl.jit(f, native="off"))
    eager = lstm_lm.janus_step(lstm_lm.make(0, quick=True))
    for _ in range(6):  # the same values as eager, up to the folded sums' rounding
        np.testing.assert_allclose(step(), eager(), rtol=1e-5)
        for name, value in eager.parameters().items():
            np.testing.assert_allclose(step.parameters()[name], value, rtol=1e-4, atol=1e-6)
    assert step.fn.stats()["graph_calls"] == 3
    (g,) = step.fn.graphs()
    nodes = g.graph.nodes
    scatter = next(n for n in nodes if n.op == "getitem_grad" and len(n.inputs) == 3)  # the embedding gradient
    table = scatter.inputs[1]
    gathers_of_table = [n for n in nodes if n.op == "getitem" and n.inputs[0] is table
                        and n.params["index"] == ((("slot", 0),), True)]
    assert len(gathers_of_table) == 1
    assert scatter.inputs[2] is gathers_of_table[0].inputs[1]  # one index concatenation
    parts = [frozenset(p.id for p in n.inputs) for n in nodes if n.op == "concatenate"]
    assert len(parts) == len(set(parts))
