"""Ints kept as values (jit/generation._compiled): an int the graph would read as an input (an
argument or counter the warm-up saw vary, or a value relaxed after failed asserts) that the step
uses as an axis, a size, an index or a recursion's depth cannot be a graph value. It is kept as a
value instead, one graph per value, as for a shape, where before the signature ran eagerly: the
ints read before each failure are kept until the graph is made, then each is let go again where
the graph is made without it. An int that takes a new value every call (a step counter in a
slice bound) is read as an input again once four graphs were made for it and none ran twice
(function._unkeep), and the step runs eagerly as before. Each case runs eager and jit side by
side and compares after every call."""
import numpy as np

from .harness import check, fallback_reasons, random_array


def summed_over(x, axes, st):
    st["W"] += x
    return st["W"].sum(axis=axes)


def test_an_axis_tuple_argument_that_changes_gets_one_graph_per_axes():
    axes = [(0, 1)] * 5 + [(1, 2)] * 5 + [(0, 1)] * 3 + [(0, 2)] * 3
    calls = [lambda s, i=i: (random_array(i, (2, 3, 4)), axes[i], s) for i in range(len(axes))]
    jf = check(lambda: (summed_over, {"W": np.ones((2, 3, 4))}), calls, min_graph_calls=10)
    assert "data-dependent-python" not in fallback_reasons(jf), jf.explain()


def unrolled(n, w):
    if n == 0:
        return w
    return np.tanh(unrolled(n - 1, w)) * 0.5


def deep_step(x, n, st):
    h = unrolled(n, st["w"] + x)
    st["w"] -= 0.01 * h
    return float(h.sum()), n


def test_a_recursion_depth_the_warm_up_saw_vary_gets_one_graph_per_depth():
    """`n` varies in the warm-up, so it was read as an input and the recursion on `n == 0` never
    ended while the graph was made (Python's recursion limit): the signature ran eagerly."""
    ns = [2, 3, 2, 3, 2, 3, 4, 4, 2, 3, 4, 2, 0, 0]
    calls = [lambda s, i=i: (random_array(i, (3,)), ns[i], s) for i in range(len(ns))]
    jf = check(lambda: (deep_step, {"w": np.ones(3)}), calls, min_graph_calls=8)
    assert "recursion-limit" not in fallback_reasons(jf), jf.explain()


def scheduled_sum(x, ax, st):
    st["t"] += 1
    st["w"] -= 0.1 / (1 + st["t"]) * x
    return st["w"].sum(axis=ax), st["t"]


def test_only_the_int_used_as_an_axis_is_kept_the_counter_stays_an_input():
    """Both `ax` and the step counter `t` vary and are read as inputs; keeping `ax` alone makes
    the graph, so `t` stays an input: two graphs for the whole run, not one a step."""
    axs = [0, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0]
    calls = [lambda s, i=i: (random_array(i, (3, 4)), axs[i], s) for i in range(len(axs))]
    jf = check(lambda: (scheduled_sum, {"w": np.ones((3, 4)), "t": 0}), calls, min_graph_calls=9)
    assert jf.stats()["graphs_generated"] == 2, jf.explain()


def sliced_by_counter(x, st):
    st["t"] += 1
    k = st["t"] % 3 + 1
    st["w"][:k] -= 0.1 * x[:k]
    return st["w"].sum()


def test_a_counter_kept_as_a_value_that_changes_every_call_is_an_input_again():
    """`t` used in a slice bound: kept as a value, each call makes a graph that never runs
    again; after four such graphs `t` is an input again, those graphs go and the step runs
    eagerly with the reason the graph could not be made."""
    calls = [lambda s, i=i: (random_array(i, (8,)), s) for i in range(24)]
    jf = check(lambda: (sliced_by_counter, {"w": np.ones(8), "t": 0}), calls, min_graph_calls=0)
    assert "data-dependent-python" in fallback_reasons(jf) and "max-graphs" not in fallback_reasons(jf)
    assert sum(len(e.graphs) for e in jf._entries.values()) == 0, jf.explain()


def top_k(x, n):
    return np.sort(x[np.argpartition(-x, n)[:n]])


def test_a_top_k_whose_k_changes_gets_one_graph_per_k():
    """`k` changes after the warm-up: relaxed after two failed asserts, it was read as an input,
    and `np.argpartition(-x, n)` needs it as an int: the signature ran eagerly."""
    ks = [2] * 6 + [3] * 5 + [2, 3, 3, 2]
    calls = [lambda s, i=i: (random_array(i, (6,)), ks[i]) for i in range(len(ks))]
    jf = check(lambda: (top_k, None), calls, min_graph_calls=10)
    assert jf.stats()["graphs_generated"] <= 3, jf.explain()


def summed_first(x, n, data):
    import itertools
    for d in itertools.islice(data, n):
        x = x + d
    return x


def test_an_islice_count_that_changes_gets_one_graph_per_count():
    calls = [lambda s, i=i: (np.arange(6.0) * (i + 1), 2 if i < 6 else 3, s) for i in range(9)]
    check(lambda: (summed_first, [1.0, 2.0, 3.0, 4.0]), calls, min_graph_calls=5)


def test_explain_names_the_ints_kept_as_values_and_those_given_up():
    axes = [(0, 1)] * 5 + [(1, 2)] * 5
    calls = [lambda s, i=i: (random_array(i, (2, 3, 4)), axes[i], s) for i in range(len(axes))]
    jf = check(lambda: (summed_over, {"W": np.ones((2, 3, 4))}), calls, min_graph_calls=3)
    assert "ints kept as values, one graph per value (an axis, a size, an index or a depth): arg1[*]" \
        in jf.explain(), jf.explain()
    calls = [lambda s, i=i: (random_array(i, (8,)), s) for i in range(10)]
    jf = check(lambda: (sliced_by_counter, {"w": np.ones(8), "t": 0}), calls, min_graph_calls=0)
    assert "ints no longer kept as values (a new value every call): arg1['t']" in jf.explain(), jf.explain()


def split_taken_zeros(x, n, ax, k, st):
    st["t"] += 1
    parts = np.split(x, n)
    picked = np.take(x.reshape(2, -1), [0, 1], axis=ax)
    buf = np.zeros(k)
    buf[:1] = x[0] * (0.1 / st["t"])
    return [p.sum() for p in parts], picked, buf


def test_split_sections_take_axes_and_sizes_given_as_ints_each_get_their_graphs():
    """`np.split(x, n)`, `np.take(..., axis=ax)` and `np.zeros(k)` with ints that change: each
    is kept as a value (the first two raised an internal error on the graph value, the size was
    a `shape-dependent` fallback), and the step counter `t` beside them is let go again: an
    input, not a graph a step."""
    ns, axs, ks = [2, 3, 2, 3, 2, 3, 6, 2, 3, 2], [0, 1] * 5, [3, 4, 3, 4, 3, 4, 4, 3, 5, 3]
    calls = [lambda s, i=i: (random_array(i, (12,)), ns[i], axs[i], ks[i], s) for i in range(10)]
    jf = check(lambda: (split_taken_zeros, {"t": 0}), calls, min_graph_calls=5)
    kept = [line for line in jf.explain().splitlines() if "kept as values" in line]
    assert kept and "arg4['t']" not in kept[0] and "internal-error" not in fallback_reasons(jf), jf.explain()


def overflowing(x, a):
    return x[:a], a * np.int8(100)


def test_numpy_scalars_that_overflow_at_generation_keep_the_step_eager():
    """`a * np.int8(100)` of an int8 known when the graph is made (here an int kept as a value)
    was computed once, at generation, so the graph's later runs gave no overflow warning where
    eager warns on every call."""
    aa = [np.int8(1), np.int8(2), np.int8(1), np.int8(2), np.int8(1), np.int8(2), np.int8(3), np.int8(1)]
    check(lambda: (overflowing, None), [lambda s, a=a: (np.arange(5.0), a) for a in aa], min_graph_calls=0)
