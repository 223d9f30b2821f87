"""The loop variable of a `for` over a range of varying length, read after the loop that the
graph runs as a loop node, side by side with eager: the last trip's value, or after no trip the
int it was bound to before the loop (`it = -1; for it in range(n): ...; return it`), or
eager's NameError where it was never bound (graphgen/loops.py)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import check, side_by_side


def _iterate(x, n, st):
    it = -1
    for it in range(n):
        x = np.tanh(x) + 0.1
    return x, it


def _countdown(x, n, st):
    t = 7
    for t in range(n - 1, -1, -2):
        x = x * 0.5 + t
    return x, t


def _early(x, n, st):
    k = 0
    for k in range(1, n):
        x = x * 0.9
        if np.abs(x).max() < 0.5:
            break
    return x, k


def _unbound(x, n, st):
    for j in range(n):
        x = x + 1.0
    return x, j  # noqa: F821 (NameError after no trip, as eager)


def _calls(ns):
    return [lambda s, i=i, n=n: (np.linspace(-1.0, 2.0, 3) + i, n, s) for i, n in enumerate(ns)]


NS = [3, 5, 0, 4, 2, 0, 6, 1, 0, 3]


def test_the_loop_variable_after_the_loop_or_its_value_before():
    check(lambda: (_iterate, {}), _calls(NS), min_graph_calls=5)


def test_counting_down_by_two():
    check(lambda: (_countdown, {}), _calls(NS), min_graph_calls=5)


def test_left_by_a_break():
    check(lambda: (_early, {}), _calls([4, 9, 1, 12, 2, 0, 30, 5]), min_graph_calls=3)


def test_never_bound_before_raises_as_eager_after_no_trip():
    side_by_side(lambda: (_unbound, {}), _calls(NS))


@settings(max_examples=15, deadline=None)
@given(ns=st.lists(st.integers(0, 7), min_size=3, max_size=8))
def test_hypothesis_trip_counts(ns):
    side_by_side(lambda: (_iterate, {}), _calls([2, 4, 6] + ns))
    side_by_side(lambda: (_countdown, {}), _calls([2, 5, 7] + ns))


def _rebinds(x, n, st):
    i = 7
    for i in range(n):
        x = x * 1.5
        i = i * 10  # the body rebinds the loop variable: eager's value after the loop is this one
    return i, x


def _rebinds_fixed_range(x, n, st):
    for i in range(10):
        x = x * 1.5
        i = i + 100
        if x.max() > 4:
            break
    return i, x


def test_a_loop_variable_the_body_rebinds():
    side_by_side(lambda: (_rebinds, {}), _calls([3, 0, 5, 2, 0, 1, 4, 0, 7]))
    vals = [1.0, 0.1, 2.0, 0.01, 3.0, 0.5, 1e-3, 5.0]
    side_by_side(lambda: (_rebinds_fixed_range, {}), [lambda s, v=v: (np.full(2, v), 0, s) for v in vals])
