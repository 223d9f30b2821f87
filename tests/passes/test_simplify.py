import numpy as np

from janus_like import ir
from janus_like.executor import interpret
from janus_like.passes import simplify, sum_to_reshape


def test_identity_sum_to_and_cast_are_removed_exactly():
    f64 = np.dtype("float64")
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "arg0"}, ((2, 3), f64))
    y = ir.Node("tanh", (x,), {}, ((2, 3), f64))
    s = ir.Node("sum_to", (y, x), {}, ((2, 3), f64))
    c = ir.Node("cast", (s,), {"dtype": f64}, ((2, 3), f64))
    b = ir.Node("sum_to", (c, ir.Node(ir.INPUT, (), {"slot": 1, "name": "arg1"}, ((3,), f64))), {}, ((3,), f64))
    g = ir.Graph("t", [x, y, s, c, b.inputs[1], b], [c, b])
    xv, bv = np.arange(6.0).reshape(2, 3), np.zeros(3)
    before = interpret(g, [xv, bv])
    simplify(g)
    ir.verify(g)
    assert g.outputs[0] is y  # sum_to to the same shape and cast to the same dtype vanished
    assert b.inputs[0] is y and g.outputs[1] is b  # a real reduction stays
    after = interpret(g, [xv, bv])
    for u, v in zip(before, after):
        np.testing.assert_array_equal(u, v)


def test_sum_to_over_length_one_axes_becomes_a_reshape():
    f32 = np.dtype("float32")
    g = ir.Node(ir.INPUT, (), {"slot": 0, "name": "g"}, ((1, 5), f32))
    like = ir.Node(ir.INPUT, (), {"slot": 1, "name": "like"}, ((5,), f32))
    s = ir.Node("sum_to", (g, like), {}, ((5,), f32))
    graph = ir.Graph("t", [g, like, s], [s])
    gv, lv = np.array([[1.0, -0.0, 3.0, 4.0, 5.0]], np.float32), np.zeros(5, np.float32)
    before = interpret(graph, [gv, lv])[0]
    simplify(graph)
    assert s.op == "sum_to"  # exact simplification leaves it: the sign of a zero sum may differ
    sum_to_reshape(graph)
    assert s.op == "reshape_like"
    after = interpret(graph, [gv, lv])[0]
    np.testing.assert_array_equal(before, after)  # equal values (-0.0 == 0.0)
    assert np.signbit(after[1]) and not np.signbit(before[1])
