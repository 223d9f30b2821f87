"""`match` statements in jitted code: on a configuration string, an enum member or a size the
graph does not compute, the case that matches is the one the graph holds (value, singleton,
capture, wildcard and `|` patterns, guards, a `return` in a case); a subject the graph computes
and sequence or class patterns keep the step eager. Side by side with eager on every call."""
import enum

import numpy as np
import pytest

from .harness import call_sequence, check, fallback_reasons, load_module, random_array


class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2


class Net:
    def __init__(self, act, mode, lr=0.1):
        self.act, self.mode, self.lr = act, mode, lr
        self.w = random_array(1, (4, 3))

    def activate(self, z):
        match self.act:
            case "relu" | "gelu":
                return np.maximum(z, 0.0)
            case "tanh":
                return np.tanh(z)
            case None:
                return z
            case other:
                raise ValueError(f"unknown activation {other!r}")


def step(net, x):
    h = net.activate(x @ net.w)
    match net.mode:
        case Mode.TRAIN if net.lr > 0.05:
            scale = net.lr
        case Mode.TRAIN:
            scale = 0.05
        case Mode.EVAL:
            return h.sum()  # no update
    match len(x) % 3:
        case 0 | 1 as r:
            scale = scale * (r + 1)
        case _:
            scale = -scale
    net.w -= scale * x.T @ h
    loss = float((h ** 2).mean())
    if loss > 1e6:  # never: speculated from the warm-up's profile
        net.w[:] = 0.0
    return loss


@pytest.mark.parametrize("act, mode, lr, n", [("relu", Mode.TRAIN, 0.1, 5), ("gelu", Mode.TRAIN, 0.01, 6),
                                              ("tanh", Mode.EVAL, 0.1, 4), (None, Mode.TRAIN, 0.1, 7),
                                              ("swish", Mode.TRAIN, 0.1, 5)])
def test_match_on_constants_side_by_side(act, mode, lr, n):
    calls = call_sequence(10, lambda s, i: (s["net"], random_array(i, (n, 4))))
    jf = check(lambda: (step, {"net": Net(act, mode, lr)}), calls, min_graph_calls=0 if act == "swish" else 7)
    if act == "swish":  # eager's ValueError on every call
        assert jf.stats()["graph_calls"] == 0, jf.explain()
    else:
        assert jf.stats()["fallbacks"] == 0, jf.explain()


@pytest.mark.parametrize("body, reason", [
    ("match int(x.sum() > 0):\n        case 1:\n            return x\n        case _:\n            return -x",
     "data-dependent-python"),
    ("match x.shape:\n        case (a, b):\n            return x * a\n    return x", "unsupported-syntax"),
    ("match \"ab\":\n        case str(v):\n            return x * len(v)\n    return x", "unsupported-syntax")])
def test_match_on_graph_values_or_structure_stays_eager(tmp_path, body, reason):
    module = load_module(tmp_path, f"def f(x, k):\n    {body}\n", f"match_{abs(hash(body))}")
    calls = call_sequence(6, lambda s, i: (random_array(i, (2, 3)), i))
    jf = check(lambda: (module.f, {}), calls, min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and reason in fallback_reasons(jf), jf.explain()
