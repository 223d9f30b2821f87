"""Python containers read with a number the graph computes, and containment in an array:
`class_weight[int(y[i])]` (a dict of per-class loss weights), `scale[k]` of a list, and
`label in top_k` (NumPy's containment: (array == value).any()). Each runs in the graph on the
same Python numbers eager uses; a key the container lacks raises when the graph runs and the
eager re-run raises it for the user; a container changed between calls is not read stale.
"""
import numpy as np
import pytest

import janus_like as jl
from janus_like import F

from .harness import check, fallback_reasons, random_array


def _state(weights):
    r = np.random.default_rng(0)
    return {"w": jl.Variable(r.standard_normal((3, 4)) * 0.3), "class_w": weights, "scale": [1.0, 0.5, 0.25]}


def _calls(n, labels=None):
    def call(s, i):
        y = np.array(labels[i] if labels else [i % 4, (i + 1) % 4, 2])
        return s["m"], random_array(i, (3, 3)), y
    return [lambda s, i=i: call(s, i) for i in range(n)]


def weighted_step(m, x, y):
    weights = np.array([m["class_w"][int(c)] for c in y])
    with jl.GradientTape() as tape:
        logits = x @ m["w"]
        logp = logits - F.logsumexp(logits, axis=1, keepdims=True)
        loss = -F.mean(weights * logp[np.arange(3), y])
    m["w"].assign_sub(0.1 * tape.gradient(loss, m["w"]))
    return loss, m["scale"][int(y[0]) % 3] * 2


@pytest.mark.parametrize("weights", [{0: 1.0, 1: 2.0, 2: 0.5, 3: 1.5}, [1.0, 2.0, 0.5, 1.5]])
def test_per_class_weights_read_with_graph_labels(weights):
    jf = check(lambda: (weighted_step, {"m": _state(weights)}), _calls(12), min_graph_calls=8)
    assert not fallback_reasons(jf), jf.explain()


def test_a_missing_key_raises_as_eager():
    """Label 7 is not a key (call 9): the graph run fails and eager raises KeyError for the user;
    a negative label indexes a list from its end, as eager does."""
    labels = [[0, 1, 2]] * 9 + [[7, 1, 2]] + [[1, 2, 3]] * 3
    check(lambda: (weighted_step, {"m": _state({0: 1.0, 1: 2.0, 2: 0.5, 3: 1.5})}), _calls(13, labels),
          min_graph_calls=8)
    labels = [[0, 1, 2]] * 9 + [[-1, 1, 2]] + [[1, 2, 3]] * 3
    check(lambda: (weighted_step, {"m": _state([1.0, 2.0, 0.5, 1.5])}), _calls(13, labels), min_graph_calls=8)


def test_weights_changed_between_calls_are_read_anew():
    def call(s, i):
        if i == 7:
            s["m"]["class_w"][1] = 5.0
        return s["m"], random_array(i, (3, 3)), np.array([i % 4, 1, 2])

    check(lambda: (weighted_step, {"m": _state({0: 1.0, 1: 2.0, 2: 0.5, 3: 1.5})}),
          [lambda s, i=i: call(s, i) for i in range(12)], min_graph_calls=6)


def test_label_in_top_k():
    def step(m, x, y):
        logits = x @ m["w"]
        top2 = np.argsort(logits[0])[-2:]
        return int(y[0]) in top2, 3 not in top2, logits

    jf = check(lambda: (step, {"m": _state({})}), _calls(12), min_graph_calls=8)
    assert not fallback_reasons(jf), jf.explain()
