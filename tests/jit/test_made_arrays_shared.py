"""Arrays the step makes and views of them, as eager code leaves them: one new array and its views
share memory (`v = np.zeros(4); st["a"] = v; st["b"] = v[1:]`), `np.diagonal` of one is
NumPy's read-only view, `a.astype(a.dtype)` is a copy whose views are the copy's, `a.ravel()` of
an input written in place is a view of it, and a copy written in place keeps its array's layout
(a sum of it adds in eager's order). In the graph the new array is a constant or the input itself
(a pass takes `astype` to the same dtype as its operand); copied one output at a time, the
outputs shared nothing. Also: a conditional inside a loop node's body (its constants merged by
CSE) named a value no node defined; `sum(params, start=g)` lost its start. Eager and jit side by
side after every call (results, state, aliasing, read-only flags)."""
import numpy as np
import pytest

from .harness import check, numpy_step

MADE = {  # (body of step(x, st), x's shape)
    "stored_and_view": ('v = np.zeros(4)\n    st["a"] = v\n    st["b"] = v[1:]\n    return x.sum()', (4,)),
    "two_views_of_unstored": ('v = np.zeros(4)\n    st["b"] = v[1:]\n    st["c"] = v[:2]\n    return x.sum()', (4,)),
    "returned_with_view": ("v = np.arange(4.0)\n    return v, v[1], v[2:], x * 2", (2,)),
    "same_row_twice": ("e = np.zeros((2, 3))\n    a, b = e[0], e[0]\n    return a, b, e", (3,)),
    "rows_not_returned_twice": ("e = np.zeros((2, 3))\n    return e[0], e[0], x.sum()", (3,)),
    "diagonal": ("e = np.eye(4)\n    d = np.diagonal(e)\n    return e, d, x.sum()", (4,)),
    "flip_transpose_diagonal": ('z = np.zeros((3, 3))\n    st["z"] = z\n    st["zf"] = z[::-1, 1:]\n'
                                '    st["zt"] = z.T\n    return np.diagonal(z), x.sum()', (3,)),
    "printed": ('v = np.zeros(3)\n    st["a"] = v\n    st["b"] = v[1:]\n    print(x.sum(), v)\n    return v', (3,)),
    "equal_constants_apart": ("v = np.zeros(4)\n    w = np.zeros(4)\n    return v[1:], w[1:], v, w[:2]", (4,)),
    "times_one_twice": ("a = x * 1\n    b = x * 1\n    return a, b, a[1:], b[:2]", (4,)),
    "stored_in_two_trips": ('for j in range(2):\n        st["v"] = x * 2.0\n    return st["v"], st["v"][1:]', (4,)),
    "appended_in_two_trips": ("out = []\n    for j in range(2):\n        out.append(x * 2.0)\n"
                              "    return out, out[1][1:], out[0][:2]", (4,)),
    "reshaped_in_two_trips": ('f = x * 2.0\n    for j in range(2):\n        st["r"] = f.reshape(1, 4)\n'
                              '    return f, st["r"]', (4,)),
    "reshape_copies_in_two_trips": ('f = (x * 2.0).reshape(2, 2).T\n    for j in range(2):\n'
                                    '        st["r"] = f.reshape(4)\n    return f, st["r"]', (4,)),
    "gathered_in_two_trips": ('h = x * 2.0\n    for j in range(2):\n        st["g"] = h[[0, 2]]\n'
                              '    return h, st["g"], st["g"][1:]', (4,)),
    "times_int_one": ("y = x * 1\n    z = 1 * x\n    return y, y[1:], z, np.multiply(x, 1)[::2]", (4,)),
    "view_written": ("v = np.ones(4)\n    w = v[1:]\n    w += x\n    return v, w", (3,)),
    "astype_same_dtype": ("v = x.astype(np.float64)\n    return v, v[1:]", (4,)),
    "astype_transposed": ("v = x.T.astype(x.dtype)\n    return v, v[:, 1:], v.T", (2, 3)),
    "astype_view_stored_in_loop": ('v = x.astype(np.float64)\n    for t in range(2):\n        st["y"] = v[::2]\n'
                                   "    x[0] = 100.0\n    return None", (4,)),
}

RAVELS = {  # (body of step(a, st), a's orders by call)
    "written_then_raveled": ("a *= 2.0\n    r = a.ravel()\n    return r, a", "C"),
    "fortran_raveled": ("a += 1.0\n    r = np.ravel(a)\n    return r, a", "CF"),
    "transposed_state": ('st["w"] -= a\n    return st["w"].T.ravel(), st["w"].ravel()', "C"),
    "view_method_of_state": ('st["w"] += a\n    st["v"] = st["w"].view()\n    return None', "C"),
    # copies taken before the state is written (`* 1`, `/ 1` and astype to the same dtype are
    # dropped by a pass: what is left views the state, or is a read-only view)
    "ravel_astype_snapshot": ('st["s"] = st["w"].ravel().astype(np.float64)\n    st["w"] += a\n    return None', "C"),
    "ravel_times_one": ('st["s"] = st["w"].ravel() * 1\n    st["w"] += a\n    return None', "C"),
    "contiguous_astype": ('st["s"] = np.ascontiguousarray(st["w"]).astype(np.float64)\n    st["w"] += a\n'
                          '    return None', "C"),
    "flip_times_one": ('st["s"] = np.flip(st["w"], 0) * 1\n    st["t"] = [np.flip(st["w"]) / 1]\n    st["w"] += a\n'
                       '    return None', "C"),
    "broadcast_times_one": ('return np.broadcast_to(a[0], (2, 3)) * 1, a.diagonal() * 1, '
                            'np.broadcast_to(a[1], (3, 3)).astype(np.float64)', "CF"),
}


@pytest.mark.parametrize("name", sorted(MADE))
def test_arrays_made_in_the_step_and_their_views_side_by_side(tmp_path, name):
    body, shape = MADE[name]
    step = numpy_step(tmp_path, f"made_{name}", "x, st", body)

    def call(st, i):
        return np.arange(float(np.prod(shape))).reshape(shape) * (i + 1), st

    check(lambda: (step, {}), [lambda st, i=i: call(st, i) for i in range(7)], min_graph_calls=3)


@pytest.mark.parametrize("name", sorted(RAVELS))
def test_ravel_of_arrays_written_in_place_side_by_side(tmp_path, name):
    body, orders = RAVELS[name]
    step = numpy_step(tmp_path, f"made_{name}", "a, st", body)

    def make():
        return step, {"w": np.arange(6.0).reshape(2, 3)}

    def call(st, i):
        a = np.arange(6.0).reshape(2, 3) * (i + 1)
        return (np.asfortranarray(a) if orders[i % len(orders)] == "F" else a), st

    check(make, [lambda st, i=i: call(st, i) for i in range(7)], min_graph_calls=3)


def test_a_gather_written_in_place_sums_in_eagers_order():
    def make():
        def step(x):
            h = x[:, [0, 2, 1, 3]]  # (NumPy lays this gather out by columns)
            h[1] = h[0] + 1.0
            return float(np.sum(h)), float(np.linalg.norm(h))

        return step, {}

    calls = [lambda st, i=i: (np.random.default_rng(3378000 + i).standard_normal((6, 4)),) for i in range(7)]
    check(make, calls, min_graph_calls=3)


def test_a_conditional_in_a_loop_body_keeps_its_merged_constants():
    class Holder:
        def __init__(self):
            self.v = np.linspace(-0.5, 0.5, 4)

    def make():
        rs = np.random.default_rng(0)
        st = {"w": rs.standard_normal((3, 4)) * 0.5, "b": rs.standard_normal(4) * 0.1}

        def step(x, k, st, o):
            h = x @ st["w"] + st["b"]
            o.v -= 0.1 * h.mean(axis=0)
            j = 0
            while j < k:
                j += 1
                if h.max() > 0.0:
                    break
                o.v[[0, 1]] += h[0, :2]  # (the index list a constant twice: read, then written)
            return o.v

        return step, {"st": st, "o": Holder()}

    def call(s, i):
        x = np.random.default_rng(1000 + i).standard_normal((5, 3)) - (3.0 if i % 2 else 0.0)
        return x, 2, s["st"], s["o"]

    check(make, [lambda s, i=i: call(s, i) for i in range(9)], min_graph_calls=3)


def test_sum_with_a_start_keyword():
    def make():
        def step(g, st):
            return sum(st["params"], start=g), sum((p * 2.0 for p in st["params"]), start=0.5)

        return step, {"params": [np.ones(4) * j for j in range(3)]}

    check(make, [lambda st, i=i: (np.arange(4.0) * (i + 1) / 10, st) for i in range(7)], min_graph_calls=3)


def test_fancy_writes_in_a_nested_loop_left_by_break():
    def make():
        def step(st):
            v = st["v"]
            for i in range(2):
                if i == 1:
                    break
                for j in range(1):
                    v[[0, 2]] -= 1.0
            return v

        return step, {"v": np.arange(4.0)}

    check(make, [lambda st: (st,)] * 7, min_graph_calls=3)


def test_out_writes_in_a_loop_with_continue_and_a_data_trip_count():
    def make():
        def step(y, mask, k):
            iv = y * 3
            for i in range(int(mask.sum())):
                if i == k - 1:
                    continue
                np.maximum(iv, (y * np.int32(2)) * np.int32(2), out=iv)
            return iv

        return step, {}

    def call(st, i):
        rs = np.random.default_rng(i)
        return rs.integers(0, 5, 4), rs.random(4) < 0.5, 2

    check(make, [lambda st, i=i: call(st, i) for i in range(8)], min_graph_calls=3)


def test_a_strided_view_of_a_fortran_input_written_then_summed():
    def make():
        def step(m):
            w = m[:, ::2]
            w *= 1.5
            return w.sum()

        return step, {}

    def call(st, i):
        m = np.random.default_rng(i).standard_normal((3, 4)) * 10 ** (i % 4)
        return (np.asfortranarray(m) if i >= 6 else m),

    check(make, [lambda st, i=i: call(st, i) for i in range(8)], min_graph_calls=3)


CALLER_WRITES = {  # body of step(x, k, st); the caller writes into st["v"] (and st["r"]) between calls
    "branch_gives_a_constant": 'if k == 0:\n        v = np.ones(3)\n    else:\n        v = np.zeros(3)\n'
                               '    st["v"] = v\n    st["w"] = v[1:]\n    return v.sum()',
    "loop_may_not_run": 'acc = np.zeros(3)\n    for t in range(k):\n        acc = acc + x\n    st["v"] = acc\n'
                        "    return acc.sum()",
    "reshape_copies_twice": 'h = np.outer(x, x) * 3.0\n    st["v"] = h.T.reshape(-1)\n    st["r"] = h.T.reshape(-1)'
                            "\n    return None",
    "merged_and_printed": 'a = x * 2.0\n    b = x * 2.0\n    c = x * 2.0\n    st["a1"] = a[1:]\n    st["v"] = b\n'
                          '    st["b1"] = b[:2]\n    st["c1"] = c[1:]\n    st["c2"] = c[::-1]\n    print("step")\n'
                          "    return None",
    "read_only_alone": 'st["v"] = np.ones(3)\n    st["d"] = np.diagonal(np.eye(3))\n'
                       '    st["e"] = np.outer(x, x).diagonal()\n    st["f"] = np.outer(x, x)\n    return None',
}


@pytest.mark.parametrize("name", sorted(CALLER_WRITES))
def test_stored_arrays_the_caller_writes_between_calls_side_by_side(tmp_path, name):
    step = numpy_step(tmp_path, f"made_{name}", "x, k, st", CALLER_WRITES[name])

    def call(st, i):
        for key in ("v", "r"):
            if key in st:
                st[key][0] += 7.0  # (eager's arrays are new each call: a write into one shows nowhere else)
        x = np.arange(3.0) + i
        return x, i % 3, st

    check(lambda: (step, {}), [lambda st, i=i: call(st, i) for i in range(8)], min_graph_calls=3)


def test_a_copy_of_a_fortran_input_keeps_its_layout():
    def make():
        def step(x, st):
            if "y" in st:
                st["s"] = st["y"].sum()
            st["y"] = x * 1
            return None

        return step, {}

    def call(st, i):
        m = np.random.default_rng(i).standard_normal((4, 5)) * 10 ** (i % 4)
        return np.asfortranarray(m), st

    check(make, [lambda st, i=i: call(st, i) for i in range(8)], min_graph_calls=3)
