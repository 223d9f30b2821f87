"""A view of an input dict (`.values()`, `.items()`, `.keys()`) taken before the step writes the
dict shows those writes, as eager's live view does (the graph's was a snapshot of the dict as the
call found it)."""
import numpy as np
import pytest

from .harness import check


def _values_then_store(st, x):
    vals = st["c"].values()
    st["c"][0] += 1
    return list(vals), x * 2


def _items_then_store_at_a_computed_key(st, x):
    items = st["c"].items()
    st["c"][int(np.argmax(x))] += 1
    return sorted(items)


def _keys_then_add(st, x):
    keys = st["c"].keys()
    st["c"]["n"] = 1
    return list(keys), x.sum()


def _params_then_update(st, x):
    vs = st["p"].values()
    st["p"]["w"] = st["p"]["w"] - 0.1 * x
    st["p"].update(b=st["p"]["b"] * 0.5)
    return sum(float(v.sum()) for v in vs)


def _loop_over_items_taken_before(st, x):
    it = st["p"].items()
    st["p"]["w"] = st["p"]["w"] * 0.9
    out = 0.0
    for k, v in it:
        out += float(v.sum())
    return out


@pytest.mark.parametrize("body", [_values_then_store, _items_then_store_at_a_computed_key, _keys_then_add,
                                  _params_then_update, _loop_over_items_taken_before])
def test_a_view_taken_before_a_write_shows_it(body):
    def make():
        return body, {"c": {0: 0, 1: 0, 2: 0}, "p": {"w": np.ones(3), "b": np.full(3, 2.0)}}

    check(make, [lambda s, i=i: (s, np.eye(3)[i % 3] * (i + 1)) for i in range(8)], min_graph_calls=3)
