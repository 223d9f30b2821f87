"""Private names (`self.__h` in a method of `RNN` is `self._RNN__h` to Python) and augmented
assignments whose target runs code of the user's when read. The warm-up's instrumented copy of
a method and the graph generator read the function's AST, where Python's compiler mangles the
names only when it compiles the class: `source.function_ast` mangles them as the compiler did.
Each case runs eager and jit side by side (results, state, aliasing after every call)."""
import linecache
import types

import numpy as np

from .harness import check


class RNN:
    def __init__(self):
        self.__h = np.zeros(3)

    def __mix(self, x):
        return np.tanh(x + self.__h)

    def step(self, x):
        self.__h = self.__mix(x)
        return self.__h


class Cache:
    def get_mask(self, n):
        try:
            m = self.__mask  # missing on the first call
        except AttributeError:
            m = None
        if m is None or m.shape[0] != n:
            m = np.tril(np.ones((n, n)))
            self.__mask = m
            self.builds = getattr(self, "builds", 0) + 1
        return m


def test_private_attributes_and_methods_of_a_class():
    def step(x, m):
        return m.step(x)
    check(lambda: (step, RNN()), [lambda m, i=i: (np.full(3, 0.1 * i), m) for i in range(8)], min_graph_calls=4)


def test_a_private_cache_filled_on_its_first_read():
    def step(x, c):
        return (c.get_mask(x.shape[0]) @ x).sum(), c.builds
    check(lambda: (step, Cache()), [lambda c, i=i: (np.ones(4) * i, c) for i in range(8)], min_graph_calls=4)


class TokenCounts(dict):
    def __init__(self):
        super().__init__()
        self.n_new = 0

    def __missing__(self, tok):
        self.n_new += 1
        return 0


class Meter:
    def __init__(self):
        self.reads = 0
        self._v = 0.0

    @property
    def value(self):
        self.reads += 1
        return self._v

    @value.setter
    def value(self, v):
        self._v = v


def test_augmented_assignments_read_their_target_once():
    """`counts[w] += 1` of a dict with a counting `__missing__`, `m.value += x` of a property
    counting its reads: the warm-up's copy read the target once more, for the profile."""
    def count(words, st):
        c = st["counts"]
        for w in words:
            c[w] += 1
        return c.n_new

    words = [["a", "b"], ["a", "c"], ["d"], ["a"], ["e"], ["b"], ["f", "a"]]
    check(lambda: (count, {"counts": TokenCounts()}), [lambda s, w=w: (w, s) for w in words], min_graph_calls=0)

    def meter(x, st):
        st["m"].value += float(x.sum())
        return st["m"].reads
    check(lambda: (meter, {"m": Meter()}), [lambda s, i=i: (np.ones(2) * i, s) for i in range(8)],
          min_graph_calls=3)


def test_a_module_attribute_read_through_the_modules_own_getattr():
    """`cfg.steps += 1` of a config module (a global) whose `__getattr__` supplies, and counts,
    missing names: the warm-up's extra read of the target ran it."""
    def make():
        mod = types.ModuleType("lazy_cfg")
        mod.hits = [0]

        def missing(name):
            if name == "steps":
                mod.hits[0] += 1
                return 0
            raise AttributeError(name)
        mod.__getattr__ = missing
        src = "def step(x):\n    cfg.steps += 1\n    return x * 2, cfg.hits[0]\n"
        linecache.cache["<lazy_cfg_step>"] = (len(src), None, src.splitlines(True), "<lazy_cfg_step>")
        ns = {"cfg": mod}
        exec(compile(src, "<lazy_cfg_step>", "exec"), ns)
        return ns["step"], {"mod": mod}

    check(make, [lambda s, i=i: (np.ones(2) * i,) for i in range(6)], min_graph_calls=0)
