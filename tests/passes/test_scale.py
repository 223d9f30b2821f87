"""scale_smaller_operand: `c * (A @ B)` scales the product's smaller operand (reassociating
pipeline only). The rewrite is checked on structure (which operand, which cases are left) and
on values: before and after agree to rounding, in the interpreter and in the plan."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from janus_like import F, ir
from janus_like.executor import compile_plan, interpret
from janus_like.passes import dce, scale, scale_smaller_operand

from .exact import three_ways, training_step
from jit.harness import random_array

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


@pytest.fixture(autouse=True)
def any_saving(monkeypatch):
    """The small shapes below count: any element saved is enough (but see the last test)."""
    monkeypatch.setattr(scale, "MIN_SAVED", 1)


def _input(slot, shape, dtype=F32):
    return ir.Node(ir.INPUT, (), {"slot": slot, "name": f"x{slot}"}, (tuple(shape), dtype))


def _scaled_product(sa, sb, c=0.05, dtype=F32, scalar_first=True, op="matmul", extra_use=False, errstate=None,
                    out=None):
    """graph(A, B[, c]) = c * (A @ B) (and A @ B itself when extra_use); `out`: the multiply's
    dtype when it is not the product's."""
    a, b = _input(0, sa, dtype), _input(1, sb, dtype)
    nodes = [a, b]
    if isinstance(c, tuple):  # a 0-d graph input of the given dtype
        c = _input(2, (), c[0])
        nodes.append(c)
    shape = sa[:-1] + sb[1:] if len(sb) == 2 else sa[:-1]
    p = ir.Node(op, (a, b), {}, (shape, dtype))
    m = ir.Node("mul", (c, p) if scalar_first else (p, c), {}, (shape, out or dtype), errstate=errstate)
    nodes += [p, m]
    return ir.Graph("g", nodes, [m, p] if extra_use else [m], 3 if isinstance(c, ir.Node) else 2), m


def _rewritten(g, slots):
    """Rewrite; the values move by rounding only: |after - before| is within the error bound of
    a k-term sum, (k + 2) eps |c| (|A| @ |B|), elementwise (a relative test fails where terms
    cancel)."""
    a, b = (np.abs(s.astype(np.float64)) for s in slots[:2])
    c = float(slots[2]) if len(slots) > 2 else next(i for i in g.outputs[0].inputs if not isinstance(i, ir.Node))
    bound = (a.shape[-1] + 2) * np.finfo(a.dtype if slots[0].dtype == F64 else F32).eps * abs(c) * (a @ b)
    before = interpret(g, slots)
    scale_smaller_operand(g)
    dce(g)
    ir.verify(g)
    after, planned = interpret(g, slots), compile_plan(g)(slots)
    for b, a, p in zip(before, after, planned):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.all(np.abs(a.astype(np.float64) - b) <= bound)
        np.testing.assert_array_equal(a, p)
    return g


def test_the_learning_rate_scales_the_batch_gradient_not_the_weight_gradient():
    # the MLP's first-layer weight gradient: x.T (784 x 64) @ g (64 x 256)
    g, m = _scaled_product((784, 64), (64, 256))
    x, d = random_array(0, (784, 64), F32), random_array(1, (64, 256), F32)
    _rewritten(g, [x, d])
    assert m.op == "matmul" and m.inputs[0] is g.nodes[0]
    scaled = m.inputs[1]
    assert scaled.op == "mul" and scaled.inputs == (0.05, g.nodes[1]) and scaled.aval == ((64, 256), F32)
    assert [n.op for n in g.nodes].count("matmul") == 1  # the unscaled product is gone


def test_the_left_operand_is_scaled_when_it_is_the_smaller():
    g, m = _scaled_product((16, 2), (2, 32), scalar_first=False)
    _rewritten(g, [random_array(0, (16, 2), F32), random_array(1, (2, 32), F32)])
    assert m.op == "matmul" and m.inputs[0].op == "mul" and m.inputs[0].inputs == (g.nodes[0], 0.05)


@pytest.mark.parametrize("case", [
    dict(sa=(64, 784), sb=(784, 10)),                       # the product is smaller than both operands
    dict(sa=(8, 8), sb=(8, 8)),                             # as large as them: nothing saved
    dict(sa=(16, 2), sb=(2, 32), extra_use=True),           # the product is used elsewhere too
    dict(sa=(16, 2), sb=(2, 32), c=True),                   # a boolean
    dict(sa=(16, 2), sb=(2, 32), c=(F64,), out=F64),        # a float64 0-d array promotes float32
    dict(sa=(16, 2), sb=(2, 32), errstate={"over": "raise"}),
])
def test_cases_that_keep_the_scaled_product(case):
    g, m = _scaled_product(**case)
    scale_smaller_operand(g)
    assert m.op == "mul"


def test_a_0d_scalar_of_the_products_dtype_and_a_dot_are_rewritten():
    g, m = _scaled_product((16, 2), (2, 32), c=(F32,), op="dot")
    c = np.float32(0.25) * np.ones((), F32)
    _rewritten(g, [random_array(0, (16, 2), F32), random_array(1, (2, 32), F32), c])
    assert m.op == "dot" and m.inputs[0].op == "mul"


@settings(deadline=None, max_examples=50)
@given(m=st.integers(1, 24), k=st.integers(1, 6), n=st.integers(1, 24), dtype=st.sampled_from([F32, F64]),
       c=st.sampled_from([0.05, -0.1, 3, 1e-3]), first=st.booleans(), vector=st.booleans(),
       seed=st.integers(0, 2**16))
def test_values_agree_to_rounding(m, k, n, dtype, c, first, vector, seed):
    sa = (k,) if vector else (m, k)
    g, _ = _scaled_product(sa, (k, n), c=c, dtype=dtype, scalar_first=first)
    _rewritten(g, [random_array(seed, sa, dtype), random_array(seed + 1, (k, n), dtype)])


def test_a_jitted_training_step_scales_only_with_reassociation_and_matches_eager():
    data = [(random_array(i, (4, 32), F32), random_array(50 + i, (4, 4), F32)) for i in range(8)]
    results = three_ways(lambda: training_step([(32, 48), (48,), (48, 4)], F.relu, 0.05), data)
    for k in ("exact", "reassociate"):
        graph = results[k][2].graphs()[0].graph
        scaled = [n for n in graph.all_nodes() if n.op in ("matmul", "dot") and any(
            isinstance(i, ir.Node) and i.op == "mul" and 0.05 in i.inputs for i in n.inputs)]
        assert bool(scaled) == (k == "reassociate")
        assert results[k][2].stats()["graph_calls"] >= 4
        np.testing.assert_allclose(results[k][0], results["eager"][0], rtol=1e-5)
        for p, q in zip(results[k][1], results["eager"][1]):
            np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)


def test_products_that_save_fewer_than_min_saved_elements_keep_the_multiply(monkeypatch):
    monkeypatch.setattr(scale, "MIN_SAVED", 4096)
    small, _ = _scaled_product((32, 1), (1, 32))     # tiny MLP's weight gradient: 1,024 - 32 elements
    large, _ = _scaled_product((64, 1), (1, 128))    # 8,192 - 64
    scale_smaller_operand(small)
    scale_smaller_operand(large)
    assert small.outputs[0].op == "mul" and large.outputs[0].op == "matmul"
