"""`with` an input object whose class defines `__enter__`/`__exit__` in Python, and `with` a
`@contextlib.contextmanager` generator of the user's (a function or a method), run in graphs:
both inlined, the exit (or the generator's code after its `yield`) run when the body is left,
also by a `return`, `break` or `continue`. Side by side against eager with results, state and
arguments compared after every call; generators that yield twice or never keep eager's errors."""
import numpy as np
import pytest

from .harness import call_sequence, check, fallback_reasons, load_module, random_array

HELPERS = '''
import contextlib

import numpy as np


class Counter:
    def __init__(self):
        self.entered = 0
        self.exited = 0
        self.depth = 0

    def __enter__(self):
        self.entered += 1
        self.depth += 1
        return self

    def __exit__(self, *exc):
        self.exited += 1
        self.depth -= 1
        return False


@contextlib.contextmanager
def section(log, name):
    log[name] = log.get(name, 0) + 1
    try:
        yield name
    finally:
        log["out"] = log.get("out", 0) + 1


class Model:
    def __init__(self):
        self.w = np.ones((4, 3)) / 4
        self.scale = 1.0
        self.c = Counter()

    @contextlib.contextmanager
    def scaled(self, s):
        old = self.scale
        self.scale = s
        yield self
        self.scale = old


@contextlib.contextmanager
def twice():
    yield 1
    yield 2


@contextlib.contextmanager
def never():
    if False:
        yield
'''

BODIES = {
    "class": "with st['m'].c as c:\n        h = np.tanh(x @ st['m'].w)\n        st['m'].w -= 0.01 * x.T @ h\n"
             "    return h.sum(), c.depth, c.entered, st['m'].c.exited",
    "generator": "with section(st['log'], 'fwd') as name:\n        h = x * 2\n    return h.sum() + len(name)",
    "method_and_nested": "with st['m'].scaled(0.5) as m, section(st['log'], 'inner'):\n        y = x * m.scale\n"
                         "        s = st['m'].scale\n    return y, s, st['m'].scale",
    "return_inside": "with st['m'].c, section(st['log'], 'r'):\n        return x.sum(), st['m'].c.depth",
    "break_continue": "t = 0.0\n    for i in range(4):\n        with section(st['log'], 'loop'):\n"
                      "            if i == 1:\n                continue\n            t = t + x[i].sum()\n"
                      "            if i == 2:\n                break\n    return t, st['log']['loop']",
    "nested_objects": "with st['m'].c:\n        with st['m'].c as c:\n            d = c.depth\n    "
                      "return x * d, st['m'].c.depth",
}
ERRORS = {
    "yields_twice": "with twice() as v:\n        y = x * v\n    return y",
    "never_yields": "with never():\n        y = x * 2\n    return y",
}


def _run(tmp_path, name, body, min_graph_calls):
    module = load_module(tmp_path, f"{HELPERS}\n\ndef f(x, st):\n    {body}\n", name)

    def make():
        return module.f, {"st": {"m": module.Model(), "log": {}}}

    return check(make, call_sequence(10, lambda s, i: (random_array(i, (3, 4)), s["st"])),
                 min_graph_calls=min_graph_calls)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_context_managers_side_by_side(tmp_path, name):
    jf = _run(tmp_path, name, BODIES[name], 4)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_generators_contextlib_rejects_keep_eagers_error(tmp_path, name):
    jf = _run(tmp_path, name, ERRORS[name], 0)
    assert jf.stats()["graph_calls"] == 0, jf.explain()


class _Swallow:
    """Its `__exit__` swallows a ZeroDivisionError."""

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        return et is not None and issubclass(et, ZeroDivisionError)


def test_a_context_manager_that_may_suppress_an_error_keeps_the_step_eager():
    """The graph ran its `__exit__` with no exception: where the body then raised (1 / 0 of a
    batch), the error surfaced as the graph's own (an internal error), where eager swallowed it."""
    def make():
        def step(x, st):
            y = x
            with st["s"]:
                y = x * 2
                y = y * (1 / int(x[0]))
            return y

        return step, {"s": _Swallow()}

    jf = check(make, [lambda s, i=i: (np.full(3, float(i + 1) if i != 5 else 0.0), s) for i in range(8)],
               min_graph_calls=0)
    assert "may suppress an exception" in jf.explain() and "internal-error" not in fallback_reasons(jf)
