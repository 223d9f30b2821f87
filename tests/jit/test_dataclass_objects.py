"""Dataclass objects made in jitted code: a step's metrics returned as a dataclass, a frozen
train state replaced by `dataclasses.replace` or a namedtuple's `_replace` (as functional
training code does). The object
eager's call makes is built from the graph's values each call (one per eager one); classes
whose `__init__` does more than store its arguments keep the step eager."""
import dataclasses
import typing

import numpy as np
import pytest

from .harness import check, fallback_reasons, random_array


@dataclasses.dataclass
class Metrics:
    loss: float
    acc: float
    grads: list = dataclasses.field(default_factory=list)
    tag: str = "train"

    def summary(self):
        return self.loss + 10.0 * self.acc


@dataclasses.dataclass(frozen=True)
class TrainState:
    step: int
    w: np.ndarray


@dataclasses.dataclass(slots=True)
class Slotted:
    loss: np.ndarray
    n: int


@dataclasses.dataclass
class Checked:
    loss: float

    def __post_init__(self):
        self.loss = max(self.loss, 0.0)  # more than storing: eager


class NTState(typing.NamedTuple):
    step: int
    w: np.ndarray
    lr: float = 0.1


class Report(typing.NamedTuple):
    loss: float
    acc: float = 0.0

    def describe(self):
        return "L=%s acc=%s" % (self.loss, self[1])


def namedtuple_made_step(st, x, y):
    # a namedtuple made in the step: its method reads `self.loss` and `self[1]`, its `_asdict()`
    # iterates it (both gave the graph's internal objects, "Sym(%3, py)", in the text and dict)
    loss, g, _ = _sgd(st["w"], x, y)
    st["w"] -= 0.1 * g
    r = Report(float(loss), float(g[0, 0]))
    d = r._asdict()
    print(d, r)
    return r.describe(), d, d["loss"], str(d)


class Custom:
    def __init__(self, loss):
        self.loss = loss


def _sgd(w, x, y):
    p = x @ w
    return ((p - y) ** 2).mean(), x.T @ (p - y) / len(x), p


def metrics_step(st, x, y):
    loss, g, p = _sgd(st["w"], x, y)
    st["w"] -= 0.1 * g
    m = Metrics(float(loss), acc=float((np.sign(p) == np.sign(y)).mean()))
    m.grads.append(g)  # the default_factory's list, made anew each call
    return m


def replace_step(st, x, y):
    s = st["state"]
    loss, g, _ = _sgd(s.w, x, y)
    st["state"] = dataclasses.replace(s, step=s.step + 1, w=s.w - 0.1 * g)
    return loss


def stored_and_returned(st, x, y):
    loss, g, _ = _sgd(st["w"], x, y)
    st["w"] -= 0.1 * g
    m = Metrics(loss, 0.0)
    st["last"] = m  # the same object stored and returned, as eager's
    st["log"].append(m)
    return m, m.summary()


def slotted_step(st, x, y):
    loss, g, _ = _sgd(st["w"], x, y)
    st["w"] -= 0.1 * g
    return Slotted(loss, len(x))


def printed_step(st, x, y):
    loss, g, _ = _sgd(st["w"], x, y)
    st["w"] -= 0.1 * g
    m = Metrics(round(float(loss), 6), 0.5, tag="eval")
    print(m)
    return f"{m.tag}: {m}"


def post_init_step(st, x, y):
    loss, g, _ = _sgd(st["w"], x, y)
    st["w"] -= 0.1 * g
    return Checked(float(loss) - 1.0)


def custom_init_step(st, x, y):
    loss, g, _ = _sgd(st["w"], x, y)
    st["w"] -= 0.1 * g
    return Custom(loss)


def written_after_made(st, x, y):
    loss, g, _ = _sgd(st["w"], x, y)
    st["w"] -= 0.1 * g
    m = Metrics(float(loss), 0.0)
    m.acc = 1.0  # a write to the new object: into its own dict, built at the commit
    return m


def namedtuple_replace_step(st, x, y):
    s = st["nt"]
    loss, g, _ = _sgd(s.w, x, y)
    st["nt"] = s._replace(step=s.step + 1, w=s.w - s.lr * g)  # the counter: read as an input
    return loss, s._asdict()


def extended_log(st, x, y):
    loss, g, p = _sgd(st["w"], x, y)
    st["w"] -= 0.1 * g
    st["log"].extend(Metrics(float(v), 0.0) for v in p[:, 0])  # a log only extended: not read
    return loss


def vars_of_made(st, x, y):
    loss, g, _ = _sgd(st["w"], x, y)
    m = Metrics(float(loss), 0.0)
    d = vars(m)  # its own dict: eager's `d is m.__dict__` (the graph built them apart: a wrong identity)
    d["acc"] = 1.0
    return m, d


def dict_of_made(st, x, y):
    loss, g, _ = _sgd(st["w"], x, y)
    m = Metrics(float(loss), 0.0)
    return m, m.__dict__


def _calls(n=12):
    return [lambda s, i=i: (s, random_array(i, (8, 4)), random_array(i + 100, (8, 2))) for i in range(n)]


def _state():
    return {"w": random_array(7, (4, 2)), "state": TrainState(0, random_array(8, (4, 2))), "log": [],
            "nt": NTState(0, random_array(9, (4, 2)))}


@pytest.mark.parametrize("fn", [metrics_step, replace_step, stored_and_returned, slotted_step, printed_step,
                                namedtuple_replace_step, extended_log, custom_init_step, written_after_made,
                                namedtuple_made_step])
def test_objects_made_in_the_step(fn):
    jf = check(lambda: (fn, _state()), _calls(), min_graph_calls=9)
    assert jf.stats()["fallbacks"] == 0 and jf.stats()["regenerations"] == 0, jf.explain()


@pytest.mark.parametrize("fn", [post_init_step, vars_of_made, dict_of_made])
def test_objects_whose_construction_does_more_stay_eager(fn):
    jf = check(lambda: (fn, _state()), _calls(6), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and "object-construction" in fallback_reasons(jf), jf.explain()


def test_each_call_returns_its_own_object():
    jf = check(lambda: (metrics_step, _state()), _calls(8), min_graph_calls=4)
    st = _state()
    a, b = jf(st, *_calls()[0](st)[1:]), jf(st, *_calls()[1](st)[1:])
    assert a is not b and a.grads is not b.grads
