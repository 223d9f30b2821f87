"""Every assumption kind the generator speculates on, with call sequences that break it mid-way.

Each test runs eager and jit side by side (outputs, printed text, all reachable state and the
global RNG compared after every call), checks that graphs really ran, and checks how the JIT
reacted to the broken assumption: a new specialized graph, a regeneration with the assumption
relaxed, or an eager fallback.
"""
import numpy as np
import pytest

import janus_like as jl

from .harness import check, fallback_reasons


def _arr(seed, shape, dtype=np.float64, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _has_loop_node(jf):
    return any(n.op == "loop" for g in jf.compiled for n in g.graph.all_nodes())


def _assumption_kinds(jf):
    return {a.kind for g in jf.compiled for a in g.assumptions}


# ------------------------------------------------------------------ shape / dtype
def test_new_shape_and_dtype_make_new_graphs():
    def make():
        def f(x, w):
            h = np.tanh(x @ w) * 2.0 + np.sum(x, axis=1, keepdims=True)
            return np.maximum(h, 0.0)

        return f, {}

    w = _arr(0, (4, 3))
    seq = [(3, np.float64)] * 5 + [(5, np.float64)] * 3 + [(3, np.float32)] * 3 + [(3, np.float64)] * 2
    calls = [lambda s, n=n, dt=dt, i=i: (_arr(i, (n, 4), dt), w.astype(dt)) for i, (n, dt) in enumerate(seq)]
    jf = check(lambda: make(), calls)
    s = jf.stats()
    assert s["graphs_generated"] == 3, jf.explain()
    assert s["graph_calls"] == len(seq) - 3 - 0, jf.explain()  # all post-warm-up calls ran as graphs
    assert "shape" in _assumption_kinds(jf)


def test_shape_guard_on_nested_input_array():
    """A shape that changes inside an object (not a top-level argument) fails a guard."""
    class Box:
        def __init__(self, w):
            self.w = w

    def make():
        box = Box(_arr(1, (4, 4)))

        def f(box, x):
            return np.tanh(x @ box.w)

        return f, {"box": box}

    def call(i):
        def c(s):
            if i == 6:
                s["box"].w = _arr(2, (4, 2))
            return (s["box"], _arr(i, (2, 4)))
        return c

    jf = check(make, [call(i) for i in range(10)])
    assert jf.stats()["graphs_generated"] == 2, jf.explain()
    assert jf.stats()["guard_failures"] >= 1


# ------------------------------------------------------------------ Python type of an argument
def test_new_python_type_of_argument():
    """ndarray, then Tensor, then a Python float: each type gets its own graph (or eager)."""
    def make():
        def f(x):
            y = x * 2 + 1
            return np.exp(y) - y

        return f, {}

    vals = [_arr(i, (3,)) for i in range(5)] + [jl.tensor(_arr(i, (3,))) for i in range(4)] + [0.5, 0.25, 1.5]
    jf = check(make, [lambda s, v=v: (v,) for v in vals])
    assert jf.stats()["graphs_generated"] >= 2, jf.explain()
    assert "type" in _assumption_kinds(jf)


def test_type_guard_on_attribute_object_changes():
    class Relu:
        def apply(self, x):
            return np.maximum(x, 0.0)

    class Tanh:
        def apply(self, x):
            return np.tanh(x)

    class Holder:
        def __init__(self):
            self.act = Relu()

    def make():
        def f(holder, x):
            return holder.act.apply(x) * 3.0

        return f, {"h": Holder()}

    def call(i):
        def c(s):
            s["h"].act = Relu() if i < 6 or i >= 10 else Tanh()
            return (s["h"], _arr(i, (5,)))
        return c

    jf = check(make, [call(i) for i in range(13)])
    assert jf.stats()["guard_failures"] >= 1, jf.explain()
    assert jf.stats()["graphs_generated"] == 2, jf.explain()


# ------------------------------------------------------------------ Python scalar value
class _Config:
    def __init__(self):
        self.scale = 0.5
        self.steps = 2


def test_scalar_attribute_changing_every_call_becomes_graph_input():
    """Constant during warm-up, then changes every call: value guard failures, then a regeneration
    with the value as a graph input, after which every call runs as a graph again."""
    def make():
        def f(cfg, x):
            return np.tanh(x * cfg.scale) + cfg.scale

        return f, {"cfg": _Config()}

    def call(i):
        def c(s):
            s["cfg"].scale = 0.5 if i < 5 else 0.1 * i
            return (s["cfg"], _arr(i, (4,)))
        return c

    n = 14
    jf = check(make, [call(i) for i in range(n)])
    s = jf.stats()
    assert s["regenerations"] >= 1, jf.explain()
    assert s["guard_failures"] >= 2, jf.explain()
    # once relaxed, the varying scalar is an input: the last calls all ran as graphs
    assert s["graph_calls"] >= n - 3 - 4, jf.explain()
    assert any("scale" in n.params["name"] for g in jf.graphs() for n in g.graph.nodes if n.op == "input"), \
        jf.explain()


def test_scalar_varying_during_warmup_is_graph_input_from_the_start():
    def make():
        def f(cfg, x):
            return x * cfg.scale - cfg.scale

        return f, {"cfg": _Config()}

    def call(i):
        def c(s):
            s["cfg"].scale = 0.25 * (i + 1)
            return (s["cfg"], _arr(i, (4,)))
        return c

    jf = check(make, [call(i) for i in range(9)])
    s = jf.stats()
    assert s["graph_calls"] == 6 and s["regenerations"] == 0, jf.explain()


def test_scalar_value_baked_in_when_stable_then_changes_once():
    """A Python int loop bound: changing it makes a value-guard failure (the call is eager), then
    the bound becomes a graph input driving a loop node."""
    def make():
        def f(cfg, x):
            for _ in range(cfg.steps):
                x = np.tanh(x) + 0.5
            return x

        return f, {"cfg": _Config()}

    def call(i):
        def c(s):
            s["cfg"].steps = 2 if i < 6 else 3
            return (s["cfg"], _arr(i, (3,)))
        return c

    jf = check(make, [call(i) for i in range(12)])
    assert jf.stats()["guard_failures"] >= 1, jf.explain()
    assert "value" in _assumption_kinds(jf)
    # relaxing a `range()` bound makes it a graph value: the regenerated graph has a loop node
    assert jf.stats()["regenerations"] == 1, jf.explain()
    assert any("loop" in str(g.graph) for g in jf.graphs()), jf.explain()
    assert jf.stats()["graph_calls"] >= 8, jf.explain()


# ------------------------------------------------------------------ identity of a global function
def _act_tanh(x):
    return np.tanh(x)


def _act_relu(x):
    return np.maximum(x, 0.0)


ACTIVATION = _act_tanh


def test_global_function_rebound_fails_identity_guard():
    def make():
        def f(x):
            return ACTIVATION(x) * 2.0 + 1.0

        return f, {}

    def call(i):
        def c(s):
            global ACTIVATION
            ACTIVATION = _act_relu if 6 <= i < 10 else _act_tanh
            return (_arr(i, (6,)),)
        return c

    try:
        jf = check(make, [call(i) for i in range(13)])
    finally:
        globals()["ACTIVATION"] = _act_tanh
    assert "identity" in _assumption_kinds(jf)
    assert jf.stats()["guard_failures"] >= 1, jf.explain()
    assert jf.stats()["graphs_generated"] == 2, jf.explain()


# ------------------------------------------------------------------ length of a list argument
def test_list_argument_length_changes():
    def make():
        def f(xs, w):
            total = np.zeros_like(w)
            for x in xs:
                total = total + np.tanh(x * w)
            return total / len(xs)

        return f, {}

    w = _arr(0, (3,))
    lengths = [3, 3, 3, 3, 3, 4, 4, 2, 3, 4]
    calls = [lambda s, n=n, i=i: ([_arr(10 * i + k, (3,)) for k in range(n)], w) for i, n in enumerate(lengths)]
    jf = check(make, calls)
    assert "length" in _assumption_kinds(jf)
    assert jf.stats()["graphs_generated"] == 3, jf.explain()
    assert jf.stats()["graph_calls"] == len(lengths) - 3, jf.explain()


def test_tuple_indexed_from_the_end_guards_length():
    def make():
        def f(xs):
            return xs[-1] * 2.0 + xs[0]

        return f, {}

    lengths = [2, 2, 2, 2, 3, 3, 2]
    calls = [lambda s, n=n, i=i: (tuple(_arr(10 * i + k, (2,)) for k in range(n)),) for i, n in enumerate(lengths)]
    jf = check(make, calls)
    assert "length" in _assumption_kinds(jf)


# ------------------------------------------------------------------ keys of a dict argument
def test_dict_argument_keys_change():
    def make():
        def f(d, x):
            out = x
            for name, v in d.items():
                out = out + v * len(name)
            return out

        return f, {}

    key_sets = [("a", "bb")] * 5 + [("a", "bb", "ccc")] * 3 + [("bb", "a")] * 2 + [("a", "bb")]
    calls = [lambda s, ks=ks, i=i: ({k: _arr(i + j, (3,)) for j, k in enumerate(ks)}, _arr(99, (3,)))
             for i, ks in enumerate(key_sets)]
    jf = check(make, calls)
    assert "keys" in _assumption_kinds(jf)
    assert jf.stats()["graphs_generated"] == 3, jf.explain()


def test_membership_test_on_dict_argument():
    def make():
        def f(params, x):
            y = x @ params["w"]
            if "b" in params:
                y = y + params["b"]
            return y

        return f, {}

    w, b = _arr(0, (3, 2)), _arr(1, (2,))
    seq = [True] * 5 + [False] * 3 + [True] * 2
    calls = [lambda s, has=has, i=i: (({"w": w, "b": b} if has else {"w": w}), _arr(i, (4, 3))) for i, has in enumerate(seq)]
    jf = check(make, calls)
    assert jf.stats()["graphs_generated"] == 2, jf.explain()


# ------------------------------------------------------------------ branch on a computed value
def test_branch_on_computed_value_flips_then_becomes_cond():
    def make():
        def f(x):
            s = np.sum(x)
            if s > 0:
                y = x * 2.0
            else:
                y = x - 1.0
            return y + s

        return f, {}

    signs = [1, 1, 1, 1, 1, -1, -1, 1, -1, 1, -1, -1, 1]
    calls = [lambda s, sg=sg, i=i: (np.abs(_arr(i, (4,))) * sg,) for i, sg in enumerate(signs)]
    jf = check(make, calls)
    s = jf.stats()
    assert s["assert_failures"] >= 2, jf.explain()
    assert s["regenerations"] >= 1, jf.explain()
    assert any(n.op == "cond" for g in jf.graphs() for n in g.graph.nodes), jf.explain()
    assert "branch" in _assumption_kinds(jf)
    # after relaxing, both outcomes run as a graph: the last 5 calls were all graph calls
    assert s["graph_calls"] >= 5 + 2, jf.explain()


def test_branch_seen_both_ways_in_warmup_is_cond_from_the_start():
    def make():
        def f(x):
            if np.max(x) > 0.5:
                x = np.tanh(x)
            else:
                x = np.exp(x)
            return x * 3.0

        return f, {}

    vals = [np.full(3, v) for v in (1.0, 0.0, 1.0, 0.0, 1.0, 2.0, -1.0, 0.1)]
    jf = check(make, [lambda s, v=v: (v.copy(),) for v in vals])
    assert jf.stats()["assert_failures"] == 0 and jf.stats()["graph_calls"] == 5, jf.explain()
    assert any(n.op == "cond" for g in jf.graphs() for n in g.graph.nodes), jf.explain()


def test_regenerated_cond_graph_printout_contains_cond():
    def make():
        def f(x):
            s = np.sum(x)
            if s > 0:
                y = x * 2.0
            else:
                y = x - 1.0
            return y + s

        return f, {}

    signs = [1, 1, 1, 1, -1, -1, 1, -1]
    jf = check(make, [lambda s, sg=sg, i=i: (np.abs(_arr(i, (4,))) * sg,) for i, sg in enumerate(signs)])
    assert jf.stats()["regenerations"] >= 1, jf.explain()
    printed = [str(g.graph) for g in jf.graphs()]
    assert any("= cond " in p and "then:" in p and "else:" in p for p in printed), "\n".join(printed)


def test_branch_with_return_in_both_arms_falls_back_correctly():
    """`return` inside a data-dependent branch cannot become a cond: after the speculated outcome
    keeps failing, the signature runs eagerly, always with the eager result."""
    def make():
        def f(x):
            if np.sum(x) > 0:
                return x * 2.0
            return x - 1.0

        return f, {}

    signs = [1, 1, 1, 1, -1, -1, 1, -1, 1]
    calls = [lambda s, sg=sg, i=i: (np.abs(_arr(i, (4,))) * sg,) for i, sg in enumerate(signs)]
    jf = check(make, calls)
    assert jf.stats()["assert_failures"] >= 2, jf.explain()
    assert "assumption" in fallback_reasons(jf)


def test_python_scalar_from_array_branch():
    """float(x.sum()) makes a Python value that depends on array contents; a branch on it is
    speculated like any computed branch."""
    def make():
        def f(x):
            total = float(np.sum(x))
            if total > 1.0:
                scale = 0.5
            else:
                scale = 2.0
            return x * scale

        return f, {}

    vals = [3.0, 3.0, 3.0, 3.0, 0.0, 3.0, 0.0, 0.0, 3.0]
    jf = check(make, [lambda s, v=v, i=i: (np.full(2, v / 2) + 0.01 * i,) for i, v in enumerate(vals)])
    assert jf.stats()["graph_calls"] >= 2, jf.explain()


# ------------------------------------------------------------------ while loop trip count
def test_while_loop_trip_count_stable_then_different():
    def make():
        def f(x):
            n = 0
            while np.max(np.abs(x)) > 1.0:
                x = x * 0.5
                n += 1
            return x, n

        return f, {}

    # scale 6 -> 3 halvings; scale 20 -> 5 halvings
    scales = [6.0] * 6 + [20.0] + [6.0] + [20.0, 20.0, 20.0, 6.0]
    calls = [lambda s, sc=sc, i=i: (np.array([sc, -sc * 0.9, 0.1 * i]),) for i, sc in enumerate(scales)]
    jf = check(make, calls)
    s = jf.stats()
    assert "trip_count" in _assumption_kinds(jf)
    assert s["assert_failures"] >= 1, jf.explain()
    assert s["graph_calls"] >= 4, jf.explain()
    if s["regenerations"]:  # relaxed: a loop node, or (without loop nodes) an eager signature
        assert _has_loop_node(jf) or "varying-trip-count" in fallback_reasons(jf), jf.explain()


def test_while_loop_varying_during_warmup():
    def make():
        def f(x):
            while np.sum(x) < 10.0:
                x = x + 1.0
            return x

        return f, {}

    starts = [0.0, 5.0, 8.0, 0.0, 9.0]
    jf = check(make, [lambda s, v=v: (np.full(2, v),) for v in starts], min_graph_calls=0)
    if _has_loop_node(jf):
        assert jf.stats()["graph_calls"] == 2, jf.explain()
    else:
        assert jf.stats()["graph_calls"] == 0
        assert "varying-trip-count" in fallback_reasons(jf), jf.explain()


# ------------------------------------------------------------------ aliasing
def test_same_array_passed_twice_where_one_is_written():
    def make():
        def f(a, b):
            a += b * 0.5
            return a * b

        return f, {"x": _arr(0, (4,)), "y": _arr(1, (4,))}

    pattern = [0, 0, 0, 0, 0, 1, 1, 0, 1, 0]
    calls = [lambda s, p=p: (s["x"], s["x"] if p else s["y"]) for p in pattern]
    jf = check(make, calls)
    assert "alias" in _assumption_kinds(jf)
    assert jf.stats()["graphs_generated"] == 2, jf.explain()


def test_aliased_list_elements_written():
    """The same array twice inside a list argument; the function writes through one entry."""
    def make():
        def f(xs):
            xs[0][1:] = xs[0][1:] + 1.0
            return xs[1] * 2.0

        return f, {"x": np.zeros(3), "y": np.ones(3)}

    pattern = [0, 0, 0, 0, 1, 1, 0, 1]
    calls = [lambda s, p=p: ([s["x"], s["x"] if p else s["y"]],) for p in pattern]
    check(make, calls)


# ------------------------------------------------------------------ recursive structures
class _Node:
    def __init__(self, value=None, left=None, right=None):
        self.value, self.left, self.right = value, left, right


def _tree(r, leaves):
    if leaves == 1:
        return _Node(value=r.standard_normal(3))
    k = int(r.integers(1, leaves))
    return _Node(left=_tree(r, k), right=_tree(r, leaves - k))


def test_tree_walked_recursively_shape_changes():
    def make():
        w = _arr(5, (3, 3))

        def encode(node):
            if node.left is None:
                return np.tanh(node.value)
            return np.tanh((encode(node.left) + encode(node.right)) @ w)

        def f(tree):
            return np.sum(encode(tree))

        return f, {}

    r = np.random.default_rng(7)
    shapes = [_tree(r, n) for n in (3, 3, 4)]
    order = [0, 0, 0, 0, 0, 2, 2, 1, 0]  # shapes[0] and [1] may differ in structure
    jf = check(make, [lambda s, t=shapes[k]: (t,) for k in order])
    assert jf.stats()["graphs_generated"] >= 2, jf.explain()
    assert jf.stats()["guard_failures"] >= 1


def test_tree_same_shape_new_leaf_values_reuses_graph():
    def make():
        def total(node):
            if node.left is None:
                return node.value
            return total(node.left) * 0.5 + total(node.right)

        def f(tree):
            return total(tree)

        return f, {}

    trees = [_tree(np.random.default_rng(s), 4) for s in range(8)]
    # different random structures with 4 leaves: each new structure is a new graph at most
    jf = check(make, [lambda s, t=t: (t,) for t in trees] + [lambda s: (trees[0],)], min_graph_calls=1)
    assert jf.stats()["graphs_generated"] <= 8


# ------------------------------------------------------------------ default arguments
def test_default_arguments():
    def make():
        def f(x, scale=2.0, *, shift=0.5):
            return x * scale + shift

        return f, {}

    calls = [lambda s, i=i: (_arr(i, (3,)),) for i in range(4)] + [lambda s: (_arr(9, (3,)), 3.0)] * 4
    jf = check(make, calls)
    assert jf.stats()["graph_calls"] >= 4, jf.explain()


def _squash(a):
    return np.tanh(a) * 0.5


def test_helper_call_inside_cond_arm_becomes_cond():
    def make():
        def f(x):
            if np.sum(x) > 0:
                y = _squash(x)
            else:
                y = x * 2.0
            return y

        return f, {}

    signs = [1, -1, 1, -1, 1, -1]
    jf = check(make, [lambda s, sg=sg, i=i: (np.abs(_arr(i, (3,))) * sg,) for i, sg in enumerate(signs)])
    assert any(n.op == "cond" for g in jf.compiled for n in g.graph.nodes), jf.explain()


def test_helper_call_inside_cond_arm_is_correct():
    """Whatever the JIT does with it, the result is eager's and the reason is named."""
    def make():
        def f(x):
            if np.sum(x) > 0:
                y = _squash(x)
            else:
                y = x * 2.0
            return y

        return f, {}

    signs = [1, -1, 1, -1, 1, -1]
    jf = check(make, [lambda s, sg=sg, i=i: (np.abs(_arr(i, (3,))) * sg,) for i, sg in enumerate(signs)],
               min_graph_calls=0)
    assert jf.stats()["graph_calls"] > 0 or jf.fallbacks(), jf.explain()
