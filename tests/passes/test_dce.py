import numpy as np

from janus_like import ir
from janus_like.passes import dce


def _graph():
    g = ir.Graph("t")
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "arg0"}, ((3,), np.dtype("float64")))
    dead = ir.Node("exp", (x,), {}, ((3,), np.dtype("float64")))
    live = ir.Node("tanh", (x,), {}, ((3,), np.dtype("float64")))
    cond = ir.Node("gt", (live, 0), {}, ((3,), np.dtype("bool")))
    anything = ir.Node("sum", (cond,), {"axis": None, "keepdims": False, "dtype": None}, ((), np.dtype("int64")))
    check = ir.Node(ir.ASSERT, (anything,), {"expect": True, "assumption": None})
    g.nodes = [x, dead, live, cond, anything, check]
    g.outputs = [live]
    return g, dead, check


def test_dce_removes_unused_nodes_but_keeps_asserts():
    g, dead, check = _graph()
    dce(g)
    ir.verify(g)
    assert dead not in g.nodes
    assert check in g.nodes
    assert "exp" not in str(g)
    assert "assert" in str(g)


def test_dce_keeps_results_equal():
    from janus_like.executor import interpret

    g, _, _ = _graph()
    x = np.array([0.5, 1.0, 2.0])
    before = interpret(g, [x])
    dce(g)
    np.testing.assert_array_equal(interpret(g, [x])[0], before[0])
