"""What a function sees of its own scope, side by side with eager, in the warm-up's profiled copy
and in graphs: `locals()` and `vars()` (the copy's hook name is not one of the function's
names), a zero-argument `super()` in a comprehension (Python binds it to the comprehension's
iterator, so it raises), and `:=` in a generator expression (it binds in the function's scope)."""
import numpy as np
import pytest

from .harness import check, side_by_side


def _calls(n):
    return [lambda s, i=i: (s, np.arange(3.0) * i) for i in range(n)]


def names_seen(st, x):
    a = x * 2.0
    st["names"] = sorted(dict(locals()))
    return a.sum()


def names_by_vars(st, x):
    a = x * 2.0
    st["names"] = sorted(vars())
    return a.sum()


@pytest.mark.parametrize("step", [names_seen, names_by_vars])
def test_locals_show_only_the_functions_own_names(step):
    jf = side_by_side(lambda: (step, {"names": None}), _calls(6))
    assert jf.stats()["calls"] == 6


class Base:
    def scale(self, x):
        return x * 2.0


class InComprehension(Base):
    def step(self, xs):
        return [super().scale(x) for x in xs]


class Direct(Base):
    def step(self, xs):
        return [super(Direct, self).scale(x) for x in xs] + [super().scale(xs[0])]


def run_model(m, xs):
    return m.step(xs)


def test_zero_argument_super_in_a_comprehension_raises_as_in_eager():
    calls = [lambda s, i=i: (s, [np.ones(2) * i]) for i in range(6)]
    jf = side_by_side(lambda: (run_model, InComprehension()), calls)
    assert jf.stats()["graph_calls"] == 0


def test_super_with_arguments_in_a_comprehension_and_zero_arguments_outside_run_as_a_graph():
    calls = [lambda s, i=i: (s, [np.ones(2) * i, np.ones(2)]) for i in range(6)]
    check(lambda: (run_model, Direct()), calls)


def longest_past(st, xs, x):
    m = 2
    if any((n := len(s)) > m for s in xs):
        st["n"] = n
    st["w"] = st["w"] - 0.1 * x
    return st["w"].sum()


def test_walrus_in_a_generator_expression_stays_eager_as_unsupported_syntax():
    calls = [lambda s, i=i: (s, [[1] * (i % 4 + 1)], np.ones(3) * i) for i in range(7)]
    jf = side_by_side(lambda: (longest_past, {"w": np.ones(3), "n": 0}), calls)
    assert jf.stats()["graph_calls"] == 0
    assert "user-error" not in jf.explain() and "`:=` inside a comprehension" in jf.explain()


def names_counted(st, x):
    a = x * 2.0
    st["n"] = len(vars())
    st["ks"] = sorted(vars())
    return a.sum()


def test_vars_without_an_argument_is_not_the_generators_frame():
    """`len(vars())`, `sorted(vars())`: the graph generator's own frame was taken for the
    function's (six names where eager has three); the step stays eager with the reason named."""
    jf = side_by_side(lambda: (names_counted, {}), _calls(6))
    assert jf.stats()["graph_calls"] == 0 and "vars()" in jf.explain(), jf.explain()
