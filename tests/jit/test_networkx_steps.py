"""Steps over networkx graphs: message passing along `G.edges()` (EdgeView's `__iter__` is a
generator: run to its end and its edges taken, graphgen/generators.collected_items), a graph
edited between calls, and a loop body that edits the graph it iterates.

Eager and jit side by side on the same calls (harness.check), state compared after every call.
"""
import numpy as np

from .harness import check, fallback_reasons, random_array

nx = __import__("pytest").importorskip("networkx")


def _ring(n):
    G = nx.Graph()
    G.add_edges_from([(i, (i + 1) % n) for i in range(n)] + [(0, 2)])
    return G


def _edges_step(G):
    st = {"W": np.eye(4) * 0.5, "G": G}

    def step(X, st):
        H = X @ st["W"]
        M = np.zeros_like(H)
        for u, v in st["G"].edges():
            M[u] += H[v]
            M[v] += H[u]
        st["W"] -= 0.01 * (X.T @ M)
        return float(M.sum())

    return step, st


def test_message_passing_along_the_edges_of_a_networkx_graph():
    jf = check(lambda: _edges_step(_ring(4)), [lambda s, i=i: (random_array(i, (4, 4)),) + (s,) for i in range(9)],
               min_graph_calls=5)
    assert not fallback_reasons(jf), jf.explain()


def test_an_edge_added_between_calls_is_seen():
    def call(i):
        def args(s):
            if i == 6:
                s["G"].add_edge(1, 3)
            if i == 8:
                s["G"].remove_edge(0, 1)
            return random_array(i, (4, 4)), s
        return args

    check(lambda: _edges_step(_ring(4)), [call(i) for i in range(11)], min_graph_calls=5)


def test_a_body_that_edits_the_graph_it_iterates_raises_as_eager():
    """The edges are taken before the body runs: a body that adds an edge (`edit` on one call)
    must still fail as eager's iteration does ("dictionary changed size during iteration")."""
    def make():
        G = _ring(4)

        def step(X, G, edit):
            total = 0.0
            for u, v in G.edges():
                total += float(X[u, v])
                if edit:
                    G.add_edge(u, 99)
            return total

        return step, {"G": G}

    calls = [lambda s, i=i: (np.full((4, 4), 0.1 * (i + 1)), s["G"], i == 7) for i in range(10)]
    check(make, calls, min_graph_calls=4)
