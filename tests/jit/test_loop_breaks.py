"""Loops left by `if <graph value>: break`: an iterative solver stopping on a tolerance, a search
stopping on a found value. The trip a loop ends on changes from call to call, so speculating
the warm-up's trips fails; a break under an `if` that is the body's first or last statement
becomes part of a loop node instead (`graphgen/loops.py`). Eager and jit side by side after every
call: results, the caller's arrays and objects, Variables; calls that break early, late, at the
first trip and never."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import janus_like as jl

from .harness import check, fallback_reasons, load_module


def _has_loop(jf):
    return any(n.op == "loop" for g in jf.compiled for n in g.graph.all_nodes())


def _calls(scales, tols=None):
    """(b, tol) per call: b's scale sets how many trips the solver needs."""
    tols = tols or [1e-3] * len(scales)
    return [lambda s, k=k, c=c, t=t: (np.random.default_rng(k).standard_normal(4) * c, t)
            for k, (c, t) in enumerate(zip(scales, tols))]


SCALES = [1.0, 3.0, 0.5, 10.0, 1e-5, 2.0, 100.0, 1.0, 1e4]  # 1e-5: breaks on the first trip; 1e4: never


def test_break_last_in_a_for_range():
    def make():
        a = np.diag([1.0, 1.2, 0.8, 1.1])

        def solve(b, tol):
            x = np.zeros_like(b)
            for it in range(30):
                r = b - a @ x
                x = x + 0.5 * r
                if np.max(np.abs(r)) < tol:
                    break
            print(f"stopped after {it + 1} iterations")  # the loop variable as eager leaves it
            return x, it

        return solve, {}

    jf = check(make, _calls(SCALES), min_graph_calls=5)
    assert _has_loop(jf), jf.explain()
    assert jf.stats()["fallbacks"] == 0, jf.explain()


def test_break_first_reads_the_carried_values():
    def make():
        def f(x, lim):
            n = 0
            for i in range(1, 40, 2):
                if x.sum() > lim:
                    break
                x = x * 1.5 + i
                n += 1
            return x, n

        return f, {}

    calls = [lambda s, k=k: (np.ones(3) * (k % 3), float(lim)) for k, lim in enumerate([10, 100, 5, 1e3, -1, 1e9, 50])]
    jf = check(make, calls, min_graph_calls=3)
    assert _has_loop(jf), jf.explain()


class Model:
    def __init__(self):
        self.steps = 0
        self.w = jl.Variable(np.zeros(4), name="w")
        self.history = np.zeros(4)


def test_while_true_writes_state_until_it_breaks():
    def make():
        m = Model()

        def fit(b, tol):
            while True:
                r = b - m.w.numpy()
                m.w.assign_add(0.5 * r)
                m.history += np.abs(r)
                m.steps = m.steps + 1
                if np.sum(r * r) < tol:
                    break
            return m.w.numpy()

        return fit, {"m": m}

    jf = check(make, _calls(SCALES[:-1]), min_graph_calls=4)  # (no cap on this loop: 1e4 would take long)
    assert _has_loop(jf), jf.explain()


def test_while_on_a_graph_value_with_a_break():
    def make():
        def f(b, tol):
            x = np.zeros_like(b)
            k = 0
            while np.max(np.abs(b - x)) > 1e-9:
                x = x + 0.5 * (b - x)
                k += 1
                if np.max(np.abs(b - x)) < tol:
                    break
            return x, k

        return f, {}

    jf = check(make, _calls(SCALES, [1e-3, 1e-1, 1e-6, 1e-3, 1.0, 1e-2, 1e-3, 1e-4, 1e-3]), min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_a_break_never_taken_in_the_warm_up_is_speculated():
    """Unrolled with an assumption per trip; a call that breaks fails it and runs eagerly."""
    def make():
        def f(b, tol):
            x = b * 1.0
            for _ in range(4):
                x = x * 0.5
                if np.max(np.abs(x)) < tol:
                    break
            return x

        return f, {}

    jf = check(make, _calls([1.0] * 6 + [1e-6, 1.0], [1e-9] * 6 + [1.0, 1e-9]), min_graph_calls=3)
    assert not _has_loop(jf) and fallback_reasons(jf) == {"assumption"}, jf.explain()


@pytest.mark.parametrize("body,loop_node", [
    # statements after the break run under a conditional node inside the loop body
    ("x = x * 0.5\n        if np.max(np.abs(x)) < tol:\n            break\n        x = x + 0.25", True),
    # a first `if` reading the loop variable: not joined to the condition (evaluated once more than
    # the body, it would read past the range), a flag instead
    ("if np.abs(x[_ % 4]) > tol:\n            break\n        x = x * 2.0", True),
    # a continue: the rest of the trip under a conditional node, each trip of the unrolled loop
    ("x = x * 0.9\n        if np.max(x) > tol:\n            continue\n        x = x + 0.3", False),
])
def test_exits_anywhere_in_the_body(tmp_path, body, loop_node):
    jf = _run_loop_body(tmp_path, body, min_graph_calls=3)
    assert _has_loop(jf) == loop_node, jf.explain()


def _run_loop_body(tmp_path, body, **options):
    """`body` as the body of `for _ in range(30)` in f(b, tol), side by side."""
    source = ("import numpy as np\n\n\ndef f(b, tol):\n    x = b * 1.0\n    for _ in range(30):\n"
              f"        {body}\n    return x\n")

    def make():
        return load_module(tmp_path, source, "exits").f, {}

    return check(make, _calls([1.0, 3.0, 0.5, 10.0, 2.0, 5.0, 40.0, 1.0], [0.6] * 8), **options)


@pytest.mark.parametrize("body,reason", [
    # for ... else: the else runs only when the loop was not broken
    ("x = x * 0.5\n        if np.max(np.abs(x)) < tol:\n            break\n    else:\n        x = -x",
     "unsupported-syntax"),
    # two exits
    ("x = x * 0.5\n        if np.max(x) > 3 * tol:\n            continue\n        if np.max(np.abs(x)) < tol:\n"
     "            break", "unsupported-syntax"),
    # more than one element: eager raises ValueError at every call, and so does the jit
    ("x = x * 0.5\n        if np.abs(x) < tol:\n            break", "data-dependent-python"),
])
def test_other_exits_stay_eager(tmp_path, body, reason):
    jf = _run_loop_body(tmp_path, body, min_graph_calls=0)
    assert reason in fallback_reasons(jf), jf.explain()


def test_continue_in_a_loop_node():
    def make():
        def f(b, tol):
            x = b * 1.0
            k = 0
            total = np.zeros_like(b)
            while np.max(np.abs(x)) > tol:
                x = x * 0.5
                k += 1
                if np.sum(x) > 0.0:
                    continue
                total = total + x
            return x, k, total

        return f, {}

    jf = check(make, _calls(SCALES, [1e-3, 1e-1, 1e-6, 1e-3, 1.0, 1e-2, 1e-3, 1e-4, 1e-3]), min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_break_in_a_differentiated_loop_stays_eager():
    def make():
        w = jl.Variable(np.ones(4), name="w")

        def f(b, tol):
            with jl.GradientTape() as tape:
                x = w * b
                for _ in range(20):
                    x = x * 0.5
                    if jl.F.max(jl.F.abs(x)) < tol:
                        break
                loss = jl.F.sum(x * x)
            return loss, tape.gradient(loss, w)

        return f, {"w": w}

    jf = check(make, _calls(SCALES[:7]), min_graph_calls=0)
    assert "unsupported-syntax" in fallback_reasons(jf), jf.explain()


@settings(max_examples=30, deadline=None)
@given(scales=st.lists(st.sampled_from([1e-6, 0.1, 1.0, 7.0, 1e3, 1e8]), min_size=5, max_size=9),
       where=st.sampled_from(["first", "middle", "last", "continue"]),
       loop=st.sampled_from(["for _ in range({})", "while k < {}"]),
       cap=st.sampled_from([0, 1, 5, 25]))
def test_solvers_side_by_side(tmp_path_factory, scales, where, loop, cap):
    test = "        if np.sum(r * r) < tol:\n            break\n"
    skip = "        if np.sum(r) < 0.0:\n            continue\n"
    source = ("import numpy as np\n\n\ndef f(b, tol):\n    x = np.zeros_like(b)\n    r = b * 1.0\n    k = 0\n"
              f"    {loop.format(cap)}:\n" + (test if where == "first" else "") + "        k += 1\n"
              + "        x = x + 0.5 * r\n" + (test if where == "middle" else skip if where == "continue" else "")
              + "        r = b - x\n" + (test if where == "last" else "") + "    return x, r, k\n")
    directory = tmp_path_factory.mktemp("solvers", numbered=True)

    def make():
        return load_module(directory, source, "solver").f, {}

    check(make, _calls(scales, [1e-4] * len(scales)), min_graph_calls=0)


def _draw_loops(rng):
    """Loops left by a break whose test draws random numbers: the loop's own test (a flag
    break ends the loop after the trip), the break's test (joined to the loop's)."""
    def in_the_test(x):
        n = 0
        while rng.random() < 0.95:
            x = x + 1.0
            n += 1
            if np.sum(x) > 40.0:
                break
        return x, n

    def in_the_break(x):
        n = 0
        while n < 12:
            if rng.random() > 0.8:
                break
            x = x + 1.0
            n += 1
        return x, n

    def global_in_the_test(x):
        n = 0
        while np.random.random() < 0.9:
            x = x * 1.5
            n += 1
            if np.max(x) > 50.0:
                break
        return x, n
    return {"test": in_the_test, "break": in_the_break, "global": global_in_the_test}


@pytest.mark.parametrize("which", ["test", "break", "global"])
def test_a_draw_in_the_test_of_a_loop_with_a_break_is_made_as_often_as_in_python(which):
    # in a graph the loop goes on while `test and not break_test`, both evaluated each trip: a
    # draw in either would be made once more than Python makes it, and every later draw differ
    def make():
        rng = np.random.default_rng(0)
        return _draw_loops(rng)[which], {"rng": rng}

    calls = [lambda s, k=k: (np.full(4, float(k % 7) + 0.5),) for k in range(30)]
    jf = check(make, calls, min_graph_calls=0)
    assert "unsupported-syntax" in str(jf.explain()) or not _has_loop(jf), jf.explain()
