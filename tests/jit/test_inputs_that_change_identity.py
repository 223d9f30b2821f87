"""Inputs whose identities change after the warm-up, and reads the generator must not run on the
real object. Each case runs eager and jit side by side and compares results, state and
aliasing after every call:

- one Variable passed as two arguments, or tied into a list, from a later call on (the graph
  read and wrote them as two values, whatever the step wrote);
- `p is t` of two input arrays and a tape's gradient for sources that become one Variable
  (decided at generation, with nothing written);
- a state array that becomes a Variable's own buffer (`v.numpy()`);
- a dict subclass whose `__getitem__` counts reads (the generator ran it on the real object);
- a loop that writes an item ahead of it, or appends to, the list or dict it iterates."""
import numpy as np
import pytest

import janus_like as jl

from .harness import check, fallback_reasons


def _twice(a, b):
    a.assign(a * 0.5 + 1.0)
    b.assign(b * 0.5 + a)


def test_one_variable_passed_as_two_arguments_later():
    make = lambda: (_twice, {"a": jl.Variable(np.ones((2, 2))), "b": jl.Variable(np.zeros((2, 2)))})  # noqa: E731
    check(make, [lambda s, i=i: (s["a"], s["a"] if i >= 5 else s["b"]) for i in range(9)], min_graph_calls=4)


def _tied_list(vs, g):
    for v in vs:
        v.assign_sub(0.5 * g)
    return [float(v.numpy().sum()) for v in vs]


def test_a_list_of_variables_tied_after_the_warm_up():
    def call(vs, i):
        if i == 5:
            vs[1] = vs[0]  # weight tying introduced later
        return vs, np.full((2,), float(i))
    make = lambda: (_tied_list, [jl.Variable(np.ones(2)), jl.Variable(np.ones(2))])  # noqa: E731
    check(make, [lambda s, i=i: call(s, i) for i in range(9)], min_graph_calls=4)


def _is_test(p, t):
    if p is t:
        return p.sum()
    return (p - t).sum()


def test_an_identity_test_of_two_input_arrays_with_nothing_written():
    make = lambda: (_is_test, {"p": np.arange(3.0), "t": np.ones(3)})  # noqa: E731
    check(make, [lambda s, i=i: (s["p"], s["p"] if i >= 5 else s["t"]) for i in range(9)], min_graph_calls=4)


def _grads(x, a, b):
    with jl.GradientTape() as tape:
        loss = np.sum(np.tanh(x @ a) @ b)
    return tape.gradient(loss, [a, b])


def test_gradients_of_sources_that_become_one_variable():
    """Eager returns the tied Variable's whole gradient, as one Tensor for both sources."""
    def make():
        rng = np.random.default_rng(0)
        return _grads, {"a": jl.Variable(rng.standard_normal((3, 3))), "b": jl.Variable(rng.standard_normal((3, 3)))}
    calls = [lambda s, i=i: (np.full((2, 3), 0.1 * (i + 1)), s["a"], s["a"] if i >= 5 else s["b"]) for i in range(9)]
    check(make, calls, min_graph_calls=4)


def _buffer_step(st, x):
    st["raw"] *= 0.5
    st["v"].assign_add(x)
    return st["v"].numpy().sum()


def test_a_state_array_that_becomes_a_variables_buffer():
    def call(st, i):
        if i in (5, 7):
            st["raw"] = st["v"].numpy()
        return st, float(i)
    jf = check(lambda: (_buffer_step, {"v": jl.Variable(np.ones(3)), "raw": np.zeros(3)}),
               [lambda s, i=i: call(s, i) for i in range(9)], min_graph_calls=3)
    assert "view-write" in fallback_reasons(jf), jf.explain()


class CountingDict(dict):
    def __init__(self, *a):
        super().__init__(*a)
        self.hits = 0

    def __getitem__(self, k):
        self.hits += 1
        return super().__getitem__(k)


def _counted(x, cfg, box):
    box["W"] = box["W"] - cfg["lr"] * x * cfg["W"]
    return box["W"].sum()


def test_a_dict_subclass_that_counts_its_reads():
    make = lambda: (_counted, (CountingDict({"W": np.ones(3), "lr": 0.1}), {"W": np.ones(3)}))  # noqa: E731
    jf = check(make, [lambda s, i=i: (np.full(3, float(i)), s[0], s[1]) for i in range(8)], min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0, jf.explain()


def _write_ahead(ps, g):
    seen = []
    for i, p in enumerate(ps):
        seen.append(float(p.sum()))
        if i == 0:
            ps[1] = ps[1] + g
    return seen


def _tied_sync(ps, gs):
    for name, p in ps.items():
        ps[name] = p - 0.1 * gs[name]
        if name == "emb":
            ps["out"] = ps["emb"]
    return ps["out"].sum()


def _append_while_walking(st, g, grow):
    n = 0
    for p in st["ps"]:
        p -= 0.1 * g
        n += 1
        if grow and len(st["ps"]) < 3:
            st["ps"].append(p * 0.5)
    return n


def _add_keys_while_walking(st, g, add):
    for k in st["m"]:
        st["m"][k] = st["m"][k] + g
        if add:
            st["m"][k + "x"] = g
    return len(st["m"])


def _pop_and_put_back(ps, gs):
    for name in ps:  # the same keys and values after each trip, but eager's iterator sees the move
        ps[name] = ps[name] - 0.1 * gs[name]
        ps["out"] = ps.pop("out")
    return ps["out"].sum()


def _update_in_place(ps, gs):
    for name, p in ps.items():  # the usual update: the item at hand is replaced
        ps[name] = p - 0.1 * gs[name]
    for i, p in enumerate(ps["list"]):
        ps["list"][i] = p * 0.5
    return sum(float(v.sum()) for v in ps["list"])


def _reversed_ahead(ps, g):
    seen = []
    for p in reversed(ps):  # a lazy iterator over the list: reads ps[0] last
        seen.append(float(p.sum()))
        ps[0] = ps[0] + g
    return seen


class _Model:
    def __init__(self):
        self.ps = [np.ones(2), np.ones(2), np.ones(2)]

    def parameters(self):
        return self.ps


def _method_ahead(m, g):
    seen = []
    for p in m.parameters():  # the model's own list, through a method
        seen.append(float(p.sum()))
        m.ps[-1] = m.ps[-1] + g
    return seen


def _genexp_ahead(ps, g):
    seen = []
    for p in (q * 1.0 for q in ps):
        seen.append(float(p.sum()))
        ps[-1] = ps[-1] + g
    return seen


@pytest.mark.parametrize("fn,state,args", [
    (_write_ahead, lambda: [np.ones(2), np.ones(2)], lambda s, i: (s, np.full(2, float(i)))),
    (_reversed_ahead, lambda: [np.ones(2), np.ones(2), np.ones(2)], lambda s, i: (s, np.full(2, float(i)))),
    (_method_ahead, _Model, lambda s, i: (s, np.full(2, float(i)))),
    (_genexp_ahead, lambda: [np.ones(2), np.ones(2), np.ones(2)], lambda s, i: (s, np.full(2, float(i)))),
    (_tied_sync, lambda: {"emb": np.ones(3), "out": np.ones(3)},
     lambda s, i: (s, {"emb": np.full(3, float(i)), "out": np.ones(3)})),
    (_append_while_walking, lambda: {"ps": [np.ones(3)]}, lambda s, i: (s, np.full(3, float(i)), i == 6)),
    (_add_keys_while_walking, lambda: {"m": {"a": np.zeros(3)}}, lambda s, i: (s, np.full(3, float(i)), i == 6)),
    (_pop_and_put_back, lambda: {"emb": np.ones(3), "out": np.ones(3)},
     lambda s, i: (s, {"emb": np.full(3, float(i)), "out": np.ones(3)})),
], ids=["write-ahead", "reversed", "method", "genexp", "tied-sync", "append", "add-keys", "pop-put-back"])
def test_a_loop_that_writes_the_container_it_iterates(fn, state, args):
    check(lambda: (fn, state()), [lambda s, i=i: args(s, i) for i in range(8)], min_graph_calls=0)


def test_writes_to_the_item_at_hand_still_run_as_graphs():
    st = lambda: {"a": np.ones(3), "b": np.full(3, 2.0), "list": [np.ones(2), np.ones(2)]}  # noqa: E731
    gs = {"a": np.full(3, 0.5), "b": np.ones(3), "list": np.zeros(2)}
    jf = check(lambda: (_update_in_place, st()), [lambda s: (s, gs)] * 8, min_graph_calls=5)
    assert not fallback_reasons(jf), jf.explain()


def _tied_by_keys(ps, gs):
    for name in ps:  # the keys alone: the body reads each value when it gets to it, as eager does
        ps[name] = ps[name] - 0.1 * gs[name]
        if name == "emb":
            ps["out"] = ps["emb"]
    for name in ps.keys():
        ps[name] = ps[name] * 0.5
        ps["emb"] = ps["emb"] + 1.0
    return ps["out"].sum()


def test_a_loop_over_a_dicts_keys_writing_values_ahead_runs_as_a_graph():
    gs = lambda i: {"emb": np.full(3, float(i)), "out": np.ones(3)}  # noqa: E731
    jf = check(lambda: (_tied_by_keys, {"emb": np.ones(3), "out": np.ones(3)}),
               [lambda s, i=i: (s, gs(i)) for i in range(8)], min_graph_calls=5)
    assert not fallback_reasons(jf), jf.explain()


def _restore(st, x):
    st["p"].update(st["saved"])  # a checkpoint restored into the live dict
    st["p"]["W"] = st["p"]["W"] + x
    return st["p"]["W"].sum()


def test_a_dict_updated_from_another_input_dict():
    """`d.update(other)` of two input dicts was an internal error (eager for good)."""
    jf = check(lambda: (_restore, {"p": {"W": np.ones(2)}, "saved": {"W": np.zeros(2), "b": np.ones(1)}}),
               [lambda s, i=i: (s, float(i)) for i in range(8)], min_graph_calls=4)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
