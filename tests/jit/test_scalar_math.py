"""NumPy scalar math against the ufuncs, side by side with eager. Python's operators on NumPy
scalars run NumPy's scalar math, which differs from the ufunc an explicit call runs: in the last
bit for powers and complex products, quotients and abs; in its warnings for integer overflow
(the operator warns, the ufunc wraps silently). The graph keeps which one eager's code used
(graphgen/values._scalar_math, an `operator=True` node), so each case below agrees bit for bit
with eager, on inputs where the two differ."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import check

ROWS = np.random.default_rng(0).standard_normal((40, 3))


def _calls(dtype=np.float64, n=40):
    return [lambda s, i=i: (ROWS[i].astype(dtype), s) for i in range(n)]


def _run(body, dtype=np.float64, state=None, n=40):
    def make():
        def step(x, st):
            return body(x, st)
        return step, dict(state or {})

    return check(make, _calls(dtype, n), min_graph_calls=n - 4)


POWERS = {
    "scalar ** scalar": lambda x, st: abs(x[0]) ** x[1],
    "python float ** scalar": lambda x, st: 1.3 ** x[1],
    "scalar ** state float": lambda x, st: abs(x[0]) ** st["e"],
    "np.power(scalar, scalar)": lambda x, st: np.power(abs(x[0]), x[1]),
    "np.power(scalar, constant)": lambda x, st: np.power(abs(x[0]), 1.7),
    "np.power(scalar, state float)": lambda x, st: np.power(abs(x[0]), st["e"]),
    "0-d array ** 0-d array": lambda x, st: np.array(abs(x[0])) ** np.array(x[1]),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(POWERS))
def test_powers_of_numpy_scalars_are_eagers_operator_or_ufunc(name, dtype):
    _run(POWERS[name], dtype, {"e": 1.7})


COMPLEX = {
    "product": lambda x, st: (x[0] + x[1] * 1j) * (x[2] + x[0] * 1j),
    "quotient": lambda x, st: (x[0] + x[1] * 1j) / (x[2] + x[0] * 1j),
    "abs": lambda x, st: abs(x[0] + x[1] * 1j),
    "square": lambda x, st: (x[0] + x[1] * 1j) ** 2,
    "np.multiply": lambda x, st: np.multiply(x[0] + x[1] * 1j, x[2] + x[0] * 1j),
    "np.abs": lambda x, st: np.abs(x[0] + x[1] * 1j),
    "== against a python complex": lambda x, st: ((2 + 1j) == x.max(), x.max() == (2 + 1j), (1j + 0) != x[0]),
}


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_scalar_math_is_eagers(name):
    _run(COMPLEX[name])


def test_the_cases_differ_between_the_two_forms_on_this_numpy():
    """The power and complex cases above catch a swapped form: on these inputs NumPy's scalar
    math and its ufunc give other bits for at least one call."""
    a, b = np.abs(ROWS[:, 0]), ROWS[:, 1]
    scalar = [np.float64(p) ** np.float64(q) for p, q in zip(a, b)]
    ufunc = [np.power(np.float64(p), np.float64(q)) for p, q in zip(a, b)]
    assert any(s != u for s, u in zip(scalar, ufunc))


def _overflow(name):
    return {"operator": lambda b, k: b * k, "ufunc": lambda b, k: np.multiply(b, k),
            "neg of min": lambda b, k: -(b - b + np.int64(-2 ** 63)) if k > 3 else -b}[name]


@pytest.mark.parametrize("name", ["operator", "ufunc", "neg of min"])
def test_integer_overflow_warns_where_eager_warns(name):
    """An int64 scalar times a Python int read from the state: the operator warns on overflow
    ("scalar multiply"), np.multiply wraps silently; the printed warnings are compared."""
    op = _overflow(name)

    def make():
        def step(x, st):
            return op(x.max(), st["k"]), np.add(x.max(), x.max())
        return step, {"k": 0}

    def args(st, i):
        st["k"] = [1, 2, 3, 4, 5, 2 ** 62, 6, 7, 2 ** 61, 9][i]
        return np.array([1, 2 if i != 5 else 2 ** 62]), st

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        check(make, [lambda st, i=i: args(st, i) for i in range(10)], min_graph_calls=5)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-4, 4, allow_nan=False), min_size=3, max_size=3),
       st.sampled_from(sorted(POWERS) + sorted(COMPLEX)))
def test_scalar_math_of_generated_inputs(values, name):
    x = np.array(values)
    body = {**POWERS, **COMPLEX}[name]

    def make():
        def step(x, st):
            return body(x, st)
        return step, {"e": 1.7}

    calls = [lambda s, k=k: (x * (1 + k / 7), s) for k in range(6)]
    with np.errstate(all="ignore"):
        check(make, calls, min_graph_calls=0)


def _integer_cases():
    def loop(x, n, st):  # a loop node of varying trips: its body's adds are the operator too
        s = x[0] * 0
        for k in range(n):
            s = s + x[k]
        return s

    def counter(x, n, st):  # an int32 count of samples seen, which wraps at the sixth call
        st["seen"] += len(x) + n
        return st["seen"]

    def constant(x, n, st):  # a NumPy scalar constant of the state times a Python int argument
        return st["k"] * (n * 50), -st["k"] + n

    return {"loop": loop, "counter": counter, "constant": constant}


@pytest.mark.parametrize("name", ["loop", "counter", "constant"])
def test_integer_scalar_overflow_in_loops_counters_and_constants_warns_as_eager(name):
    body = _integer_cases()[name]

    def make():
        def step(x, n, st):
            return body(x, n, st)
        return step, {"seen": np.int32(2 ** 31 - 60), "k": np.int16(200)}

    calls = [lambda st, i=i: (np.array([100, 100, 50, 7 + i], np.uint8), 2 + i % 3, st) for i in range(9)]
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        check(make, calls, min_graph_calls=4)
