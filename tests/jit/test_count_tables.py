"""Per-class counts at a key the step computes: `c[int(y)] += 1` into a Counter or a defaultdict,
`d[k] = d.get(k, 0) + 1` into a dict, side by side with eager (a key the container lacks: the
graph's lookup raises, and eager's re-run gives the default and adds the key)."""
import collections

import numpy as np
import pytest

from .harness import check, fallback_reasons, side_by_side


def _calls(n):
    return [lambda s, i=i: (s, np.random.default_rng(i).standard_normal(3)) for i in range(n)]


def _counted(st, x):
    k = int(np.argmax(x * st["w"]))
    st["c"][k] += 1
    return k, st["c"][k]


def _got(st, x):
    k = int(np.argmax(x * st["w"]))
    st["c"][k] = st["c"].get(k, 0) + 1
    return k


def _local(st, x):
    d = {0: 0.0, 1: 0.0, 2: 0.5}
    k = int(np.argmax(x * st["w"]))
    d[k] = d.get(k, 0.0) + float(x[k])
    return d, d.get(k, -1.0)


@pytest.mark.parametrize("table", [collections.Counter({0: 0, 1: 0, 2: 0}),
                                   collections.defaultdict(int, {0: 0, 1: 0, 2: 0}), {0: 0, 1: 0, 2: 0}])
def test_counts_at_a_computed_key(table):
    body = _got if type(table) is dict else _counted

    def make():
        return body, {"c": table.copy(), "w": np.ones(3)}

    check(make, _calls(9), min_graph_calls=4)


def test_a_local_dict_read_with_a_default():
    check(lambda: (_local, {"w": np.ones(3)}), _calls(8), min_graph_calls=4)


@pytest.mark.parametrize("table", [collections.Counter(), collections.defaultdict(int), {}])
def test_keys_the_counts_lack_when_the_graph_is_made(table):
    body = _got if type(table) is dict else _counted

    def make():
        return body, {"c": table.copy(), "w": np.array([1.0, 0.5, 2.0])}

    side_by_side(make, _calls(14))


class _Scaled(collections.Counter):
    def __missing__(self, key):
        return 10


def _mixed(st, x):
    k = int(np.argmax(x))
    return st["c"].get(k, 0.5)  # (a default of another type than the values: eager)


def test_counts_of_other_classes_and_defaults():
    side_by_side(lambda: (_counted, {"c": _Scaled({0: 1}), "w": np.ones(3)}), _calls(8))
    side_by_side(lambda: (_mixed, {"c": {0: 1, 1: 2, 2: 3}}), _calls(8))
    side_by_side(lambda: (_counted, {"c": collections.Counter({0: 1, 1: 2.5, 2: 3}), "w": np.ones(3)}), _calls(8))


def _store(st, x):
    k = int(np.argmax(x))
    st["c"][k] = st["c"].get(k, 0) + 1 if type(st["c"]) is dict else st["c"][k] + 1
    return k


@pytest.mark.parametrize("table", [{0: 0, 1: 0}, collections.Counter({0: 0, 1: 0})])
def test_a_key_added_after_the_graph_was_made(table):
    """A store at a key the dict lacks adds it in eager: an assert in the graph (the call runs
    eagerly), not an error the graph raises where eager does not."""
    def make():
        return _store, {"c": table.copy()}

    picks = [0, 1, 0, 1, 0, 1, 2, 0, 1, 2, 0, 1]
    jf = side_by_side(make, [lambda s, k=k: (s, np.eye(3)[k]) for k in picks])
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
    assert jf.stats()["graph_calls"] >= 5, jf.explain()


def test_a_get_of_a_number_the_graph_computes(tmp_path):
    """`{3: 1}.get(i, 0)`: the lookup when the graph runs, equal to eager's on every call (it
    was once a hash of the symbolic value); `.get(i)` (None) and a default of another type stay eager."""
    from .harness import load_module

    source = "def f(x, k):\n    i = int(x[0] * 10) % 5\n    return {3: 1, 1: 2}.get(i, 0), {3: 1}.get(i)\n"
    jf = side_by_side(lambda: (load_module(tmp_path, source, "dict_get").f, None),
                      [lambda s, k=k: (np.array([0.1 * k]), k) for k in range(9)])
    assert fallback_reasons(jf) == {"data-dependent-python"}, jf.explain()
    source = "def f(x, k):\n    i = int(x[0] * 10) % 5\n    return {3: 1, 1: 2}.get(i, 0) * x\n"
    check(lambda: (load_module(tmp_path, source, "dict_get_default").f, None),
          [lambda s, k=k: (np.array([0.1 * k]), k) for k in range(9)], min_graph_calls=4)
