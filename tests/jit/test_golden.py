"""Golden printouts of small generated graphs: `str(graph)` is the IR's readable form (one line per
node, asserts and structured nodes included) and these tests pin it down.

Node ids come from a global counter, so printouts are normalized: ids are renumbered %1, %2, ...
in order of first appearance, and the generated module's file name becomes `prog.py`. The
programs live in a source string written to a real file, so their line numbers are fixed here.
Every graph is also checked with `ir.verify`.
"""
import re
import textwrap

import numpy as np
import pytest

import janus_like as jl
from janus_like import ir

from .harness import GraphRecorder, load_module, verify_all_graphs, verify_graphs

SRC = '''\
import numpy as np


def mlp(x, w, b):
    return np.tanh(x @ w + b)


def branchy(x):
    s = np.sum(x)
    if s > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y


def stateful(v, x, buf):
    v.assign_add(x)
    buf[0] = 1.0
    print("v", v)
    return np.random.randn(2) + x


def halve(x):
    while np.max(x) > 1.0:
        x = x * 0.5
    return x


def helper(x):
    return x * x


def calls_helper(x, xs):
    total = helper(x)
    for t in xs:
        total = total + helper(t)
    return total
'''


def normalize(text: str) -> str:
    ids = {}

    def renumber(m):
        return "%" + str(ids.setdefault(m.group(1), len(ids) + 1))

    text = re.sub(r"%(\d+)", renumber, text)
    text = re.sub(r"\bgolden_\d+\.", "prog.", text)  # (a module's global: `golden_3.np`)
    return re.sub(r"\b\w+_\d+\.py:", "prog.py:", text)


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    # one module for all tests: identical code in several files would share the profiler's
    # instrumentation cache (see test_fallbacks.test_identical_functions_in_two_files_each_profiled)
    return load_module(tmp_path_factory.mktemp("golden"), SRC, "golden")


def _graph_after(fn, argsets, **options):
    jf = jl.jit(fn, **options)
    for args in argsets:
        jf(*args)
    graphs = jf.graphs()
    assert len(graphs) == 1, jf.explain()
    assert verify_all_graphs(jf) == 1
    return graphs[0]


def _golden(expected):
    return textwrap.dedent(expected).strip("\n")


def test_golden_straight_line(prog):
    f32 = np.float32
    # a small product runs as np.dot under reassociation (passes/products.py)
    g = _graph_after(prog.mlp, [(np.ones((2, 3), f32), np.ones((3, 4), f32), np.zeros(4, f32))] * 4)
    assert normalize(str(g.graph)) == _golden("""
        graph mlp(3 inputs) {
          %1 = input arg0 : float32[2,3]
          %2 = input arg1 : float32[3,4]
          %3 = input arg2 : float32[4]
          %4 = dot(%1, %2) : float32[2,4]  @ prog.py:5
          %5 = add(%4, %3) : float32[2,4]  @ prog.py:5
          %6 = tanh(%5) : float32[2,4]  @ prog.py:5
          return (%6,)
        }
        """)


def test_golden_speculated_branch_assert(prog):
    g = _graph_after(prog.branchy, [(np.ones(2),)] * 4)
    assert normalize(str(g.graph)) == _golden("""
        graph branchy(1 inputs) {
          %1 = input arg0 : float64[2]
          %2 = sum(%1, axis=None, keepdims=False, dtype=None) : float64[]  @ prog.py:9
          %3 = gt(%2, 0) : bool[]  @ prog.py:10
          assert %3 is True  [branch prog.py:10]
          %4 = mul(%1, 2.0) : float64[2]  @ prog.py:11
          return (%4,)
        }
        """)


def _strip_sites(text):
    return re.sub(r"  @ prog\.py:\d+", "", text)


def test_golden_cond_after_both_outcomes(prog):
    """Both outcomes seen in warm-up: a cond node with both blocks (sites: see the next test)."""
    g = _graph_after(prog.branchy, [(np.ones(2),), (-np.ones(2),)] * 3)
    assert _strip_sites(normalize(str(g.graph))) == _strip_sites(_golden(_COND))


def test_golden_cond_sites(prog):
    g = _graph_after(prog.branchy, [(np.ones(2),), (-np.ones(2),)] * 3)
    assert normalize(str(g.graph)) == _golden(_COND)


_COND = """
        graph branchy(1 inputs) {
          %1 = input arg0 : float64[2]
          %2 = sum(%1, axis=None, keepdims=False, dtype=None) : float64[]  @ prog.py:9
          %3 = gt(%2, 0) : bool[]  @ prog.py:10
          %4 = cond %3  @ prog.py:10
            then:
              %5 = mul(%1, 2.0) : float64[2]  @ prog.py:11
              yield (%5,)
            else:
              %6 = sub(%1, 1.0) : float64[2]  @ prog.py:13
              yield (%6,)
          %7 = tuple_get(%4, index=0) : float64[2]  @ prog.py:10
          return (%7,)
        }
        """


def test_golden_state_random_and_print(prog, capsys):
    g = _graph_after(prog.stateful, [(jl.Variable(np.zeros(2)), np.ones(2), np.zeros(3))] * 4)
    capsys.readouterr()
    assert normalize(str(g.graph)) == _golden("""
        graph stateful(3 inputs) {
          %1 = input arg0 : float64[2]
          %2 = input arg1 : float64[2]
          %3 = input arg2 : float64[3]
          %4 = add(%1, %2) : float64[2]  @ prog.py:18
          %5 = index_update(%3, 1.0, index=[0]) : float64[3]  @ prog.py:19
          %6 = np_random(method='randn', args=(2,), kwargs={}) : float64[2]  @ prog.py:21
          %7 = add(%6, %2) : float64[2]  @ prog.py:21
          return (%5, %4, %7)
        }
        """)


_UNROLLED_WHILE = """
    graph halve(1 inputs) {
      %1 = input arg0 : float64[2]
      %2 = max(%1, axis=None, keepdims=False) : float64[]  @ prog.py:25
      %3 = gt(%2, 1.0) : bool[]  @ prog.py:25
      assert %3 is True  [trip_count prog.py:25]
      %4 = mul(%1, 0.5) : float64[2]  @ prog.py:26
      %5 = max(%4, axis=None, keepdims=False) : float64[]  @ prog.py:25
      %6 = gt(%5, 1.0) : bool[]  @ prog.py:25
      assert %6 is True  [trip_count prog.py:25]
      %7 = mul(%4, 0.5) : float64[2]  @ prog.py:26
      %8 = max(%7, axis=None, keepdims=False) : float64[]  @ prog.py:25
      %9 = gt(%8, 1.0) : bool[]  @ prog.py:25
      assert %9 is False  [trip_count prog.py:25]
      return (%7,)
    }
    """


def test_golden_unrolled_while_structure(prog):
    """Stable trip count: the loop is unrolled with one trip_count assert per test (sites aside)."""
    g = _graph_after(prog.halve, [(np.array([4.0, 1.0]),)] * 4)
    assert _strip_sites(normalize(str(g.graph))) == _strip_sites(_golden(_UNROLLED_WHILE))


def test_golden_unrolled_while_sites(prog):
    g = _graph_after(prog.halve, [(np.array([4.0, 1.0]),)] * 4)
    assert normalize(str(g.graph)) == _golden(_UNROLLED_WHILE)


def test_golden_loop_node(prog):
    g = _graph_after(prog.halve, [(np.array([4.0, 1.0]),), (np.array([8.0, 1.0]),)] * 3)
    text = normalize(str(g.graph))
    if "loop" not in text:
        pytest.skip("no loop nodes in this version of the generator")
    assert text == _golden("""
        graph halve(1 inputs) {
          %1 = input arg0 : float64[2]
          %2 = loop (%3) = (%1,)  @ prog.py:25
            while:
              %4 = max(%3, axis=None, keepdims=False) : float64[]  @ prog.py:25
              %5 = gt(%4, 1.0) : bool[]  @ prog.py:25
              test %5
            do:
              %6 = mul(%3, 0.5) : float64[2]  @ prog.py:26
              next (%6,)
          %7 = tuple_get(%2, index=0) : float64[2]  @ prog.py:25
          return (%7,)
        }
        """)


def test_golden_inlined_helper_and_list_unrolling(prog):
    g = _graph_after(prog.calls_helper, [(np.ones(2), [np.ones(2), np.zeros(2)])] * 4)
    assert normalize(str(g.graph)) == _golden("""
        graph calls_helper(3 inputs) {
          %1 = input arg0 : float64[2]
          %2 = input arg1[0] : float64[2]
          %3 = input arg1[1] : float64[2]
          %4 = mul(%1, %1) : float64[2]  @ prog.py:31
          %5 = mul(%2, %2) : float64[2]  @ prog.py:31
          %6 = add(%4, %5) : float64[2]  @ prog.py:37
          %7 = mul(%3, %3) : float64[2]  @ prog.py:31
          %8 = add(%6, %7) : float64[2]  @ prog.py:37
          return (%8,)
        }
        """)


def test_golden_explain_lists_assumptions(prog):
    jf = jl.jit(prog.branchy)
    for _ in range(4):
        jf(np.ones(2))
    text = normalize(jf.explain())
    assert text.splitlines()[2:] == [
        "    assume arity: positional arguments expected 1 (the call)",
        "    assume type: arg0 expected 'ndarray' (argument 0)",
        "    assume shape: arg0 expected 'float64[2]' (argument 0)",
        "    assume identity: branchy.__code__ expected 'the code the graph was made from' (branchy's code)",
        "    assume identity: prog.np expected 'numpy' (prog.py:9)",
        "    assume branch: expected True (prog.py:10)",
    ], text


def test_normalize_renumbers_in_order_of_appearance():
    assert normalize("%17 = add(%12, %17)  @ golden_3.py:4") == "%1 = add(%2, %1)  @ prog.py:4"


def test_every_recorded_graph_verifies(prog):
    """All graphs compiled while running the golden programs (including regenerated ones)."""
    with GraphRecorder() as rec:
        for fn, argsets in [(prog.mlp, [(np.ones((2, 3)), np.ones((3, 4)), np.zeros(4))] * 4),
                            (prog.branchy, [(np.ones(2),)] * 4 + [(-np.ones(2),)] * 3 + [(np.ones(2),)] * 2),
                            (prog.halve, [(np.array([4.0, 1.0]),)] * 4 + [(np.array([40.0, 1.0]),)] * 3)]:
            jf = jl.jit(fn)
            for args in argsets:
                jf(*args)
    assert verify_graphs(rec.compiled) >= 4
    for g in rec.compiled:
        ir.verify(g.graph)
