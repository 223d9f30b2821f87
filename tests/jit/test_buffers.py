"""The plan's buffers against eager's aliasing and layouts: a value an op writes in place
(`out=`) must be one nothing else still reads (not a value a conditional or a loop passes
through) and must have the layout eager's result would have. Eager and jit side by side.
"""
import numpy as np

import janus_like as jl

from .harness import call_sequence, check, random_array


def test_a_buffer_a_conditional_passes_through_is_not_overwritten():
    """Found by the generated training steps: `h0 = h1` in one branch makes the conditional's
    result h1's array itself; the memory plan saw h1's last direct use in `np.tanh(h1)` and ran
    it in place (`out=`), overwriting h0 too. Values an arm (or a loop body) passes through
    now live as long as the result (executor/buffers.plan_reuse). 64 columns: the plan only
    reuses buffers of 64 elements or more."""
    def make():
        w = random_array(0, (64, 64), scale=0.5)
        b = random_array(1, (64,))

        def f(x):
            h0 = np.tanh(x @ w)
            h1 = h0 * b + x
            if np.sum(h0) > 0.0:
                h0 = h0
            else:
                h0 = h1
            h1 = np.tanh(h1) * 0.5
            return np.sum(h0 * h1)

        return f, {}

    def loop_make():
        w = random_array(0, (64, 64), scale=0.5)

        def f(x, lim):
            y = np.tanh(x @ w)
            z = y * 2.0
            k = 0
            while np.sum(np.abs(z)) < lim and k < 4:
                z = y  # the body's result is an outer value: the loop's result may be y itself
                k = k + 1
                lim = lim - 1.0
            y2 = np.tanh(y + 1.0)
            y3 = np.exp(-np.abs(z))
            return np.sum(y2 * y3)

        return f, {}

    w = random_array(0, (64, 64), scale=0.5)
    signs = [np.sign(np.sum(np.tanh(random_array(i, (2, 64)) @ w))) * (1 if i % 2 else -1) for i in range(10)]
    jf = check(make, [lambda s, i=i, sg=sg: (random_array(i, (2, 64)) * sg,) for i, sg in enumerate(signs)])
    assert any(n.op == "cond" for g in jf.graphs() for n in g.graph.nodes), jf.explain()
    limits = [1.0, 1000.0, 1.0, 1000.0, 1.0, 1000.0, 1000.0, 1.0]
    jf = check(loop_make, [lambda s, i=i, lim=lim: (random_array(i, (2, 64)), lim) for i, lim in enumerate(limits)])
    assert any(n.op == "loop" for g in jf.graphs() for n in g.graph.all_nodes()), jf.explain()


def test_an_update_through_a_transposed_gradient_keeps_eager_layout():
    """Found by the generated training steps: the gradient of `a @ w.T` for w is a transposed
    (F-ordered) array; the plan computed `w - lr * g` with `out=` into that buffer, so the new w
    was F-ordered where eager's is C-ordered, and the next call's `x @ w` took another BLAS path
    (low bits differed from the fourth call on). A binary op now writes into a dead operand only
    when the other operand has the same layout (executor/plan_helpers.out_buffer)."""
    def make():
        w = jl.Variable(random_array(0, (64, 64), scale=0.5), name="w")

        def step(x):
            with jl.GradientTape() as tape:
                h = np.tanh(x) @ w.T
                loss = np.mean(h * h)
            g = tape.gradient(loss, w)
            w.assign_sub(0.1 * g)
            return loss, g

        return step, w

    check(make, call_sequence(8, lambda s, i: (random_array(i, (2, 64)),)))
