"""`obj[k]` of an input object whose class has its own `__getitem__` (and `__iter__`), with k a
Python int the graph computes, side by side with eager. The graph looks up a list, tuple or dict
of Python numbers by position or key when it runs (graphgen/draws.table_lookup); a class's own
`__getitem__` is the class's code, never the k-th item of what iterating it gives (networkx's
`G.nodes[v]` is the node's attribute dict, not `list(G.nodes)[v]`)."""
import networkx as nx
import numpy as np

from .harness import check, fallback_reasons, side_by_side


class Table:
    """A mapping of the user's: iterating gives the keys, `[]` looks a key up."""

    def __init__(self, d):
        self._d = d

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)

    def __getitem__(self, k):
        return self._d[k]


class Rows:
    """A sequence of the user's whose `[]` is not position: row k is item k counted from the end."""

    def __init__(self, items):
        self.items = list(items)

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, k):
        return self.items[-1 - k]


def test_a_users_mapping_looked_up_by_a_computed_key():
    def make():
        st = {"T": Table({2: 0.5, 0: 1.5, 1: 2.5}), "w": np.ones(3)}

        def step(st, x):
            k = int(np.argmax(x))
            c = st["T"][k]
            st["w"] = st["w"] * c
            return c
        return step, st

    jf = side_by_side(make, [lambda s, i=i: (s, np.eye(3)[i % 3]) for i in range(9)])
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_a_users_sequence_indexed_by_an_argument():
    def make():
        st = {"R": Rows([1.0, 2.0, 3.0, 4.0]), "acc": np.zeros(2)}

        def step(st, k):
            st["acc"] = st["acc"] + st["R"][k]
            return st["R"][k]
        return step, st

    jf = side_by_side(make, [lambda s, i=i: (s, i % 4) for i in range(9)])
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_networkx_node_attributes_by_a_varying_node():
    def make():
        G = nx.Graph([(3, 1), (1, 0), (0, 2), (2, 3)])
        for v in G:
            G.nodes[v]["y"] = float(v)
            G.nodes[v]["h"] = np.ones(2) * v
        st = {"G": G, "picked": []}

        def step(st, v):
            st["picked"].append(st["G"].nodes[v])
            return st["G"].nodes[v]["h"] * 2, len(st["picked"])
        return step, st

    jf = side_by_side(make, [lambda s, i=i: (s, i % 4) for i in range(9)])
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_nodes_whose_keys_are_not_positions():
    def make():
        G = nx.Graph([(5, 7), (7, 9), (9, 5)])
        for v in G:
            G.nodes[v]["y"] = float(v)
        return (lambda st, v: st["G"].nodes[v]["y"] * 2.0), {"G": G}

    jf = side_by_side(make, [lambda s, i=i: (s, [5, 7, 9][i % 3]) for i in range(9)])
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_a_list_of_numbers_is_still_looked_up_in_the_graph():
    def make():
        return (lambda st, x: st["scale"][int(np.argmax(x))] * x), {"scale": [0.5, 1.5, 2.5]}

    check(make, [lambda s, i=i: (s, np.eye(3)[i % 3]) for i in range(9)], min_graph_calls=4)


class _Defaults(dict):
    def __missing__(self, key):
        return -1.0


def test_a_missing_keys_default_is_the_mappings_own():
    import collections

    for table in (collections.defaultdict(lambda: 0.5, {0: 1.0, 1: 2.0}), collections.Counter({0: 3, 1: 1}),
                  _Defaults({0: 1.0, 1: 2.0})):
        def make(table=table):
            def step(x, st):
                return x * st["d"][int(x.argmax())]
            return step, {"d": type(table)(table) if not isinstance(table, collections.defaultdict)
                          else collections.defaultdict(table.default_factory, table)}

        jf = side_by_side(make, [lambda s, i=i: (np.eye(5)[[0, 1, 0, 1, 2, 3, 0, 4, 1][i]] * (i + 1), s)
                                 for i in range(9)])
        assert "internal-error" not in fallback_reasons(jf), jf.explain()
