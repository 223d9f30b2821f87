"""Draws from a `numpy.random.Generator` the function reaches through its inputs, side by side
with eager (the Generator's state compared after every call): noise with `rng.normal`, a flip
decided by `rng.random() < 0.5` (a conditional node on a drawn Python float), a shuffle with
`rng.permutation`; a call that fails after drawing puts the Generator back; another Generator
object runs the same graph (its type is guarded, and the graph draws from the object the input
holds at the call: a new Generator every epoch). Draws whose arguments the graph computes
(`rng.binomial(1, p)` of a Gibbs step, `np.random.choice(n, p=probs)` of a policy) run in the
graph too, and arguments eager rejects raise eager's error."""
import random

import numpy as np

import janus_like as jl

from .harness import check, fallback_reasons, random_array


class Model:
    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.w = np.eye(4) * 0.5


def augment_step(x, m):
    if m.rng.random() < 0.5:
        x = x[:, ::-1]
    noise = m.rng.normal(0.0, 0.1, size=x.shape)
    h = np.tanh((x + noise) @ m.w)
    order = m.rng.permutation(len(x))
    m.w = m.w - 0.01 * (x[order].T @ h[order])
    return h.sum(), int(m.rng.integers(0, 10))


def _calls(n, big=()):
    return [lambda s, k=k: (np.random.default_rng(k).standard_normal((5, 4)) * (50.0 if k in big else 1.0), s["m"])
            for k in range(n)]


def test_generator_draws_run_in_the_graph_in_eagers_order():
    jf = check(lambda: (augment_step, {"m": Model()}), _calls(16), min_graph_calls=10)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def noisy_with_check(x, m):
    noise = m.rng.standard_normal(x.shape)
    y = x + noise
    if np.max(np.abs(y)) > 20.0:  # never seen in the warm-up: an assert after the draw
        y = y * 0.0
    m.w = m.w + 0.0
    return y


def test_a_failed_run_restores_the_generator():
    # calls 8 and 11 fail the assert after drawing: eager re-runs them from the same state
    jf = check(lambda: (noisy_with_check, {"m": Model()}), _calls(14, big=(8, 11)), min_graph_calls=8)
    assert jf.stats()["assert_failures"] >= 1, jf.stats()


def _one_graph_draws_from_slots(jf, graphs=1):
    assert jf.stats()["graphs_generated"] == graphs, jf.explain()
    assert not any(a.kind == "identity" and "rng" in a.site for g in jf.graphs() for a in g.assumptions)
    draws = [n for g in jf.graphs() for n in g.graph.all_nodes() if n.op == "draw_of"]
    assert draws and all(type(n.params["rng"]).__name__ == "SlotRng" for n in draws), jf.explain()


def test_another_generator_object_runs_the_same_graph():
    # a new Model (a new Generator, a new w) on every other call, and one Model kept between
    calls = [lambda s, k=k: (np.ones((5, 4)) * k, s["m"] if k % 2 else Model(k)) for k in range(12)]
    jf = check(lambda: (augment_step, {"m": Model()}), calls, min_graph_calls=8)
    _one_graph_draws_from_slots(jf)


def epoch_step(x, w, rng, rng2):
    noise = rng.normal(0.0, 0.1, size=x.shape)  # rng2 is rng on some calls: draws interleave
    keep = rng2.random(x.shape) > 0.2
    z = (x + noise) * keep
    if np.max(np.abs(z)) > 40.0:  # never seen in the warm-up: an assert after the draws
        z = z * 0.0
    y = np.tanh(z) @ w
    w -= 0.01 * x.T @ y
    return float(y.sum()), int(rng.integers(0, 100))


def _epochs(n, big=(), bit_generators=(np.random.PCG64,)):
    """Calls of epoch_step with a new Generator every third call (the bit generator cycling
    through `bit_generators`), the second generator the first one on odd epochs."""
    def call(s, k):
        if k % 3 == 0:
            bits = bit_generators[(k // 3) % len(bit_generators)]
            s["rng"], s["rng2"] = np.random.Generator(bits(k)), np.random.default_rng(100 + k)
            if (k // 3) % 2:
                s["rng2"] = s["rng"]
        x = np.random.default_rng(k).standard_normal((5, 4)) * (80.0 if k in big else 1.0)
        return x, s["w"], s["rng"], s["rng2"]
    return [lambda s, k=k: call(s, k) for k in range(n)]


def test_a_new_generator_every_epoch_runs_one_graph():
    """A training loop that makes its Generators anew each epoch (of another bit generator on
    some epochs) runs one graph for each way its arguments alias (one Generator passed twice on
    odd epochs: two graphs, however many epochs): each draw is made from the Generator the
    input holds at the call, in eager's order, and a call that fails after drawing puts each of
    them back (call 10), in the fused call and in the full path."""
    make = lambda: (epoch_step, {"w": np.eye(4), "rng": None, "rng2": None})
    bits = (np.random.PCG64, np.random.Philox, np.random.MT19937)
    jf = check(make, _epochs(36, big=(10,), bit_generators=bits), min_graph_calls=24)
    _one_graph_draws_from_slots(jf, graphs=2)
    assert jf.stats()["assert_failures"] == 1, jf.stats()
    assert sorted(g.generator_slots for g in jf.graphs()) == [[2], [2, 3]], jf.explain()
    assert all(g.fast is not None for g in jf.graphs())
    g = next(g for g in jf.graphs() if g.generator_slots == [2, 3])
    # the full path (try_run) puts the input's Generators back too
    rng, rng2 = np.random.default_rng(7), np.random.default_rng(8)
    before = (rng.bit_generator.state, rng2.bit_generator.state)
    status, _ = g.try_run((np.full((5, 4), 80.0), np.eye(4), rng, rng2))
    assert status == "assert" and (rng.bit_generator.state, rng2.bit_generator.state) == before


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def gibbs_step(v0, m):
    ph = _sig(v0 @ m.w)
    h = m.rng.binomial(1, ph)  # an array of probabilities the graph computes
    pv = _sig(h @ m.w.T)
    v1 = m.rng.normal(pv, 0.1 + 0.01 * float(pv.mean()))  # an array and a Python number
    if np.max(np.abs(v1 + v0)) > 20.0:  # never seen in the warm-up: an assert after the draws
        v1 = v1 * 0.0
    m.w = m.w + 0.05 * (v0.T @ ph - v1.T @ _sig(v1 @ m.w)) / len(v0)
    return float(np.mean((v0 - pv) ** 2)), h


def test_draws_of_computed_probabilities_and_means_run_in_the_graph():
    calls = _calls(16, big=(9,))
    jf = check(lambda: (gibbs_step, {"m": Model()}), calls, min_graph_calls=10)
    assert any(n.op == "draw_of" for g in jf.graphs() for n in g.graph.all_nodes()), jf.explain()
    assert jf.stats()["assert_failures"] >= 1, jf.stats()  # call 9 drew, failed and was put back


def policy(s, table):
    z = s @ table["w"]
    p = np.exp(z - z.max())
    p /= p.sum()
    a = np.random.choice(3, p=p)  # the NumPy global RNG, with the graph's probabilities
    q = float(p[0])
    coin = np.random.choice(2, p=[1.0 - q, q])  # a list of Python numbers the graph computes
    flip = table["r"].gauss(q, 1.0)  # a random.Random with a graph mean
    table["w"] += 0.1 * np.outer(s, np.eye(3)[a] - p)
    return a, coin, flip, float(np.log(p[a]))


def test_a_policys_choice_from_the_graphs_probabilities():
    make = lambda: (policy, {"t": {"w": np.random.default_rng(1).standard_normal((4, 3)), "r": random.Random(3)}})
    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal(4), s["t"]) for k in range(14)]
    jf = check(make, calls, min_graph_calls=9)
    # the plan calls the methods themselves (not the registry's kernel filling templates), and the
    # steady-state call is the fused function, which saves and restores the RNGs itself
    for g in jf.graphs():
        assert "random_choice(3, p=v" in g.plan.source and ".gauss(" in g.plan.source, g.plan.source
        assert g.fast is not None


def bad_probabilities(x, m):
    p = np.abs(x[0]) / np.abs(x[0]).sum()
    return m.rng.choice(4, size=2, p=p * x[1, 0])  # p no longer sums to 1 when x[1, 0] != 1


def test_probabilities_eager_rejects_raise_eagers_error():
    # call 7's probabilities sum to 3: eager raises ValueError, and so does the jitted call (the
    # harness compares the exceptions, and the Generator's state after it)
    calls = [lambda s, k=k: (np.where(np.arange(20).reshape(5, 4) == 4, 1.0 if k != 7 else 3.0,
                                      np.random.default_rng(k).random((5, 4)) + 0.1), s["m"]) for k in range(10)]
    jf = check(lambda: (bad_probabilities, {"m": Model()}), calls, min_graph_calls=5)
    assert "user-error" in fallback_reasons(jf), jf.explain()


def global_draws_then_check(x, m, gauss):
    mask = np.random.rand(*x.shape) > 0.3  # (the global RNG: its state is saved by a copy of its struct)
    picks = np.random.choice(5, 3, p=np.full(5, 0.2))
    noise = np.random.randn(3) if gauss else 0.0  # an odd count: the legacy Gaussian cache is left full
    y = x * mask + picks.sum() + np.sum(noise)
    if np.max(np.abs(y)) > 20.0:  # never seen in the warm-up: an assert after the draws
        y = y * 0.0
    m.w = m.w + 0.0
    return y


def test_a_failed_run_puts_the_global_rng_back_exactly():
    for gauss in (False, True):  # a struct copy; get_state() where the Gaussian cache is involved
        calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal((5, 4)) * (50.0 if k in (7, 10) else 1.0),
                                 s["m"], gauss) for k in range(14)]
        jf = check(lambda: (global_draws_then_check, {"m": Model()}), calls, min_graph_calls=8)
        assert jf.stats()["assert_failures"] >= 1, jf.stats()
        assert all(g.gauss_free is not gauss for g in jf.graphs()), jf.explain()
        # a failed run leaves the state as it found it, the legacy Gaussian cache included
        speculating = jl.jit(global_draws_then_check)
        m = Model()
        for k in range(5):
            speculating(calls[k]({"m": m})[0], m, gauss)
        np.random.seed(3)
        np.random.randn(1)  # the cache full
        before = np.random.get_state()
        status, _ = speculating.graphs()[0].try_run((calls[7]({"m": m})[0], m, gauss))
        after = np.random.get_state()
        assert status == "assert" and before[2:] == after[2:] and np.array_equal(before[1], after[1])


def test_sum_adds_each_item_as_the_generator_gives_it():
    """`sum(push(v) for v in xs)` where each item is a buffer the next one writes in place: Python's
    sum adds the first before the second is made (a tree encoder whose shared leaf moves on each
    visit); collecting the items first added the buffer's last value twice."""
    def step(st, x):
        buf = st["buf"]

        def push(v):
            buf[...] = 0.5 * buf + v
            return buf

        return sum(push(v) for v in (x, 2 * x)), sum((push(v) for v in (x,)), np.ones(3)), \
            sum(float(v.sum()) for v in (x, x)), sum(map(push, (x, x)))

    check(lambda: (step, {"buf": np.zeros(3)}), [lambda s, i=i: (s, random_array(i, (3,))) for i in range(10)],
          min_graph_calls=5)


def test_next_in_a_loop_whose_count_the_graph_reads_stays_eager():
    """`for _ in range(accum): W -= lr * next(it)` with `accum` varying: the loop became a loop
    node, whose body is generated once, and `next(it)` ran once, its item a constant of every
    trip. Now such a body is refused (the calls run eagerly and agree)."""
    def make():
        def step(W, n, data):
            it = iter(data)
            for _ in range(n):
                W -= 0.01 * next(it)
            g = (k for k in range(10))
            for _ in range(n):
                next(g)
            return W.sum() * len(list(g))

        return step, {"W": np.ones(3), "data": [np.full(3, float(k)) for k in range(10)]}

    check(make, [lambda s, i=i: (s["W"], 2 if i < 6 else 3 + i % 3, s["data"]) for i in range(11)],
          min_graph_calls=3)
