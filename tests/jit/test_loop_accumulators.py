"""Accumulators that start as Python numbers before a loop of varying trips (`s = 0.0` ...
`s = s + h.sum()`, `c = 0` ... `c += (x > t).sum()`), side by side with eager: from the first
trip on eager's value is a NumPy scalar, so the loop node carries it as one, with an assert that a
trip ran (after none, eager's value is still the Python number: that call runs eagerly, and a
loop whose trips are often zero stops speculating). graphgen/loops.scalar_carries."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import check, side_by_side


def _sum_of_activations(x, n, st):
    s = 0.0
    for t in range(n):
        s = s + np.tanh(x * (t + 1)).sum()
    return s


def _counts(x, n, st):
    c, tot = 0, 0.0
    for t in range(n):
        c = c + (x > t * 0.1).sum()
        tot += (x * t).astype(np.float32).mean()
    return c, tot


def _until_large(x, n, st):
    s = 0.0
    for t in range(n):
        s = s + np.abs(x).sum() * t
        if s > 20:
            break
    st["s"] = s
    return s


def _calls(ns):
    return [lambda s, i=i, n=n: (np.linspace(-1.0, 1.0, 4) * (i + 1), n, s) for i, n in enumerate(ns)]


NS = [3, 5, 2, 4, 6, 1, 0, 3, 7, 2]


def test_a_float_accumulator():
    check(lambda: (_sum_of_activations, {}), _calls(NS), min_graph_calls=5)


def test_an_int_count_and_a_float32_mean():
    check(lambda: (_counts, {}), _calls(NS), min_graph_calls=5)


def test_an_accumulator_left_by_a_break():
    check(lambda: (_until_large, {}), _calls([3, 5, 2, 4, 6, 1, 9, 3, 7, 2]), min_graph_calls=5)


def test_a_loop_that_often_runs_no_trip():
    side_by_side(lambda: (_sum_of_activations, {}), _calls([2, 3, 4, 0, 0, 1, 0, 0, 2, 0, 0, 3]))


@settings(max_examples=15, deadline=None)
@given(ns=st.lists(st.integers(0, 6), min_size=3, max_size=9))
def test_hypothesis_trip_counts(ns):
    side_by_side(lambda: (_counts, {}), _calls([2, 4, 3] + ns))
