"""Python-number functions (`math.*`, `min`, `max`, `round`, `pow`) of numbers the graph computes,
side by side with eager: a gradient norm through `math.sqrt(sum(float(...)))`, a clipping scale
through `min`, a cosine schedule of a step counter, `math` of a one-element array. Each runs as a
PY_OP in the graph; a call whose Python function raises there (`math.sqrt` of a negative number)
re-runs eagerly and raises the same error."""
import heapq
import math
import statistics

import numpy as np
import pytest

from .harness import call_sequence, check, fallback_reasons, load_module, random_array


def _calls(n, scale=1.0):
    return [lambda s, k=k: (np.random.default_rng(k).standard_normal((4, 3)) * scale * (k % 3 + 1), k)
            for k in range(n)]


def clip_by_global_norm(x, k):
    grads = {"a": x, "b": 2 * x[0]}
    total = math.sqrt(sum(float((g ** 2).sum()) for g in grads.values()))
    scale = min(1.0, 3.0 / (total + 1e-6))
    return {name: g * scale for name, g in grads.items()}, round(total, 4)


def cosine_schedule(x, k):
    p = min(k / 10, 1.0)
    return x * (0.5 * (1 + math.cos(math.pi * p))), max([p, 0.25, 0.1]), pow(k, 2)


def math_of_arrays(x, k):
    # math converts a one-element array (NumPy scalar) to a Python number first
    return math.floor(x.sum()), math.exp(x[0, 0]), math.isfinite(x.max()), math.log1p(abs(float(x[1, 1])))


def near_domain_edge(x, k):
    # the generator types the result on stand-ins; 1.0 is outside atanh's domain, 0.5 is not
    return math.atanh(float(np.tanh(x[0, 0]))) * x


def sorted_losses(x, k):
    # a median of recent losses, the largest two, a NaN (whose place is Python's sort's), ints
    losses = [float(r.sum()) for r in x] + [0.5, float("nan") if k % 4 == 1 else -1.0]
    recent = sorted(losses)
    top = sorted(losses[:4], reverse=True)[:2]
    return recent[len(recent) // 2], recent, top, sorted((int(v) for v in x[0] * 3), reverse=True), x * top[0]


def library_of_losses(x, k):
    # the standard library's statistics and heaps of a step's losses (a NaN on some calls)
    losses = [float(r.sum()) for r in x] + [float("nan") if k % 4 == 1 else 0.25]
    stats = statistics.mean(losses), statistics.median(losses[:3]), statistics.stdev(losses[:3]), \
        statistics.fmean(losses[:2]), statistics.pvariance(losses)
    worst = heapq.nlargest(2, losses[:4])
    return stats, worst, heapq.nsmallest(9, losses), x * worst[1]


def complex_numbers(x, k):
    # Python complex arithmetic stays Python's: `1j + s` is a complex, not numpy.complex128, and so
    # is a complex plus a NumPy float64 scalar (a float subclass, which complex takes first)
    s = float(x.sum())
    z = 1j + s
    w = z * z - k
    return (w, z == w, z ** 2, abs(z), w / (s + 1j), 2 ** z, z + x.sum(), x.sum() + z, x * z, complex(s, k),
            complex(x[0, 0]), z.real, z.imag, s.imag, k.real)


@pytest.mark.parametrize("f", [clip_by_global_norm, cosine_schedule, math_of_arrays, near_domain_edge,
                               sorted_losses, library_of_losses, complex_numbers])
def test_python_number_functions_run_in_the_graph(f):
    jf = check(lambda: (f, None), _calls(9), min_graph_calls=5)
    assert fallback_reasons(jf) == set(), jf.explain()


def sqrt_of_shifted_sum(x, k):
    return math.sqrt(float(x.sum()) + 1.0) * x


def test_a_math_error_in_the_graph_reruns_eagerly_and_raises_there():
    calls = [lambda s, k=k: (np.full((2, 2), 0.5 if k % 4 else -1.0), k) for k in range(10)]
    jf = check(lambda: (sqrt_of_shifted_sum, None), calls, min_graph_calls=4)
    assert jf.stats()["graph_calls"] + jf.stats()["eager_calls"] + jf.stats()["warmup_calls"] == 10


def tuple_result(x, k):
    return math.frexp(float(x.sum()))[0] * x  # a tuple from math: not a Python number in the graph


def test_math_functions_giving_tuples_stay_eager():
    jf = check(lambda: (tuple_result, None), _calls(6), min_graph_calls=0)
    assert fallback_reasons(jf) == {"data-dependent-python"}, jf.explain()


def chained(x, state, lo=-0.5, hi=0.5):
    state["n"] += 1
    v = float(x.mean())
    inside = lo < v < hi  # a Python bool the graph computes, as eager's
    if 0 <= v <= 1 and state["n"] != 3 < state["n"] + 1:
        v = v * 2
    return inside, v, lo < v <= hi != v


def test_chained_comparisons_of_python_numbers():
    calls = call_sequence(12, lambda s, i: (random_array(i, (3,)), s["s"]))
    check(lambda: (chained, {"s": {"n": 0}}), calls, min_graph_calls=6)


def as_text(x, k):
    s, i = float(x.sum()), int(x[0, 0] * 10)
    line = " ".join(f"{name}={v:.3f}" for name, v in [("s", s), ("i", i)])  # a generator expression
    return repr(s), repr(i), ascii(i), format(s, ".2f"), format(i), line, ", ".join([f"{s}", "k", repr(i)])


def test_repr_format_and_join_of_graph_numbers_are_the_text_eager_makes():
    # repr() and format() of a graph value gave the symbolic value's own repr ('Sym(%674, py)');
    # str.join of formatted values was an internal error
    jf = check(lambda: (as_text, None), _calls(8), min_graph_calls=4)
    assert fallback_reasons(jf) == set(), jf.explain()


@pytest.mark.parametrize("body", ["sorted([i, 2.5])", "sorted([s, 3.0], key=abs)", "sorted([x, x])"])
def test_sorts_other_than_of_numbers_of_one_type_stay_eager(tmp_path, body):
    """Which item of `sorted([1, 0.5])` is an int depends on the data; a key function; arrays."""
    source = f"def f(x, k):\n    s, i = float(x.sum()), int(x[0, 0] * 10)\n    return {body}\n"
    jf = check(lambda: (load_module(tmp_path, source, f"sorts_{len(body)}").f, None), _calls(6), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and "sorted()" in jf.explain(), jf.explain()


@pytest.mark.parametrize("body", ["statistics.mean([i, 3])", "statistics.stdev([s])", "heapq.nlargest(2, [i, s])",
                                  "heapq.nlargest(1, [s], key=abs)", "statistics.mean([x.sum(), s])"])
def test_statistics_and_heaps_other_than_of_floats_stay_eager(tmp_path, body):
    """mean() of ints is an int or a float by the data; one item has no stdev (eager raises);
    which item of mixed types heapq gives; a key function; a NumPy value."""
    source = f"import heapq, statistics\ndef f(x, k):\n    s, i = float(x.sum()), int(x[0, 0] * 10)\n" \
             f"    return {body}\n"
    jf = check(lambda: (load_module(tmp_path, source, f"stats_{abs(hash(body))}").f, None), _calls(6),
               min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0, jf.explain()


@pytest.mark.parametrize("body", ["hash(i)", "len({i, 3})", "len({j for j in (i, 3)})", "frozenset([i])",
                                  "{3: 1}.get(i)", "{3: 1}.get(i, 0.5)", "i.bit_length()", "s.is_integer()", "s.hex()",
                                  "i.to_bytes(2, 'big', signed=True)"])
def test_hashes_and_methods_of_graph_numbers_stay_eager(tmp_path, body):
    # a graph value was hashed by its symbolic value's id: hash() gave that, a set kept 3 and a
    # graph value 3 apart, a dict lookup missed; its number methods were internal errors
    from .harness import load_module

    source = f"def f(x, k):\n    s, i = float(x.sum()), int(x[0, 0] * 10)\n    return {body}\n"
    jf = check(lambda: (load_module(tmp_path, source, "py_text").f, None), _calls(6), min_graph_calls=0)
    assert fallback_reasons(jf) == {"data-dependent-python"}, jf.explain()


def numpy_scalar_state(x, k, st):
    st["s"] = st["s"] + x.sum()  # a float32 NumPy scalar, new every call
    st["k"] = st["k"] + np.int64(1)
    st["best"] = np.minimum(st["best"], np.float64(x.max()))
    return st["s"] * 2, type(st["s"]).__name__, st["k"]


def test_numpy_scalar_state_that_changes_every_call_becomes_a_graph_input():
    # its value was guarded and never relaxed: a new graph per value, then eager from the
    # signature cache's limit on
    state = {"st": {"s": np.float32(0), "k": np.int64(0), "best": np.float64(9.0)}}
    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal(3).astype(np.float32), k, s["st"])
             for k in range(16)]
    jf = check(lambda: (numpy_scalar_state, {"st": dict(state["st"])}), calls, min_graph_calls=8)
    assert jf.stats()["graphs_generated"] <= 3, jf.explain()


def dead_division(x, k):
    t = k - 0.5
    unused = k / t  # eager raises ZeroDivisionError here when k is 0.5, though the value is never used
    n = int(float(x.sum()))  # int() of nan raises ValueError
    return x * 2.0, n


def test_a_dead_python_operation_that_raises_raises_in_the_graph_too():
    # dead-code elimination dropped the division: the graph returned where eager raised
    calls = [lambda s, k=k: (np.full(3, np.nan if k == 8 else 1.0), [0.1, 0.2, 0.3, 0.7, 0.5][k % 5])
             for k in range(12)]
    check(lambda: (dead_division, None), calls, min_graph_calls=4)


def powers(x, st):
    v, e = float(x[0]), int(x[1])
    st["n"] += 1
    r, q, s = v ** 0.5, 2 ** e, pow(v, 1 / 3)
    lr = 0.1 * (1 - st["n"] / 8) ** 0.9  # a polynomial decay run past its end: a complex number
    if isinstance(lr, complex):
        lr = 0.0
    return r, q, s, type(r).__name__, type(q).__name__, lr, x * 0.5 ** e


def test_powers_give_pythons_type_for_the_values_of_each_call():
    """A negative float to a fraction is a complex, an int to a negative int a float: the type
    the graph made the power with is asserted when it runs (py_numbers.typed_pow), and a call
    where Python gives another type runs eagerly. Before, the graph's number kept the
    generation's type (`type(r)` said float where eager's is complex)."""
    rows = [(1.0, 2), (2.0, 3), (3.0, 1), (4.0, 2), (-4.0, 2), (2.0, -1), (5.0, 0), (9.0, 2), (1.5, 1)]
    calls = [lambda s, r=r: (np.array(r), s) for r in rows]
    jf = check(lambda: (powers, {"n": 0}), calls, min_graph_calls=3)
    assert "assumption" in fallback_reasons(jf), jf.explain()


def negative_powers(x, n):
    return 2 ** -n, float(x.sum()) ** 0.5


def test_a_power_whose_type_is_not_its_stand_ins_gets_a_graph_of_the_wider_type():
    """`2 ** -n` of a positive n is always a float, the root of a sum that stays negative always
    a complex; the graph's stand-ins gave an int and a float, so every run failed its type
    assert. After two failures of each, the graph is made again with the wider type."""
    calls = [lambda s, i=i: (np.full(3, -0.1 * (i + 1)), i + 1) for i in range(12)]
    jf = check(lambda: (negative_powers, None), calls, min_graph_calls=5)
    assert jf.stats()["regenerations"] == 2, jf.explain()
