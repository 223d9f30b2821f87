import numpy as np

from janus_like import ir
from janus_like.executor import interpret
from janus_like.passes import cse


def test_cse_merges_identical_pure_nodes_but_not_fresh_buffers():
    f32 = np.dtype("float32")
    w = ir.Node(ir.INPUT, (), {"slot": 0, "name": "w"}, ((3, 4), f32))
    t1 = ir.Node("transpose", (w,), {"axes": (1, 0)}, ((4, 3), f32))
    t2 = ir.Node("transpose", (w,), {"axes": (1, 0)}, ((4, 3), f32))
    s = ir.Node("add", (t1, t2), {}, ((4, 3), f32))
    z1 = ir.Node("zeros_like", (w,), {"dtype": None}, ((3, 4), f32))
    z2 = ir.Node("zeros_like", (w,), {"dtype": None}, ((3, 4), f32))
    g = ir.Graph("t", [w, t1, t2, s, z1, z2], [s, z1, z2])
    wv = np.arange(12, dtype=np.float32).reshape(3, 4)
    before = interpret(g, [wv])
    cse(g)
    ir.verify(g)
    assert s.inputs == (t1, t1) and t2 not in g.nodes
    assert z1 in g.nodes and z2 in g.nodes  # each zeros_like is its own buffer
    for a, b in zip(before, interpret(g, [wv])):
        np.testing.assert_array_equal(a, b)


def test_equal_small_constants_are_one_node_unless_returned():
    f32 = np.dtype("float32")
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, ((2,), f32))

    def const(v):
        v = np.asarray(v, np.float32)
        return ir.Node(ir.CONST, (), {"value": v}, (v.shape, f32))

    c1, c2, c3, c4 = const([-0.2]), const([-0.2]), const([0.2]), const([-0.2])
    c5 = ir.Node(ir.CONST, (), {"value": np.asarray([-0.2], np.float64)}, ((1,), np.dtype("float64")))
    adds = [ir.Node("mul", (x, c), {}, ((2,), c.aval[1])) for c in (c1, c2, c3, c5)]
    g = ir.Graph("t", [x, c1, c2, c3, c4, c5, *adds], [*adds, c4])
    xv = np.arange(2, dtype=np.float32)
    before = interpret(g, [xv])
    cse(g)
    ir.verify(g)
    assert adds[1].inputs[1] is c1 and c2 not in g.nodes  # same bytes, dtype and shape
    assert adds[2].inputs[1] is c3 and adds[3].inputs[1] is c5  # another value, another dtype
    assert c4 in g.nodes  # a returned constant is the caller's own array
    for a, b in zip(before, interpret(g, [xv])):
        np.testing.assert_array_equal(a, b)


def test_a_product_keeps_two_operands_the_program_made_apart():
    """`(x + 0.0) @ (x + 0.0).T`: merged, the product's operands would be one array and its
    transpose, which NumPy multiplies by BLAS's syrk (other last bits than eager's gemm). The
    second `x + 0.0` stays its own node; the transposes under it and any other duplicate merge."""
    f64 = np.dtype("float64")
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, ((14, 36), f64))
    a1 = ir.Node("add", (x, 0.0), {}, ((14, 36), f64))
    a2 = ir.Node("add", (x, 0.0), {}, ((14, 36), f64))
    a3 = ir.Node("add", (x, 0.0), {}, ((14, 36), f64))
    t = ir.Node("transpose", (a2,), {"axes": (1, 0)}, ((36, 14), f64))
    p = ir.Node("matmul", (a1, t), {}, ((14, 14), f64))
    s = ir.Node("sub", (a3, a1), {}, ((14, 36), f64))
    g = ir.Graph("t", [x, a1, a2, a3, t, p, s], [p, s])
    xv = np.random.default_rng(3).standard_normal((14, 36))
    eager = (xv + 0.0) @ (xv + 0.0).T
    cse(g)
    ir.verify(g)
    assert a2 in g.nodes and t.inputs == (a2,) and p.inputs == (a1, t)
    assert a3 not in g.nodes and s.inputs == (a1, a1)  # (an elementwise op: one array twice is the same)
    out = interpret(g, [xv])
    np.testing.assert_array_equal(out[0], eager)
