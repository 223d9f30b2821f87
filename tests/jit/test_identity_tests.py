"""`a is x` / `a is not x` of arrays, side by side with eager. The graph answers where it knows
which object each value is when it runs (an input, a node's own new array); where a value is
another's own object on some runs only (a branch's or a loop's result that stays the input,
`np.ascontiguousarray(x)` or `x.real` of an array that is already so) the step runs eagerly
(graphgen/comparisons.same_array)."""
import numpy as np
import pytest

from .harness import check, side_by_side

BIG, SMALL = np.array([4.0, 3.0]), np.array([1.5, 0.0])


def _gradients(n=9, switch=5):
    return [lambda s, i=i: ((BIG if i < switch else SMALL).copy(), s) for i in range(n)]


BODIES = {
    "after a branch": lambda g, st: _clip(g, st),
    "after a loop": lambda g, st: _halve(g, st),
    "conditional expression": lambda g, st: st.__setitem__("same", (g * 0.5 if g.sum() > 2 else g) is g),
    "ascontiguousarray": lambda g, st: st.__setitem__("same", np.ascontiguousarray(g) is g),
    "real": lambda g, st: st.__setitem__("same", g.real is not g),
    "asarray with dtype": lambda g, st: st.__setitem__("same", np.asarray(g, dtype=np.float64) is g),
}


def _clip(g, st):
    n = np.linalg.norm(g)
    c = g
    if n > 2.0:
        c = g * (2.0 / n)
    st["clipped"] = c is not g
    return c if c is not g else c * 1.0


def _halve(g, st):
    a = b = g
    while np.linalg.norm(b) > 1.0:
        a = b
        b = b * 0.5
    st["same"] = a is g
    return b


@pytest.mark.parametrize("name", list(BODIES))
def test_identity_of_a_value_that_may_be_the_input(name):
    body = BODIES[name]

    def make():
        return (lambda g, st: body(g, st)), {}

    side_by_side(make, _gradients())


def test_identity_the_graph_knows():
    def make():
        def step(x, st):
            y = x * 2
            z = y
            w = x.reshape(-1)  # (a view is another object)
            return y is x, z is y, y is not x, w is x, x is st["x"], st["x"] is st["y"]
        st = {"x": np.ones(2)}
        st["y"] = st["x"]
        return step, st

    check(make, [lambda s, i=i: (np.ones(2) * i, s) for i in range(7)], min_graph_calls=3)


def test_two_arguments_that_are_one_object_on_some_calls():
    x, y = np.ones(3), np.zeros(3)

    def make():
        return (lambda a, b, st: (a is b, a * 2)), {}

    pairs = [(x, x), (x, y), (x, x), (y, y), (x, y), (y, x), (x, x), (x, y)]
    side_by_side(make, [lambda s, p=p: (*p, s) for p in pairs])
