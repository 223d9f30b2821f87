"""Python sequences as indices, converted as NumPy converts them: `probs[range(N), y]` (the
softmax loss of many course solutions), `h[range(1, 3), [0, 2]] -= 1.0`, and empty lists or
ranges (NumPy indexes with an empty integer array, where `np.asarray([])` is float). These were
internal errors of the generator (`range` was not an index it knew), so the step ran eagerly.
Eager and jit side by side after every call."""
import numpy as np

from .harness import check, fallback_reasons


def _softmax_step(W, X, y):
    scores = X @ W
    scores -= scores.max(axis=1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=1, keepdims=True)
    N = X.shape[0]
    loss = -np.log(probs[range(N), y]).sum() / N
    dscores = probs.copy()
    dscores[range(N), y] -= 1
    W -= 0.1 * (X.T @ dscores) / N
    return loss


def test_softmax_loss_with_range_rows_is_a_graph():
    def make():
        return _softmax_step, {"W": np.random.default_rng(0).standard_normal((5, 3))}

    def call(st, i):
        r = np.random.default_rng(i)
        n = 6 if i == 5 else 8  # a smaller last batch: another signature
        return st["W"], r.standard_normal((n, 5)), r.integers(0, 3, n)

    jf = check(make, [lambda st, i=i: call(st, i) for i in range(9)], min_graph_calls=4)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_ranges_lists_and_empty_sequences_index_and_write():
    def make():
        def f(h, box):
            box["r"] = h[range(1, 3)] + 1.0
            h[range(2)] += 1.0
            h[range(1, 3), [0, 2]] -= 1.0
            return h[range(3), range(3)], h[range(0)], h[[]], h[range(0, 3, 2)]

        return f, {"box": {}}

    calls = [lambda st, i=i: (np.arange(12.0).reshape(3, 4) * (i + 1), st["box"]) for i in range(7)]
    check(make, calls, min_graph_calls=4)


def test_a_boolean_scalar_index_falls_back_with_a_reason():
    def make():
        def f(h):
            h[np.True_] *= 2.0
            return h[np.False_]

        return f, {}

    jf = check(make, [lambda st, i=i: (np.arange(6.0).reshape(2, 3) + i,) for i in range(6)], min_graph_calls=0)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
