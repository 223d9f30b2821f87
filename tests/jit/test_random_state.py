"""Draws from a `np.random.RandomState` instance (`self.rng = np.random.RandomState(seed)` of
older RL and data code): draw nodes on that very object, as for a Generator, with its state
(the cached Gaussian of `randn` too) put back when a graph run fails.

Each test compares eager and jit side by side after every call (the harness compares
RandomState objects by their state) and checks that graphs ran.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from .harness import call_sequence, check, random_array


def _calls(n, shape=(3,)):
    return call_sequence(n, lambda s, i: (random_array(i, shape), s))


def test_draws_from_a_random_state_in_the_state():
    def make():
        state = {"W": np.ones((3, 2)), "rng": np.random.RandomState(0)}

        def step(x, st):
            noise = st["rng"].randn(3, 2) * 0.01  # (six Gaussians: none left cached)
            st["W"] -= 0.1 * np.outer(x, x @ st["W"]) + noise
            return float(st["W"].sum()) + st["rng"].randn()  # (one: its pair stays cached)

        return step, state

    jf = check(make, _calls(8))
    assert jf.stats()["graph_calls"] == 5


def test_draws_from_a_random_state_in_a_closure():
    def make():
        rng = np.random.RandomState(1)
        state = {"W": np.ones((3, 2)), "log": rng}

        def step(x, st):
            idx = rng.randint(0, 3, size=4)
            mask = rng.rand(3, 2) < 0.5
            u = rng.uniform(-1, 1)
            st["W"] += np.where(mask, u, 0.0) + x[idx].sum()
            return float(st["W"].sum()), rng.random_sample(2), rng.standard_normal((2,)), rng.normal(0.0, 2.0)

        return step, state

    check(make, _calls(8))


def test_draws_with_arguments_the_graph_computes():
    def make():
        state = {"rng": np.random.RandomState(2), "counts": np.zeros(3)}

        def step(x, st):
            p = np.exp(x) / np.exp(x).sum()
            a = st["rng"].choice(3, p=p)
            st["counts"][a] += 1.0
            coin = st["rng"].binomial(1, 1.0 / (1.0 + np.exp(-x)))
            return int(a), coin, st["rng"].normal(x, 0.1)

        return step, state

    check(make, _calls(10))


def test_a_new_random_state_every_call_runs_one_graph():
    def make():
        def step(x, rng):
            return x + rng.randn(3), rng.randint(10)

        return step, {}

    jf = check(make, call_sequence(8, lambda s, i: (random_array(i, (3,)), np.random.RandomState(i))))
    assert jf.stats()["graph_calls"] == 5


def test_state_put_back_when_an_assumption_fails_after_a_draw():
    def make():
        state = {"rng": np.random.RandomState(3), "w": np.zeros(3)}

        def step(x, st):
            noise = st["rng"].randn(3)  # (three: one cached after)
            if x.sum() > 0:
                st["w"] += x + noise
            else:
                st["w"] -= x + noise
            return st["rng"].rand()

        return step, state

    signs = [1, 1, 1, 1, -1, 1, -1, -1, 1, -1]
    check(make, [lambda s, sg=sg, i=i: (np.abs(random_array(i, (3,))) * sg, s) for i, sg in enumerate(signs)])


def test_shuffle_and_permutation():
    def make():
        state = {"rng": np.random.RandomState(4)}

        def step(x, st):
            idx = np.arange(6)
            st["rng"].shuffle(idx)
            rows = x[idx]
            order = st["rng"].permutation(6)
            return rows[order[:3]].sum(axis=0), idx, order

        return step, state

    check(make, call_sequence(7, lambda s, i: (random_array(i, (6, 2)), s)))


def test_minibatch_indices_of_a_random_state():
    def make():
        X = random_array(99, (20, 3))
        state = {"W": np.zeros((3, 1)), "rng": np.random.RandomState(5)}

        def step(bs, st):
            idx = st["rng"].randint(0, X.shape[0], size=bs)
            xb = X[idx]
            g = xb.T @ (xb @ st["W"] - 1.0) / bs
            st["W"] -= 0.1 * g
            return float(np.mean(g))

        return step, state

    check(make, call_sequence(8, lambda s, i: (4, s)))


@pytest.mark.parametrize("body", ["seed", "get_state", "set_state"])
def test_seeding_and_state_calls_stay_eager(body):
    def make():
        rng = np.random.RandomState(6)
        saved = rng.get_state()
        state = {"rng": rng}

        def step(x, st):
            if body == "seed":
                st["rng"].seed(7)
            elif body == "get_state":
                st["last"] = st["rng"].get_state()[2]
            else:
                st["rng"].set_state(saved)
            return x + st["rng"].rand(3)

        return step, state

    check(make, _calls(6), min_graph_calls=0)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(["randn", "rand", "randint", "normal", "uniform", "choice", "sign"]),
                min_size=1, max_size=5),
       st.lists(st.integers(-3, 3), min_size=6, max_size=9))
def test_generated_draw_sequences(methods, signs):
    """Sequences of draws from one RandomState, with a branch whose outcome the calls change."""
    def make():
        state = {"rng": np.random.RandomState(8), "acc": np.zeros(2)}

        def step(x, st):
            rng, out = st["rng"], x.copy()
            for m in methods:
                if m == "randn":
                    out = out + rng.randn(2)
                elif m == "rand":
                    out = out * rng.rand()
                elif m == "randint":
                    out = out + rng.randint(0, 5, size=2)
                elif m == "normal":
                    out = out + rng.normal(out, 0.5)
                elif m == "uniform":
                    out = out - rng.uniform(-1.0, 1.0, size=2)
                elif m == "choice":
                    out = out + rng.choice(4)
                elif out.sum() > 0:
                    st["acc"] += out
                else:
                    st["acc"] -= rng.rand(2)
            return out

        return step, state

    check(make, [lambda s, v=v, i=i: (random_array(i, (2,)) + v, s) for i, v in enumerate(signs)], min_graph_calls=0)


def test_a_random_state_on_another_bit_generator():
    """`RandomState(np.random.PCG64(0))`: its state is saved without the legacy tuple, which
    warns for bit generators other than MT19937."""
    def make():
        state = {"rng": np.random.RandomState(np.random.PCG64(0))}

        def step(x, st):
            return x + st["rng"].randn(*x.shape)

        return step, state

    check(make, _calls(6))


class _Scaled(np.random.RandomState):
    def randn(self, *shape):
        return super().randn(*shape) * 0.5


def test_a_subclass_calling_its_base_stays_eager_and_agrees():
    def make():
        state = {"rng": _Scaled(0)}

        def step(x, st):
            return x + st["rng"].randn(*x.shape)

        return step, state

    jf = check(make, _calls(6), min_graph_calls=0)
    assert "recursion" not in jf.explain(), jf.explain()


def test_a_generator_swapped_in_raises_eagers_error():
    def make():
        state = {"rng": np.random.RandomState(9)}

        def step(x, st):
            return x.sum() + st["rng"].randn(3).sum()

        return step, state

    def call(s, i):
        s["rng"] = np.random.default_rng(1) if i == 5 else np.random.RandomState(7) if i == 6 else s["rng"]
        return random_array(i, (3,)), s

    jf = check(make, [lambda s, i=i: call(s, i) for i in range(9)])
    assert "internal-error" not in jf.explain(), jf.explain()
