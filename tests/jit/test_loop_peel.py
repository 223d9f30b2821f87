"""While loops whose first tests are Python values (`err = np.inf; while err > tol:`,
`done = False; while not done:`) and whose later tests are graph values, side by side with
eager: the trips whose test was a Python value are unrolled, the rest become one loop node
(graphgen/control.stmt_While), so a convergence loop of varying trips runs as a graph."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import check, side_by_side


def _newton(x, st):
    err = np.inf
    it = 0
    while err > 1e-9:
        x_new = 0.5 * (x + 2.0 / x)
        err = float(np.abs(x_new - x).max())
        x = x_new
        it += 1
    st["its"] = st.get("its", 0) + it
    return x


def _descend(w, g, st):
    done = False
    k = 0
    while not done:
        w = w - 0.1 * g
        k += 1
        done = bool(np.linalg.norm(w) < 1.0) or k >= 40
    st["k"] = k
    return w, k


def _two_first(x, st):
    k, err = 0, 0.0
    while k < 2 or err > 0.01:  # two trips whose test is a Python value, then graph values
        x = x * 0.5
        err = float(np.abs(x).max())
        k += 1
    return x, k


def test_newton_iterations_of_varying_trips_run_as_one_graph():
    starts = [1.0, 5.0, 40.0, 300.0, 2.0, 1e4, 1.5, 7.0, 1e6, 0.1, 3.0]

    def make():
        return _newton, {}

    check(make, [lambda s, v=v: (np.full(3, v), s) for v in starts], min_graph_calls=5)


def test_a_done_flag_loop():
    def make():
        return _descend, {}

    check(make, [lambda s, i=i: (np.full(2, 2.0 + 1.5 * i), np.ones(2), s) for i in range(10)], min_graph_calls=5)


def test_two_trips_unrolled_before_the_loop_node():
    def make():
        return _two_first, {}

    check(make, [lambda s, i=i: (np.full(2, 0.001 * 4.0 ** i), s) for i in range(10)], min_graph_calls=4)


@settings(max_examples=10, deadline=None)
@given(starts=st.lists(st.floats(0.01, 1e5), min_size=4, max_size=9))
def test_newton_hypothesis(starts):
    def make():
        return _newton, {}

    warm = [1.0, 40.0, 1e4]  # three different trip counts while warming up
    check(make, [lambda s, v=v: (np.full(2, v), s) for v in warm + starts], min_graph_calls=1)


def _inner_loop(x, n, st):
    err = np.inf
    k = 0
    while err > 0.1:
        for j in range(n):  # (j is never read after: the inner loop node's variable is not carried)
            x = x * 0.9
        x = x * 0.5
        err = float(x.max())
        k += 1
    return x, k


def test_a_loop_node_inside_the_peeled_loop():
    vals = [1.0, 0.05, 3.0, 0.2, 10.0, 0.01, 5.0, 1e4, 0.5]
    ns = [1, 2, 1, 3, 0, 2, 1, 0, 2]

    def make():
        return _inner_loop, {}

    check(make, [lambda s, v=v, n=n: (np.full(2, v), n, s) for v, n in zip(vals, ns)], min_graph_calls=3)


def _fixed_point(z, st):
    while True:
        zn = np.tanh(0.5 * z + 0.1)  # bound on every trip before the break: read after the loop
        err = float(np.abs(zn - z).max())
        if err < 1e-6:
            break
        z = zn
    st["err"] = err
    return zn


def _bound_after_the_break(z, st):
    zn = z
    while True:
        if np.abs(z).max() < 0.05:
            break
        zn = z * 0.5  # (bound after the exit: carried from its value before the loop)
        z = zn
    return zn


def test_while_true_names_bound_before_the_break():
    def make():
        return _fixed_point, {}

    check(make, [lambda s, i=i: (np.full(3, 0.1 * i - 0.3), s) for i in range(9)], min_graph_calls=4)


def test_while_true_names_bound_after_the_break():
    def make():
        return _bound_after_the_break, {}

    check(make, [lambda s, i=i: (np.full(2, 0.02 + 0.5 * i), s) for i in range(9)], min_graph_calls=3)


def _two_names(z, st):
    while True:
        zn = np.tanh(z) * 0.8
        w = zn  # (one array under two names when the loop is left)
        if np.abs(zn - z).max() < 1e-3:
            break
        z = zn
    return zn, w


def _the_argument(z, st):
    while True:
        best = z  # (the argument itself when the first trip leaves)
        if np.abs(best).max() < 0.05:
            break
        z = best * 0.5
    return best


def _a_view(z, st):
    while True:
        zn = np.tanh(z) * 0.8
        head = zn[:2]  # (a view of zn)
        if np.abs(zn - z).max() < 1e-3:
            break
        z = zn
    return head, zn


@pytest.mark.parametrize("body", [_two_names, _the_argument, _a_view])
def test_while_true_names_that_are_another_values_object(body):
    vals = [0.1, -0.3, 0.5, 0.2, 0.01, 0.9, -0.7]
    side_by_side(lambda: (body, {}), [lambda s, v=v: (np.full(3, v) + np.arange(3) * 0.01, s) for v in vals])


def _greedy_decode(tok, st, maxlen):
    h = st["E"][1] * 0.1 * tok
    total = 0.0  # (a NumPy scalar after the first trip, which always runs)
    n = 0
    while True:
        logits = h @ st["W"]
        tok = logits.argmax()  # (an int argument, rebound to a NumPy int before any read)
        total = total + logits[tok]
        n += 1
        if tok == 0 or n >= maxlen:
            break
        h = np.tanh(h + st["E"][tok])
    return total, n, h, tok


def _rebound_to_a_new_shape(x, h):
    while True:
        h = np.concatenate([x, x])
        x = x * 0.5
        if x.max() < 0.1:
            break
    return h, x


def _counts_and_sums(x, st):
    c, s = 0, 0.0
    while True:
        c += (x > 0.5).sum()
        s = s + x.mean()
        x = x * np.float32(0.5)
        if x.max() < 0.1:
            break
    return c, s, x


def test_while_true_names_rebound_before_any_read():
    """`tok = lp.argmax()` of an int argument, `total = total + e` of a Python float, a name
    rebound to an array of another shape: a `while True:` body runs at least once and binds (or
    accumulates into) them before any other read and before its first exit, so the loop node
    carries them from a stand-in (or as NumPy scalars) from the start."""
    rng = np.random.default_rng
    decode = {"W": rng(1).standard_normal((5, 5)), "E": rng(2).standard_normal((5, 5))}
    check(lambda: (_greedy_decode, {k: v.copy() for k, v in decode.items()}),
          [lambda s, i=i: (1 + i % 3, s, 2 + i % 3) for i in range(9)], min_graph_calls=5)
    check(lambda: (_rebound_to_a_new_shape, {}),
          [lambda s, i=i: (np.linspace(0.1, 1.0, 4) * (1 + i), np.zeros(3)) for i in range(8)], min_graph_calls=4)
    check(lambda: (_counts_and_sums, {}),
          [lambda s, i=i: ((np.linspace(0.1, 1.0, 4) * (1 + i)).astype(np.float32), s) for i in range(8)],
          min_graph_calls=4)


def _read_before_rebinding(x, z):
    while True:
        x = x + z  # (z's value before the loop is read on the first trip)
        z = x.max()
        if x.max() > 5.0:
            break
    return x, z


def _rebound_in_a_branch(x, z):
    while True:
        if x.sum() > 1:
            z = x.sum()
        x = x * 0.5
        if np.abs(x).max() < 0.1:
            break
    return z, x


def _accumulated_after_the_break(x, st):
    s = 0.0
    while True:
        x = x * 0.5
        if x.max() < 0.1:
            break
        s = s + x.mean()
    return s, x


@pytest.mark.parametrize("body", [_read_before_rebinding, _rebound_in_a_branch, _accumulated_after_the_break])
def test_while_true_names_whose_start_may_be_read(body):
    """The value before the loop is read (or kept by a trip that leaves first): eager, or equal."""
    side_by_side(lambda: (body, {}), [lambda s, i=i: (np.linspace(0.1, 1.0, 3) * (1 + i), 0) for i in range(8)])


def _read_by_a_closure(x, tok, st):
    def peek():
        return tok

    i = 0
    while True:
        x = x + peek()  # (the first trip reads tok's value before the loop through the closure)
        tok = (x @ st["W"]).argmax()
        i += 1
        if i >= st["k"]:
            break
    return x, tok


def test_while_true_names_a_closure_reads_keep_their_start():
    rng = np.random.default_rng(4)
    W = rng.standard_normal((3, 3))

    def make():
        return _read_by_a_closure, {"W": W.copy(), "k": 1}

    def call(s, i):
        s["k"] = 1 + i % 3
        return np.full(3, 0.1 * i), 3, s

    side_by_side(make, [lambda s, i=i: call(s, i) for i in range(8)])


def _decode_while_one(x, st):
    total, n = 0.0, 0
    while 1:  # (as `while True:`: the body runs at least once)
        lp = x @ st["W"]
        score, tok = lp.max(), int(lp.argmax())  # (first bound by a tuple, read after the loop)
        total = total + score
        n += 1
        if tok == 0 or n >= st["k"]:
            break
        x = np.tanh(lp)
    return total, score, tok, n


def _unpacked_reads_its_start(x, tok, st):
    hist = np.zeros(4)
    n = 0
    while True:
        hist[tok], tok = x.max(), int((x @ st["W"]).argmax())  # (the target reads tok before binding it)
        x = np.tanh(x + 0.1)
        n += 1
        if n >= st["k"]:
            break
    return hist, tok


@pytest.mark.parametrize("body", [_decode_while_one, _unpacked_reads_its_start])
def test_while_one_and_names_bound_by_unpacking(body):
    rng = np.random.default_rng(5)
    W = rng.standard_normal((4, 4))

    def make():
        return body, {"W": W.copy(), "k": 1}

    def call(s, i):
        s["k"] = 1 + i % 3
        x = np.random.default_rng(i).standard_normal(4)
        return (x, s) if body is _decode_while_one else (x, 2, s)

    graphs = 4 if body is _decode_while_one else 0
    check(make, [lambda s, i=i: call(s, i) for i in range(9)], min_graph_calls=graphs)
