"""Views of an array that a view op of an input copied, side by side with eager: NumPy's
`np.ascontiguousarray(x[::2])`, `x.T.reshape(-1)` or `x.ravel()` of a non-contiguous x make a new
array, and a view of that (`a[0]`, `y[:3]`, `.T`) shares its memory. The finish builds each view
level of an input once (graphgen/outputs._view_spec), so the returned or stored views are of the
same new array, as eager's are."""
import numpy as np
import pytest

from .harness import check


def _rows(i, order="C"):
    x = np.random.default_rng(100 + i).standard_normal((5, 4))
    return np.asfortranarray(x) if order == "F" else x


BODIES = {
    "ascontiguousarray of a strided view, and its row": lambda x, st: _pair(np.ascontiguousarray(x[::2])),
    "ascontiguousarray of a transpose, transposed back": lambda x, st: _pair(np.ascontiguousarray(x.T), "T"),
    "reshape of a transpose, stored with its head": lambda x, st: _store(x.T.reshape(-1), st),
    "ravel, stored with its head": lambda x, st: _store(x.ravel(), st),
    "np.reshape of an input, stored with its head": lambda x, st: _store(np.reshape(x, -1), st),
}


def _pair(a, how="row"):
    return a, (a.T if how == "T" else a[0])


def _store(y, st):
    st["y"] = y
    st["head"] = y[:3]
    return y[1:]


@pytest.mark.parametrize("name", list(BODIES))
@pytest.mark.parametrize("orders", ["C", "F", "CF"])  # "CF": C-ordered while warming up, then Fortran
def test_views_of_an_inputs_copy_share_its_memory(name, orders):
    body = BODIES[name]

    def make():
        return (lambda x, st: body(x, st)), {}

    order = [orders[0]] * 4 + [orders[-1]] * 4
    check(make, [lambda s, i=i, o=o: (_rows(i, o), s) for i, o in enumerate(order)], min_graph_calls=1)


def _twins(x, st):
    a = x * 2.0
    b = x * 2.0  # (one value after common subexpressions merge: the commit copies one)
    t = np.ascontiguousarray(a.T)
    return b, t, t[0]


def _written_twice(x, st):
    for _ in range(2):
        st["a"] = x * 2.0
    t = st["a"][:, ::-1].ravel()
    return t, t[::-1]


@pytest.mark.parametrize("body", [_twins, _written_twice])
def test_a_copy_and_its_view_of_a_value_the_commit_copies(body):
    def make():
        return body, {"a": np.zeros((2, 5))}

    check(make, [lambda s, i=i: (np.random.default_rng(100 + i).standard_normal((2, 5)), s) for i in range(6)],
          min_graph_calls=2)
