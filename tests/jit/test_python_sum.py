"""`sum()` of Python floats the graph computes: from Python 3.12 on, sum() compensates its
rounding, so the graph calls sum() itself where a chain of adds would give other last bits."""
import math

import numpy as np
import pytest

from janus_like.graphgen import py_numbers
from janus_like.ir import PY_OP
from tests.jit.harness import check, fallback_reasons


def floats_of(x, st):
    st["history"].pop(0)  # a window of the last three sums
    st["history"].append(float(x.sum()))
    parts = [float(v) for v in x]  # values whose sum a chain of adds rounds otherwise
    return sum(parts), sum(st["history"]), sum(parts, 0.25), sum([len(st["history"]), float(x[0])])


def floats_then_a_numpy_scalar(x, st):
    """sum() compensates over the leading Python floats and adds the rest one by one."""
    losses = [float(x[0]), float(x[1]), float(x[2]), float(x[3]), x[4]]
    named = {"a": float(x[0]), "b": float(x[1]), "c": float(x[2]), "d": x[4], "e": float(x[3])}
    return (sum(losses), sum(losses, 0.5), sum(float(v) if k < 4 else v for k, v in enumerate(x)),
            sum(named.values()), sum([float(x[0]), float(x[1]), np.asarray(x[4]), float(x[2])]))


def ints_of(x, st):
    st["n"].pop(0)
    st["n"].append(int(x.argmax()))
    return sum(st["n"]) + 1, sum([int(x.argmin()), 3], 2)


def _values(k):
    """Magnitudes where a chain of adds loses what a compensated sum keeps (1e16 + 1 - 1e16)."""
    rng = np.random.default_rng(k)
    return np.concatenate([[1e16, 1.0 + k, -1e16], rng.standard_normal(4) * 10.0 ** rng.integers(-8, 9, 4)])


def _calls(n):
    def call(s, k):
        return _values(k), s
    return [lambda s, k=k: call(s, k) for k in range(n)]


@pytest.mark.parametrize("compensated", [False, True])
def test_sums_of_python_floats_give_eagers_bits(monkeypatch, compensated):
    """On this Python (a plain sum before 3.12) and with the node forced on: the same bits as
    eager on inputs of wide-ranging magnitudes (a compensated sum differs from the chain there)."""
    if compensated:
        monkeypatch.setattr(py_numbers, "_COMPENSATED_SUM", True)
    jf = check(lambda: (floats_of, {"history": [1e16, 1.0, -1e16]}), _calls(14), min_graph_calls=8)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()
    ops = [n.op for g in jf.graphs() for n in g.graph.all_nodes()]
    if compensated:
        assert any(n.params.get("fn") is py_numbers._sum_from for g in jf.graphs() for n in g.graph.all_nodes()
                   if n.op == PY_OP), ops


@pytest.mark.parametrize("compensated", [False, True])
def test_sums_of_floats_and_numpy_scalars_give_eagers_bits(monkeypatch, compensated):
    if compensated:
        monkeypatch.setattr(py_numbers, "_COMPENSATED_SUM", True)
    jf = check(lambda: (floats_then_a_numpy_scalar, {}), _calls(12), min_graph_calls=6)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()


def test_the_compensated_node_is_not_used_for_ints(monkeypatch):
    monkeypatch.setattr(py_numbers, "_COMPENSATED_SUM", True)
    jf = check(lambda: (ints_of, {"n": [1, 2, 3]}), _calls(12), min_graph_calls=8)
    assert not any(n.op == PY_OP and n.params.get("fn") is py_numbers._sum_from
                   for g in jf.graphs() for n in g.graph.all_nodes())


def test_a_compensated_sum_differs_from_a_chain_on_these_inputs():
    """On a Python whose sum() compensates, the inputs above are ones where a chain of adds
    differs, so the first test fails there if the graph adds one item after the other."""
    if not py_numbers._COMPENSATED_SUM:
        pytest.skip("this Python's sum() adds one item after the other")
    parts = [float(v) for v in _values(0)]
    chain = 0
    for v in parts:
        chain = chain + v
    assert sum(parts) != chain


def fsum_of(x, st):
    loss = (st["w"] * x).sum()  # (a float32 NumPy scalar)
    st["w"] -= np.float32(0.1) * x
    st["hist"].append(loss)
    parts = [x.sum(), x.max(), float(x.min()), 1e16, -1e16]
    return math.fsum(st["hist"]) / len(st["hist"]), math.fsum(parts), math.fsum([]), math.fsum((x.sum(), 1))


def test_math_fsum_of_numbers_the_graph_computes():
    """`math.fsum(history)` of NumPy float32 losses (it kept the step eager: float() of a graph
    value inside library code): one node calling fsum on the items."""
    def make():
        return fsum_of, {"w": np.ones(3, np.float32), "hist": []}

    check(make, [lambda s, i=i: (np.full(3, 0.1 * i, np.float32), s) for i in range(8)], min_graph_calls=4)
