"""State held outside the arguments in two places the graph read as constants, side by side with
eager: attributes the user gives a jitted function (`train.lr`, `train.history`), and tuples
that hold lists, dicts, arrays or objects (a class attribute `shared = (0, {...})`, a default
`state=(buf,)`, a function attribute). Both are read through guards and written at the commit,
as a plain function's attributes and a class's lists are; the JIT's own attributes of a jitted
function are not the user's."""
import numpy as np

import janus_like as jl

from .harness import check


def _scaled(x):
    return x


class Box:
    def __init__(self, f):
        self.f = f


def read_counter(x, box):
    return x + box.f.calls


def test_a_jitted_functions_attribute_changed_between_calls_is_read_again():
    def make():
        return read_counter, {"box": Box(jl.jit(_scaled))}

    def call(s, i):
        s["box"].f.calls = i  # the training loop bumps train.calls
        return np.ones(2), s["box"]

    check(make, [lambda s, i=i: call(s, i) for i in range(8)])


def log_into(x, box):
    box.f.history.append(float(x.sum()))
    box.f.seen = getattr(box.f, "seen", 0) + 1
    box.f.stats_["n"] = box.f.stats_.get("n", 0) + 1
    return len(box.f.history), hasattr(box.f, "missing")


def test_a_jitted_functions_containers_and_counters_are_written_at_the_commit():
    def make():
        t = jl.jit(_scaled)
        t.history, t.stats_ = [], {}
        return log_into, {"box": Box(t), "hist": t.history, "stats": t.stats_}

    jf = check(make, [lambda s, i=i: (np.ones(2) * i, s["box"]) for i in range(8)])
    assert jf.stats()["graph_calls"] >= 4


class Net:
    shared = (0, {"k": 1.0})  # a tuple holding a dict, on the class

    def fwd(self, x):
        return x + self.shared[1]["k"]


def forward(net, x):
    return net.fwd(x)


def test_a_class_attribute_tuple_holding_a_dict_is_read_again():
    def call(s, i):
        Net.shared[1]["k"] = float(max(i, 3))  # a schedule changes the shared config
        return Net(), np.ones(2)

    try:
        check(lambda: (forward, {}), [lambda s, i=i: call(s, i) for i in range(8)])
    finally:
        Net.shared[1]["k"] = 1.0


def test_a_default_tuple_holding_an_array_is_written_in_place():
    def make():
        buf = np.zeros(2)

        def accumulate(x, state=(buf,)):
            b, = state
            b += x
            return b.sum()

        return accumulate, {"buf": buf}

    check(make, [lambda s, i=i: (np.ones(2) * i,) for i in range(8)])


def test_a_class_tuple_of_containers_is_appended_to_at_the_commit():
    def make():
        class Tracker:
            logs = ([], {})

        def step(x):
            hist, counts = Tracker.logs
            hist.append(x.sum())
            counts["n"] = counts.get("n", 0) + 1
            return len(hist), counts["n"]

        return step, {"logs": Tracker.logs}

    check(make, [lambda s, i=i: (np.ones(2) * i,) for i in range(8)])
