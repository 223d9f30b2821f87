"""The user's errors on paths a call does not take, side by side with eager: an arm of a
conditional node that raises (a missing attribute, key or item, a bad conversion) is the
user's, raised eagerly on the calls that take it; the graph keeps the calls that do not. And
NumPy's own error text where the graph computes NumPy's checks (np.split)."""
import numpy as np
import pytest

from .harness import check, fallback_reasons


class _Model:
    def __init__(self):
        self.W = np.ones(3)
        self.table = {"a": 1.0}


_ARMS = {
    "missing attribute": lambda o: o.bias,
    "missing key": lambda o: o.table["b"],
    "item out of range": lambda o: [1.0, 2.0][5],
    "bad conversion": lambda o: float(int("abc")),
}


@pytest.mark.parametrize("arm", sorted(_ARMS))
def test_an_arm_that_raises_is_the_user_s_error_on_the_calls_that_take_it(arm):
    """A rare branch whose arm raises (as eager does there): once the branch had gone both ways,
    generating its conditional node ran that arm for a call that does not take it, and the
    error was reported as a janus_like defect (the signature then stayed eager for good)."""
    bad = _ARMS[arm]

    def step(x, o):
        o.W -= 0.1 * x
        if float(x.sum()) > 100:
            o.W += bad(o)
        return o.W.sum()

    calls = [lambda o, i=i: (np.ones(3) * (1000 if i in (6, 8) else i), o) for i in range(12)]
    jf = check(lambda: (step, _Model()), calls, min_graph_calls=6)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def split_step(x, st):
    a, b = np.split(x, 2)
    st["n"] += 1
    return a - b


def test_an_unequal_np_split_raises_numpy_s_error():
    """np.split(x, 2) of 5 elements: NumPy's text (the graph's had the sizes appended, so the
    error was taken for a janus_like defect)."""
    calls = [lambda st, i=i: (np.arange(5.0 if i == 6 else 4.0), st) for i in range(8)]
    jf = check(lambda: (split_step, {"n": 0}), calls, min_graph_calls=3)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
