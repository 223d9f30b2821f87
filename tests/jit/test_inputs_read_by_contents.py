"""What the call reads from its inputs must be guarded by what it is, not only by its type:
index containers (a list of ids, a slice, a tuple position), objects used as dict keys or
found `in` a list (optimizer state keyed by parameters), and attributes found missing (set
later on the object's class, a base class or a config module). Each case changes the input
between calls and runs eager and jit side by side."""
import types

import numpy as np

from .harness import check, random_array


def gather(st, ids):
    return st["E"][ids].sum(0)


def test_an_index_from_the_arguments_is_read_by_its_contents():
    """`E[ids]` with ids a Python list the call passes (embedding ids), a slice, a tuple: the
    graph kept the first call's positions (wrong from the second graph call)."""
    table = lambda: {"E": np.arange(12.0).reshape(6, 2)}  # noqa: E731
    check(lambda: (gather, table()), [lambda s, i=i: (s, [i % 6, (i + 1) % 6]) for i in range(10)],
          min_graph_calls=2)
    check(lambda: (gather, table()), [lambda s, i=i: (s, slice(0, 2) if i < 6 else slice(2, 5)) for i in range(10)],
          min_graph_calls=4)
    check(lambda: (gather, table()), [lambda s, i=i: (s, (0, 1) if i < 6 else (5, 0)) for i in range(10)],
          min_graph_calls=4)


class Param:
    def __init__(self, w):
        self.w = w


def momentum(params, grads, slots, frozen):
    for p, g in zip(params, grads):
        if p in frozen:
            continue
        m = slots.setdefault(p, np.zeros_like(p.w))  # (keyed by the parameter object)
        m *= 0.9
        m += g
        p.w = p.w - 0.1 * m
    return len(slots)


def test_objects_as_dict_keys_and_in_lists_are_the_inputs_objects():
    """Optimizer state keyed by parameter objects: `setdefault` with an object key found none
    (wrong from the first graph call), and a parameter replaced between calls was updated with
    the old one's momentum (the graph held the object it saw, unguarded)."""
    def make():
        return momentum, {"ps": [Param(np.zeros(3)), Param(np.zeros(2))], "slots": {}, "frozen": []}

    def call(s, i):
        if i == 6:
            s["ps"][0] = Param(np.ones(3))
        if i == 8:
            s["frozen"].append(s["ps"][1])
        return s["ps"], [np.ones(3) * i, np.ones(2)], s["slots"], s["frozen"]

    check(make, [lambda s, i=i: call(s, i) for i in range(11)], min_graph_calls=4)


class Layer:
    def __init__(self):
        self.w = np.zeros(3)


def probe_bias(layer, cfg, g):
    if hasattr(layer, "bias"):
        layer.w = layer.w + layer.bias
    layer.w = layer.w - g * getattr(cfg, "LR", 0.1)
    return layer.w.sum()


def test_attributes_found_missing_are_guarded_on_the_class_and_the_module():
    """`hasattr(layer, "bias")` found no attribute: set later on the class, the graph kept its
    answer; likewise `getattr(cfg, "LR", 0.1)` of a user's config module."""
    class Biased(Layer):  # (both sides' layers: its attribute set before either side's call)
        pass

    def make():
        return probe_bias, {"layer": Biased(), "cfg": types.ModuleType("train_cfg")}

    def call(s, i):
        if i == 6:
            Biased.bias = 1.0
        if i == 8:
            s["cfg"].LR = 0.5
        return s["layer"], s["cfg"], random_array(i, (3,))

    check(make, [lambda s, i=i: call(s, i) for i in range(11)], min_graph_calls=4)
