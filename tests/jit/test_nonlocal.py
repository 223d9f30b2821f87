"""`nonlocal` in jitted code, eager and jit side by side after every call (results, the closure
variables and the enclosing locals they write).

Two kinds of binding: a closure cell of a function defined outside the jitted code (the graph
reads it as an input, its new contents are committed with everything else), and a local of a
frame inside the jitted code that a local function writes (written during generation, as Python
does, so later reads in the graph see it). Writes under a branch on a graph value are in
test_branch_state.py."""
import numpy as np
from hypothesis import given, settings, strategies as st

import janus_like as jl
from janus_like import F

from .harness import LiveCells, call_sequence, check, fallback_reasons, random_array


def test_closure_counter_and_array_accumulator():
    """The training-loop pattern: a step counter and a running sum kept in the closure. The
    counter changes every call (its value guard fails, then it is relaxed) and one call changes
    the input's shape (the guard fails, eager runs, nothing is half-written)."""
    def make():
        step = 0
        total = np.zeros(3)

        def f(x):
            nonlocal step, total
            step += 1
            total = total + x.sum()
            return x * step + total

        return f, LiveCells(f, ["step", "total"])

    shapes = [(3,)] * 5 + [(2, 3)] + [(3,)] * 4
    jf = check(make, call_sequence(10, lambda s, i: (random_array(i, shapes[i]),)), min_graph_calls=3)
    assert "unsupported-syntax" not in fallback_reasons(jf), jf.explain()


def test_closure_tensor_state_written_and_read_back():
    """An RNN-style hidden state in the closure: written, then read again in the same call
    (the read sees the write), returned, and carried to the next call."""
    def make():
        w = jl.Variable(np.eye(3, dtype=np.float32) * 0.5)
        h = jl.tensor(np.zeros(3, np.float32))

        def f(x):
            nonlocal h
            h = F.tanh(x @ w + h)
            out = h * 2.0
            h = h + 1.0
            return out, h

        return f, LiveCells(f, ["h", "w"])

    check(make, call_sequence(8, lambda s, i: (random_array(i, (3,), np.float32),)), min_graph_calls=3)


def test_local_function_writes_enclosing_locals():
    """A helper defined inside the jitted function updates its locals (two levels deep, one
    `nonlocal` passing through), as eager Python does."""
    def make():
        def f(x, n):
            count = 0
            acc = x * 0.0

            def outer(v):
                nonlocal acc

                def inner():
                    nonlocal count, acc
                    count += 1
                    acc = acc + v

                inner()
                acc = acc * 0.5

            for i in range(n):
                outer(x * i)
            return acc * count, count

        return f, {}

    check(make, call_sequence(8, lambda s, i: (random_array(i, (4,)), 3 if i < 6 else 2)), min_graph_calls=3)


def test_helper_closure_defined_outside_shares_cell_with_jitted_function():
    """`record` (not jitted, inlined into the graph) writes a cell the jitted function reads
    through its own closure: the read after the call sees the new value."""
    def make():
        best = np.inf
        seen = 0

        def record(loss):
            nonlocal best, seen
            seen += 1
            best = np.minimum(best, loss)

        def f(x):
            loss = (x * x).sum()
            record(loss)
            return best, seen, x * best

        return f, LiveCells(record, ["best", "seen"])

    losses = [3.0, 1.0, 2.0, 0.5, 0.7, 0.4, 0.9, 0.3]
    check(make, call_sequence(8, lambda s, i: (np.full(2, losses[i] ** 0.5 / 2 ** 0.5),)), min_graph_calls=3)


def test_local_function_reaches_cell_of_jitted_function():
    """A local function's `nonlocal` names a variable of the function enclosing the jitted one
    (a closure cell of the jitted function, passed through)."""
    def make():
        total = 0.0

        def f(x):
            def add(v):
                nonlocal total
                total = total + v
            add(float(x[0]))
            add(float(x[1]))
            return x * 2.0

        return f, LiveCells(f, ["total"])

    check(make, call_sequence(8, lambda s, i: (random_array(i, (2,)),)), min_graph_calls=3)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.sampled_from([np.float32, np.float64]), st.integers(0, 2)),
                min_size=4, max_size=9))
def test_closure_state_random_call_sequences(calls):
    """Drawn call sequences: the shape, the dtype and the number of increments change between
    calls; every call must match eager, the closure included."""
    def make():
        n = 0
        acc = None

        def f(x, k):
            nonlocal n, acc
            for _ in range(k):
                n += 1
            acc = x.sum() if acc is None else acc + x.sum()
            return x * n, acc

        return f, LiveCells(f, ["n", "acc"])

    check(make, [lambda s, c=c, i=i: (random_array(i, (c[0],), c[1]), c[2]) for i, c in enumerate(calls)],
          min_graph_calls=0)


def test_a_local_function_called_in_comprehensions_writes_the_enclosing_local():
    """`[acc(v) for v in vals]` with `acc` writing `nonlocal count`: the comprehension's own
    name (`v`) is put back after it, the count it made stays written (it was lost)."""
    def step(x, vals):
        count, seen = 0, 0

        def acc(v):
            nonlocal count, seen
            count += v
            seen = v
            return count

        out = [acc(v) for v in vals]
        both = {v: acc(w) for v in vals[:2] for w in vals[1:]}
        v = 10
        firsts = sorted({acc(v) for v in vals[:1]})
        return x * count, out, both, firsts, seen, v

    calls = call_sequence(6, lambda s, i: (np.ones(2) * i, [1, 2, 3 + i % 2]))
    jf = check(lambda: (step, {}), calls, min_graph_calls=2)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()


def test_local_functions_called_in_a_comprehension_see_the_functions_names():
    """A comprehension runs in its own scope: a local function it calls reads the function's `w`
    (not the comprehension's target `w`), and one that writes `nonlocal w` writes the function's
    (putting the comprehension's names back undid that write)."""
    def step(x, ws):
        w = x * 0.5

        def loss():
            return float((w * x).sum())

        losses = [loss() for w in ws]
        v = 1.0

        def f(a):
            nonlocal v
            v = v * float(a)
            return v

        ys = [f(v) for v in x]
        return losses, v, ys

    calls = call_sequence(6, lambda s, i: (np.arange(1.0, 4.0) + i, [np.full(3, 2.0), np.full(3, 3.0)]))
    check(lambda: (step, {}), calls, min_graph_calls=2)


def _apply(f, v):
    return f(v)


def test_local_functions_reached_other_than_by_name_in_a_comprehension_see_the_functions_names():
    """A local function a comprehension reaches through a helper (`_apply(g, x)`), a list of
    lambdas (`fs[0](x)`) or a dict read the function's `x`, not the comprehension's target `x`:
    the comprehension runs in its own scope whenever a local function defined in the frame names
    one of its targets (before, only a call of the local function by its name was seen)."""
    def step(xs, x):
        def g(v):
            return v + x
        fs = [lambda v: v * x]
        ops = {"g": g}
        return [_apply(g, x) for x in xs], [fs[0](x) for x in xs], [ops["g"](x) for x in xs], x

    calls = [lambda s, i=i: ([np.full(2, float(j)) for j in range(3)], np.full(2, 100.0 + i)) for i in range(7)]
    check(lambda: (step, None), calls, min_graph_calls=3)


def test_a_lambda_made_in_one_comprehension_and_called_in_another_reads_the_functions_name():
    """`fs = [lambda v: v.sum() + x for _ in ...]` then `[fs[0](x) for x in xs]`: the lambda was
    made in the first comprehension's scope, and reads the function's `x`, not the second
    comprehension's target (the names it reads mark the scopes around it too)."""
    def step(xs):
        x = 100.0
        fs = [lambda v: float(v.sum()) + x for _ in range(2)]
        return [fs[0](x) for x in xs]

    calls = [lambda s, i=i: ([np.full(3, 0.1 * i), np.full(3, 0.2)],) for i in range(8)]
    check(lambda: (step, None), calls, min_graph_calls=3)
