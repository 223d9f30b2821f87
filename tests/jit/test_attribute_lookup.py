"""Attribute reads and writes follow Python's lookup on the user's classes, side by side with
eager after every call: a class's own `__getattribute__` (a read counter, a computed weight)
keeps the step eager, a property wins over the instance's `__dict__` entry of its name, and a
`__getattr__` or `__setattr__` given to the class after the graph was made is seen by the next
call (found by probing: each gave the graph's stale value)."""
import numpy as np

from .harness import check, fallback_reasons


class Counted:
    def __init__(self):
        self.W = np.eye(3)
        self.scale = 1.0
        self.reads = 0

    def __getattribute__(self, k):
        value = object.__getattribute__(self, k)
        if k == "W":
            object.__setattr__(self, "reads", object.__getattribute__(self, "reads") + 1)
            return value * object.__getattribute__(self, "scale")
        return value


def reads_twice(m, x):
    y = x @ m.W
    m.W *= 0.9
    m.scale = m.scale + 1.0
    return y + x @ m.W


def test_a_classs_own_getattribute_keeps_the_step_eager():
    jf = check(lambda: (reads_twice, Counted()), [lambda m, i=i: (m, np.full((2, 3), float(i))) for i in range(6)],
               min_graph_calls=0)
    assert "unsupported-syntax" in fallback_reasons(jf), jf.explain()


class Shadowed:
    def __init__(self):
        self._lr = 0.1
        self.__dict__["lr"] = 5.0  # (a config copied into the __dict__): the property below wins

    @property
    def lr(self):
        return self._lr


def decays(m, x):
    m._lr = m._lr * 0.5
    return m.lr * x


def test_a_property_wins_over_the_instances_dict():
    check(lambda: (decays, Shadowed()), [lambda m, i=i: (m, np.full(3, float(i + 1))) for i in range(6)],
          min_graph_calls=2)


def _added_later(name, value, at=5):
    """Calls that give a fresh class `name` = value before call `at` (both sides share the class)."""
    class Model:
        def __init__(self):
            self.W = np.eye(3)

    def call(m, i):
        if i == at:
            setattr(Model, name, value)
        return m, np.full((2, 3), float(i + 1))
    return Model, [lambda m, i=i: call(m, i) for i in range(8)]


def scaled(m, x):
    return x @ m.W * getattr(m, "scale", 1.0)  # missing in the warm-up


def halves(m, x):
    m.W = m.W * 0.5
    return x @ m.W


def _doubling(self, k, v):
    object.__setattr__(self, k, v * 2)


def test_a_getattr_or_setattr_given_to_the_class_later_is_seen():
    for fn, name, value in ((scaled, "__getattr__", lambda self, k: 3.0), (halves, "__setattr__", _doubling)):
        model, calls = _added_later(name, value)
        jf = check(lambda: (fn, model()), calls, min_graph_calls=2)
        assert jf.stats()["guard_failures"] >= 1, jf.explain()


class Config:
    def __init__(self):
        self.lr = 0.1

    def __getattr__(self, name):  # defaults for settings not given
        if name.startswith("wd"):
            return 0.0
        raise AttributeError(name)


def decayed(c, x):
    return x * (1.0 - c.lr) - c.wd * x


def test_an_attribute_getattr_answered_is_read_once_it_is_set():
    def call(c, i):
        if i == 5:
            c.wd = 0.5  # an attribute of its own now: __getattr__ no longer answers
        return c, np.full(2, float(i))

    jf = check(lambda: (decayed, Config()), [lambda c, i=i: call(c, i) for i in range(8)], min_graph_calls=2)
    assert jf.stats()["guard_failures"] >= 1, jf.explain()
