"""Early returns (`graphgen/early_returns.py`), side by side with eager: a guard clause returning
from an `if` on a graph value, nested ifs that return on some paths, a helper with a warm-up
schedule, state written after the early return, an early return under a GradientTape, and the
shapes that stay as written (a return in a loop) or eager (a Python value that depends on the
branch)."""
import math

import numpy as np
import pytest

import janus_like as jl

from .harness import check, fallback_reasons


def _calls(n):
    return [lambda s, k=k: (np.random.default_rng(k).standard_normal(4) * 3, k, s) for k in range(n)]


def guard_clause(x, k, s):
    if x.sum() > 0:
        return x * 2
    y = x - 1
    return y * y


def nested(x, k, s):
    if x.sum() > 0:
        x = x * 3
        if x.max() > 6:
            return x
        x = x + 1
    elif x.min() < -4:
        return -x
    return x / 2


def falls_off_the_end(x, k, s):
    if x[0] > 0:
        return x
    s["log"].append(0)  # a write after the return: only on the other path


def schedule(k, warm=4, total=12, lr=0.1):
    if k < warm:
        return lr * (k + 1) / warm
    p = (k - warm) / max(1, total - warm)
    return lr * 0.5 * (1 + math.cos(math.pi * min(p, 1.0)))


def sgd_with_schedule(x, k, s):
    s["w"] = s["w"] - schedule(k) * x
    return s["w"].sum()


class Model:
    def __init__(self):
        self.count = 0
        self.w = np.zeros(4)


def state_after_return(x, k, s):
    m = s["model"]
    if float(x.sum()) < -2.0:
        return -1
    m.count = m.count + 1
    m.w = m.w * 0.5 + x
    return m.count


@pytest.mark.parametrize("f", [guard_clause, nested, sgd_with_schedule, state_after_return])
def test_early_returns_on_graph_values_run_as_conditional_nodes(f):
    jf = check(lambda: (f, {"w": np.zeros(4), "model": Model()}), _calls(24), min_graph_calls=8)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def test_a_path_that_falls_off_the_end_returns_none():
    # the branch writes a list only on one path: that part stays eager, results agree
    check(lambda: (falls_off_the_end, {"log": []}), _calls(12), min_graph_calls=0)


def loss_with_guard(x, w):
    with jl.GradientTape() as tape:
        h = x * w
        loss = _robust(h)
    return loss, tape.gradient(loss, [w])[0]


def _robust(h):
    s = h.sum()
    if s > 1.0:
        return s * 0.5
    return s * s


def test_an_early_return_under_a_tape_differentiates_the_taken_branch():
    def make():
        return loss_with_guard, {"w": jl.Variable(np.array([0.5, -1.0, 2.0]))}

    calls = [lambda s, k=k: (jl.Tensor(np.random.default_rng(k).standard_normal(3)), s["w"]) for k in range(16)]
    jf = check(make, calls, min_graph_calls=6)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def return_in_loop(x, k, s):
    for i in range(3):
        if x[i] > 0:
            return x * i
    return x


def branch_typed_result(x, k, s):
    if x.sum() > 0:
        return 1
    return "negative"


def test_returns_it_cannot_move_keep_their_old_handling():
    check(lambda: (return_in_loop, {}), _calls(10), min_graph_calls=0)
    jf = check(lambda: (branch_typed_result, {}), _calls(12), min_graph_calls=0)
    assert "the returned value is a Python value that depends on the branch" in jf.explain(), jf.explain()


def shrink(a):
    if np.sum(a) > 0:
        return a * 0.5
    return a  # the argument itself: the caller's name may alias another one


def alias_through_a_loop(x, k, s):
    v = x + 0.0
    box = {"a": v}
    v = shrink(v)  # a conditional node: v is box["a"] itself or a new array
    while np.max(np.abs(v)) > 2.0:  # a loop node: after zero trips, v is still what entered
        v = v * 0.5
    box["a"] += 1.0  # eager sees this through v when v is box["a"]
    return v


def test_a_write_through_another_name_reaches_a_merged_then_carried_value():
    # found by the generated programs: the loop's result was marked as aliasing the conditional's
    # merged value only, so the write through box["a"] was lost (a wrong result); now the value
    # cannot be read and that signature runs eagerly
    xs = [np.array([1.0, -3.0]), np.array([3.0, 1.0]), np.array([-1.0, -0.5]), np.array([5.0, 6.0])]
    calls = [lambda s, k=k: (xs[k % 4].copy(), k, s) for k in range(12)]
    jf = check(lambda: (alias_through_a_loop, {}), calls, min_graph_calls=0)
    assert fallback_reasons(jf) <= {"view-write", "assumption"}, jf.explain()
