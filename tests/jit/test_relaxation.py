"""A value relaxed in one signature is read as an input by the others (jit/failures.py): a token
counter kept on the model changes every call whatever the sequence length, so once one length's
graphs relaxed it, every other length's graph reads it too instead of failing twice first."""
import collections
import types

import numpy as np

import janus_like as jl
from janus_like import F

from .harness import check


class RNN:
    def __init__(self):
        r = np.random.default_rng(0)
        self.wx = jl.Variable(r.standard_normal((5, 8)) * 0.3)
        self.wh = jl.Variable(r.standard_normal((8, 8)) * 0.3)
        self.tokens = 0


def step(m, xs, ys):
    h = np.zeros((xs.shape[1], 8))
    with jl.GradientTape() as tape:
        loss = 0.0
        for t in range(len(xs)):
            h = np.tanh(xs[t] @ m.wx + h @ m.wh)
            loss = loss + F.cross_entropy(h[:, :5], ys[t])
    grads = tape.gradient(loss, [m.wx, m.wh])
    m.wx.assign_sub(0.1 * grads[0])
    m.wh.assign_sub(0.1 * grads[1])
    m.tokens += xs.shape[0] * xs.shape[1]
    return loss


def test_a_value_relaxed_in_one_signature_is_an_input_in_the_others():
    rng = np.random.default_rng(1)
    seqs = [(rng.standard_normal((t, 3, 5)), rng.integers(0, 5, (t, 3))) for t in (4, 6, 5, 7, 4, 9, 3)]
    calls = [lambda m, k=k: (m["m"], *seqs[k % 7]) for k in range(21)]
    jf = check(lambda: (step, {"m": RNN()}), calls, min_graph_calls=12)
    assert jf.stats()["eager_calls"] <= 3, jf.explain()


class Counters:
    def __init__(self):
        self.step = 0
        self.stats = {"n": 0, "loss": 0.0}
        self.opt = types.SimpleNamespace(t=0)


def counted_step(m, x):
    m.step += 1
    m.stats["n"] += x.shape[0]
    m.opt.t += 1
    y = (x * m.opt.t).sum()
    m.stats["loss"] += float(y)
    return y / m.step


def test_a_counter_updated_in_place_is_read_as_an_input_from_the_first_graph():
    """`m.step += 1`, `m.stats["n"] += k`: the profiler records the value the target held before
    (profiler/instrument.visit_AugAssign), so the warm-up calls show it changing and the first
    graph reads it when it runs; before, the graph took each counter's value at generation for
    a constant and two calls fell back per counter before it was relaxed."""
    calls = [lambda s, k=k: (s["m"], np.random.default_rng(k).standard_normal((3 + k % 2, 4))) for k in range(9)]
    jf = check(lambda: (counted_step, {"m": Counters()}), calls, min_graph_calls=6)
    assert jf.stats()["fallbacks"] == 0 and jf.stats()["regenerations"] == 0, jf.explain()


def read_by_methods(m, x):
    m.stats["n"] = m.stats.get("n", 0) + x.shape[0]
    carry = m.pending.pop("carry", 0.0)
    m.pending["carry"] = float(x.sum())
    first = m.stats.setdefault("first", 1.5)
    return x.sum() * carry + first * m.stats["n"]


def test_items_read_through_dict_methods_are_read_as_inputs_from_the_first_graph():
    """`d.get(k, 0)`, `d.pop(k, 0.0)`, `d.setdefault(k, v)` record the item they find by
    container and key (profiler/instrument._reading_item), as `d[k]` does: an item that changes
    every call is an input of the first graph, not a value speculated until two calls fail."""
    def make():
        m = types.SimpleNamespace(stats={}, pending={})
        return read_by_methods, {"m": m}
    calls = [lambda s, k=k: (s["m"], np.random.default_rng(k).standard_normal((3 + k % 2, 4))) for k in range(9)]
    jf = check(make, calls, min_graph_calls=6)
    assert jf.stats()["fallbacks"] == 0 and jf.stats()["regenerations"] == 0, jf.explain()


def loss_scaled(m, x, overflow):
    g = x * m.scale
    if overflow:
        m.scale /= 2.0
        return None
    m.scale *= m.growth if m.steps % 4 == 3 else 1.0
    m.steps += 1
    return g.sum() / m.scale


def test_a_float_the_function_assigns_is_an_input_though_warm_up_never_changed_it():
    """A loss scale halved on the rare overflow step that no warm-up call took: the function
    assigns `m.scale` (source.state_written_reads), so the graph reads it when it runs rather
    than speculating on its warm-up value and failing on every call after the first change."""
    def make():
        return loss_scaled, {"m": types.SimpleNamespace(scale=1024.0, growth=2.0, steps=0)}
    calls = [lambda s, k=k: (s["m"], np.full((2, 3), float(k)), k in (5, 9)) for k in range(14)]
    jf = check(make, calls, min_graph_calls=6)
    assert not [fb for fb in jf.fallbacks() if ".scale" in fb.detail], jf.explain()


def per_column_metrics(m, x):
    for i in range(x.shape[1]):
        m.metrics[f"err_{i}"] = float(np.abs(x[:, i]).mean())
    m.metrics["scale"] = m.metrics.get("scale", 1.0) * 0.5
    return sum(m.metrics.values()) * x


def test_float_items_of_a_dict_the_function_writes_are_inputs_from_the_first_graph():
    """A dict of metrics the step fills under computed keys (`m[f"err_{i}"] = ...`) and then
    reads back whole: its float items change every call, so they are read as inputs where the
    graph copies the dict to write it (containers.shadow), not speculated key by key."""
    def make():
        return per_column_metrics, {"m": types.SimpleNamespace(metrics={})}
    calls = [lambda s, k=k: (s["m"], np.random.default_rng(k).standard_normal((3, 4))) for k in range(9)]
    jf = check(make, calls, min_graph_calls=6)
    assert jf.stats()["fallbacks"] == 0 and jf.stats()["regenerations"] == 0, jf.explain()



def counted_in_defaults(m, x):
    m.freq["tokens"] += x.shape[0]
    m.seen["steps"] += 1
    m.hist[x.shape[0]].append(float(x.sum()))
    return x * 2.0


def test_counts_in_a_defaultdict_or_counter_are_inputs_from_the_first_graph():
    """`freq["tokens"] += n` on a Counter, `seen["steps"] += 1` on a defaultdict(int): the profiler
    reads the target ahead of the assignment where the key is there (no `__missing__` runs), as
    for a plain dict, so the counts are inputs of the first graph; before, each count was
    speculated on until two calls failed. The model is a SimpleNamespace, whose attributes are
    read as object's are (its `__getattribute__` is its own slot wrapper). A key the dict lacks on
    a later call (a new batch size in `hist`) is inserted as eager does."""
    def make():
        m = types.SimpleNamespace(freq=collections.Counter(), seen=collections.defaultdict(int),
                                  hist=collections.defaultdict(list))
        return counted_in_defaults, {"m": m}
    calls = [lambda s, k=k: (s["m"], np.full((3 + (k == 9), 2), 0.5 * k)) for k in range(11)]
    jf = check(make, calls, min_graph_calls=6)
    assert not [fb for fb in jf.fallbacks() if "value of" in fb.detail], jf.explain()
