"""scatter_add (the gradient of integer-array indexing): np.add.at's bits, repeated indices
accumulating in order, on both fast paths (one flat add.at, rounds) and off them."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from janus_like.ops import indexing
from janus_like.ops.indexing import ROUNDS_MIN_ELEMENTS, scatter_add


def _out(rows, width, dtype, layout, rng):
    """A (rows, width) array of random values: C order, Fortran order or every other column."""
    base = rng.standard_normal((rows, 2 * width if layout == "strided" else width)).astype(dtype)
    if layout == "strided":
        return base[:, ::2]
    return np.asfortranarray(base) if layout == "fortran" else base


@settings(deadline=None)
@given(rows=st.integers(1, 40), width=st.sampled_from([1, 7, 64, 300]), n=st.integers(1, 400),
       negative=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16),
       layout=st.sampled_from(["c", "fortran", "strided"]), flat_max=st.sampled_from([0, 2000, 131072]))
def test_same_bits_as_add_at(rows, width, n, negative, dtype, seed, layout, flat_max):
    # flat_max moves the flat/rounds boundary, so that both paths see every size
    rng = np.random.default_rng(seed)
    idx = rng.integers(-rows if negative else 0, rows, n)
    g = rng.standard_normal((n, width)).astype(dtype)
    g.reshape(-1)[rng.integers(0, g.size, 4)] = rng.choice([-0.0, np.inf, -np.inf, np.nan, 1e30], 4)
    _same_as_add_at(_out(rows, width, dtype, layout, rng), idx, g, flat_max)


def _same_as_add_at(out, idx, g, flat_max):
    """scatter_add(out, idx, g) with the flat/rounds boundary at flat_max: np.add.at's bits."""
    expected = out.copy()
    np.add.at(expected, idx, g)
    old, indexing.FLAT_MAX_ELEMENTS = indexing.FLAT_MAX_ELEMENTS, flat_max
    try:
        got = scatter_add(out, idx, g)
    finally:
        indexing.FLAT_MAX_ELEMENTS = old
    assert got is out
    assert np.array_equal(np.ascontiguousarray(expected).view(np.uint8), np.ascontiguousarray(got).view(np.uint8))


@pytest.mark.parametrize("shape", [(7,), (5, 3, 4), (6, 0)])
def test_other_row_shapes(shape):
    rng = np.random.default_rng(1)
    idx = np.array([0, -1, 2, 0, 2, 2, -shape[0]])
    g = rng.standard_normal(idx.shape + shape[1:])
    expected = np.zeros(shape)
    np.add.at(expected, idx, g)
    assert np.array_equal(scatter_add(np.zeros(shape), idx, g), expected)


@pytest.mark.parametrize("width", [3, ROUNDS_MIN_ELEMENTS, indexing.FLAT_MAX_ELEMENTS])  # both fast paths
def test_out_of_range_is_reported_as_add_at_reports_it(width):
    # 2**61 * width overflows int64 and would wrap into range as a flat index
    for bad in (5, -6, 2**61):
        out = np.zeros((5, width), np.float32)
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 0 with size 5"):
            scatter_add(out, np.array([0, bad]), np.ones((2, width), np.float32))
        assert not out.any()
    big = np.array([0, 2**64 - 1], np.uint64)  # whatever add.at makes of it, scatter_add makes too
    expected = np.zeros((5, width), np.float32)
    np.add.at(expected, big, np.ones((2, width), np.float32))
    got = scatter_add(np.zeros((5, width), np.float32), big, np.ones((2, width), np.float32))
    assert np.array_equal(got, expected)


@settings(deadline=None)
@given(rows=st.integers(1, 300), width=st.sampled_from([1, 5, 64]), seed=st.integers(0, 2**16),
       alias=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]),
       layout=st.sampled_from(["c", "fortran", "strided"]))
def test_distinct_rows_take_one_addition_each_and_aliases_of_a_row_still_accumulate(rows, width, seed, alias,
                                                                                      dtype, layout):
    """Distinct rows (a tree's leaves) are one fancy-index `+=`; a row named twice, once counted
    from the end (-1 and rows - 1), still gets both additions, as add.at gives them."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, min(rows, indexing.DISTINCT_MAX_INDICES + 8) + 1))
    idx = rng.permutation(rows)[:n]
    if alias:
        idx = np.append(idx, idx[0] - rows)  # the first row again, as a negative index
    g = rng.standard_normal((len(idx), width)).astype(dtype)
    g.reshape(-1)[rng.integers(0, g.size, 3)] = rng.choice([-0.0, np.inf, np.nan], 3)
    out = _out(rows, width, dtype, layout, rng)
    out[0, 0] = -0.0
    expected = out.copy()
    np.add.at(expected, idx, g)
    assert scatter_add(out, idx, g) is out
    assert np.array_equal(np.ascontiguousarray(expected).view(np.uint8), np.ascontiguousarray(out).view(np.uint8))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8])
@pytest.mark.parametrize("flat_max", [0, 131072])
def test_small_integer_indices_of_a_long_table(dtype, flat_max):
    # ids in int8 with negatives into 200 rows: -1 is row 199, which int8 cannot hold
    rng = np.random.default_rng(7)
    lo = 0 if dtype == np.uint8 else -128
    idx = rng.integers(lo, min(np.iinfo(dtype).max, 199) + 1, 300).astype(dtype)
    g = rng.standard_normal((300, 20))  # (6,000 added elements: the rounds, or one flat add.at)
    _same_as_add_at(rng.standard_normal((200, 20)), idx, g, flat_max)
