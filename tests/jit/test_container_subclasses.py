"""Containers with more than items: a deque's `maxlen`, a list subclass with attributes and
methods of its own, a typing.NamedTuple's properties, a dict subclass or Counter whose item
methods differ from dict's, a config dict read by attribute. The graph's copy of a container
behaves as a plain list or dict, so only what the class keeps of its builtin base is run that
way; the rest is read or inlined as any object's, or keeps the step eager. Each case runs eager
and jit side by side and compares results and state after every call."""
import collections
import typing

import numpy as np

from .harness import check, fallback_reasons, random_array


def _calls(n=10, shape=(4,)):
    return [lambda s, i=i: (s, random_array(i, shape)) for i in range(n)]


def test_a_deques_maxlen_is_read_as_its_value():
    """`q.maxlen` was a placeholder object (always true; compared, an internal error)."""
    def step(st, x):
        st["q"].append(float(x.sum()))
        st["window"].append(x * 1.0)
        full = len(st["window"]) == st["window"].maxlen
        unbounded = st["q"].maxlen is None
        scale = 2.0 if st["q"].maxlen else 1.0
        return x * scale, full, unbounded, st["window"].maxlen

    make = lambda: (step, {"q": collections.deque(), "window": collections.deque(maxlen=3)})  # noqa: E731
    check(make, _calls(), min_graph_calls=1)


class Episode(list):
    """A list of rewards with a flag and a method of its own."""

    def __init__(self):
        super().__init__()
        self.done = False

    def total(self):
        return sum(self)


def test_a_list_subclasss_own_attributes_and_methods():
    def step(st, x):
        ep = st["ep"]
        if ep.done:
            return x
        ep.append(1.5)
        return x * ep.total()

    jf = check(lambda: (step, {"ep": Episode()}), _calls(), min_graph_calls=0)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


class Transition(typing.NamedTuple):
    obs: np.ndarray
    reward: float
    done: bool

    @property
    def alive(self):
        return not self.done

    def target(self, value, gamma=0.9):
        return self.reward + gamma * value * self.alive


def test_a_namedtuples_properties_methods_and_fields():
    """`t.alive` is the class's property (it was a placeholder, always true: the wrong TD
    target on a terminal transition), `t.target(v)` its method, `t._fields` its names."""
    def step(st, t):
        v = float(t.obs @ st["w"])
        tgt = t.reward + 0.9 * v if t.alive else t.reward
        st["w"] -= 0.05 * (v - tgt) * t.obs
        return tgt, t.target(v), len(t._fields), t._fields[0]

    calls = [lambda s, i=i: (s, Transition(random_array(i, (3,)), 1.0, i % 4 == 3)) for i in range(12)]
    check(lambda: (step, {"w": random_array(0, (3,))}), calls, min_graph_calls=1)


class CappedList(list):
    """A list whose `append` drops its oldest item past three."""

    def append(self, x):
        super().append(x)
        if len(self) > 3:
            del self[0]


class MaxDict(dict):
    """A dict that keeps the largest value written under each key."""

    def __setitem__(self, k, v):
        super().__setitem__(k, max(v, self.get(k, float("-inf"))))


def test_containers_whose_class_overrides_their_item_methods_stay_correct():
    """The graph's plain-list `append` and plain-dict `d[k] = v` ignored the class's own: the
    values read back in the step (and the parameters updated from them) were wrong."""
    def capped(st, x):
        st["buf"].append(x)
        X = np.stack(st["buf"])
        st["w"] -= 0.1 * X.mean(0)
        return len(st["buf"]), X.sum()

    def best(st, x, k):
        st["w"] -= 0.1 * x
        st["best"][k] = float(x.sum())
        return st["best"][k], dict(st["best"])

    check(lambda: (capped, {"buf": CappedList(), "w": random_array(0, (4,))}), _calls(), min_graph_calls=0)
    calls = [lambda s, i=i: (s, random_array(i, (4,)), "ab"[i % 2]) for i in range(10)]
    check(lambda: (best, {"best": MaxDict(), "w": random_array(0, (4,))}), calls, min_graph_calls=0)


def test_a_counter_updated_from_a_mapping_adds_counts():
    """Counter.update adds (dict.update, which the graph used, replaces)."""
    def step(st, x, w):
        st["freq"].update({w: 1})
        st["w"] -= 0.01 * x
        return st["freq"][w], sorted(st["freq"].items())

    make = lambda: (step, {"freq": collections.Counter(a=1), "w": random_array(0, (4,))})  # noqa: E731
    calls = [lambda s, i=i: (s, random_array(i, (4,)), "ab"[i % 2]) for i in range(10)]
    check(make, calls, min_graph_calls=0)


class Config(dict):
    __getattr__ = dict.__getitem__


class Lazy:
    def __init__(self):
        self.base = 2.0

    def __getattr__(self, name):
        if name.startswith("scaled_"):
            return self.base * int(name[len("scaled_"):])
        raise AttributeError(name)


def test_attributes_found_by_a_classs_getattr():
    """A config dict read by attribute (`__getattr__ = dict.__getitem__`) and a class's own
    `__getattr__` (was an internal error)."""
    def step(st, x):
        cfg = st["cfg"]
        st["w"] -= cfg.lr * x * cfg["momentum"]
        return st["w"].sum() + st["lazy"].scaled_3

    state = lambda: {"cfg": Config(lr=0.1, momentum=0.9), "lazy": Lazy(), "w": random_array(0, (4,))}  # noqa: E731
    check(lambda: (step, state()), _calls(), min_graph_calls=5)


class Slotted:
    __slots__ = ("w", "n")

    def __init__(self):
        self.w = random_array(1, (4,))
        self.n = 0


def test_objects_with_slots_are_compared_by_their_slots():
    """(The harness compared objects without a __dict__ by identity, which failed every call.)"""
    def step(o, x):
        o.w -= 0.1 * x
        o.n += 1
        return o.w.sum()

    check(lambda: (step, Slotted()), [lambda s, i=i: (s, random_array(i, (4,))) for i in range(10)], min_graph_calls=5)


def test_del_of_items_of_state_lists_and_dicts():
    """`del history[0]` past a window, `del log[:-3]`, `del cache[key]` of the state's
    containers (and of one the function made) are container writes like any other (`del` of
    anything but a local name kept the step eager)."""
    def step(st, x):
        st["history"].append(float(x.sum()))
        if len(st["history"]) > 3:
            del st["history"][0]
        st["log"].extend([1.0, 2.0])
        del st["log"][:-3]
        if "stale" in st["cache"]:
            del st["cache"]["stale"]
        scratch = {"a": x, "b": x * 2}
        del scratch["a"]
        return sum(st["history"]), list(scratch), x * len(st["log"])

    def bad(st, x):
        del st["cache"]["missing"]  # eager's KeyError, raised again

    make = lambda: (step, {"history": [], "log": [], "cache": {"stale": 1, "keep": 2}})  # noqa: E731
    jf = check(make, _calls(), min_graph_calls=4)
    assert "unsupported-syntax" not in fallback_reasons(jf), jf.explain()
    check(lambda: (bad, {"cache": {}}), _calls(4), min_graph_calls=0)


class Log(list):
    def __iadd__(self, other):
        self.append(len(other))
        return self


def test_augmented_adds_of_input_deques_extend_them_as_eager_does():
    """`q += [a, b]` on a bounded deque extends it in place, dropping the oldest items as the
    deque does, whether the deque is in a dict, an argument, an attribute or a local alias, and
    with a tuple on the right. Before, the graph put a list in its place (which grew past the
    bound), or left the deque unchanged. A list subclass's own `+=` keeps the step eager."""
    def step(st, x):
        st["q"] += [float(x.sum()), float(x.min())]
        q = st["r"]
        q += (float(x.max()),)
        st["log"] += [1.0, 2.0]
        return list(st["q"]), sum(q), list(st["log"])

    make = lambda: (step, {"q": collections.deque(maxlen=3), "r": collections.deque([0.0], maxlen=2),  # noqa: E731
                           "log": []})
    check(make, _calls(), min_graph_calls=3)
    make = lambda: (step, {"q": collections.deque(maxlen=3), "r": collections.deque([0.0], maxlen=2),  # noqa: E731
                           "log": Log()})
    jf = check(make, _calls(), min_graph_calls=0)
    assert "`+=` of Log" in jf.explain()


class TenfoldList(list):
    def extend(self, it):
        super().extend([v * 10 for v in it])


class Reflected(list):
    def __radd__(self, other):
        return Reflected(["radd"] + list(other))


def test_adds_that_python_gives_to_the_other_operand_or_to_no_method_of_the_subclass():
    """`h += x * w` of a list or deque and an array is the array's `__radd__` (an array, as
    eager's), not an extend; a subclass's own `extend` is not what `+=` runs (eager's `+=` is
    the builtin's); `l + r` with `r` a list subclass with its own `__radd__` runs that first,
    and `list + deque` raises: each as eager, or eagerly."""
    def step(st, x):
        acc = [1.0, 2.0]
        acc += x[:2] * st["w"][:2]
        st["h"] += x * 2.0
        st["t"] += [float(x.sum())]
        return acc, st["l"] + st["r"], list(st["t"])

    make = lambda: (step, {"w": np.ones(4), "h": collections.deque([0.0] * 4), "t": TenfoldList(),  # noqa: E731
                           "l": [1.0], "r": Reflected([2.0])})
    check(make, _calls(), min_graph_calls=0)
