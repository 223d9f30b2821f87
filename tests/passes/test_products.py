"""small_products: small rank-1/2 float products run as np.dot (reassociating pipeline only).
The premise, the same bits as np.matmul on contiguous operands, is checked here on generated
shapes and layouts, so a NumPy or BLAS that breaks it fails this file."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from janus_like import F, ir
from janus_like.passes import small_products
from janus_like.passes.products import SMALL_MACS

from .exact import assert_exact_pass, three_ways, training_step
from jit.harness import random_array

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def _input(slot, shape, dtype=F32):
    return ir.Node(ir.INPUT, (), {"slot": slot, "name": f"x{slot}"}, (tuple(shape), dtype))


def _product(a, b, errstate=None):
    shape = a.aval[0][:-1] + b.aval[0][1:] if len(b.aval[0]) == 2 else a.aval[0][:-1]
    return ir.Node("matmul", (a, b), {}, (shape, np.result_type(a.aval[1], b.aval[1])), errstate=errstate)


def _graph(pairs, **kw):
    nodes, outs, slot = [], [], 0
    for sa, sb, *dt in pairs:
        da, db = (dt[0], dt[-1]) if dt else (F32, F32)
        a, b = _input(slot, sa, da), _input(slot + 1, sb, db)
        slot += 2
        p = _product(a, b, **kw)
        nodes += [a, b, p]
        outs.append(p)
    return ir.Graph("g", nodes, outs, slot)


def test_small_rank_1_and_2_float_products_become_dot_and_the_rest_stay_matmul():
    big = int(np.sqrt(SMALL_MACS)) + 8
    g = _graph([((1, 32), (32, 32)), ((4,), (4, 64)), ((64,), (64, 2)), ((8, 16), (16,)), ((5,), (5,)),
                ((3, 4), (4, 5), F64),
                ((big, big), (big, big)),            # too big: the call overhead does not show
                ((2, 3, 4), (4, 5)),                 # rank 3: np.dot is not np.matmul there
                ((3, 4), (4, 5), F32, F64),          # mixed dtypes
                ((3, 4), (4, 5), np.dtype(np.int64))])
    small_products(g)
    assert [o.op for o in g.outputs] == ["dot"] * 6 + ["matmul"] * 4


def test_a_product_under_np_errstate_stays_matmul():
    g = _graph([((3, 4), (4, 5))], errstate={"over": "raise"})
    small_products(g)
    assert g.outputs[0].op == "matmul"


@st.composite
def products(draw):
    m, k, n = (draw(st.integers(1, 40)) for _ in range(3))
    dtype = draw(st.sampled_from([F32, F64]))
    form = draw(st.sampled_from(["mm", "vm", "mv", "vv"]))
    sa = {"mm": (m, k), "vm": (k,), "mv": (m, k), "vv": (k,)}[form]
    sb = {"mm": (k, n), "vm": (k, n), "mv": (k,), "vv": (k,)}[form]
    return sa, sb, dtype, draw(st.booleans()), draw(st.booleans()), draw(st.integers(0, 2**16))


@settings(deadline=None, max_examples=60)
@given(case=products())
def test_dot_gives_matmul_bits_on_c_and_fortran_ordered_operands(case):
    sa, sb, dtype, fortran_a, fortran_b, seed = case
    a = random_array(seed, sa, dtype)
    b = random_array(seed + 1, sb, dtype)
    a = np.asfortranarray(a) if fortran_a else a
    b = np.asfortranarray(b) if fortran_b else b
    g = _graph([(sa, sb, dtype)])
    assert_exact_pass(g, [a, b], small_products, "dot")
    assert g.outputs[0].op == "dot"


def test_a_jitted_training_step_uses_dot_only_with_reassociation_and_matches_eager():
    data = [(random_array(i, (1, 8), np.float32), random_array(50 + i, (1, 2), np.float32)) for i in range(8)]
    results = three_ways(lambda: training_step([(8, 16), (16,), (16, 2)], F.tanh, 0.1), data)
    ops = {k: {n.op for g in results[k][2].graphs() for n in g.graph.all_nodes()} for k in ("exact", "reassociate")}
    assert "dot" in ops["reassociate"] and "matmul" not in ops["reassociate"]
    assert "dot" not in ops["exact"] and "matmul" in ops["exact"]
    for k in ("exact", "reassociate"):  # contiguous operands: the same bits in practice
        assert results[k][2].stats()["graph_calls"] >= 4
        np.testing.assert_allclose(results[k][0], results["eager"][0], rtol=1e-6)
        for p, q in zip(results[k][1], results["eager"][1]):
            np.testing.assert_allclose(p, q, rtol=1e-6, atol=1e-7)
