"""Running an exact pass on a graph: the same bits before and after, in the interpreter and in
the plan."""
from janus_like import ir
from janus_like.executor import compile_plan, interpret
from janus_like.passes import dce

from jit.harness import assert_same


def assert_exact_pass(g, slots, rewrite, what):
    """Run `rewrite` then DCE on graph g; every output is the same bits as before."""
    before = interpret(g, slots)
    rewrite(g)
    dce(g)
    ir.verify(g)
    for b, a, p in zip(before, interpret(g, slots), compile_plan(g)(slots)):
        assert_same(b, a, what)
        assert_same(b, p, "plan")
    return g
