"""fold_row_chains: a running sum over rows of one array becomes one cumulative sum, bit for bit
(signed zeros, NaN and infinities included), and chains it cannot prove stay as they are."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from janus_like import ir
from janus_like.executor import compile_plan, interpret
from janus_like.passes import dce, fold_row_chains

from jit.harness import assert_same

from .rnn_case import assert_close_to_eager, make_rnn, run_jit

F32 = np.dtype(np.float32)


def _node(op, *inputs, aval, **params):
    return ir.Node(op, tuple(inputs), params, aval)


@st.composite
def chains(draw):
    rank = draw(st.sampled_from([1, 2]))
    n = draw(st.integers(3, 7))
    shape = (n, 3)[:rank]
    row = shape[1:]
    x = _node(ir.INPUT, aval=(shape, F32), slot=0, name="x")
    order = draw(st.sampled_from(["up", "down", "perm"]))
    ks = list(range(n)) if order == "up" else list(range(n - 1, -1, -1)) if order == "down" \
        else draw(st.permutations(list(range(n))))
    ks = ks[:draw(st.integers(3, n))]
    form = draw(st.sampled_from(["row", "mean", "sum"] if rank == 1 else ["row"]))
    neg = draw(st.booleans())
    start = draw(st.sampled_from(["zero", "node", "term"] if rank == 1 else ["node", "term"]))
    nodes, terms = [x], []
    for k in ks:
        if form == "row":
            t = _node("getitem", x, aval=(row, F32), index=((k,), True))
            nodes.append(t)
        else:
            b = _node("getitem", x, aval=((1,), F32), index=((("s", k, k + 1, None),), True))
            t = _node(form, b, aval=((), F32), axis=None, keepdims=False)
            nodes += [b, t]
        if neg:
            t = _node("neg", t, aval=(row, F32))
            nodes.append(t)
        terms.append(t)
    if start == "zero":
        acc = 0.0
    elif start == "node":
        acc = _node(ir.INPUT, aval=(row, F32), slot=1, name="c")
        nodes.insert(1, acc)
    else:
        acc, terms = terms[0], terms[1:]
    adds = []
    for t in terms:
        acc = _node("add", acc, t, aval=(row, F32))
        nodes.append(acc)
        adds.append(acc)
    outputs = [acc]
    if draw(st.booleans()):  # a partial sum used elsewhere: the chain must stop there
        mid = adds[len(adds) // 2]
        outputs.append(_node("mul", mid, 2.0, aval=(row, F32)))
        nodes.append(outputs[-1])
    # a 0-d input may hold a Python number at run time (weakly typed): never folded into an array
    foldable = len(outputs) == 1 and len(terms) >= 3 and not (start == "node" and rank == 1)
    return nodes, outputs, shape, row, foldable


@settings(deadline=None)
@given(chain=chains(), seed=st.integers(0, 2**16), specials=st.booleans())
def test_folded_chains_compute_the_same_bits(chain, seed, specials):
    nodes, outputs, shape, row, foldable = chain
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    if specials:  # signed zeros, NaN, infinities, huge values that round
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, 3)] = rng.choice([-0.0, 0.0, np.nan, np.inf, -np.inf, 3e38], 3)
    slots = [x, rng.standard_normal(row).astype(np.float32)]
    g = ir.Graph("g", list(nodes), list(outputs), 2)
    before = interpret(g, slots)
    with np.errstate(all="ignore"):
        fold_row_chains(g)
        dce(g)
        ir.verify(g)
        after = interpret(g, slots)
        planned = compile_plan(g)(slots)
    for b, a, p in zip(before, after, planned):
        assert_same(b, a, "folded")
        assert_same(b, p, "plan")
    if foldable:
        assert [n.op for n in g.nodes].count("add") <= 1  # folded (one add: the +0.0 of a mean)


def test_a_per_step_loss_sum_folds_and_matches_eager():
    # lifting makes every step's loss a row of one array; the running sum becomes one cumsum
    make = make_rnn()
    jf, losses, params = run_jit(make)
    (g,) = jf.graphs()
    assert [n.op for n in g.graph.nodes].count("cumsum") >= 1 and jf.stats()["graph_calls"] >= 4
    jf2, losses2, params2 = run_jit(make, without=fold_row_chains)  # the same JIT without the fold
    assert not any(n.op == "cumsum" for g2 in jf2.graphs() for n in g2.graph.nodes)
    assert_same(losses, losses2, "losses")  # the same bits
    assert_same(params, params2, "parameters")
    assert_close_to_eager(make, losses)


def test_a_bias_gradient_summed_over_steps_reads_the_stacked_weight_gradient_rows():
    # h_t = tanh(x_t + h @ W + b): b's gradient is dz_T + dz_{T-1} + ... one step at a time,
    # and the folded W gradient stacks the same dz_t as rows of one array; the running sum
    # becomes a cumsum over those rows (same bits), clipped as in benchmarks/models/char_rnn.py
    make = make_rnn(bias=True, per_step_loss=False, clip=0.05)
    jf, losses, params = run_jit(make)
    (g,) = jf.graphs()
    sums = [n for n in g.graph.nodes if n.op == "cumsum"]
    assert sums and any(n.inputs[0].op == "getitem" and n.inputs[0].inputs[0].op in ("concatenate", "reshape")
                        for n in sums)  # rows of the stacked dz (passes/stacks.py reshapes one concatenation)
    assert "CLIP(" in g.plan.source  # the clip ufunc, not np.clip's Python wrapper
    jf2, losses2, params2 = run_jit(make, without=fold_row_chains)
    assert not any(n.op == "cumsum" for g2 in jf2.graphs() for n in g2.graph.nodes)
    assert_same(losses, losses2, "losses")
    assert_same(params, params2, "parameters")
    assert_close_to_eager(make, losses)
