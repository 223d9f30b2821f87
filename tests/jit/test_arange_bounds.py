"""`np.arange(t, t + T)` of a counter the step keeps (positions of a sequence chunk, a minibatch's
row ids): start plus a constant arange, side by side with eager."""
import numpy as np
import pytest

from .harness import check, side_by_side


def _positions(st, x):
    t = st["t"]
    pos = np.arange(t, t + x.shape[0])  # (a length read off the bounds: a constant)
    st["t"] = t + x.shape[0]
    return x * pos[:, None] + st["w"], pos


def _row_ids(st, k):
    b = 4
    ids = np.arange(k * b, (k + 1) * b, 1)
    st["seen"] += ids.sum()
    return st["data"][ids].mean(0), ids


def _behind(st, x):
    t = st["t"]
    st["t"] = t + 1
    return np.arange(t - 3, t) * x  # (negative positions on the first calls, as NumPy gives them)


@pytest.mark.parametrize("body", [_positions, _row_ids, _behind])
def test_an_arange_at_a_start_the_step_keeps(body):
    def make():
        return body, {"t": 0, "w": np.ones(3), "seen": 0, "data": np.arange(48.0).reshape(16, 3)}

    def call(s, i):
        if body is _row_ids:
            return s, i % 4
        return s, np.full((5, 3) if body is _positions else 3, 0.5 * i)

    check(make, [lambda s, i=i: call(s, i) for i in range(8)], min_graph_calls=4)


def _varying_length(st, n):
    t = st["t"]
    st["t"] = t + n
    return np.arange(t, t + n)  # (the length is an argument's value: eager, or a graph per length)


def _float_bounds(st, x):
    t = st["t"] + 0.5
    st["t"] += 1
    return np.arange(t, t + 3) * x  # (floats: NumPy's own arange rounding, not start + arange)


@pytest.mark.parametrize("body", [_varying_length, _float_bounds])
def test_an_arange_whose_length_or_type_varies(body):
    def make():
        return body, {"t": 0}

    args = [2, 3, 2, 4, 2, 2, 5, 1, 0] if body is _varying_length else [0.5 * i for i in range(9)]
    side_by_side(make, [lambda s, a=a: (s, a) for a in args])


def _pack_buffer(st, lengths, x):
    buf = np.zeros((int(lengths.sum()), 3))  # (a size the data decides)
    buf[:2] = x
    return buf * st["w"]


def test_an_array_of_a_size_the_graph_computes_is_named_so():
    jf = side_by_side(lambda: (_pack_buffer, {"w": np.ones(3)}),
                      [lambda s, i=i: (s, np.array([1, 2 + i % 2]), np.full((2, 3), i)) for i in range(6)])
    assert "numpy.zeros of a size the graph computes" in jf.explain(), jf.explain()


def _big(st, t):
    return np.arange(2 * t, 2 * t + 2) * 1.0  # (NumPy's arange past int64's range is float64)


def test_an_arange_of_ints_near_int64s_range():
    from .harness import fallback_reasons

    ts = [0, 1, 5, 7, 9, 2 ** 62, 3, 2 ** 62 - 2, -(2 ** 62), 4]
    jf = side_by_side(lambda: (_big, {}), [lambda s, t=t: (s, t) for t in ts])
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
    assert jf.stats()["graph_calls"] >= 4, jf.explain()
