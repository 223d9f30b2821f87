"""State that lives outside the arguments and globals, side by side with eager: a mutable default
(`cache={}`, a default buffer array, a keyword-only default list), a class attribute written
through the class (`Registry.table[k] = v`) or through an instance (`self.history.append`, a
class-level list), and a user module's dict (`helpers.STATE["n"] += 1`). Each is read through
guards and written at the commit; none may be written while a graph is generated (they were:
the graph's symbolic values ended up in the user's objects). Items and lengths of a user class
(its own `__getitem__`/`__len__`) see what the call wrote before them, and a defaultdict's
missing key (which inserts one) is eager's to insert."""
import collections
import enum

import numpy as np

from .harness import check, fallback_reasons, load_with_helpers, random_array

HELPERS = """
import numpy as np
STATE = {"n": 0, "acc": np.zeros(3)}
"""

PROGRAM = """
import numpy as np

helpers = None  # set by the test: a fresh helpers module per side


class Registry:
    table = {}
    scale = 2.0


class Model:
    history = []  # class-level: shared by every Model
    steps = 0

    def __init__(self):
        self.w = np.ones(3)

    def step(self, x):
        self.w = self.w * 0.9 + x
        self.history.append(float(self.w.sum()))
        return self.w * Registry.scale


def cached(x, cache={}, buf=np.zeros(3), *, seen=[]):
    key = x.shape
    if key not in cache:
        cache[key] = np.zeros(x.shape)
    cache[key] += x
    buf += x[:3]
    seen.append(len(cache))
    return cache[key].sum() + buf.sum()


def registry_and_module(x, m):
    Registry.table["last"] = x * 2.0
    if "first" not in Registry.table:
        Registry.table["first"] = x * 3.0
    helpers.STATE["acc"] += x
    helpers.STATE["n"] += 1
    y = m.step(x)
    return y + Registry.table["first"] + helpers.STATE["acc"] * helpers.STATE["n"]
"""


def test_mutable_defaults_are_state_written_at_the_commit(tmp_path):
    def make():
        mod = load_with_helpers(tmp_path, PROGRAM, HELPERS)
        return mod.cached, {"defaults": mod.cached.__defaults__, "kw": mod.cached.__kwdefaults__}

    shapes = [(3,), (3,), (3,), (3,), (3,), (2, 3), (3,), (3,), (2, 3), (2, 3), (3,)]
    calls = [lambda s, k=k: (random_array(k, shapes[k]),) for k in range(len(shapes))]
    check(make, calls, min_graph_calls=4)


def test_class_attributes_and_a_modules_dict_are_state_written_at_the_commit(tmp_path):
    def make():
        mod = load_with_helpers(tmp_path, PROGRAM, HELPERS)
        m = mod.Model()  # (each side's own class: the state holds its instance's attributes)
        return (lambda x: mod.registry_and_module(x, m)), \
            {"m": vars(m), "table": mod.Registry.table, "history": mod.Model.history, "helpers": mod.helpers.STATE}

    calls = [lambda s, k=k: (random_array(k, (3,)),) for k in range(10)]
    check(make, calls, min_graph_calls=5)


class Ring:
    def __init__(self):
        self.items = [np.zeros(2)]

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


def ring_step(r, x, hist, key):
    keep = r.items[-2:]
    r.items = [r[-1] * 0.5 + x]  # written, then read through __getitem__/__len__: one item here
    mid = len(r)
    r.items = keep + r.items
    fresh = key not in hist
    hist[key].append(len(r))  # a missing key: the defaultdict inserts a list
    return r[len(r) - 1] + r[0] * mid, fresh, len(hist)


def test_a_user_containers_items_and_a_defaultdicts_missing_keys():
    keys = ["a", "a", "a", "a", "a", "b", "b", "c", "a", "b", "d", "d"]
    calls = [lambda s, k=k: (s["r"], random_array(k, (2,)), s["hist"], keys[k]) for k in range(len(keys))]
    jf = check(lambda: (ring_step, {"r": Ring(), "hist": collections.defaultdict(list)}), calls, min_graph_calls=5)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()  # the new keys' calls


class Clipped:
    def __init__(self):
        self.a = np.ones(3)

    @property
    def norm(self):
        return float(np.sqrt((self.a ** 2).sum()))

    @norm.setter
    def norm(self, value):
        self.a = self.a * (value / self.norm)


class Logged:
    def __init__(self):
        object.__setattr__(self, "log", [])
        object.__setattr__(self, "w", np.ones(3))

    def __setattr__(self, name, value):
        self.log.append(name)
        object.__setattr__(self, name, value)


def property_step(c, g, x):
    c.a = c.a + x
    if c.norm > 3.0:  # a branch on a graph value: the setter runs in the conditional node
        c.norm = 3.0  # the property's setter, as eager runs it (not a plain attribute)
    g.w = g.w + x  # through the class's own __setattr__: eager's
    return c.norm, c.a


def test_a_property_setter_runs_and_a_custom_setattr_stays_eager():
    calls = [lambda s, k=k: (s["c"], s["g"], random_array(k, (3,)) * 2.0) for k in range(8)]
    jf = check(lambda: (property_step, {"c": Clipped(), "g": Logged()}), calls, min_graph_calls=0)
    assert "unsupported-syntax" in fallback_reasons(jf), jf.explain()

    def no_custom(c, x):
        c.a = c.a + x
        if c.norm > 3.0:
            c.norm = 3.0
        return c.norm, c.a

    calls = [lambda s, k=k: (s["c"], random_array(k, (3,)) * 2.0) for k in range(8)]
    check(lambda: (no_custom, {"c": Clipped()}), calls, min_graph_calls=4)


class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2


class Switch:
    mode_default = Mode.TRAIN  # a class-level enum member

    def __init__(self):
        self.mode = Mode.TRAIN
        self.w = np.ones(3)


def enum_step(s, x):
    if s.mode == Mode.TRAIN and Switch.mode_default is Mode.TRAIN:
        s.w = s.w + x
    # an enum member's name and value (descriptors: the graph had the descriptor object itself)
    return s.w.sum(), s.mode.name, s.mode.value, s.__class__.__name__


def test_an_enum_members_name_and_value_and_an_objects_class():
    modes = [Mode.TRAIN] * 5 + [Mode.EVAL] * 3 + [Mode.TRAIN] * 3

    def call(s, k):
        s["s"].mode = modes[k]
        return s["s"], random_array(k, (3,))

    check(lambda: (enum_step, {"s": Switch()}), [lambda s, k=k: call(s, k) for k in range(len(modes))],
          min_graph_calls=5)
