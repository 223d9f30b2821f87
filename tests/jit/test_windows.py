"""Slices whose bounds the graph computes (graphgen/windows.py): a replay buffer written at a
write index kept in the state, a window read behind it, chunks of a sequence at a position the
state keeps. Each case runs eager and jit side by side on calls that include slices that leave
the array (which NumPy clips, and the graph's assert sends to eager) and compares results and
state after every call."""
import numpy as np

from .harness import check, fallback_reasons, random_array


class Buffer:
    def __init__(self, capacity, width):
        self.data = np.zeros((capacity, width))
        self.i = 0


def test_a_replay_buffer_written_at_its_index_and_read_behind_it():
    def step(st, batch):
        n = len(batch)
        i = st["i"]
        st["data"][i:i + n] = batch
        st["i"] = (i + n) % 12
        recent = st["data"][i:i + n]
        behind = st["data"][i + n - 4:i + n] if i + n >= 4 else st["data"][:4]
        st["w"] -= 0.1 * recent.mean(0)
        return recent.sum(), behind.mean(0)

    make = lambda: (step, {"data": np.zeros((12, 3)), "i": 0, "w": random_array(0, (3,))})  # noqa: E731
    jf = check(make, [lambda s, i=i: (s, random_array(i, (2, 3))) for i in range(16)], min_graph_calls=6)
    assert "data-dependent-python" not in fallback_reasons(jf), jf.explain()


def test_windows_that_leave_the_array_fall_back_to_eager():
    """`x[t:t + 4]` near the end: NumPy gives fewer rows (and the write a shape error); the
    graph's assert sends those calls to eager."""
    def step(buf, x):
        t = buf.i
        chunk = buf.data[t:t + 4] * 2.0
        buf.data[t:t + 4] += x[:len(chunk)]
        buf.i += 3
        return chunk.sum(0), chunk.shape

    jf = check(lambda: (step, Buffer(14, 2)), [lambda s, i=i: (s, random_array(i, (4, 2))) for i in range(8)],
               min_graph_calls=1)
    assert "assumption" in fallback_reasons(jf), jf.explain()


def test_chunks_of_a_sequence_at_a_position_in_the_state():
    """Truncated backpropagation through time reads `x[:, t:t + k]`; an Ellipsis and slices
    beside the window are fine."""
    def step(st, x):
        t = st["t"]
        chunk = x[:, t:t + 3]
        last = x[..., t + 2 - 1:t + 2] + x[:, t % 6:t % 6 + 1]  # (`t % 6` computed twice: one value)
        st["t"] = (t + 3) % 6
        st["h"] = np.tanh(st["h"] + chunk.sum(1))
        return st["h"], last * 1.0

    make = lambda: (step, {"t": 0, "h": np.zeros(2)})  # noqa: E731
    check(make, [lambda s, i=i: (s, random_array(i, (2, 9))) for i in range(12)], min_graph_calls=6)


def test_writes_through_a_window_reads_after_its_array_changed_and_returned_windows_stay_eager():
    """Eager's window is a view: a write through it changes the array, it sees the array's
    later writes, and returned it shares the array's memory. The graph's window is a copy,
    so all three keep the step eager."""
    def write_through(buf, x):
        w = buf.data[buf.i:buf.i + 2]
        w += x
        buf.i = (buf.i + 1) % 4
        return buf.data.sum()

    def read_after(buf, x):
        v = buf.data[buf.i:buf.i + 2]
        buf.data *= 0.5
        buf.data[0] += x[0]
        buf.i = (buf.i + 1) % 4
        return v.sum()

    def returned(buf, x):
        buf.i = (buf.i + 1) % 4
        return buf.data[buf.i:buf.i + 2], x.sum()

    calls = [lambda s, i=i: (s, random_array(i, (2, 3))) for i in range(8)]
    for step in (write_through, read_after, returned):
        jf = check(lambda: (step, Buffer(6, 3)), calls, min_graph_calls=0)
        assert jf.stats()["graph_calls"] == 0 and "view-write" in fallback_reasons(jf), jf.explain()


def test_slices_of_containers_by_graph_values_stay_eager():
    def step(st, x):
        st["log"].append(float(x.sum()))
        k = st["k"]
        st["k"] += 1
        return st["names"][k:k + 2], x * 2

    make = lambda: (step, {"log": [], "k": 0, "names": list("abcdefghijklmn")})  # noqa: E731
    check(make, [lambda s, i=i: (s, random_array(i, (3,))) for i in range(8)], min_graph_calls=0)


def _plans(jf):
    return "\n".join(g.plan.source for g in jf.graphs() if g.plan is not None)


def test_a_ring_buffer_is_written_at_its_window_by_the_commit():
    """`buf[i:i + n] = batch` and the window read back: the plan neither copies the buffer to
    write it nor gathers the rows it just wrote (they are the batch, cast to the buffer's
    dtype), and the commit writes the rows into the buffer, in order (a second window into the
    same buffer, a constant slice), where it copied the whole new buffer. Batches of another
    dtype, windows that leave the buffer (eager, with nothing committed) and a buffer made
    read-only between calls (eager's error) included."""
    def step(st, batch, ret):
        n, i = len(batch), st["i"]
        st["obs"][i:i + n] = batch
        st["ret"][i:i + n] = ret
        st["ret"][0:1] = ret[:1] * 0.5
        st["ret"][i + n - 1:i + n] = -1.0 * ret[:1]
        st["i"] = (i + n) % 14
        x = st["obs"][i:i + n]
        err = x @ st["w"] - ret
        st["w"] -= 0.01 * x.T @ err / n
        return float((err ** 2).mean())

    def make():
        return step, {"obs": np.zeros((16, 3), np.float32), "ret": np.zeros(16), "i": 0, "w": np.zeros(3, np.float32)}

    def call(s, k):
        if k in (8, 9):
            s["i"] = 14 if k == 8 else 2  # (a window past the end: NumPy's shorter slice fails the write)
        if k == 11:
            s["obs"].flags.writeable = False
        if k == 12:
            s["obs"].flags.writeable = True
        return s, random_array(k, (4, 3)), random_array(50 + k, (4,)).astype(np.float32)

    jf = check(make, [lambda s, k=k: call(s, k) for k in range(18)], min_graph_calls=8)
    plans = _plans(jf)
    assert ".copy(" not in plans and "[v" in plans, plans
    assert any(c[0] == "index" for g in jf.graphs() for c in g.outputs.commits), jf.explain()


def test_writes_committed_in_order_read_their_values_before_any_write():
    """Writes the commit makes in order: a value that is a slice of the buffer itself (`v =
    buf[0:3].astype(float)`, the same dtype: no copy in the graph) is read before the first
    write changes it; a window asserted inside a bigger array than the one written (`i +
    np.arange(3)` into a small buffer) is not taken for a checked one (its IndexError comes
    before the commit, nothing half-committed); a Python number written at a window (NumPy casts
    it its way) keeps the write in the plan."""
    def step(st, z, t):
        i = st["i"]
        a = st["big"][i:i + 3].sum()
        v = st["buf"][0:3].astype(np.float64)
        st["buf"][0:3] = z
        st["buf"][3:6] = v
        st["small"][0:1] += 1.0
        st["w"] += 1.0
        st["small"][i + np.arange(3)] = z
        st["rew"][i:i + 2] = t
        st["i"] = i + 1
        return a

    def make():
        return step, {"big": np.arange(40.0), "buf": np.arange(12.0), "small": np.zeros(10), "w": np.zeros(2),
                      "rew": np.zeros(12, np.float32), "i": 0}

    check(make, [lambda s, k=k: (s, random_array(k, (3,)), 0.5 * k) for k in range(12)], min_graph_calls=4)


def test_rows_at_indices_from_the_inputs_are_committed_as_writes():
    """A hand-written sparse update, `E[ids] -= lr * g` (and columns, `C[:, ids] = v`): the plan
    copied the whole table to write the rows and the commit copied it back; now an assert checks
    the indices in bounds and the commit writes the rows (repeated indices in order, the last
    kept, negative ones from the end, as eager's write). Out-of-bounds indices on some calls
    fail the assert: eager raises, with the state written before the write as eager leaves it."""
    def step(st, ids, g):
        st["w"] += 1.0
        E = st["E"]
        E[ids] -= 0.1 * g
        st["C"][:, ids % 3] = g[:, :2].T
        return float(g.sum())

    def make():
        return step, {"E": random_array(1, (20, 2)), "C": np.zeros((2, 3)), "w": np.zeros(2)}

    def call(s, k):
        ids = np.array([k % 20, 3, 3, -1]) if k not in (7, 10) else np.array([0, 25, 1, 2])
        return s, ids, random_array(k, (4, 2))

    jf = check(make, [lambda s, k=k: call(s, k) for k in range(14)], min_graph_calls=6)
    plans = _plans(jf)
    assert ".copy(" not in plans, plans
    kinds = sorted(c[0] for g in jf.graphs() for c in g.outputs.commits)
    assert kinds == ["array", "index", "index"], kinds  # (w written whole; E and C at indices)


def test_out_of_bounds_indices_fail_the_assert_before_anything_is_committed():
    def step(st, ids, rows):
        st["w"] += 1.0
        st["T"][ids] = rows
        return st["w"].sum()

    def call(s, k):
        return s, np.array([k % 6, -2]) if k not in (6, 9) else np.array([1, 7]), random_array(k, (2, 3))

    jf = check(lambda: (step, {"T": np.zeros((6, 3)), "w": np.zeros(2)}),
               [lambda s, k=k: call(s, k) for k in range(12)], min_graph_calls=5)
    assert "assumption" in fallback_reasons(jf) or jf.stats()["assert_failures"], jf.explain()


def _minibatch_step(params, X, Y, k, bs):
    xb, yb = X[k * bs:(k + 1) * bs], Y[k * bs:k * bs + bs]
    err = np.tanh(xb @ params["W"]) - yb
    params["W"] -= 0.01 * xb.T @ err
    return float((err ** 2).mean()), len(xb)


def test_minibatches_cut_at_a_multiple_of_the_batch_index_with_a_short_last_batch():
    """`X[k * bs:(k + 1) * bs]` with the batch index k an argument (bs a constant): the bounds are
    one value times a constant plus constants, so the window's length is read off them. The
    short last batch of each epoch fails the bounds assert and runs eagerly; being one call in
    eight, it does not relax the window (every other batch stays a graph)."""
    r = np.random.default_rng(0)
    X, Y = r.standard_normal((120, 5)), r.standard_normal((120, 3))
    make = lambda: (_minibatch_step, {"W": np.zeros((5, 3))})  # noqa: E731
    jf = check(make, [lambda s, i=i: (s, X, Y, i % 8, 16) for i in range(40)], min_graph_calls=28)
    assert "data-dependent-python" not in fallback_reasons(jf), jf.explain()
    assert jf.stats()["fallbacks"] <= 5, jf.explain()


def test_windows_along_later_axes_sum_in_eager_order():
    """`X[:, k:k + 2]` is the index array `k + arange(2)` along axis 1, which NumPy lays out in F
    order: sums over it rounded differently from eager's slice (the last bits). The window is
    now C-ordered, as the slice's elements are."""
    r = np.random.default_rng(0)
    X, Y = r.standard_normal((50, 4)), r.standard_normal((6, 50, 8))

    def step(X, Y, k):
        xb, yb, zb = X[:, k * 2:(k + 1) * 2], Y[:, k:k + 3], Y[..., k * 2:k * 2 + 4]
        return xb.sum(axis=0), xb.mean(0), yb.sum(axis=(0, 2)), zb.sum(0), zb.sum(-1)

    check(lambda: (step, {}), [lambda s, k=k: (X, Y, k) for k in [0, 1, 0, 1, 0, 1, 1, 0]], min_graph_calls=4)
