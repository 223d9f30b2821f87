"""Views of input arrays, side by side with eager. A view of an input that the function returns
or stores (`return buf[1:]` after `buf += x`) is a view of the input after the commit, sharing
its memory as eager's does: a later write through it changes the input (the graph returned a
fresh array). Inputs that overlap in memory (`st["view"] = buf[1:]` passed beside `buf`) are
never read and written as separate values: a graph that writes one in place runs eagerly when
they overlap (the graph's write through one did not show in the other)."""
import contextlib
import io

import numpy as np
import pytest

import janus_like as jl

from .harness import check, random_array, side_by_side


def views_step(buf, st, x):
    buf *= 0.5
    buf += x
    st["last"] = buf[1:]  # stored: a view of buf, as eager's
    print(buf[::2])  # printed with the values of this point
    return buf, buf[1:], buf[::2][1:], buf[0]


def test_a_returned_or_stored_view_of_an_input_shares_its_memory():
    def call(s, k):
        if "last" in s["st"]:
            s["st"]["last"][0] += 10.0  # the user writes through the view between calls
        return s["buf"], s["st"], random_array(k, (4,))

    check(lambda: (views_step, {"buf": np.zeros(4), "st": {}}), [lambda s, k=k: call(s, k) for k in range(8)],
          min_graph_calls=4)
    buf, jf = np.zeros(4), jl.jit(views_step)
    with contextlib.redirect_stdout(io.StringIO()):
        for k in range(6):
            out = jf(buf, {}, random_array(k, (4,)))
    assert jf.stats()["graph_calls"] >= 2 and out[0] is buf
    assert np.shares_memory(out[1], buf) and np.shares_memory(out[2], buf)
    out[1][0] = 7.0  # through the returned view, as eagerly
    assert buf[1] == 7.0


def overlapping_step(buf, st, x):
    st["view"][0] += 1.0  # eagerly, this is buf[1]
    buf += x
    return buf.sum() + st["view"].sum()


def test_inputs_overlapping_in_memory_run_eagerly():
    def make():
        buf = np.zeros(4)
        return overlapping_step, {"buf": buf, "st": {"view": buf[1:]}}

    calls = [lambda s, k=k: (s["buf"], s["st"], random_array(k, (4,))) for k in range(8)]
    check(make, calls, min_graph_calls=0)

    def apart():  # the same step on arrays that do not overlap runs as a graph
        return overlapping_step, {"buf": np.zeros(4), "st": {"view": np.zeros(3)}}

    check(apart, calls, min_graph_calls=4)


def positive_step(x):
    y = +x  # NumPy's `+x` and np.positive(x) are new arrays: the writes below leave x alone
    y += 1.0
    z = np.positive(x)
    z *= 2.0
    head, tail = np.split(x, 2)  # views of x, as NumPy's: the write is x's
    tail += 1.0
    return y, z, x.sum(), head


def test_plus_x_is_a_new_array_and_np_split_gives_views():
    # the graph's `+x` was x itself (the in-place writes reached the caller's array), and
    # np.split's parts were new arrays (the write through one did not reach x)
    check(lambda: (positive_step, {"x": np.zeros(4)}), [lambda s, k=k: (s["x"],) for k in range(6)],
          min_graph_calls=2)


def test_rows_taken_by_iterating_or_unpacking_are_views():
    """`for row in W: row *= 0.9`, `a, b = st["w"]`, `zip(W, G)`: NumPy's rows are views of the
    array. The graph's rows were copies: writes through them were lost, and a row read after
    the array changed kept the old values."""
    def step(st, x):
        for row in st["w"]:
            row *= 0.9
        for row, g in zip(st["w"], x):
            np.clip(row - 0.1 * g, -1.0, 1.0, out=row)
        a, b = st["w"]
        st["w"] += x
        first, *rest = st["w"]
        first[0] = 0.0
        items = list(st["v"])  # a 1-d array's items: NumPy scalars, copies
        st["v"] *= 2.0
        return a.sum(), b.sum(), items, len(rest)

    state = lambda: {"w": random_array(1, (2, 3)), "v": random_array(2, (3,))}  # noqa: E731
    check(lambda: (step, state()), [lambda s, i=i: (s, random_array(i, (2, 3))) for i in range(8)],
          min_graph_calls=4)


def array_split_step(x, k):
    parts = np.array_split(x, k)  # (the first len(x) % k parts one row longer; views of x)
    parts[-1] += 1.0
    cols = np.array_split(x, [1, 2], axis=-1)
    return [p.sum(0) for p in parts], cols[1] * 2, len(np.array_split(x[:2], 4))


@pytest.mark.parametrize("k", [3, 4, 7])
def test_np_array_split_gives_views_of_unequal_parts(k):
    check(lambda: (array_split_step, {"x": np.arange(15.0).reshape(5, 3)}),
          [lambda s: (s["x"], k) for _ in range(6)], min_graph_calls=2)


def test_np_array_split_into_no_sections_raises_as_numpy():
    side_by_side(lambda: (array_split_step, {"x": np.arange(6.0).reshape(2, 3)}), [lambda s: (s["x"], 0)] * 5)
