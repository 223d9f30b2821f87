"""0-d ndarrays carried by loop nodes stay ndarrays: `m = np.array(x.sum())` in a loop of varying
trips, `m = np.zeros(()); m += e` written in place, a `while True:` body's `np.array(...)`. After
the loop the graph asked whether its value was a NumPy scalar and was told yes, so `type(m)`
and `m += 1` (in place on eager's 0-d array) followed a scalar (`ir.numpy_scalar_node` now
follows the loop's body, and a loop's placeholder its start). Side by side with eager.
"""
import numpy as np
import pytest

from .harness import check

R = np.random.default_rng


def fresh(x, k):
    m = np.array(0.0)
    for i in range(k):
        m = np.array(x.sum() * i)
    m += 1  # (in place: eager's is a 0-d ndarray)
    return m, type(m).__name__


def written_in_place(x, k):
    m = np.zeros(())
    for i in range(k):
        m += x.sum()
    return m, type(m).__name__


def a_scalar_after_a_trip(x, k):
    m = np.array(0.0)
    for i in range(k):
        m = x.sum() * i
    r = m
    m += 1
    return m, r, type(m).__name__, r is m


def forever(x, k):
    m, n = 0.0, 0
    while True:
        m = np.where(x.sum() > 0, x.sum() * n, 2.0)  # (np.where of scalars: a 0-d ndarray)
        n += 1
        if n >= k:
            break
    return m, type(m).__name__


@pytest.mark.parametrize("step", [fresh, written_in_place, a_scalar_after_a_trip, forever])
def test_zero_d_arrays_through_loop_nodes(step):
    trips = [1, 2, 3, 1, 3, 2, 4, 1, 2, 0 if step is a_scalar_after_a_trip else 1]
    check(lambda: (step, {}), [lambda s, i=i, k=k: (R(i).standard_normal(3), k) for i, k in enumerate(trips)],
          min_graph_calls=0 if step is fresh else 4)  # (fresh: `m += 1` of either array: eager)
