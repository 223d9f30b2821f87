"""Objects of plain user classes made in jitted code (`Out(loss, n)`, a tree of `Node`s, an
accumulator with methods): the class's `__init__` and methods are inlined on the generator's
object, whose `__dict__` holds graph values; the commit builds one object per call from it, as
eager's call makes one. Each case runs eager and jit side by side and compares results, state
and aliasing after every call; what the graph cannot make the same (an object as a dict key, its
id, an object containing itself, one made inside a data-dependent branch) keeps the step eager
or makes one graph per outcome."""
import copy

import numpy as np
import pytest

from .harness import check, fallback_reasons, random_array


class Out:
    def __init__(self, loss, n):
        self.loss = loss
        self.n = n


class Rec:
    scale = 2.0

    def __init__(self, h, extra=None):
        self.h = h
        self.hist = []
        self.extra = extra

    @property
    def norm(self):
        if self.h.sum() > 0:  # (inlined on the object: a branch on a graph value)
            return float(self.h.sum()) * self.scale
        return 0.0

    def push(self, v):
        self.hist.append(v)
        return self


class Acc:
    def __init__(self):
        self.total = 0.0
        self.n = 0

    def add(self, v, k=1):
        self.total += v
        self.n += k

    def mean(self):
        return self.total / max(self.n, 1)


class Node:
    def __init__(self, left=None, right=None, x=None):
        self.left, self.right, self.x = left, right, x


class Base:
    def __init__(self, w):
        self.w = w


class Child(Base):
    def __init__(self, w, b):
        super().__init__(w)
        self.b = b


def returned(st, x):
    y = x @ st["W"]
    st["W"] -= 0.1 * np.outer(x, y)
    return Out(float(y.sum()), 3)


def stored_and_logged(st, x):
    y = x @ st["W"]
    r = Rec(y).push(y.sum()).push(3)
    st["last"] = r
    st["log"].append(r)
    return r.norm, r.hist[0], r


def methods(st, x):
    acc = Acc()
    for row in (x, 2 * x):
        acc.add(float((row @ st["W"]).sum()))
    st["W"] *= 0.99
    return acc.mean(), acc


def written_in_branches(st, x):
    r = Rec(x @ st["W"])
    if x.sum() > 0:
        r.extra = x.sum()
        r.hist.append(x)
    else:
        r.extra = -x.sum() * 2
        r.hist.append(x * 2)
    st["W"] += 0.1 * np.outer(x, r.h)
    return r


def attribute_in_one_branch(st, x):
    r = Rec(x @ st["W"])
    if x.sum() > 0:
        r.bonus = x.sum()
    st["W"] += 0.1
    return r


def tree(st, xs):
    def build(items):
        if len(items) == 1:
            return Node(x=items[0] * st["W"][0])
        m = len(items) // 2
        return Node(build(items[:m]), build(items[m:]))

    def total(n):
        if n.x is not None:
            return n.x.sum()
        return total(n.left) + total(n.right)

    t = build(xs)
    st["W"] *= 0.9
    return total(t), t


def subclass(st, x):
    c = Child(x * 2, x + 1)
    st["c"] = c
    return isinstance(c, Base), c.w + c.b, type(c).__name__


def builtins_on_it(st, x):
    o = Out(x, 1)
    if getattr(o, "missing", None) is None:
        setattr(o, "missing", x * 3)
    return hasattr(o, "loss"), o.missing, o


def updated_in_loop(st, x):
    o = Out(x, 0)
    for k in range(3):
        o.n += k
        o.loss = o.loss * 2
    st["o"] = o
    return o.n


def _calls(n=10, signs=False):
    def args(s, i):
        x = random_array(i, (3,))
        return s, (np.abs(x) if i % 2 else -np.abs(x)) if signs else x
    return [lambda s, i=i: args(s, i) for i in range(n)]


def _state():
    return {"W": random_array(7, (3, 3)), "log": []}


@pytest.mark.parametrize("fn", [returned, stored_and_logged, methods, subclass, builtins_on_it, updated_in_loop])
def test_objects_made_in_the_step(fn):
    jf = check(lambda: (fn, _state()), _calls(), min_graph_calls=6)
    assert "object-construction" not in fallback_reasons(jf), jf.explain()


def test_a_tree_of_objects_made_by_recursion():
    calls = [lambda s, i=i: (s, [random_array(i + k, (3,)) for k in range(3)]) for i in range(8)]
    check(lambda: (tree, _state()), calls, min_graph_calls=4)


def test_attributes_written_in_both_branches_of_a_conditional_node():
    jf = check(lambda: (written_in_branches, _state()), _calls(12, signs=True), min_graph_calls=6)
    assert "object-construction" not in fallback_reasons(jf), jf.explain()


def test_an_attribute_set_in_one_branch_gives_one_graph_per_outcome():
    check(lambda: (attribute_in_one_branch, _state()), _calls(12, signs=True), min_graph_calls=6)


def test_a_class_attribute_changed_between_calls_is_seen():
    def step(st, x):
        return Rec(x).norm

    def args(s, i):
        if i == 6:
            Rec.scale = 3.0
        return s, np.abs(random_array(i, (3,)))
    try:
        check(lambda: (step, {}), [lambda s, i=i: args(s, i) for i in range(9)], min_graph_calls=3)
    finally:
        Rec.scale = 2.0


def _as_key(st, x):
    o = Out(x, 1)
    st["seen"][o] = 1
    return len(st["seen"])


def _its_id(st, x):
    o = Out(x, 1)
    st["o"] = o
    return id(o) == id(st["o"])


def _a_cycle(st, x):
    a = Node(x=x)
    b = Node(left=a, x=x * 2)
    a.right = b
    st["a"] = a
    return float(b.x.sum())


def _made_in_a_branch(st, x):
    if x.sum() > 0:
        r = Rec(x)
    else:
        r = Rec(-x)
    return r.h


def _copied(st, x):
    r = Rec(x * st["W"][0])
    return copy.copy(r)


@pytest.mark.parametrize("fn,signs", [(_as_key, False), (_its_id, False), (_a_cycle, False),
                                      (_made_in_a_branch, True), (_copied, False)])
def test_what_the_graph_cannot_make_the_same_stays_eager(fn, signs):
    jf = check(lambda: (fn, {"seen": {}, "W": np.ones((3, 3))}), _calls(8, signs), min_graph_calls=0)
    assert fallback_reasons(jf) & {"object-construction", "unsupported-call"}, jf.explain()


class _Custom:
    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return f"_Custom({self.v!r})"


def test_classes_with_dunders_of_their_own_stay_eager():
    def step(st, x):
        return _Custom(x * 2)
    jf = check(lambda: (step, {}), _calls(6), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and "object-construction" in fallback_reasons(jf), jf.explain()
