"""Shape rules and remembered elementwise dtypes (graphgen/shapes.py) give what running the op
gives, or step aside: checked against NumPy on drawn shapes and dtypes, and in generated graphs
(the suite runs with JANUS_LIKE_VERIFY=1, which makes the builder run every op anyway and
compare)."""
import numpy as np
from hypothesis import given, strategies as st

import janus_like as jl
from janus_like import ir
from janus_like.graphgen import builder as B
from janus_like.graphgen.shapes import DTYPES, ElementwiseDtypes, by_rule
from janus_like.ops.registry import REGISTRY

FLOATS = [np.float16, np.float32, np.float64]
OTHER = [np.int32, np.int64, np.bool_, np.complex64]
dims = st.integers(1, 4)
shapes = st.lists(dims, min_size=0, max_size=3).map(tuple)


def _node(shape, dtype):
    return ir.Node("input", (), {}, (tuple(shape), np.dtype(dtype)))


def _ran(op, arrays, params):
    try:
        out = np.asarray(REGISTRY[op].impl(np, *arrays, **params))
    except Exception:
        return None
    return out.shape, out.dtype


def _agrees(op, specs, params):
    """The rule's answer is the op's, and an op that raises has no rule answer."""
    got = by_rule(REGISTRY[op], [_node(s, d) for s, d in specs], params)
    ran = _ran(op, [np.zeros(s, d) for s, d in specs], params)
    if got is not None:
        assert ran is not None, (op, specs, params, got)
        assert (tuple(got[0]), np.dtype(got[1])) == ran, (op, specs, params)
    return got


@given(shapes, shapes, st.sampled_from(FLOATS + OTHER), st.sampled_from(FLOATS))
def test_product_rules_match_numpy(a, b, da, db):
    for op in ("matmul", "dot"):
        _agrees(op, [(a, da), (b, db)], {})
    # the matching case is always answered by the rule for floats of one dtype
    if a and len(a) <= 2:
        b2 = (a[-1],) + b[1:2]
        got = _agrees("matmul", [(a, db), (b2, db)], {})
        assert got is not None


@given(shapes, st.sampled_from(FLOATS), st.data())
def test_transpose_and_broadcast_rules_match_numpy(x, dx, data):
    perm = data.draw(st.permutations(range(len(x))))
    negative = [i - len(x) if data.draw(st.booleans()) else i for i in perm]
    for axes in (None, tuple(perm), tuple(negative), tuple(perm) + (0,)):
        _agrees("transpose", [(x, dx)], {"axes": axes})
    like = data.draw(shapes)
    _agrees("broadcast_like", [(x, dx), (like, dx)], {})
    assert _agrees("broadcast_like", [(x, dx), ((2,) + x, dx)], {}) is not None


@given(shapes, shapes, st.sampled_from(FLOATS), st.sampled_from(FLOATS))
def test_sum_to_rule_matches_numpy(g, like, dg, dl):
    _agrees("sum_to", [(g, dg), (like, dl)], {})
    kept = tuple(1 if i % 2 else d for i, d in enumerate(g))
    assert _agrees("sum_to", [((3,) + g, dg), (kept, dl)], {}) is not None


def test_index_gradient_rule_and_what_it_leaves_alone():
    op = REGISTRY["getitem_grad"]
    rows = ir.Node("input", (), {}, ((5,), np.dtype(np.int64)))
    index = ("op", 0)
    got = by_rule(op, [_node((5, 3), np.float32), _node((7, 3), np.float32), rows], {"index": index})
    assert got == ((7, 3), np.dtype(np.float32))
    assert by_rule(op, [_node((5, 3), np.float32), _node((7, 3), np.float32), rows], {"index": index, "dense": True}) is None
    assert by_rule(op, [_node((5, 3), np.float32), _node((7, 3), np.int64), rows], {"index": index}) is None
    # an operand with a generation-time value, or a literal, is left to running the op
    hinted = _node((2, 2), np.float32)
    hinted.hint = np.zeros((2, 2), np.float32)
    assert by_rule(REGISTRY["matmul"], [hinted, _node((2, 2), np.float32)], {}) is None
    assert by_rule(REGISTRY["matmul"], [np.zeros((2, 2), np.float32), _node((2, 2), np.float32)], {}) is None


_OTHERS = st.one_of(st.integers(-300, 300), st.floats(-1e6, 1e6), st.booleans(),
                   st.sampled_from([np.float32(2), np.int16(7), np.int16(-3), np.zeros(3, np.int8), np.ones(2)]))


def _dtype_or_error(op, reps):
    try:
        return np.asarray(op.impl(np, *reps)).dtype
    except Exception as exc:
        return type(exc)


@given(st.sampled_from(["add", "mul", "sub", "div", "maximum", "pow", "lt", "where"]),
       st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int64, np.bool_]), _OTHERS, _OTHERS)
def test_one_key_one_dtype(name, dtype, one, two):
    """The key holds everything that decides the result dtype: representatives with one key
    give one dtype (or both raise), on this NumPy; ints are keyed by value (one that does not
    fit the other dtype raises), unhashable parameters and unknown operands have no key."""
    op = REGISTRY[name]
    first, second = ([np.zeros((), dtype), o] + ([np.float32(1)] if name == "where" else []) for o in (one, two))
    k1, k2 = (ElementwiseDtypes.key(op, reps, {}) for reps in (first, second))
    assert k1 is not None and k2 is not None
    if k1 == k2:
        assert _dtype_or_error(op, first) == _dtype_or_error(op, second)
    if type(one) is int and type(two) is int and one != two:
        assert k1 != k2
    assert ElementwiseDtypes.key(op, [np.zeros((), dtype), object()], {}) is None
    assert ElementwiseDtypes.key(op, first, {"out": [np.zeros(2)]}) is None


def _step(w, x, b):
    h = np.tanh(x @ w + b)
    return (h * 2.0 - 1).sum(axis=0) / 3


def test_a_wrong_shortcut_is_caught_under_verify(monkeypatch):
    """With JANUS_LIKE_VERIFY the builder compares: a rule that lies fails generation loudly."""
    monkeypatch.setitem(B.by_rule.__globals__["RULES"], "matmul", lambda avals, params: ((9, 9), avals[0][1]))
    rng = np.random.default_rng(0)
    w, x, b = (rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (2, 4), (3,)])
    f = jl.jit(_step)
    for _ in range(4):
        np.testing.assert_array_equal(np.asarray(f(w, x, b)), _step(w, x, b))
    text = f.explain()
    assert "shortcut gives" in text and "matmul" in text


def test_shortcuts_off_and_on_generate_the_same_graph(monkeypatch):
    """Generation with the shortcuts (VERIFY off) builds the graph it builds by running ops."""
    rng = np.random.default_rng(1)
    w, x, b = (rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (2, 4), (3,)])
    texts = []
    for verify in ("1", "0"):
        monkeypatch.setenv("JANUS_LIKE_VERIFY", verify)
        DTYPES._known.clear()
        f = jl.jit(_step)
        for _ in range(4):
            out = f(w, x, b)
        np.testing.assert_array_equal(np.asarray(out), _step(w, x, b))
        assert f.stats()["graph_calls"] == 1
        texts.append([(n.op, n.aval) for n in f.graphs()[0].graph.nodes])
    assert texts[0] == texts[1]
