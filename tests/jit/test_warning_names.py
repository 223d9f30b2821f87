"""The ufunc a floating-point warning names, side by side with eager (the harness compares the
warnings each call shows): `np.square(x)` warns "in square" (not the product the library's own
squares are), `np.power(x, 2)` and `np.power(x, 0.5)` warn "in power", while the operator
`x ** 2` / `x ** 0.5` runs np.square / np.sqrt and warns in their names (ops/primitives._power)."""
import numpy as np
import pytest

import janus_like as jl

from .harness import check

BODIES = {
    "np.square": lambda x, p: np.square(x),
    "np.power(x, 2)": lambda x, p: np.power(x, 2),
    "np.power(x, 0.5)": lambda x, p: np.power(x, 0.5),
    "np.power(x, p)": lambda x, p: np.power(x, p),
    "x ** 2": lambda x, p: x ** 2,
    "x ** p": lambda x, p: x ** p,
    "np.square into a sum": lambda x, p: np.sum(np.square(x * 2.0)) + 1.0,
}


def _calls(n=7):
    # big values overflow the square from the fourth call; negative ones are invalid for 0.5
    return [lambda s, i=i: (np.array([1.0, -2.0, 10.0 ** (160 * (i >= 3) + 1)]) * (1 + i),
                            [2, 0.5][i % 2], s) for i in range(n)]


@pytest.mark.parametrize("name", list(BODIES))
def test_floating_point_warnings_name_eagers_ufunc(name):
    body = BODIES[name]

    def make():
        return (lambda x, p, st: body(x, p)), {}

    check(make, _calls(), min_graph_calls=2)


def test_the_gradient_of_np_square():
    def make():
        st = {"w": jl.Variable(np.array([0.5, -1.5, 2.0]))}

        def step(x, p, st):
            with jl.GradientTape() as tape:
                loss = np.sum(np.square(st["w"] * x))
            g = tape.gradient(loss, st["w"])
            st["w"].assign_sub(0.01 * g)
            return g
        return step, st

    check(make, [lambda s, i=i: (np.array([1.0, 2.0, 3.0]) * (i + 1), 2, s) for i in range(7)], min_graph_calls=3)
