"""Running an exact pass on a graph: the same bits before and after, in the interpreter and in
the plan."""
import dataclasses

import numpy as np

import janus_like as jl
from janus_like import F, ir
from janus_like.executor import compile_plan, interpret
from janus_like.passes import dce

from jit.harness import assert_same


def assert_exact_pass(g, slots, rewrite, what):
    """Run `rewrite` then DCE on graph g; every output is the same bits as before."""
    before = interpret(g, slots)
    rewrite(g)
    dce(g)
    ir.verify(g)
    for b, a, p in zip(before, interpret(g, slots), _plan_values(g, slots)):
        assert_same(b, a, what)
        assert_same(b, p, "plan")
    return g


def _plan_values(g, slots):
    """The plan's outputs; where its float64 scalars held as Python floats fail their finite
    check (executor/floats.py: the call would run eagerly), those of the plan without them."""
    from janus_like.executor import AssertFailed

    try:
        return compile_plan(g)(slots)
    except AssertFailed as exc:
        if exc.assumption is None or exc.assumption.kind != "finite":
            raise
    return compile_plan(dataclasses.replace(g, python_floats=False))(slots)


def training_step(shapes, act, lr):
    """A two-layer regression step on fresh Variables of `shapes` (w1, b1, w2), SGD with `lr`."""
    rng = np.random.default_rng(0)
    params = [jl.Variable((rng.standard_normal(s) * 0.3).astype(np.float32)) for s in shapes]

    def step(x, y):
        with jl.GradientTape() as tape:
            h = act(x @ params[0] + params[1])
            loss = F.mean((h @ params[2] - y) ** 2)
        for p, gr in zip(params, tape.gradient(loss, params)):
            p.assign_sub(lr * gr)
        return loss

    return step, params


def three_ways(make, data):
    """{"eager", "exact", "reassociate"} -> (losses, final parameters, function) of the step
    `make()` returns, run on `data` eagerly and jitted without and with reassociation."""
    results = {}
    for name, opts in (("eager", None), ("exact", dict(reassociate=False, native="off")),
                       ("reassociate", dict(reassociate=True, native="off"))):
        step, params = make()
        f = step if opts is None else jl.jit(step, **opts)
        results[name] = ([float(f(x, y)) for x, y in data], [p.numpy().copy() for p in params], f)
    return results
