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
