"""One view expression evaluated more than once (in each trip of a loop), and the memory order
of a ufunc's result, side by side with eager (results, state, who shares memory with whom).

`st["v"] = h[0]` in each trip of a loop makes two view objects of one `h` in eager code; the
graph computes `h[0]` once, and the commit hands out another view of it (not a copy, which
would share no memory with `h`). Where each trip's base array is new (`(x * t)[0]`), eager's
views share nothing, and the commit copies. `np.maximum(x[:, idx], 0.0)` of an F-ordered
gather is F-ordered in NumPy, and its `.mean()` sums in that order: the plan's faster form
(the number as a C-ordered array, executor/codegen.py) is used only where the operand is surely
C-ordered."""
import numpy as np

from .harness import check, random_array


def stores_a_view_each_trip(x, st):
    h = x @ st["w"]
    for _ in range(2):
        st["v"] = h[0]
    return h


def appends_views_each_trip(x, st):
    h = x @ st["w"]
    for _ in range(2):
        st["lst"].append(h[0])
        st["cols"].append(h[:, 1:].T)
    return float(h.sum())


def views_of_new_arrays_each_trip(x, st):
    for _ in range(2):
        st["lst"].append((x * 2.0)[0])  # eager's two bases are two arrays: the views share nothing
    return st["lst"][-2].sum()


def rows_at_a_counter(x, st):
    h = x @ st["w"]
    for _ in range(2):
        st["rows"].append(h[st["t"]])  # a 0-d array index is an array index to NumPy: a copy each time
    return h[st["t"]], h[st["t"]]


def _calls(n):
    return [lambda s, i=i: (np.full((5, 3), 0.1 * i) + np.arange(3.0), s) for i in range(n)]


def test_a_view_stored_in_each_trip_of_a_loop_shares_memory_with_its_array():
    check(lambda: (stores_a_view_each_trip, {"w": np.ones((3, 4))}), _calls(8), min_graph_calls=4)


def test_views_appended_in_each_trip_are_views_of_one_array():
    check(lambda: (appends_views_each_trip, {"w": np.ones((3, 4)), "lst": [], "cols": []}), _calls(8),
          min_graph_calls=4)


def test_views_of_arrays_made_in_each_trip_stay_apart():
    check(lambda: (views_of_new_arrays_each_trip, {"lst": []}), _calls(8), min_graph_calls=4)


def relu_mean_of_a_column_gather(x):
    g = x[:, [0, 2, 1, 3]]
    return np.maximum(g, 0.0).mean(), np.maximum(g, 0.0), np.minimum(x.T, 1.0).sum()


def test_a_ufunc_of_an_f_ordered_gather_keeps_eagers_order_and_sum():
    calls = [lambda s, i=i: (random_array(9120000 + i, (5, 4)),) for i in range(8)]
    check(lambda: (relu_mean_of_a_column_gather, {}), calls, min_graph_calls=4)


def test_rows_at_a_zero_d_array_index_are_copies_each_time():
    check(lambda: (rows_at_a_counter, {"w": np.ones((3, 4)), "t": np.array(1), "rows": []}), _calls(8),
          min_graph_calls=4)
