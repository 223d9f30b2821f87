"""The passes' topological re-ordering (Kahn's algorithm with a heap) is networkx's lexicographic
topological sort: same order on random graphs with effects, every node after its operands."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from janus_like import ir
from janus_like.jit.assumptions import Assumption
from janus_like.passes.order import dependencies, stable_topological_order

F64 = np.dtype(np.float64)


@settings(deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_order_matches_networkx_lexicographic_sort(n, seed):
    rng = np.random.default_rng(seed)
    nodes = [ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, ((), F64))]
    for _ in range(n):
        k = int(rng.integers(1, 3))
        ins = tuple(nodes[int(i)] for i in rng.integers(0, len(nodes), k))
        if rng.random() < 0.2:
            nodes.append(ir.Node(ir.ASSERT, ins[:1], {"expect": True, "assumption": Assumption("branch", "", True)}))
        else:
            nodes.append(ir.Node("add", ins if k == 2 else ins + (1.0,), {}, ((), F64)))
    preferred = {m.id: float(rng.random()) for m in nodes}  # a preference that ignores dependencies
    ours = [m.id for m in stable_topological_order(nodes, preferred.__getitem__)]
    g = nx.DiGraph()
    for i, before in dependencies(nodes).items():
        g.add_node(i)
        g.add_edges_from((b, i) for b in before)
    assert ours == list(nx.lexicographical_topological_sort(g, key=preferred.__getitem__))
    position = {i: p for p, i in enumerate(ours)}
    effects = [m.id for m in nodes if m.op == ir.ASSERT]
    assert [i for i in ours if i in set(effects)] == effects  # effects keep their order
    for m in nodes:
        assert all(position[x.id] < position[m.id] for x in m.inputs if isinstance(x, ir.Node))


def test_a_cycle_is_an_error_not_a_short_order():
    a = ir.Node("neg", (), {}, ((), F64))
    b = ir.Node("neg", (a,), {}, ((), F64))
    a.inputs = (b,)
    c = ir.Node("neg", (), {}, ((), F64))
    with pytest.raises(ValueError, match="cycle through 2 nodes"):
        stable_topological_order([a, b, c], lambda i: i)
