"""Writes into an input list or dict of Python numbers at an index the graph computes
(`st["counts"][int(y[0])] += 1`, `best[k] = max(best[k], acc)`), side by side with eager: the
graph writes every item (the key's position gets the value, the rest their old items), so the
step is staged; an index out of range, a dict key the dict lacks (eager adds it) and a value of
another type leave the call to eager."""
import numpy as np
import pytest

from .harness import call_sequence, check, fallback_reasons


def test_class_counters_at_computed_indices():
    """Negative indices too (call i of an odd i counts at -4 + ...), and the count read back."""
    def step(x, y, st):
        st["counts"][int(y[0])] += 1
        st["w"] -= 0.1 * np.outer(x, x @ st["w"])
        return st["counts"][int(y[0])], float(st["w"].sum())

    def call(s, i):
        return np.full(3, 0.1 * i), np.array([(i * 7) % 4 - (i % 2) * 4]), s

    jf = check(lambda: (step, {"w": np.ones((3, 2)), "counts": [0, 0, 0, 0]}), call_sequence(14, call),
               min_graph_calls=8)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


@pytest.mark.parametrize("bad", ["index", "key"])
def test_an_index_out_of_range_or_a_new_key_is_eagers(bad):
    """Call 9 counts at 5 of a three-item list (eager raises IndexError) or at a key the dict
    lacks (eager adds it: the dict has four keys after)."""
    def step(y, st):
        k = int(y.argmax())
        st["counts"][k] = st["counts"][k] + 1
        return k

    def call(s, i):
        return np.eye(6)[i % 3 if i != 9 else (5 if bad == "index" else 3)], s

    counts = [0, 0, 0] if bad == "index" else {0: 0, 1: 0, 2: 0}
    check(lambda: (step, {"counts": counts}), call_sequence(14, call), min_graph_calls=6)


def test_two_writes_of_one_list_and_an_alias_of_it():
    """Two computed indices (equal on some calls) into one list that the state also holds
    under a second name: the second write and the reads see the first."""
    def step(x, st):
        a, b = int(x[0]), int(x[1])
        st["c"][a] += 10
        st["c"][b] *= 2
        return st["c"][a] - st["d"][b], st["d"][0]

    def make():
        c = [1, 2, 3]
        return step, {"c": c, "d": c}

    check(make, call_sequence(12, lambda s, i: (np.array([i % 3, (i * 2) % 3]), s)), min_graph_calls=6)


def test_float_bests_and_bool_keys():
    """`best[k] = max(best[k], score)` of floats, and a bool index (`c[flag] += 1`)."""
    def step(x, st):
        k = int(x.sum() > 1)
        st["best"][k] = max(st["best"][k], float(x @ st["w"]))
        st["c"][bool(x[0] > 0.5)] += 1
        st["w"] *= 0.9
        return st["best"], st["c"][-1]

    check(lambda: (step, {"best": [0.0, 0.0], "c": [0, 0], "w": np.ones(3)}),
          call_sequence(12, lambda s, i: (np.full(3, 0.2 * i), s)), min_graph_calls=6)


def test_a_value_of_another_type_is_left_to_eager():
    """`c[k] += 0.5` into a list of ints makes one item a float: not written by the graph."""
    def step(x, st):
        k = int(x[0] > 0)
        st["c"][k] += 0.5 if x[1] > 0 else 1
        return st["c"]

    check(lambda: (step, {"c": [0, 0]}),
          call_sequence(10, lambda s, i: (np.array([i % 2 - 0.5, 1.0 if i > 6 else -1.0]), s)), min_graph_calls=2)


def test_a_histogram_the_step_makes():
    """A list and a dict the function makes, written at computed indices in a loop."""
    def step(y, st):
        hist = [0] * 3
        for v in y:
            hist[int(v)] += 1
        d = {0: 0.0, 1: 0.0}
        d[int(y[0] > 1)] = float(y.sum())
        return hist, d, float(st["w"] @ np.array(hist, float))

    jf = check(lambda: (step, {"w": np.ones(3)}),
               call_sequence(10, lambda s, i: (np.array([i % 3, (i + 1) % 3, 0, 2]), s)), min_graph_calls=6)
    assert not fallback_reasons(jf), jf.explain()


def test_numpy_integer_indices():
    """`counts[np.argmax(p)] += 1`, `d[p.argmin()] += ...`: a NumPy integer indexes a list as
    its Python int does (through `__index__`) and a dict by its equal hash (it stayed eager)."""
    def step(p, st):
        k = np.argmax(p)
        st["counts"][k] += 1
        st["d"][p.argmin()] += float(p.max())
        hist = [0, 0]
        hist[np.argmax(p) % 2] += 1
        return st["counts"][k], st["d"][k], hist

    calls = call_sequence(12, lambda s, i: (np.array([0.1 * i, 1.0 - 0.1 * i, (i % 3) * 0.3]), s))
    jf = check(lambda: (step, {"counts": [0, 0, 0], "d": {0: 0.0, 1: 0.0, 2: 0.0}}), calls, min_graph_calls=4)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()
