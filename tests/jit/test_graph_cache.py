"""The graph cache bound: up to MAX_GRAPHS signatures (tree shapes here) get graphs, and past
FREE_GRAPHS only while at least half of the cached graphs are being reused; side by side with
eager, so every call (graph or eager) gives eager's result."""
import importlib

import numpy as np

from .harness import check
from .test_assumptions import _tree, tree_encoder as _make

jit_function = importlib.import_module("janus_like.jit.function")


def _structure(node):
    return "L" if node.left is None else f"({_structure(node.left)}{_structure(node.right)})"


def _shapes(n, seed=0):
    """n trees of pairwise different structures."""
    r, seen, out = np.random.default_rng(seed), set(), []
    while len(out) < n:
        t = _tree(r, int(r.integers(2, 9)))
        if _structure(t) not in seen:
            seen.add(_structure(t))
            out.append(t)
    return out


def _reasons(jf):
    return [fb.detail for fb in jf.fallbacks() if fb.reason == "max-graphs"]


def test_sixteen_shapes_cycled_all_become_graphs():
    shapes = _shapes(16)
    calls = [lambda s, t=t: (t,) for _ in range(3) for t in shapes]
    jf = check(_make, calls)
    assert jf.stats()["graphs_cached"] == 16, jf.explain()
    # past FREE_GRAPHS the first cycle ran some shapes eagerly, until the cached graphs were reused
    assert any("ran twice" in d for d in _reasons(jf)), jf.explain()
    before = jf.stats()
    for t in shapes:
        jf(t)
    after = jf.stats()
    assert after["graph_calls"] - before["graph_calls"] == 16 and after["eager_calls"] == before["eager_calls"]


def test_one_off_shapes_stop_generating_after_the_free_graphs():
    shapes = _shapes(24, seed=1)
    jf = check(_make, [lambda s, t=t: (t,) for t in shapes])
    s = jf.stats()
    # + 1: once, a graph staging the recursive encoder as a recursion region (graphgen/recursion.py),
    # discarded: its leaves hold arrays, which a region does not take (a trial run refuses it)
    assert s["graphs_generated"] == jit_function.FREE_GRAPHS + 1, jf.explain()
    assert not any(n.op == "recursion" for g in jf.graphs() for n in g.graph.all_nodes())
    assert s["eager_calls"] == len(shapes) - 3 - jit_function.FREE_GRAPHS  # 3 warm-up calls
    assert any("fewer than half of them ran twice" in d for d in _reasons(jf))


def test_max_graphs_still_bounds_the_cache():
    shapes = _shapes(12, seed=2)
    jf = check(_make, [lambda s, t=t: (t,) for _ in range(3) for t in shapes], max_graphs=4)
    assert jf.stats()["graphs_cached"] == 4
    assert any(d.startswith("4 graphs cached") for d in _reasons(jf))


def test_the_graph_that_accepted_the_same_arguments_is_tried_first():
    """A dataset's trees come back every epoch: the graph that accepted these very objects runs
    first (one guard check), not a scan of every cached shape's guards."""
    shapes = _shapes(16, seed=3)
    jf = check(_make, [lambda s, t=t: (t,) for _ in range(3) for t in shapes])
    for t in shapes:  # (check() ran copies of the trees)
        jf(t)
    tried = []
    for g in jf.graphs():  # count every guard check of one more cycle
        g.fast = (lambda f, g: lambda args: tried.append(g) or f(args))(g.fast, g)
    for t in shapes:
        jf(t)
    assert len(tried) <= 2 * len(shapes), len(tried)  # the last graph (a miss), then the hinted one


def test_stale_hints_never_change_results():
    """Argument ids are reused once their objects are freed: a tree built anew each call may get
    the id of one of another shape. The hinted graph's guards reject it; eager's result stands."""
    shapes = _shapes(6, seed=4)

    def call(k):
        if k % 2:
            return (_tree(np.random.default_rng(k), int(np.random.default_rng(k).integers(2, 7))),)
        return (shapes[(k // 2) % len(shapes)],)

    check(_make, [lambda s, k=k: call(k) for k in range(60)])


def test_hints_do_not_keep_dropped_graphs_alive():
    import gc
    import weakref

    import janus_like as jl

    shapes = _shapes(4, seed=5)
    jf = jl.jit(_make()[0])  # (check() keeps every graph it saw compiled)
    for t in shapes * 3:
        jf(t)
    refs = [weakref.ref(g) for g in jf.graphs()]
    assert jf._hints and all(r() is not None for r in refs)
    for entry in jf._entries.values():  # as a regeneration drops them
        entry.graphs.clear()
    jf._hot = None
    gc.collect()
    assert all(r() is None for r in refs)
