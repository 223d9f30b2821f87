"""scatter_add (the gradient of integer-array indexing): np.add.at's bits, repeated indices
accumulating in order, on the fast path (rounds) and off it."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from janus_like.ops.indexing import ROUNDS_MIN_ELEMENTS, scatter_add


@settings(deadline=None)
@given(rows=st.integers(1, 40), width=st.sampled_from([1, 7, 64, 300]), n=st.integers(1, 400),
       negative=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_same_bits_as_add_at(rows, width, n, negative, dtype, seed):
    rng = np.random.default_rng(seed)
    idx = rng.integers(-rows if negative else 0, rows, n)
    g = rng.standard_normal((n, width)).astype(dtype)
    g.reshape(-1)[rng.integers(0, g.size, 4)] = rng.choice([-0.0, np.inf, -np.inf, np.nan, 1e30], 4)
    expected = np.zeros((rows, width), dtype)
    np.add.at(expected, idx, g)
    got = scatter_add(np.zeros((rows, width), dtype), idx, g)
    assert np.array_equal(expected.view(np.uint8), got.view(np.uint8))  # bits, NaN and -0.0 included


def test_out_of_range_is_reported_as_add_at_reports_it():
    width = ROUNDS_MIN_ELEMENTS  # large enough for the fast path
    for bad in (5, -6):
        with pytest.raises(IndexError):
            scatter_add(np.zeros((5, width), np.float32), np.array([0, bad]), np.ones((2, width), np.float32))
