"""NumPy scalars and 0-d arrays in jitted code. `w[0]` of a 1-d array, `x.sum()`, `x.mean()` are
NumPy scalars: a copy of the value, which `+=` replaces with a new one (what else holds the old
one keeps it). `np.array(s)`, `a[...]` and 0-d input arrays are 0-d ndarrays, which `+=` writes
in place. Each case runs eager and jit side by side and compares results and state after every
call."""
import numpy as np
import pytest

from .harness import check, random_array


def _calls(n=10, shape=(4,)):
    return [lambda s, i=i: (s, random_array(i, shape)) for i in range(n)]


def test_an_element_read_before_an_in_place_update_keeps_its_value():
    """`first = w[0]; w += x`: NumPy's `w[0]` is a copy, not a view that sees the update."""
    def step(st, x):
        w, W = st["w"], st["W"]
        first, corner, last = w[0], W[0, 0], w[-1]
        row, zero_d = W[0], W[0, ...]  # a view of a row and a 0-d view: they do see it
        w += x
        W -= 0.1
        return first, corner * 1.0, last, w[0], row.sum(), zero_d * 1.0

    check(lambda: (step, {"w": random_array(1, (4,)), "W": random_array(2, (3, 3))}), _calls(), min_graph_calls=5)


def test_a_numerical_gradient_check_that_perturbs_elements_in_place():
    """The finite-difference check a training script runs now and then: each element saved
    with `old = W[idx]`, perturbed in place, and put back."""
    def step(st, x):
        W = st["W"]
        g = 2.0 * (W - x)
        num = np.zeros_like(W)
        for idx in np.ndindex(*W.shape):
            old = W[idx]
            W[idx] = old + 1e-4
            fp = np.sum((W - x) ** 2)
            W[idx] = old - 1e-4
            fm = np.sum((W - x) ** 2)
            W[idx] = old
            num[idx] = (fp - fm) / 2e-4
        W -= 0.1 * g
        return float(np.abs(num - g).max())

    check(lambda: (step, {"W": random_array(1, (2, 3))}), _calls(shape=(2, 3)), min_graph_calls=5)


def test_an_element_augmented_in_a_local_leaves_the_array_alone():
    def step(st, x):
        w = st["w"]
        e = w[0]
        e += 1.0
        w *= 0.5
        return e, w.sum()

    check(lambda: (step, {"w": random_array(1, (4,))}), _calls(), min_graph_calls=5)


class AverageMeter:
    """The running average a training script keeps (sum, count, average as attributes)."""

    def __init__(self):
        self.val = self.sum = self.avg = 0.0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def test_an_attribute_that_holds_a_numpy_scalar_is_augmented():
    """`self.sum += val * n` with `val` a NumPy scalar: from the second call the attribute holds
    one, and `+=` makes a new one that must be stored back (the write was lost)."""
    def step(st, x):
        st["w"] -= 0.1 * x
        acc = (x > 0).mean() * 100
        st["top1"].update(acc, len(x))
        st["loss"].update(float(np.square(x).mean()), len(x))
        st["box"].total += x.mean()
        return st["top1"].avg, st["box"].total

    class Box:
        def __init__(self):
            self.total = np.float64(0.0)

    check(lambda: (step, {"w": random_array(0, (4,)), "top1": AverageMeter(), "loss": AverageMeter(), "box": Box()}),
          _calls(), min_graph_calls=5)


def test_augmenting_a_numpy_scalar_binds_a_new_value():
    """What held the old scalar keeps it: another name, a dict's old value read before."""
    def step(st, x):
        s = x.sum()
        t = s
        s += 1.0
        before = st["acc"]
        st["acc"] += x.mean()
        return s, t, before, st["acc"]

    check(lambda: (step, {"acc": np.float64(0.0)}), _calls(), min_graph_calls=5)


def test_augmenting_a_zero_d_array_writes_it_in_place():
    """A 0-d ndarray (`np.array(s)`, a 0-d input) is written in place: its other names see the
    new value, and it stays an ndarray."""
    def step(st, x):
        a = np.array(x.sum())
        b = a
        a += 1.0
        before = st["acc"]
        st["acc"] += x.mean()
        return a, b, before * 1.0, st["acc"]

    check(lambda: (step, {"acc": np.zeros(())}), _calls(), min_graph_calls=5)


def test_copies_of_numpy_scalars_and_zero_d_arrays_keep_their_types():
    """`s.copy()` of a NumPy scalar is a NumPy scalar; `np.copy(s)` and `a.copy()` of a 0-d
    array are 0-d arrays; a ufunc of a 0-d array (`a * 1`, `+a`) is a NumPy scalar."""
    def step(st, x):
        s = x.sum()
        a = np.array(x.max())
        ufuncs = (a * 1, 1 * a, a / 1, +a, np.positive(a), np.multiply(a, 1))  # NumPy scalars (not a itself)
        return s.copy(), np.copy(s), a.copy(), +s, a.astype(np.float32), a.T, a[()], a[...], ufuncs

    check(lambda: (step, {}), _calls(), min_graph_calls=5)


def test_rounding_numpy_scalars():
    """`round(x.mean(), 3)` is NumPy's rounding (a NumPy scalar of the same dtype), `round(s)`
    a Python int (halves to even); a 0-d ndarray has no `__round__` (the same TypeError)."""
    def step(st, x):
        st["w"] *= 0.9
        m = (x @ st["w"]).mean()
        f = np.float32(m)
        return round(m, 3), round(m * 10), round(f, 2), round(m, -1), round(np.float64(2.5)), round(x.sum() * 0)

    def zero_d(st, x):
        return round(np.array(x.sum()), 2)

    calls = [lambda s, i=i: (s, random_array(i, (4, 3))) for i in range(10)]
    check(lambda: (step, {"w": random_array(0, (3,))}), calls, min_graph_calls=5)
    check(lambda: (zero_d, {}), calls, min_graph_calls=0)


def test_a_branch_giving_a_numpy_scalar_or_a_python_number_keeps_eagers_type():
    """`s if s > 0 else 0.0`: eager's result is a NumPy scalar on one branch and a Python float
    on the other, and NEP 50 promotes them differently (a float32 array times a Python float
    stays float32). The conditional node made both a 0-d array (one type, float64 promotion);
    now each outcome has its graph."""
    def step(st, x):
        s = x.sum()
        r = s if s > 0 else 0.5
        if s > 0:
            k = x.argmax()
        else:
            k = 0
        st["w"] -= np.float32(0.1) * st["w"]
        return r, (st["w"] * r).dtype, (st["c"] + k).dtype, s if s < 0 else np.float64(1.0)

    state = lambda: {"w": np.ones(5, np.float32), "c": np.zeros(2, np.int8)}  # noqa: E731
    check(lambda: (step, state()), [lambda s, i=i: (s, random_array(i, (5,))) for i in range(12)],
          min_graph_calls=4)


def test_copyto_with_where_and_casting():
    """`np.copyto(dst, src, where=)` puts src only where the mask holds (the graph copied it
    everywhere), and `casting=` is checked as NumPy does (eager's TypeError) or casts unsafely."""
    def step(st, x):
        st["w"] += x
        np.copyto(st["w"], 0.0, where=st["w"] < 0)
        np.copyto(st["v"], x, where=x > 0)
        np.copyto(st["n"], x * 10, casting="unsafe")
        np.copyto(st["u"], x, casting="no")
        return st["w"].sum(), st["v"].copy(), st["n"].copy()

    def call(s, i):
        return s, random_array(i, (3,), np.float32 if i == 7 else np.float64)

    state = lambda: {"w": np.zeros(3), "v": np.zeros(3), "n": np.zeros(3, np.int32), "u": np.zeros(3)}  # noqa: E731
    check(lambda: (step, state()), [lambda s, i=i: call(s, i) for i in range(10)], min_graph_calls=4)


def test_reshaped_and_transposed_views_of_updated_state_are_views_of_it():
    """`st["W"] -= g; return st["W"].T`: eager's result is a view of the state's array (a later
    write to one shows in the other). The graph gave a copy of its own new value; now the view
    is made from the state's array after the commit, one per eager view."""
    def step(st, x):
        st["W"] -= 0.1 * x
        st["WT"] = st["W"].T
        st["M"] += 1.0
        return st["W"].reshape(-1), st["M"].diagonal(), x.T, x.T, np.broadcast_to(st["v"], (2, 3))

    state = lambda: {"W": np.zeros((2, 3)), "M": np.eye(3), "v": np.ones(3)}  # noqa: E731
    check(lambda: (step, state()), [lambda s, i=i: (s, random_array(i, (2, 3))) for i in range(8)],
          min_graph_calls=4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_math_trunc_of_numpy_scalars_raises_as_eager(dtype):
    """math.trunc takes float64 scalars (a float subclass) only: of np.float32 or np.int64
    eager raises TypeError, which a call made after the warm-up of another dtype raises too."""
    import math

    def step(x):
        return x * 2, math.trunc(x[0])

    def call(s, i):
        return (np.array([2.7, -1.5]).astype(dtype if i >= 4 else np.float64),)

    check(lambda: (step, {}), [lambda s, i=i: call(s, i) for i in range(7)], min_graph_calls=1)


def test_a_python_int_past_int64_given_to_numpy_is_eagers():
    """`np.full(2, k * 4)` and `np.asarray(k * 4)` with `k * 4` past int64 on one call: eager's
    arrays hold Python ints (dtype object); the graph's conversion overflowed (an internal error
    that turned the function's graphs off). Its range is asserted: that call runs eagerly, the
    next ones as graphs again."""
    def step(x, k):
        return x, np.full(2, k * 4), np.asarray(k + 1)

    ks = [2, 3, 4, 5, 2 ** 62, 2, 3, 4, 5]
    jf = check(lambda: (step, {}), [lambda s, k=k: (np.arange(3), k) for k in ks], min_graph_calls=5)
    assert "internal-error" not in {fb.reason for fb in jf.fallbacks()}, jf.explain()


def test_an_arrays_flags_read_in_the_step_is_eagers():
    """`np.isfortran(r)` of an array the graph makes reads its flags (an internal error before):
    the step runs eagerly with the reason named."""
    def step(a):
        r = a * 2.0
        return r, np.isfortran(r)

    jf = check(lambda: (step, {}), [lambda s, i=i: (np.asfortranarray(np.ones((2, 3)) * i),) for i in range(6)],
               min_graph_calls=0)
    assert "flags" in jf.explain() and "internal-error" not in jf.explain(), jf.explain()


@pytest.mark.parametrize("expr", ["np.array(-k, dtype=np.uint64)", "np.full(2, k * 40, dtype=np.uint8)",
                                  "np.array([float(k), k * 2 ** 60])", "np.array([(k - 4) * 2 ** 33], dtype=np.int32)"])
def test_python_ints_out_of_the_range_of_the_dtype_numpy_makes(tmp_path, expr):
    """A Python int the graph computes, made an array of a narrower or unsigned dtype (eager:
    OverflowError) or put in a list beside a float past int64 (eager: an object array): the
    graph wrapped it or made float64. Its range is asserted; those calls run eagerly."""
    from .harness import load_module

    module = load_module(tmp_path, f"import numpy as np\n\ndef f(x, k):\n    return x * 2, {expr}\n")
    ks = [0, 1, 2, 3, 9, 1, 2, 12]
    check(lambda: (module.f, {}), [lambda s, k=k: (np.arange(3.0), k) for k in ks], min_graph_calls=0)


def test_take_of_one_index_is_a_copy():
    """`x.take(2, axis=1)` and `np.take(x, 1, axis=0)`: NumPy's take copies; the graph's `x[:, 2]`
    was a view of x, which the step's later `x += 1` changed."""
    def step(x, st):
        col, row = x.take(2, axis=1), np.take(x, 1, axis=0)
        st["row"] = row
        x += 1
        return col

    check(lambda: (step, {}), [lambda s, i=i: (np.arange(12.0).reshape(3, 4) * i, s) for i in range(6)],
          min_graph_calls=2)
