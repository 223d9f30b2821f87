"""fold_adam_quotient: `lr * (m / c1) / (sqrt(v / c2) + eps)` as `(m * (lr * sqrt(c2) / c1)) /
(sqrt(v) + eps * sqrt(c2))` under an assert that c2 > 0 (reassociating pipeline only). Checked on
structure (the passes left, the cases kept), on values (before and after agree to rounding, in
the interpreter and in the plan, NaN and infinity where eager has them) and on an Adam step."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, ir, optim
from janus_like.executor import compile_plan, interpret
from janus_like.executor.interpreter import AssertFailed
from janus_like.passes import dce, fold_adam_quotient

from jit.harness import check, random_array, within

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def _input(slot, shape, dtype=F32, python=False):
    params = {"slot": slot, "name": f"x{slot}"} | ({"python": True} if python else {})
    return ir.Node(ir.INPUT, (), params, (tuple(shape), dtype))


def _update(shape=(6, 5), dtype=F32, lr=1e-3, eps=1e-8, c1=(F32,), c2=(F32,), lr_first=True, extra_use=False,
            errstate=None, v_shape=None):
    """graph(var, m, v[, c1][, c2]) = var - lr * (m / c1) / (sqrt(v / c2) + eps); a tuple
    (dtype,) makes c1 or c2 a 0-d graph input of that dtype ((dtype, "python"): a Python number
    read in), a number a literal. `extra_use`: m / c1 is an output too. `v_shape`: v broadcasts."""
    var, m = (_input(k, shape, dtype) for k in range(2))
    v = _input(2, v_shape or shape, dtype)
    nodes, slot = [var, m, v], 3
    scalars = []
    for c in (c1, c2):
        if isinstance(c, tuple):
            c = _input(slot, (), c[0], python=c[1:] == ("python",))
            nodes.append(c)
            slot += 1
        scalars.append(c)
    c1, c2 = scalars
    full = (tuple(shape), dtype)
    mh = ir.Node("div", (m, c1), {}, full)
    vh = ir.Node("div", (v, c2), {}, full)
    root = ir.Node("sqrt", (vh,), {}, full)
    den = ir.Node("add", (root, eps), {}, full)
    q = ir.Node("div", (mh, den), {}, full)
    step = ir.Node("mul", (lr, q) if lr_first else (q, lr), {}, full, errstate=errstate)
    new = ir.Node("sub", (var, step), {}, full)
    nodes += [mh, vh, root, den, q, step, new]
    return ir.Graph("g", nodes, [new, mh] if extra_use else [new], slot), step


def _slots(g, seed, c1=0.19, c2=0.0199, v_zero=False):
    slots = []
    for n in g.nodes:
        if n.op != ir.INPUT:
            continue
        shape, dtype = n.aval
        if shape == ():
            slots.append(np.asarray(c1 if len(slots) == 3 else c2, dtype))
        else:
            a = random_array(seed + len(slots), shape, dtype)
            slots.append(np.abs(a) * (0.0 if v_zero and len(slots) == 2 else 1.0) if len(slots) == 2 else a)
    return slots


def _rewritten(g, slots, rtol=None):
    before = interpret(g, slots)
    fold_adam_quotient(g)
    dce(g)
    ir.verify(g)
    after, planned = interpret(g, slots), compile_plan(g)(slots)
    rtol = rtol or (1e-5 if slots[0].dtype == F32 else 1e-12)
    for b, a, p in zip(before, after, planned):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2)
        np.testing.assert_array_equal(a, p)
    return g


def _array_passes(g):
    return [n.op for n in g.nodes if n.op not in (ir.INPUT, ir.ASSERT) and n.aval is not None and n.aval[0] != ()]


def test_two_of_seven_passes_go():
    g, step = _update()
    assert len(_array_passes(g)) == 7
    _rewritten(g, _slots(g, 0))
    assert sorted(_array_passes(g)) == sorted(["sqrt", "add", "mul", "div", "sub"])
    assert step.op == "div" and [n.op for n in g.nodes].count(ir.ASSERT) == 1


def _two_updates(lr_a, lr_b, shape=(6, 5)):
    """graph(var_a, m_a, v_a, var_b, m_b, v_b, c1, c2): two weights' updates at learning rates
    `lr_a` and `lr_b`."""
    full = (shape, F32)
    ins = [_input(k, shape) for k in range(6)] + [_input(6, ()), _input(7, ())]
    c1, c2 = ins[6:]
    nodes, outs = list(ins), []
    for (var, m, v), lr in ((ins[0:3], lr_a), (ins[3:6], lr_b)):
        mh, vh = ir.Node("div", (m, c1), {}, full), ir.Node("div", (v, c2), {}, full)
        root = ir.Node("sqrt", (vh,), {}, full)
        den = ir.Node("add", (root, 1e-8), {}, full)
        q = ir.Node("div", (mh, den), {}, full)
        step = ir.Node("mul", (lr, q), {}, full)
        new = ir.Node("sub", (var, step), {}, full)
        nodes += [mh, vh, root, den, q, step, new]
        outs.append(new)
    return ir.Graph("g", nodes, outs, 8)


@pytest.mark.parametrize("lr_a, lr_b, shared", [(1e-3, 1e-3, True), (1e-3, 2e-3, False), (0.0, 0.0, True),
                                                 (0.0, -0.0, False)])  # m * -0.0 is -0.0 where m * 0.0 is 0.0
def test_weights_with_the_same_scalars_share_one_assert_and_root(lr_a, lr_b, shared):
    g = _two_updates(lr_a, lr_b)
    rng = np.random.default_rng(3)
    slots = [rng.standard_normal((6, 5)).astype(np.float32) for _ in range(6)]
    slots[2], slots[5] = np.abs(slots[2]), np.abs(slots[5])
    slots += [np.asarray(0.19, F32), np.asarray(0.0199, F32)]
    before = interpret(g, slots)
    fold_adam_quotient(g)
    dce(g)
    ir.verify(g)
    ops = [n.op for n in g.nodes if n.aval is None or n.aval[0] == ()]
    assert ops.count(ir.ASSERT) == ops.count("sqrt") == (1 if shared else 2)
    for b, a, p in zip(before, interpret(g, slots), compile_plan(g)(slots)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(a, p)
        assert np.array_equal(np.signbit(a), np.signbit(p))


def test_a_correction_that_is_not_positive_fails_the_assert():
    g, _ = _update()
    fold_adam_quotient(g)
    dce(g)
    for c2 in (0.0, -0.5):
        for run in (compile_plan(g), lambda slots: interpret(g, slots)):
            with pytest.raises(AssertFailed) as err:
                run(_slots(g, 1, c2=c2))
            assert "Adam" in err.value.assumption.path


@pytest.mark.parametrize("case", [
    dict(extra_use=True),                 # m / c1 is used elsewhere too
    dict(c2=0.0199),                      # a literal second correction: sqrt of a Python number is float64
    dict(c2=(F64,)),                      # a float64 0-d correction promotes the float32 arrays
    dict(c1=(F64,)),
    dict(c2=(F64, "python")),             # a Python float read in: its square root would be a float64
    dict(v_shape=(5,)),                   # v broadcasts against m
    dict(lr=True),                        # a boolean
    dict(errstate={"over": "raise"}),
])
def test_cases_that_keep_the_quotient(case):
    g, step = _update(**case)
    fold_adam_quotient(g)
    assert step.op == "mul"


@settings(deadline=None, max_examples=40)
@given(shape=st.sampled_from([(3,), (4, 5), (2, 3, 2)]), dtype=st.sampled_from([F32, F64]),
       lr=st.sampled_from([1e-3, 0.5, 2]), eps=st.sampled_from([1e-8, 1e-3, 0.0]),
       c1=st.sampled_from([(F32,), 0.1, 1]), lr_first=st.booleans(), t=st.integers(1, 2000),
       v_zero=st.booleans(), seed=st.integers(0, 2**16))
def test_values_agree_to_rounding(shape, dtype, lr, eps, c1, lr_first, t, v_zero, seed):
    """Corrections of Adam's step t; v all zero with eps 0 gives eager's NaN and infinity."""
    c1 = (dtype,) if isinstance(c1, tuple) else c1
    g, _ = _update(shape, dtype, lr, eps, c1=c1, c2=(dtype,), lr_first=lr_first)
    slots = _slots(g, seed, c1=1 - 0.9 ** t, c2=1 - 0.999 ** t, v_zero=v_zero)
    with np.errstate(all="ignore"):
        _rewritten(g, slots, rtol=1e-4 if dtype == F32 else 1e-10)


def _adam_model(beta2):
    def make():
        r = np.random.default_rng(0)
        w = jl.Variable(r.standard_normal((8, 4)).astype(np.float32))
        opt = optim.Adam(1e-2, beta2=beta2)

        def step(x, y):
            with jl.GradientTape() as tape:
                loss = F.mean((x @ w - y) ** 2)
            opt.apply_gradients([(tape.gradient(loss, w), w)])
            return loss

        return step, {"w": w, "opt": opt}
    return make


def _calls(n):
    return [lambda s, i=i: (random_array(i, (5, 8), F32), random_array(i + 40, (5, 4), F32)) for i in range(n)]


def test_an_adam_step_is_rewritten_only_with_reassociation_and_matches_eager():
    with within(2e-5, 1e-6):
        jf = check(_adam_model(0.999), _calls(12), min_graph_calls=6, reassociate=True)
    graph = jf.graphs()[0].graph
    assert any(n.op == ir.ASSERT and "Adam" in n.params["assumption"].path for n in graph.all_nodes())
    assert "assume sign: Adam's second-moment correction" in jf.explain(), jf.explain()
    jf = check(_adam_model(0.999), _calls(6), min_graph_calls=2)  # exact: no assert, no rewrite
    assert not any(n.op == ir.ASSERT for n in jf.graphs()[0].graph.all_nodes())


def test_a_beta2_above_one_runs_eagerly_then_without_the_rewrite():
    """1 - beta2**t < 0: eager's square root of a negative (NaN); the graph's assert sends the
    calls to eager, which computes exactly that, and after `regen_after` failures the graph is
    generated without the rewrite (its NaN are eager's too)."""
    with within(2e-5, 1e-6), np.errstate(invalid="ignore"):
        jf = check(_adam_model(1.5), _calls(10), min_graph_calls=4, reassociate=True)
    assert jf.stats()["assert_failures"] == 2 and jf.stats()["regenerations"] == 1, jf.explain()
    assert not any(n.op == ir.ASSERT for n in jf.graphs()[-1].graph.all_nodes()), jf.explain()
