"""`W[k]` with `k` an int the graph does not know when it is generated (an argument, a state
counter, `np.argmax(...)`) is a view of W in NumPy, as `W[0]` is: writes through it reach W, it
reads W's later writes, and a returned one shares W's memory. The graph took it for a copy (a
tabular Q update, a k-means centroid step and a replay slot lost their writes). Each step runs
eager and jit side by side, results, state and aliasing compared after every call."""
import numpy as np

from .harness import check, fallback_reasons, random_array


def _run(step, state, args, n=8, min_graph_calls=4):
    def make():
        return step, {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in state.items()}

    jf = check(make, [lambda s, i=i: args(s, i) for i in range(n)], min_graph_calls=min_graph_calls)
    assert not fallback_reasons(jf), jf.explain()
    return jf


def test_a_row_at_an_argument_written_in_place():
    def step(k, st):
        row = st["E"][k]
        row += 1.0
        return st["E"].sum()

    _run(step, {"E": np.zeros((5, 2))}, lambda s, i: (i % 5, s))


def test_a_row_read_after_its_table_is_written():
    def step(k, st):
        row = st["E"][k]
        st["E"] += 1.0
        return row.sum()

    _run(step, {"E": np.zeros((5, 2))}, lambda s, i: (i % 5, s))


def test_a_tabular_q_update_through_the_state_row():
    def step(s_, a, r, st):
        q = st["Q"][s_]
        st["Q"][s_, a] += 0.5 * (r - q[a])
        return q.max()

    _run(step, {"Q": np.zeros((4, 3))}, lambda st, i: (i % 4, i % 3, float(i), st), n=10)


def test_a_column_at_a_numpy_integer():
    def step(j, st):
        c = st["W"][:, j]
        c *= 2.0
        return st["W"].sum()

    _run(step, {"W": np.arange(12.0).reshape(3, 4)}, lambda s, i: (np.int64(i % 4), s))


def test_a_centroid_picked_by_argmax_moves_toward_the_point():
    def step(x, st):
        j = np.argmax(-((st["C"] - x) ** 2).sum(1))
        c = st["C"][j]
        c += 0.5 * (x - c)
        return st["C"].sum(), j

    _run(step, {"C": np.arange(12.0).reshape(4, 3) / 10}, lambda s, i: (random_array(i, (3,)), s))


def test_a_replay_slot_at_the_state_pointer():
    def step(obs, st):
        slot = st["mem"][st["ptr"]]
        slot[:] = obs
        st["ptr"] = (st["ptr"] + 1) % 4
        return st["mem"].mean()

    _run(step, {"mem": np.zeros((4, 2)), "ptr": 0}, lambda s, i: (np.full(2, float(i + 1)), s))


def test_a_returned_row_is_a_view_of_the_table():
    def step(k, st):
        st["W"][k] += 1
        return st["W"][k]

    _run(step, {"W": np.zeros((4, 2))}, lambda s, i: (i % 4, s))


def test_a_row_update_at_an_index_out_of_bounds_raises_as_eager():
    def step(tok, g, st):
        st["E"][tok] -= 0.1 * g

    def args(s, i):
        return (7 if i == 6 else i % 5), np.ones(2), s

    def make():
        return step, {"E": np.zeros((5, 2))}

    check(make, [lambda s, i=i: args(s, i) for i in range(9)], min_graph_calls=4)


def test_rows_written_in_a_loop_whose_count_the_graph_reads():
    """`for k in range(m): W[k] += 1` as a loop node: the body's view `W[k]` was read again after
    the loop at the count it ended with (`W[5]` of 5 rows: an internal error, then eager)."""
    def step(m, st):
        for k in range(m):
            st["W"][k] += 1
        k = 0
        while k < m:
            r = st["V"][k]
            r *= 2.0
            k += 1
        return 0

    ms = [2, 3, 2, 5, 1, 5, 4, 3, 5]
    _run(step, {"W": np.zeros((5, 2)), "V": np.ones((5, 2))}, lambda s, i: (ms[i], s), n=9)
