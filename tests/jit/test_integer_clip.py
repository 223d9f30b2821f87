"""np.clip of integer arrays by bounds the graph computes, side by side with eager. NumPy's clip
drops a Python-int bound beyond the array dtype's range (NEP 50: no value-based promotion), where
np.maximum / np.minimum with that number raise OverflowError; a NumPy-int bound promotes. The
graph calls np.clip itself with the bounds as operands (ops/api.clip), so each call below agrees
with eager, the out-of-range ones and the ones where eager raises included."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import check, fallback_reasons

W16 = np.arange(-5, 5, dtype=np.int16)


def _run(body, values, state):
    def make():
        def step(b, st):
            return body(b, st)
        return step, {k: v.copy() for k, v in state.items()}

    return check(make, [lambda s, b=b: (b, s) for b in values], min_graph_calls=2)


CASES = {
    "np.clip hi": (lambda b, st: np.clip(st["w"], -3, b), [6, 7, 8, 9, 40000, 3, 70000, -2]),
    "np.clip lo": (lambda b, st: np.clip(st["w"], b, 3), [-4, -3, -2, -1, -40000, 0, -1 << 40, 2]),
    "method clip keyword": (lambda b, st: st["w"].clip(max=b), [1, 2, 3, 4, 1 << 20, 0, 32767, 32766]),
    "both bounds": (lambda b, st: np.clip(st["w"], -b, b), [1, 2, 3, 4, 50000, 2, 32768, 5]),
    "numpy int bound": (lambda b, st: np.clip(st["w"], -3, np.int64(b)), [6, 7, 8, 9, 40000, 3]),
    "state written": (lambda b, st: st.__setitem__("w", np.clip(st["w"] + 1, -3, b)), [4, 5, 6, 7, 99999, 1]),
    "uint8 lo below zero": (lambda b, st: np.clip(st["u"], b, 200), [1, 2, 3, 4, -1, -300, 5, 0]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_integer_clip_by_graph_numbers_agrees_with_eager(name):
    body, values = CASES[name]
    _run(body, values, {"w": W16, "u": np.arange(0, 250, 25, dtype=np.uint8)})


def test_a_bound_beyond_the_other_end_raises_as_eager():
    # np.clip(int16, -3, -40000): NumPy keeps that bound and its clip ufunc raises OverflowError
    def body(b, st):
        return np.clip(st["w"], -3, b)

    _run(body, [6, 7, 8, 9, -40000, 5], {"w": W16})  # (the harness compares the raised error too)


@settings(max_examples=12, deadline=None)
@given(dtype=st.sampled_from([np.int8, np.uint8, np.int16, np.int32]),
       bounds=st.lists(st.tuples(st.integers(-(1 << 33), 1 << 33), st.integers(-(1 << 33), 1 << 33)),
                       min_size=4, max_size=7))
def test_integer_clip_hypothesis(dtype, bounds):
    info = np.iinfo(dtype)
    w = np.linspace(info.min, info.max, 9).astype(dtype)
    warm = [(info.min // 2 + k, info.max // 2 - k) for k in range(3)]  # in range while warming up

    def make():
        def step(lo, hi, st):
            st["w"] = np.clip(st["w"], lo, hi)
            return st["w"].sum()
        return step, {"w": w.copy()}

    jf = check(make, [lambda s, lo=lo, hi=hi: (lo, hi, s) for lo, hi in warm + bounds], min_graph_calls=0)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
