"""What the user changes between two calls, side by side with eager: a class constant decayed by
the training loop (`Config.lr *= 0.5`), a class-level default read through `self` and then set
on the instance, a function's attribute, a user module's constant, a method patched on a class
or on a base class under `super()`, or set on the object, a staticmethod swapped, a function's code swapped in place
(as IPython's autoreload does), its defaults rebound, and an array made read-only. A graph made
before the change read each of them as a constant (or wrote through a read-only array at the
commit, half-way): now each is read through a guard, and a changed one runs eagerly or makes a
new graph."""
import collections
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import check, fallback_reasons, load_module, load_with_helpers, random_array

HELPERS = """
LR = 0.5
"""

PROGRAM = """
import numpy as np

helpers = None  # set by the test


class Config:
    lr = 0.1
    act = staticmethod(np.tanh)


class Layer:
    scale = 1.0

    def __init__(self):
        self.w = np.ones(3)

    def __call__(self, x):
        return self.w * x * self.scale

    def __getitem__(self, i):
        return self.w[i]


class Wide(Layer):
    pass


class Base:
    def f(self, x):
        return x * 2.0


class Mid(Base):
    def f(self, x):
        return super().f(x) + 1.0


def gain(x):
    return x * gain.k


gain.k = 1.0


def helper(x, k=2.0):
    return x * k


def other(x, k=2.0):
    return x * k * 3.0


def constants_step(x, layer, st):
    st["w"] = st["w"] - Config.lr * x  # a class constant
    y = layer(x)  # `self.scale`: the class's, until the instance has its own
    return st["w"] * helpers.LR + gain(y), Config.act(y)


def methods_step(x, wide, mid):
    return wide(x) + wide[1], mid.f(x), helper(x)
"""


def test_constants_changed_between_calls(tmp_path):
    def make():
        mod = load_with_helpers(tmp_path, PROGRAM, HELPERS)
        layer = mod.Layer()  # (each side's own class: the state holds its instance's attributes)
        return (lambda x, st: mod.constants_step(x, layer, st)), \
            {"mod": mod, "layer": vars(layer), "st": {"w": np.zeros(3)}}

    def change(s, k):
        mod, layer = s["mod"], s["layer"]
        if k in (5, 9, 13):
            mod.Config.lr *= 0.5  # a learning-rate decay in the training loop
        if k == 7:
            mod.Layer.scale = 3.0
        if k == 11:
            layer["scale"] = 5.0  # the instance's own now hides the class's
        if k == 15:
            del layer["scale"]
        if k in (17, 19):
            mod.gain.k += 1.0
        if k == 21:
            mod.helpers.LR = 0.25
        if k == 23:
            mod.Config.act = staticmethod(np.sin)
        return random_array(k, (3,)), s["st"]

    check(make, [lambda s, k=k: change(s, k) for k in range(26)], min_graph_calls=10)


def test_methods_patched_between_calls(tmp_path):
    def make():
        mod = load_with_helpers(tmp_path, PROGRAM, HELPERS)
        wide, mid = mod.Wide(), mod.Mid()
        return (lambda x: mod.methods_step(x, wide, mid)), {"mod": mod, "mid": vars(mid)}

    def change(s, k):
        mod = s["mod"]
        if k == 5:
            mod.Wide.__call__ = lambda self, x: self.w - x  # an override added to the subclass
        if k == 8:
            mod.Base.f = lambda self, x: x * 5.0  # the base class's method, reached by super()
        if k == 11:
            mod.helper.__code__ = mod.other.__code__  # a module reloaded in place
        if k == 14:
            mod.helper.__defaults__ = (7.0,)
        if k == 17:
            mod.Layer.__getitem__ = lambda self, i: self.w[i] * 10.0
        if k == 20:
            s["mid"]["f"] = lambda x: x * 9.0  # set on the object: hides the class's method
        return (random_array(k, (3,)),)

    check(make, [lambda s, k=k: change(s, k) for k in range(23)], min_graph_calls=10)


def buffered(buf, x):
    buf += x  # eager raises here when buf is read-only
    return buf.sum()


def test_a_read_only_array_fails_as_eager_does():
    def call(s, k):
        if k == 5:
            s["buf"].flags.writeable = False
        if k == 8:
            s["buf"] = s["buf"].copy()
        return s["buf"], random_array(k, (3,))

    check(lambda: (buffered, {"buf": np.zeros(3)}), [lambda s, k=k: call(s, k) for k in range(12)],
          min_graph_calls=5)


class Switchable:
    def __init__(self):
        self.on, self.items, self.tag = True, [1.0], 0

    def __bool__(self):
        return self.on

    def __eq__(self, other):
        return isinstance(other, Switchable) and self.tag == other.tag

    def __lt__(self, other):
        return self.tag < other.tag


class Sized:
    def __init__(self):
        self.items = [1.0]

    def __len__(self):
        return len(self.items)


def truth_step(x, a, b, sized):
    y = x * 2.0 if a else x  # a user class's own __bool__, on the object's state now
    z = y + 1.0 if sized else y
    return z * (a == b), a != b, a < b, b > a


def test_a_user_classes_truth_and_comparisons_on_state_changed_between_calls():
    def change(s, k):
        a, b, sized = s["a"], s["b"], s["sized"]
        if k == 5:
            sized.items = []  # the truth a graph baked in changes
        if k in (8, 11):
            a.on = not a.on
        if k == 14:
            b.tag = 1  # a == b turns false, a < b true
        return random_array(k, (3,)), a, b, sized

    check(lambda: (truth_step, {"a": Switchable(), "b": Switchable(), "sized": Sized()}),
          [lambda s, k=k: change(s, k) for k in range(20)], min_graph_calls=8)



WRITES = """
import numpy as np


class Counters:
    steps = 0  # written through the class by the step
    lr = 0.1


class Holder:
    def __init__(self):
        self.w = np.zeros(3)


def counted(x):
    return x * 2.0


def step(x, h):
    Counters.steps += 1  # a class attribute written by the call: committed with the graph
    type(h).seen = getattr(type(h), "seen", 0) + 1
    counted.calls = getattr(counted, "calls", 0) + 1  # a function attribute, missing at first
    Counters.lr = Counters.lr * 0.99
    h.w = h.w + x * Counters.lr
    extra = getattr(h, "extra", None)  # missing until the loop sets it: its absence is guarded
    bonus = 1.0 if hasattr(h, "bonus") else 0.0
    return h.w * Counters.steps + (0.0 if extra is None else extra) + bonus, counted.calls, Holder.seen, Counters.lr
"""


def test_class_and_function_attributes_written_by_the_call(tmp_path):
    def make():
        mod = load_module(tmp_path, WRITES, "writes")  # (each side's own classes and function)
        h = mod.Holder()
        return (lambda x, h_vars: mod.step(x, h)), {"h": vars(h)}  # (the class values: in the results)

    def change(s, k):
        if k == 11:
            s["h"]["extra"] = 5.0  # set between calls: a graph that found it missing must not run
        if k == 14:
            s["h"]["bonus"] = True
        return random_array(k, (3,)), s["h"]

    jf = check(make, [lambda s, k=k: change(s, k) for k in range(17)], min_graph_calls=6)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


LOGGING = """
import logging
import collections
import os

LOG = logging.getLogger("janus_like_test_between_calls")


def step(x):
    verbose = LOG.isEnabledFor(logging.DEBUG)  # asked again by a guard on every call
    scale = 3.0 if "JANUS_LIKE_TEST_FLAG" in os.environ else 1.0
    LOG.debug("step %s", verbose)  # (a log call: deferred, as before)
    return x * scale * (2.0 if verbose else 1.0), LOG.getEffectiveLevel()
"""


def test_a_loggers_level_and_the_environment_changed_between_calls(tmp_path, monkeypatch):
    import logging

    monkeypatch.delenv("JANUS_LIKE_TEST_FLAG", raising=False)
    logger = logging.getLogger("janus_like_test_between_calls")
    monkeypatch.setattr(logger, "level", logging.INFO)

    def change(s, k):
        if k == 6:
            logger.setLevel(logging.DEBUG)  # the graph asked isEnabledFor(DEBUG): False
        if k == 9:
            monkeypatch.setenv("JANUS_LIKE_TEST_FLAG", "1")
        if k == 12:
            logger.setLevel(logging.WARNING)
        return (random_array(k, (3,)),)

    jf = check(lambda: (load_module(tmp_path, LOGGING, "logs").step, {}),
               [lambda s, k=k: change(s, k) for k in range(15)], min_graph_calls=6)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


# ------------------------------------------------------------------ random changes, Hypothesis
_DETERMINISTIC = os.environ.get("HYPOTHESIS_PROFILE") == "ci"
MIXED = """
import numpy as np

helpers = None  # set by the test


class Config:
    lr = 0.1


class Layer:
    scale = 1.0

    def __init__(self):
        self.w = np.ones(3)
        self.on = True

    def __call__(self, x):
        return self.w * x * self.scale

    def __bool__(self):
        return self.on


def gain(x):
    return x * gain.k


gain.k = 1.0


def step(x, layer, st):
    st["w"] = st["w"] - Config.lr * x
    y = layer(x) if layer else x
    return st["w"] * helpers.LR + gain(y)
"""

CHANGES = {  # what a training loop (or a notebook) might do between two calls
    "decay": lambda mod, layer: setattr(mod.Config, "lr", mod.Config.lr * 0.5),
    "class scale": lambda mod, layer: setattr(mod.Layer, "scale", mod.Layer.scale + 1.0),
    "own scale": lambda mod, layer: layer.__dict__.__setitem__("scale", 7.0),
    "drop own": lambda mod, layer: layer.__dict__.pop("scale", None),
    "gain": lambda mod, layer: setattr(mod.gain, "k", mod.gain.k + 1.0),
    "module": lambda mod, layer: setattr(mod.helpers, "LR", mod.helpers.LR * 2.0),
    "patch": lambda mod, layer: setattr(mod.Layer, "__call__", lambda self, x: self.w - x * self.scale),
    "toggle": lambda mod, layer: layer.__dict__.__setitem__("on", not layer.on),
}


@settings(derandomize=_DETERMINISTIC)
@given(events=st.lists(st.tuples(st.integers(3, 13), st.sampled_from(sorted(CHANGES))), max_size=6))
def test_random_changes_between_calls(tmp_path_factory, events):
    directory = tmp_path_factory.mktemp("between", numbered=True)

    def make():
        mod = load_with_helpers(directory, MIXED, HELPERS)
        layer = mod.Layer()
        # (each side's own module and classes: the state compares the layer's attributes; `side`,
        # a function, is not compared)
        return (lambda x, st: mod.step(x, layer, st)), {"side": lambda: (mod, layer), "layer": vars(layer),
                                                        "st": {"w": np.zeros(3)}}

    def call(s, k):
        for at, change in events:
            if at == k:
                CHANGES[change](*s["side"]())
        return random_array(k, (3,)), s["st"]

    check(make, [lambda s, k=k: call(s, k) for k in range(15)], min_graph_calls=0)


def deque_truth(x, buf):
    return x * 2.0 if buf else x  # a deque's truth: asked again on every call


def test_a_deques_truth_changed_between_calls():
    # its truth was read once (the deque's identity guarded, not its length)
    def change(s, k):
        if k in (5, 6, 9):
            s["buf"].append(k)
        if k == 12:
            s["buf"].clear()
        return random_array(k, (3,)), s["buf"]

    check(lambda: (deque_truth, {"buf": collections.deque(maxlen=5)}), [lambda s, k=k: change(s, k) for k in range(15)],
          min_graph_calls=6)


def member_step(x, a, b):
    return x * 2.0 if a in [b] else x  # `in` calls Switchable.__eq__ on the objects' state


def test_in_of_objects_with_their_own_eq_stays_eager():
    # `in` compared the objects once, while generating (by their __eq__), and kept the outcome
    def change(s, k):
        if k == 5:
            s["b"].tag = 1
        return random_array(k, (3,)), s["a"], s["b"]

    jf = check(lambda: (member_step, {"a": Switchable(), "b": Switchable()}),
               [lambda s, k=k: change(s, k) for k in range(8)], min_graph_calls=0)
    assert fallback_reasons(jf) == {"data-dependent-python"}, jf.explain()


class Scaler:
    factor = 2.0

    def __init__(self):
        self.w = np.ones(3)

    @classmethod
    def scaled(cls, x):
        return x * cls.factor  # the class attribute, read through a guard

    def step(self, x):
        self.w = self.w * 0.5 + self.scaled(x)  # a classmethod through the object
        return Scaler.scaled(self.w)  # and through the class: a new bound method on each read

    def class_only(self, x):
        self.w = Scaler.scaled(self.w * 0.5 + x)
        return self.w


def _double_scaled(cls, x):
    return x * cls.factor * 2.0


@pytest.mark.parametrize("method", [Scaler.step, Scaler.class_only])
def test_classmethods_called_through_the_class_or_an_object_and_swapped(method):
    """A user classmethod is inlined with its class (it was a call with no graph equivalent); a
    class whose classmethod or class attribute changes between calls runs eagerly or anew."""
    def change(s, k):
        if k == 7:
            Scaler.factor = 3.0
        if k == 11:
            Scaler.scaled = classmethod(_double_scaled)
        return s["m"], random_array(k, (3,))

    saved = Scaler.__dict__["scaled"], Scaler.factor
    try:
        jf = check(lambda: (method, {"m": Scaler()}), [lambda s, k=k: change(s, k) for k in range(16)],
                   min_graph_calls=8)
    finally:
        Scaler.scaled, Scaler.factor = saved
    assert "unsupported-call" not in fallback_reasons(jf), jf.explain()


REBOUND = """
import types

import numpy as np

helpers = None  # set by the test


def step(x, st):
    st["w"] = st["w"] - helpers.LR * x
    return abs(st["w"]).sum() + len(x), np.tanh(x)
"""


def test_module_globals_and_builtins_rebound_between_calls(tmp_path):
    """A global naming a module (a config module swapped for another, `np` itself) and a builtin
    shadowed by a module global, then deleted again: a graph made before read each as a constant."""
    def make():
        mod = load_with_helpers(tmp_path, REBOUND, HELPERS)
        return mod.step, {"mod": mod, "st": {"w": np.zeros(3)}}

    def change(s, k):
        mod = s["mod"]
        if k == 6:
            mod.helpers = load_module(tmp_path, "LR = 0.25\n", "helpers2")
        if k == 9:
            mod.abs = lambda v: v * 2.0
        if k == 12:
            del mod.abs
        if k == 15:
            fake = mod.types.ModuleType("fake_numpy")
            fake.tanh = np.sin
            mod.np = fake
        return random_array(k, (3,)), s["st"]

    jf = check(make, [lambda s, k=k: change(s, k) for k in range(20)], min_graph_calls=10)
    assert {"identity", "contains"} <= fallback_reasons(jf) | {a.kind for g in jf.compiled for a in g.assumptions}


class _Cell:
    def __init__(self, w):
        self.w = w


def test_one_dict_or_object_passed_for_two_arguments_on_some_calls():
    """`step(src, dst)` called with `src is dst` after graphs were made for distinct ones (tied
    weights, a state dict holding the argument): the graph read src's entry before its write to
    dst, where eager reads what it just wrote. Distinct written objects are guarded distinct."""
    def step(src, dst, a, b, x):
        dst["w"] = src["w"] + x
        a.w = a.w + x
        b.w = b.w * 2.0
        return src["w"].sum(), a.w.sum()

    def make():
        return step, {"d": [{"w": np.zeros(3)}, {"w": np.ones(3)}], "o": [_Cell(np.zeros(3)), _Cell(np.ones(3))]}

    def call(s, k):
        (d1, d2), (o1, o2) = s["d"], s["o"]
        return d1, d1 if k in (5, 8) else d2, o1, o1 if k in (6, 8) else o2, np.ones(3)

    jf = check(make, [lambda s, k=k: call(s, k) for k in range(11)], min_graph_calls=5)
    assert "alias" in {a.kind for g in jf.compiled for a in g.assumptions}, jf.explain()
