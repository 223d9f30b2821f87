import operator

import numpy as np

import janus_like as jl
from janus_like import ir
from janus_like.executor import AssertFailed, interpret
from janus_like.jit.assumptions import Assumption
from janus_like.passes import hoist_asserts

F64 = np.dtype("float64")
BIG = Assumption("branch", "t.py:1", False)
STEP = Assumption("branch", "t.py:2", False)


def _graph():
    """x @ w twice, then an assert on a big reduction, then an assert on the step counter."""
    g = ir.Graph("t")
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, ((4, 4), F64))
    t = ir.Node(ir.INPUT, (), {"slot": 1, "name": "t", "python": True}, ((), np.dtype("int64")))
    a = ir.Node("matmul", (x, x), {}, ((4, 4), F64))
    total = ir.Node("sum", (a,), {"axis": None, "keepdims": False, "dtype": None}, ((), F64))
    b = ir.Node("matmul", (a, x), {}, ((4, 4), F64))
    big = ir.Node("gt", (total, 1e9), {}, ((), np.dtype("bool")))
    check_big = ir.Node(ir.ASSERT, (big,), {"expect": False, "assumption": BIG})
    mod = ir.Node(ir.PY_OP, (t, 5), {"fn": operator.mod}, ((), np.dtype("int64")))
    zero = ir.Node(ir.PY_OP, (mod, 0), {"fn": operator.eq}, ((), np.dtype("bool")))
    check_t = ir.Node(ir.ASSERT, (zero,), {"expect": False, "assumption": STEP})
    g.nodes = [x, t, a, total, b, big, check_big, mod, zero, check_t]
    g.outputs = [b]
    return g, (a, total, b, big, check_big, mod, zero, check_t)


def test_asserts_move_to_where_their_inputs_are_ready():
    g, (a, total, b, big, check_big, mod, zero, check_t) = _graph()
    hoist_asserts(g)
    ir.verify(g)
    order = [n.id for n in g.nodes]
    # the counter's test and its assert go before any product; the reduction's assert right after it
    assert order.index(check_t.id) < order.index(a.id)
    assert order.index(big.id) < order.index(check_big.id) < order.index(b.id)
    assert order.index(mod.id) < order.index(zero.id) < order.index(check_t.id)


def test_hoisting_keeps_results_and_failures():
    x = np.eye(4) * 0.5
    for t in (3, 10):
        g, _ = _graph()
        want = _outcome(g, [x, t])
        hoist_asserts(g)
        assert _outcome(g, [x, t]) == want


def _outcome(g, slots):
    try:
        return ("ok", interpret(g, slots)[0].tobytes())
    except AssertFailed as exc:
        return ("assert", exc.assumption.site)


class Counter:
    def __init__(self):
        self.t = 0
        self.w = np.eye(8)
        self.log = []


def logged_step(x, c):
    c.w = np.tanh(x @ c.w) @ c.w
    c.t += 1
    if c.t % 4 == 0:
        c.log.append(float(c.w.sum()))
    return c.w.sum()


def test_a_late_branch_on_a_step_counter_is_asserted_before_the_step_runs():
    c = Counter()
    jf = jl.jit(logged_step)
    for k in range(16):
        jf(np.full((8, 8), 0.01 * k), c)
    for g in jf.graphs():
        lines = g.plan.source.splitlines()
        first_assert = next(i for i, line in enumerate(lines) if "raise AF" in line)
        first_product = next(i for i, line in enumerate(lines) if "matmul" in line or "dot" in line)
        assert first_assert < first_product, g.plan.source
