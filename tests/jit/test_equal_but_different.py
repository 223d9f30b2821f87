"""Values Python calls equal that compute differently, side by side with eager: `0` and `0.0`
(the result's dtype), `0.0` and `-0.0` (the sign of a zero, and so of `1 / x`), a NumPy
integer scalar's arithmetic (it warns on overflow, a 0-d array's ufunc wraps silently), and
the builtin `divmod` of arrays (one ufunc, whose warnings say "in divmod")."""
import warnings

import numpy as np
import pytest

import janus_like as jl

from .harness import check, side_by_side


def clips(x):
    return np.clip(x, 0, 1), np.clip(x, 0.0, 1.0), np.clip(x, 0, None), np.clip(x, 0.0, None)


def test_a_call_with_int_bounds_and_one_with_float_bounds_stay_two():
    check(lambda: (clips, {}), [lambda s, i=i: (np.arange(-2, 3) * (i + 1),) for i in range(7)])


def signed_zeros(x):
    return 1.0 / (x * 0.0), 1.0 / (x * -0.0), np.signbit(x + 0.0), np.signbit(x + -0.0), \
        np.nan_to_num(x * np.nan, nan=0.0), np.nan_to_num(x * np.nan, nan=-0.0)


def test_zero_and_negative_zero_stay_two():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda: (signed_zeros, {}), [lambda s, i=i: (np.array([1.0, -0.0]) * (i + 1),) for i in range(7)])


def scaled_inverse(x, s):
    return 1.0 / (x * s)


def test_a_zero_argument_speculated_is_not_met_by_a_negative_zero():
    calls = [lambda s: (np.arange(1.0, 4.0), 0.0)] * 6 + [lambda s: (np.arange(1.0, 4.0), -0.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jf = check(lambda: (scaled_inverse, {}), calls)
    assert jf.stats()["fallbacks"] >= 1


def element_math(a):
    v, w = a[0], a[1]
    return v * v, -v, abs(w), v + w, v - w


def running_total(x):
    total = 0
    for v in x:
        total += v
    return total, type(total).__name__


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32])
def test_numpy_integer_scalars_warn_on_overflow_as_eager(dtype):
    info = np.iinfo(dtype)
    calls = [lambda s, i=i: (np.array([i + 1, -i - 1 if info.min else i], dtype),) for i in range(6)]
    calls += [lambda s: (np.array([info.max, info.min], dtype),)] * 2
    check(lambda: (element_math, {}), calls)


def test_a_loop_summing_int8_elements_warns_where_eager_does():
    calls = [lambda s, i=i: (np.arange(5, dtype=np.int8) + i,) for i in range(6)]
    calls += [lambda s: (np.array([100, 100, 100, 1, 1], np.int8),)] * 2
    check(lambda: (running_total, {}), calls)


def quotients(a, b):
    return divmod(a, b)


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_builtin_divmod_of_arrays_warns_as_np_divmod(dtype):
    calls = [lambda s, i=i: (np.arange(-5, 5).astype(dtype) * (i + 1), np.full(10, 3, dtype)) for i in range(6)]
    calls += [lambda s: (np.arange(-5, 5).astype(dtype), np.zeros(10, dtype))] * 2
    check(lambda: (quotients, {}), calls)


def tensor_quotients(x, y):
    return divmod(jl.Tensor(x), y)  # a Tensor has no __divmod__: eager raises TypeError


def test_builtin_divmod_of_a_tensor_raises_as_eager():
    jf = side_by_side(lambda: (tensor_quotients, {}), [lambda s, i=i: (np.arange(-5.0, 5.0) * (i + 1), 3.0)
                                                       for i in range(6)], choose="graph")
    assert jf.stats()["graph_calls"] == 0
