"""Draws from a `numpy.random.Generator` the function reaches through its inputs, side by side
with eager (the Generator's state compared after every call): noise with `rng.normal`, a flip
decided by `rng.random() < 0.5` (a conditional node on a drawn Python float), a shuffle with
`rng.permutation`; a call that fails after drawing puts the Generator back; another Generator
object gets another graph (its identity is guarded)."""
import numpy as np

from .harness import check, fallback_reasons


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


def test_each_generator_object_is_guarded():
    calls = [lambda s, k=k: (np.ones((5, 4)) * k, s["m"] if k % 2 else Model(k)) for k in range(12)]
    jf = check(lambda: (augment_step, {"m": Model()}), calls, min_graph_calls=2)
    assert any(a.kind == "identity" for g in jf.graphs() for a in g.assumptions), jf.explain()
