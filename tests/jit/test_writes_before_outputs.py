"""An input written in place, then an object made from it or bound to it that leaves the call:
eager's object shows the writes made before the call returns. A copying reshape of the input
stored twice was built before the commit (it held the values from before the write), and a
name bound to the input inside a staged loop (a break, or a trip count that varies) was the
graph's value of it from before a later write."""
import numpy as np

from tests.jit.harness import check, fallback_reasons


def reshape_twice(b):
    b += 1.0
    t = b.T.reshape(-1)  # b is C-ordered: a copy of b.T, made after the write
    return t, t


def reshape_stored_twice(m, st):
    m[1] += 1.0
    t = m[::-1].reshape(4, 3)
    st["t"] = t
    st["pair"] = [t, t]
    return m.sum()


def reshape_printed(b):
    b += 1.0
    t = b.T.reshape(-1)
    print(t)
    return t, t


def bound_in_loop_with_break(p):
    p *= 0.9
    v = np.zeros(3)
    for j in range(3):
        if j == 1:
            break
        v = p
    p -= 1.0
    return v


def bound_in_varying_loop(p, k):
    p *= 0.9
    v = np.zeros(3)
    for _ in range(k):
        v = p
    p -= 1.0
    return v, p


def test_a_copying_view_of_a_written_input_left_twice_has_the_written_values(capsys):
    check(lambda: (reshape_twice, {}), [lambda s, i=i: (np.arange(6.0).reshape(2, 3) + i,) for i in range(8)],
          min_graph_calls=3)
    check(lambda: (reshape_stored_twice, {}),
          [lambda s, i=i: (np.arange(12.0).reshape(3, 4) + i, s) for i in range(8)], min_graph_calls=3)
    check(lambda: (reshape_printed, {}), [lambda s, i=i: (np.arange(6.0).reshape(2, 3) * i,) for i in range(8)],
          min_graph_calls=3)
    capsys.readouterr()


def test_a_name_a_staged_loop_binds_to_a_written_input_is_that_input():
    jf = check(lambda: (bound_in_loop_with_break, {}), [lambda s, i=i: (np.ones(3) * i,) for i in range(8)],
               min_graph_calls=0)
    assert "internal-error" not in fallback_reasons(jf)
    ks = [2, 2, 2, 2, 3, 0, 3, 1, 2]
    check(lambda: (bound_in_varying_loop, {}), [lambda s, i=i: (np.ones(3) * i, ks[i]) for i in range(len(ks))],
          min_graph_calls=0)


def add_at_then_sum(m):
    np.add.at(m, [0, 1, 1], 0.1)
    return m.sum(), m.sum(axis=0)


def test_an_input_written_by_add_at_keeps_its_layout_for_a_later_reduction():
    """np.add.at into a Fortran-ordered input, then its sum: NumPy sums in memory order, so the
    graph's copy (C-ordered before) gave other last bits."""
    check(lambda: (add_at_then_sum, {}),
          [lambda s, i=i: (np.asfortranarray(np.random.default_rng(i).standard_normal((3, 40))),) for i in range(8)],
          min_graph_calls=3)
