"""Errors as eager raises them: an unused value that may raise still runs (a `try` takes eager's
path), an input missing an attribute is the user's error (and graphs go on), threads calling one
jitted function while its graph is generated, and a graph whose own guards reject the call it
was made for (inputs overlapping an array written in place) naming why."""
import numpy as np
import pytest

import janus_like as jl

from .harness import check, fallback_reasons


def _cholesky_check(A, x):
    try:
        np.linalg.cholesky(A)  # (its value unused: only whether it raises)
        return True
    except np.linalg.LinAlgError:
        return False


def _dead_inverse(A, x):
    np.linalg.inv(A)
    return x.sum()


def _dead_index(A, x):
    x[int(np.argmax(x)) + 2]
    return x.sum()


def _dead_selection_index(A, x):
    v = x[x > 0]
    v[0]
    return x.sum()


def _dead_selection_rows(A, x):
    v = x[x > 0]
    v[np.array([0, 1])]
    return x.sum()


def _scalar_probe(A, x):
    try:
        float(x[:1])
        return "scalar"
    except TypeError:
        return "vector"


def _dead_histogram(A, x):
    np.histogram(x)
    return x.sum()


@pytest.mark.parametrize("step", [_cholesky_check, _dead_inverse, _dead_index, _dead_selection_index, _scalar_probe,
                                  _dead_histogram, _dead_selection_rows], ids=lambda f: f.__name__)
def test_unused_values_that_raise_raise_as_eager(step):
    """An op whose value is unused still raises where eager raises (a singular matrix, a
    computed index out of bounds, float() of a 1-d array, NumPy's own function on a NaN), so a
    `try` takes eager's path: dead-code elimination keeps what may raise."""
    def arg(i):
        bad = i in (6, 9)
        A = -np.eye(2) if bad and step is _cholesky_check else np.ones((2, 2)) if bad else np.eye(2)
        x = np.array([0.0, 0.0, 1.0]) if bad else np.array([1.0, -0.5, 0.5]) * (i + 1)
        if bad and step in (_dead_selection_index, _dead_selection_rows):
            x = -np.ones(3)
        if bad and step is _dead_histogram:
            x = np.array([np.nan, 1.0, 2.0])
        return A, x

    # (float() of a 1-d array raises on every call: eager's handler runs, and no graph can)
    check(lambda: (step, None), [lambda s, i=i: arg(i) for i in range(12)],
          min_graph_calls=0 if step is _scalar_probe else 4)


class _Layer:
    def __init__(self, bias=True):
        self.W = np.ones((4, 3))
        if bias:
            self.b = np.zeros(3)


def _affine(m, x):
    return x @ m.W + m.b


def test_an_input_missing_an_attribute_raises_eagers_error_and_graphs_go_on():
    """One call gets an object without `.b`: generating its graph raised a bare AttributeError
    (counted as janus_like's defect, which turned the function's graphs off for good, and chained
    into the user's traceback); now it is eager's error, raised as eager raises it, and later
    calls run as graphs again."""
    good, bad = _Layer(), _Layer(bias=False)
    jf = check(lambda: (_affine, None), [lambda s, i=i: (bad if i == 6 else good, np.full((2, 4), float(i)))
                                         for i in range(12)], min_graph_calls=7)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
    with pytest.raises(AttributeError) as info:
        jl.jit(_affine)(bad, np.ones((2, 4)))
    assert info.value.__context__ is None


def test_an_error_while_generating_is_not_the_context_of_eagers():
    jf = jl.jit(_affine, choose="graph")
    for i in range(5):
        jf(_Layer(), np.ones((2, 4)))
    with pytest.raises(AttributeError) as info:
        jf(_Layer(bias=False), np.ones((2, 4)))
    assert info.value.__context__ is None and "'_Layer' object has no attribute 'b'" in str(info.value)


def test_threads_calling_one_function_while_its_graph_is_generated():
    """Four threads call one jitted function at once: one generates its graph while the others
    run eagerly (the graph builder is one a process), and no call's ops end up in another's
    graph (the plans raised NameError or failed a product: internal errors)."""
    import threading

    def shard_grad(w, X, y):
        r = X @ w - y
        return X.T @ r / len(y), float(r @ r)

    rng = np.random.default_rng(0)
    data = [(rng.standard_normal((64, 8)), rng.standard_normal(64)) for _ in range(8)]
    w = np.ones(8)
    expected = [shard_grad(w, X, y) for X, y in data]
    for attempt in range(3):
        jf = jl.jit(shard_grad, choose="graph")
        barrier, results, errors = threading.Barrier(4), {}, []

        def work(t):
            try:
                for k in range(24):
                    if k % 6 == 0:
                        barrier.wait()
                    i = (t + k) % 8
                    results[t, k] = (i, jf(w, *data[i]))
            except Exception as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors
        assert "internal-error" not in fallback_reasons(jf), jf.explain()
        for i, (g, loss) in results.values():
            assert np.array_equal(g, expected[i][0]) and loss == expected[i][1]
        assert jf.stats()["graph_calls"] > 0, jf.explain()


def test_inputs_overlapping_an_array_written_in_place_are_named():
    """Tied weights kept as `E` and its view `E.T`, one written in place: the graph's own check
    that no input overlaps a written array fails on the call it was made for; the reason names
    the overlap (it said "a freshly generated graph rejected its own inputs")."""
    def step(st, ids):
        h = st["E"][ids]
        st["E"] -= 0.1
        return (h @ st["W"]).sum()

    def make():
        E = np.arange(12.0).reshape(4, 3)
        return step, {"E": E, "W": E.T}

    jf = check(make, [lambda s, i=i: (s, np.array([i % 4, 1])) for i in range(8)], min_graph_calls=0)
    text = jf.explain()
    assert "view-write" in fallback_reasons(jf) and "share memory" in text and "['E']" in text, text


class _Loader:
    """An iterator object: `__iter__` returns itself, `__next__` steps."""

    def __init__(self, arrs):
        self.arrs, self.k = arrs, 0

    def __iter__(self):
        self.k = 0
        return self

    def __next__(self):
        if self.k >= len(self.arrs):
            raise StopIteration
        self.k += 1
        return self.arrs[self.k - 1]


class _Vec:
    def __init__(self, a):
        self.a = a

    def __getitem__(self, k):
        return self.a[k]

    def __setitem__(self, k, v):
        self.a[k] = v


def _iterates_a_loader(x, P, n, data):
    return sum(float((p * x[:p.size]).sum()) for p in P)


def _writes_a_vec(x, v, n, data):
    v[0] = x.sum()
    return v[0]


def _islice(x, v, n, data):
    import itertools
    for d in itertools.islice(data, int(x[1]) % 3 + 1):  # (a count the graph computes)
        x = x + d
    return x


@pytest.mark.parametrize("step, reason", [
    (_iterates_a_loader, "`__iter__` returns itself"), (_writes_a_vec, "its own item methods"),
    (_islice, "itertools.islice of a number the graph computes")])
def test_idioms_the_generator_cannot_stage_say_why_and_run_eagerly(step, reason):
    """Each raised an internal error (a RecursionError, a StopIteration out of a generator
    expression, islice's ValueError) where a reason is due. (A top-k by `np.argpartition(-x, n)`
    whose `n` changes, which raised on `len()` of a graph value, is staged one graph per `n`
    now: test_kept_values.py.)"""
    def make():
        return step, {"P": _Loader([np.ones(3), np.zeros(2)]), "v": _Vec(np.ones(4)), "d": [1.0, 2.0, 3.0, 4.0]}

    arg = "P" if step is _iterates_a_loader else "v"
    calls = [lambda s, i=i: (np.arange(6.0) * (i + 1), s[arg], 2 if i < 6 else 3, s["d"]) for i in range(9)]
    jf = check(make, calls, min_graph_calls=0)
    text = jf.explain()
    assert reason in text and "internal-error" not in fallback_reasons(jf), text
