"""Accumulators that start as Python numbers before a loop of varying trips (`s = 0.0` ...
`s = s + h.sum()`, `c = 0` ... `c += (x > t).sum()`), side by side with eager: from the first
trip on eager's value is a NumPy scalar, so the loop node carries it as one, with an assert that a
trip ran (after none, eager's value is still the Python number: that call runs eagerly, and a
loop whose trips are often zero stops speculating). graphgen/loops.scalar_carries."""
import numpy as np
import pytest
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


def _isinstance_first(x, n, st):
    c = 0
    for t in range(n):
        if isinstance(c, int):  # True on eager's first trip only
            x = x + 1
        c = c + (x > t).sum()
    return c, x


def _ema32(x, n, st):
    ema = 0.1
    for t in range(n):
        ema = 0.9 * ema + 0.1 * (x * x).mean() * np.float32(1e-6)  # (0.9 * 0.1 in double on trip one)
    return ema


def _big_start(x, n, st):
    s = 16777217
    for t in range(n):
        s = s - 16777216 + x.sum()  # (Python ints first: 1, not float32's 16777216 - 16777216)
    return s


def _read_before(x, n, st):
    s = 1.0
    for t in range(n):
        y = x * s  # (float32 on eager's first trip, where s is a Python float)
        s = s + y.sum() * st["w"].mean()
    return s


@pytest.mark.parametrize("body", [_isinstance_first, _ema32, _big_start, _read_before])
def test_accumulators_whose_first_trip_differs_stay_eager_or_agree(body):
    calls = [lambda s, i=i, n=n: ((np.linspace(-1.0, 1.0, 5) * (i + 1) - 0.3).astype(np.float32), n, s)
             for i, n in enumerate([3, 4, 2, 5, 3, 1, 4])]
    side_by_side(lambda: (body, {"w": np.linspace(0.1, 0.3, 4)}), calls)
