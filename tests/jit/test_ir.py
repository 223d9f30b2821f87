"""The IR on its own: hand-built graphs print, verify, and run the same in the reference
interpreter and the generated-code plan; malformed graphs are rejected by `ir.verify`."""
import numpy as np
import pytest

from janus_like import ir
from janus_like.executor import AssertFailed, compile_plan, interpret
from janus_like.jit.assumptions import Assumption

from .harness import assert_same


def _input(slot, shape=(3,), dtype=np.float64, name=None):
    return ir.Node(ir.INPUT, (), {"slot": slot, "name": name or f"arg{slot}"}, (shape, np.dtype(dtype)))


def _op(op, *inputs, aval=((3,), np.dtype(np.float64)), **params):
    return ir.Node(op, tuple(inputs), params, aval)


def _graph(nodes, outputs, name="g"):
    return ir.Graph(name, list(nodes), list(outputs), sum(1 for n in nodes if n.op == ir.INPUT))


def _cond_graph():
    """y = x * 2 if sum(x) > 0 else x - 1; then an assert that y's sum is not NaN."""
    x = _input(0)
    s = _op("sum", x, aval=((), np.dtype(np.float64)), axis=None, keepdims=False, dtype=None)
    pred = _op("gt", s, 0.0, aval=((), np.dtype(bool)))
    then_y = _op("mul", x, 2.0)
    else_y = _op("sub", x, 1.0)
    cond = ir.Node(ir.COND, (pred,), {"then_nodes": [then_y], "else_nodes": [else_y],
                                       "then_outs": [then_y], "else_outs": [else_y]})
    y = ir.Node(ir.TUPLE_GET, (cond,), {"index": 0}, ((3,), np.dtype(np.float64)))
    total = _op("sum", y, aval=((), np.dtype(np.float64)), axis=None, keepdims=False, dtype=None)
    finite = _op("eq", total, total, aval=((), np.dtype(bool)))
    check = ir.Node(ir.ASSERT, (finite,), {"expect": True, "assumption": Assumption("branch", "prog.py:3", True)})
    return _graph([x, s, pred, cond, y, total, finite, check], [y, total])


# ------------------------------------------------------------------ well-formed graphs
def test_valid_graph_verifies_and_prints():
    g = _cond_graph()
    ir.verify(g)
    text = str(g)
    assert text.splitlines()[0] == "graph g(1 inputs) {"
    assert "= cond " in text and "then:" in text and "else:" in text and "yield" in text
    assert "assert %" in text and "[branch prog.py:3]" in text
    assert text.splitlines()[-1] == "}"


def test_plan_matches_interpreter_on_both_cond_branches():
    g = _cond_graph()
    plan = compile_plan(g)
    for x in (np.array([1.0, 2.0, 3.0]), np.array([-1.0, -2.0, 0.5])):
        ref, fast = interpret(g, [x]), plan([x])
        assert len(ref) == len(fast) == 2
        for r, f in zip(ref, fast):
            assert_same(r, f, "plan vs interpreter")
    np.testing.assert_array_equal(interpret(g, [np.ones(3)])[0], np.full(3, 2.0))
    np.testing.assert_array_equal(interpret(g, [-np.ones(3)])[0], np.full(3, -2.0))


def test_assert_node_fails_the_same_way_in_both_executors():
    g = _cond_graph()
    plan = compile_plan(g)
    bad = np.array([np.nan, 1.0, 1.0])
    with pytest.raises(AssertFailed) as ref_exc:
        interpret(g, [bad])
    with pytest.raises(AssertFailed) as fast_exc:
        plan([bad])
    assert ref_exc.value.assumption is fast_exc.value.assumption


def test_networkx_view_has_every_edge():
    g = _cond_graph()
    nxg = g.to_networkx()
    assert nxg.number_of_nodes() == g.size()
    for n in g.all_nodes():
        for i in n.inputs:
            if isinstance(i, ir.Node):
                assert nxg.has_edge(i.id, n.id)


def test_size_and_asserts_count_nested_nodes():
    g = _cond_graph()
    assert g.size() == 10  # 8 top-level + one node in each branch
    assert len(g.asserts) == 1


# ------------------------------------------------------------------ malformed graphs
def test_rejects_use_before_definition():
    x = _input(0)
    a = _op("neg", x)
    b = _op("exp", a)
    with pytest.raises(ir.VerifyError, match="before it is defined"):
        ir.verify(_graph([x, b, a], [b]))


def test_rejects_input_from_outside_the_graph():
    stray = _input(5)
    x = _input(0)
    y = _op("add", x, stray)
    with pytest.raises(ir.VerifyError, match="before it is defined"):
        ir.verify(_graph([x, y], [y]))


def test_rejects_unknown_op():
    x = _input(0)
    y = _op("frobnicate", x)
    with pytest.raises(ir.VerifyError, match="unknown op 'frobnicate'"):
        ir.verify(_graph([x, y], [y]))


def test_rejects_cycle():
    x = _input(0)
    a = _op("neg", x)
    b = _op("exp", a)
    a.inputs = (b,)  # a <- b <- a
    with pytest.raises(ir.VerifyError):
        ir.verify(_graph([x, a, b], [b]))


def test_rejects_self_loop():
    x = _input(0)
    a = _op("add", x, x)
    a.inputs = (x, a)
    with pytest.raises(ir.VerifyError):
        ir.verify(_graph([x, a], [a]))


def test_cycle_detection_on_networkx_view():
    """The acyclicity check itself: a cycle among already-defined nodes (an input rewired after
    both were placed) is caught even though each use looks defined in order."""
    x = _input(0)
    a = _op("neg", x)
    b = _op("exp", a)
    g = _graph([x, a, b], [b])
    ir.verify(g)
    nxg = g.to_networkx()
    nxg.add_edge(b.id, a.id)
    import networkx as nx

    assert not nx.is_directed_acyclic_graph(nxg)


def test_rejects_duplicate_node():
    x = _input(0)
    a = _op("neg", x)
    with pytest.raises(ir.VerifyError, match="defined twice"):
        ir.verify(_graph([x, a, a], [a]))


def test_rejects_undefined_output():
    x = _input(0)
    a = _op("neg", x)
    with pytest.raises(ir.VerifyError, match="not defined"):
        ir.verify(_graph([x], [a]))


def test_rejects_cond_yielding_value_from_other_branch():
    x = _input(0)
    pred = _op("gt", x, 0.0, aval=((3,), np.dtype(bool)))
    t = _op("neg", x)
    e = _op("exp", x)
    cond = ir.Node(ir.COND, (pred,), {"then_nodes": [t], "else_nodes": [e], "then_outs": [e], "else_outs": [e]})
    with pytest.raises(ir.VerifyError, match="yields undefined"):
        ir.verify(_graph([x, pred, cond], [x]))


def test_rejects_branch_local_value_used_after_cond():
    x = _input(0)
    pred = _op("gt", x, 0.0, aval=((3,), np.dtype(bool)))
    t = _op("neg", x)
    e = _op("exp", x)
    cond = ir.Node(ir.COND, (pred,), {"then_nodes": [t], "else_nodes": [e], "then_outs": [t], "else_outs": [e]})
    leak = _op("add", t, 1.0)  # `t` only exists inside the then-block
    with pytest.raises(ir.VerifyError, match="before it is defined"):
        ir.verify(_graph([x, pred, cond, leak], [leak]))


def test_rejects_node_placed_inside_and_outside_a_cond_block():
    x = _input(0)
    pred = _op("gt", x, 0.0, aval=((3,), np.dtype(bool)))
    t = _op("neg", x)
    e = _op("exp", x)
    cond = ir.Node(ir.COND, (pred,), {"then_nodes": [t], "else_nodes": [e], "then_outs": [t], "else_outs": [e]})
    with pytest.raises(ir.VerifyError):
        ir.verify(_graph([x, pred, cond, t], [t]))


def test_rejects_loop_variable_outside_its_loop():
    if not hasattr(ir, "LOOP_VAR"):
        pytest.skip("no loop nodes in this IR version")
    x = _input(0)
    v = ir.Node(ir.LOOP_VAR, (), {}, ((3,), np.dtype(np.float64)))
    y = _op("neg", v)
    with pytest.raises(ir.VerifyError):
        ir.verify(_graph([x, v, y], [y]))


def test_verify_error_is_an_assertion_error():
    """So a failing verify inside a test reads as a test failure, not an unexpected crash."""
    assert issubclass(ir.VerifyError, AssertionError)
