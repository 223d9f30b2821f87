"""Gradients through conditional nodes (graphgen/cond_grad.py): an `if` on a graph value whose
outcome varies, inside a GradientTape, runs as a graph; gradients are eager's bit for bit
(signed zeros included) after every call, or the signature stays eager with a named reason."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F

from .harness import call_sequence, random_array, side_by_side

# branch bodies: y from h (always differentiable), optionally touching w, v (only some branches)
BODIES = {
    "square": "y = h * h",
    "scaled": "y = h * 3.0",
    "w": "y = h * w.sum()",
    "v": "y = h + v * 2.0",
    "relu": "y = F.relu(h) - h",
    "keep": "",  # no assignment: the branch passes h through unchanged as y
}


def _program(then, other, use_after, else_branch):
    then_src = BODIES[then] or "pass"
    else_src = BODIES[other] or "pass"
    lines = [
        "def step(x):",
        "    with jl.GradientTape() as tape:",
        "        h = F.tanh(x @ w)",
        "        y = h",
        "        if h.sum() > 0:",
        f"            {then_src}",
    ]
    if else_branch:
        lines += ["        else:", f"            {else_src}"]
    lines += [
        "        loss = F.sum(y * y)" + (" + F.sum(h)" if use_after else ""),
        "    gw, gv, gx = tape.gradient(loss, [w, v, u])",
        "    w.assign_sub(0.05 * gw)",
        "    return loss, gw, gv, gx",
    ]
    return "\n".join(lines) + "\n"


@settings(deadline=None, max_examples=12)
@given(then=st.sampled_from(sorted(BODIES)), other=st.sampled_from(sorted(BODIES)), use_after=st.booleans(),
       else_branch=st.booleans(), seed=st.integers(0, 1000))
def test_generated_branches_under_a_tape_match_eager(tmp_path_factory, then, other, use_after, else_branch, seed):
    src = _program(then, other, use_after, else_branch)
    path = tmp_path_factory.mktemp("cond") / "prog.py"
    path.write_text(src)  # the JIT reads source: keep it in a real file
    calls = call_sequence(10, lambda s, i: (random_array(seed + i, (2, 3)),))

    def make():
        w = jl.Variable(random_array(0, (3, 3)) * 0.7, name="w")
        v = jl.Variable(random_array(1, (2, 3)), name="v")
        u = jl.Variable(random_array(2, (3,)), name="u")
        ns = {"jl": jl, "F": F, "w": w, "v": v, "u": u, "np": np, "__name__": "prog"}
        exec(compile(src, str(path), "exec"), ns)
        return ns["step"], {"w": w, "v": v}

    jf = side_by_side(make, calls)
    _bitwise_grads(make, calls)
    text = jf.explain()
    assert jf.stats()["graph_calls"] > 0 or "[data-dependent-python]" in text or "[unprofiled-branch]" in text


def _bitwise_grads(make, calls):
    """The harness compares values; here the returned gradients' bits too (-0.0 vs 0.0)."""
    fe, se = make()
    fj, sj = make()
    jf = jl.jit(fj, reassociate=False)
    for call in calls:
        oe, oj = fe(*call(se)), jf(*call(sj))
        for a, b in zip(oe, oj):
            if a is None or b is None:
                assert a is None and b is None
                continue
            a, b = np.asarray(a.numpy() if hasattr(a, "numpy") else a), np.asarray(b.numpy() if hasattr(b, "numpy") else b)
            assert a.dtype == b.dtype and np.array_equal(np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8))


def test_a_varying_branch_in_a_training_step_runs_as_a_graph():
    def make():
        w = jl.Variable(random_array(0, (3, 3)), name="w")

        def step(x):
            with jl.GradientTape() as tape:
                h = F.tanh(x @ w)
                if h.sum() > 0:
                    y = h * h
                else:
                    y = h * 3.0 + w.sum()  # w only in this branch, and before the branch
                loss = F.sum(y)
            w.assign_sub(0.1 * tape.gradient(loss, w))
            return loss

        return step, w

    jf = side_by_side(make, call_sequence(12, lambda s, i: (random_array(i, (2, 3)),)))
    assert jf.stats()["graph_calls"] >= 8
    (g,) = jf.graphs()
    assert sum(1 for n in g.graph.all_nodes() if n.op == "cond") == 2  # forward and backward


def test_a_value_only_one_branch_differentiates_keeps_the_signature_eager():
    def make():
        w = jl.Variable(random_array(0, (3, 3)), name="w")
        v = jl.Variable(random_array(1, (3,)), name="v")

        def step(x):
            with jl.GradientTape() as tape:
                h = F.tanh(x @ w)
                if h.sum() > 0:
                    y = h * v  # v's only use: eager's gradient for v is None after the else branch
                else:
                    y = h
                loss = F.sum(y)
            return tape.gradient(loss, [w, v])

        return step, (w, v)

    jf = side_by_side(make, call_sequence(10, lambda s, i: (random_array(i, (2, 3)),)))
    assert "nothing else does" in jf.explain()


def test_a_passed_through_value_with_gradient_elsewhere_runs_as_a_graph_when_reassociating():
    def make():
        w = jl.Variable(random_array(0, (3, 3)), name="w")

        def step(x):
            with jl.GradientTape() as tape:
                h = F.tanh(x @ w)
                y = h
                if h.sum() > 0:
                    y = h * h  # else: y is h itself, which the loss also uses directly
                loss = F.sum(y * y) + F.sum(h)
            g = tape.gradient(loss, w)
            w.assign_sub(0.1 * g)
            return loss, g

        return step, w

    calls = call_sequence(12, lambda s, i: (random_array(i, (2, 3)),))
    exact = side_by_side(make, calls)  # bit-exact mode: the sums would interleave differently
    assert exact.stats()["graph_calls"] == 0 and "unchanged" in exact.explain()
    fe, we = make()
    fj, wj = make()
    jf = jl.jit(fj)  # reassociating, the default
    for call in calls:
        (le, ge), (lj, gj) = fe(*call(we)), jf(*call(wj))
        np.testing.assert_allclose(float(lj), float(le), rtol=1e-12)
        np.testing.assert_allclose(gj.numpy(), ge.numpy(), rtol=1e-12, atol=1e-15)
    assert jf.stats()["graph_calls"] >= 8


def test_a_branch_with_a_nested_branch_under_a_tape_stays_eager_with_its_reason():
    """Found by the generated training steps: the outer conditional node's gradient read the
    inner one's tape entry as a plain op's and the generator failed (an internal error). Nested
    control flow in a differentiated branch is not converted: the reason says so."""
    def make():
        w = jl.Variable(np.abs(random_array(0, (2, 2))), name="w")  # the sign of h is x's

        def step(x, s):
            with jl.GradientTape() as tape:
                h = np.tanh(x @ w)
                if s > 0.3:
                    if np.sum(h) > 0.0:
                        h = h * 2.0
                    else:
                        h = h - x @ w
                loss = np.sum(h * h)
            return loss, tape.gradient(loss, w)

        return step, w

    # the warm-up sees both outer outcomes, and both inner ones (x's sign) under the outer branch
    calls = [(1, 0.5), (-1, 0.5), (1, -0.5), (-1, 0.5), (1, -0.5), (1, 0.9), (-1, 0.5)]
    jf = side_by_side(make, [lambda st, i=i, sg=sg, s=s: (np.abs(random_array(i, (2, 2))) * sg, s)
                             for i, (sg, s) in enumerate(calls)])
    text = jf.explain()
    assert "nested control flow" in text and "internal-error" not in text, text


def test_a_numpy_loss_under_a_tape_has_no_gradient_in_both_modes():
    """A loss computed from NumPy values only is a constant: every source's gradient is None,
    eagerly (it raised an AttributeError) and in a graph."""
    def make():
        w = jl.Variable(random_array(0, (2, 2)), name="w")

        def step(x):
            with jl.GradientTape() as tape:
                h = np.tanh(x @ w)
                loss = np.sum(np.tanh(x + x))
            return loss, h, tape.gradient(loss, [w])

        return step, w

    jf = side_by_side(make, call_sequence(6, lambda s, i: (random_array(i, (2, 2)),)))
    assert jf.stats()["graph_calls"] >= 2, jf.explain()


def test_a_value_two_branches_may_leave_undifferentiated_keeps_the_signature_eager():
    """Found by the generated training steps: b is differentiated only in the then-arms of two
    conditionals (its other use does not reach the loss). The later conditional's backward
    runs first and gives b a gradient that is None in eager after its else-arm; the earlier one
    passed that value through its own else-arm as if it were always there. After both else-arms
    eager returns None: the signature stays eager, with the reason."""
    def make():
        w = jl.Variable(np.abs(random_array(0, (3, 3))), name="w")
        b = jl.Variable(random_array(1, (3,)), name="b")

        def step(x):
            with jl.GradientTape() as tape:
                h0 = np.tanh(x @ w)
                h1 = h0 * b + x  # not on the loss's path: rebound below
                if np.sum(h0) > 0.0:
                    h0 = h0 * b
                if np.sum(h0) > 0.0:
                    h0 = h0 * b
                h1 = h0
                loss = np.sum(h0 * h1)
            return loss, tape.gradient(loss, [w, b])

        return step, (w, b)

    signs = [1, -1, 1, -1, -1, 1, -1, 1]  # the sign of x is h0's: both arms, then both else-arms
    jf = side_by_side(make, [lambda st, i=i, sg=sg: (np.abs(random_array(i, (2, 3))) * sg,)
                             for i, sg in enumerate(signs)])
    assert "nothing else does" in jf.explain(), jf.explain()
