"""Every assumption kind the generator speculates on, with call sequences that break it mid-way.

Each test runs eager and jit side by side (outputs, printed text, all reachable state and the
global RNG compared after every call), checks that graphs really ran, and checks how the JIT
reacted to the broken assumption: a new specialized graph, a regeneration with the assumption
relaxed, or an eager fallback.
"""
import numpy as np

import janus_like as jl

from .harness import assumption_kinds, check, fallback_reasons, random_array



# ------------------------------------------------------------------ shape / dtype
def test_new_shape_and_dtype_make_new_graphs():
    def make():
        def f(x, w):
            h = np.tanh(x @ w) * 2.0 + np.sum(x, axis=1, keepdims=True)
            return np.maximum(h, 0.0)

        return f, {}

    w = random_array(0, (4, 3))
    seq = [(3, np.float64)] * 5 + [(5, np.float64)] * 3 + [(3, np.float32)] * 3 + [(3, np.float64)] * 2
    calls = [lambda s, n=n, dt=dt, i=i: (random_array(i, (n, 4), dt), w.astype(dt)) for i, (n, dt) in enumerate(seq)]
    jf = check(lambda: make(), calls)
    s = jf.stats()
    assert s["graphs_generated"] == 3, jf.explain()
    assert s["graph_calls"] == len(seq) - 3 - 0, jf.explain()  # all post-warm-up calls ran as graphs
    assert "shape" in assumption_kinds(jf)


def test_shape_guard_on_nested_input_array():
    """A shape that changes inside an object (not a top-level argument) fails a guard."""
    class Box:
        def __init__(self, w):
            self.w = w

    def make():
        box = Box(random_array(1, (4, 4)))

        def f(box, x):
            return np.tanh(x @ box.w)

        return f, {"box": box}

    def call(i):
        def c(s):
            if i == 6:
                s["box"].w = random_array(2, (4, 2))
            return (s["box"], random_array(i, (2, 4)))
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

    vals = [random_array(i, (3,)) for i in range(5)] + [jl.tensor(random_array(i, (3,))) for i in range(4)] + [0.5, 0.25, 1.5]
    jf = check(make, [lambda s, v=v: (v,) for v in vals])
    assert jf.stats()["graphs_generated"] >= 2, jf.explain()
    assert "type" in assumption_kinds(jf)


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
            return (s["h"], random_array(i, (5,)))
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
            return (s["cfg"], random_array(i, (4,)))
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
            return (s["cfg"], random_array(i, (4,)))
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
            return (s["cfg"], random_array(i, (3,)))
        return c

    jf = check(make, [call(i) for i in range(12)])
    assert jf.stats()["guard_failures"] >= 1, jf.explain()
    assert "value" in assumption_kinds(jf)
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
            return (random_array(i, (6,)),)
        return c

    try:
        jf = check(make, [call(i) for i in range(13)])
    finally:
        globals()["ACTIVATION"] = _act_tanh
    assert "identity" in assumption_kinds(jf)
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

    w = random_array(0, (3,))
    lengths = [3, 3, 3, 3, 3, 4, 4, 2, 3, 4]
    calls = [lambda s, n=n, i=i: ([random_array(10 * i + k, (3,)) for k in range(n)], w) for i, n in enumerate(lengths)]
    jf = check(make, calls)
    assert "length" in assumption_kinds(jf)
    assert jf.stats()["graphs_generated"] == 3, jf.explain()
    assert jf.stats()["graph_calls"] == len(lengths) - 3, jf.explain()


def test_tuple_indexed_from_the_end_guards_length():
    def make():
        def f(xs):
            return xs[-1] * 2.0 + xs[0]

        return f, {}

    lengths = [2, 2, 2, 2, 3, 3, 2]
    calls = [lambda s, n=n, i=i: (tuple(random_array(10 * i + k, (2,)) for k in range(n)),) for i, n in enumerate(lengths)]
    jf = check(make, calls)
    assert "length" in assumption_kinds(jf)


def test_numpy_array_of_a_tuple_of_ints_is_a_guarded_constant():
    """np.array(rows) of a tuple reached from the inputs: its elements are guarded values and the
    array a graph constant (it used to be an opaque object, and every graph call fell back)."""
    def make():
        def f(x, rows):
            return x[np.array(rows)] * 2.0 + np.asarray(rows)

        return f, {}

    x = random_array(0, (5,))
    rows = [(2, 0, 3, 1)] * 5 + [(4, 4, 0, 1), (4, 4, 0, 1), (1, 2, 3, 0, 4), (2, 0, 3, 1)]
    calls = [lambda s, r=r: (x, r) for r in rows]
    jf = check(make, calls, min_graph_calls=2)
    first = jf.compiled[0].graph
    assert any(n.op == "const" and np.asarray(n.params["value"]).dtype == np.int64 for n in first.nodes)
    # new values fail the value guard; once they vary the elements are graph inputs, and an
    # array built from graph scalars has no op yet: eager for that signature, said plainly
    assert not fallback_reasons(jf) & {"user-error", "internal-error"}, jf.explain()


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
    calls = [lambda s, ks=ks, i=i: ({k: random_array(i + j, (3,)) for j, k in enumerate(ks)}, random_array(99, (3,)))
             for i, ks in enumerate(key_sets)]
    jf = check(make, calls)
    assert "keys" in assumption_kinds(jf)
    assert jf.stats()["graphs_generated"] == 3, jf.explain()


def test_membership_test_on_dict_argument():
    def make():
        def f(params, x):
            y = x @ params["w"]
            if "b" in params:
                y = y + params["b"]
            return y

        return f, {}

    w, b = random_array(0, (3, 2)), random_array(1, (2,))
    seq = [True] * 5 + [False] * 3 + [True] * 2
    calls = [lambda s, has=has, i=i: (({"w": w, "b": b} if has else {"w": w}), random_array(i, (4, 3))) for i, has in enumerate(seq)]
    jf = check(make, calls)
    assert jf.stats()["graphs_generated"] == 2, jf.explain()


# ------------------------------------------------------------------ aliasing
def test_same_array_passed_twice_where_one_is_written():
    def make():
        def f(a, b):
            a += b * 0.5
            return a * b

        return f, {"x": random_array(0, (4,)), "y": random_array(1, (4,))}

    pattern = [0, 0, 0, 0, 0, 1, 1, 0, 1, 0]
    calls = [lambda s, p=p: (s["x"], s["x"] if p else s["y"]) for p in pattern]
    jf = check(make, calls)
    assert "alias" in assumption_kinds(jf)
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


def tree_encoder():
    """make() for f(tree) = sum(encode(tree)), a recursive tanh encoder with one (3, 3) weight."""
    w = random_array(5, (3, 3))

    def encode(node):
        if node.left is None:
            return np.tanh(node.value)
        return np.tanh((encode(node.left) + encode(node.right)) @ w)

    def f(tree):
        return np.sum(encode(tree))

    return f, {}


def test_tree_walked_recursively_shape_changes():
    r = np.random.default_rng(7)
    shapes = [_tree(r, n) for n in (3, 3, 4)]
    order = [0, 0, 0, 0, 0, 2, 2, 1, 0]  # shapes[0] and [1] may differ in structure
    jf = check(tree_encoder, [lambda s, t=shapes[k]: (t,) for k in order])
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

    calls = [lambda s, i=i: (random_array(i, (3,)),) for i in range(4)] + [lambda s: (random_array(9, (3,)), 3.0)] * 4
    jf = check(make, calls)
    assert jf.stats()["graph_calls"] >= 4, jf.explain()


# ------------------------------------------------------------------ setattr with a constant name
class _Params:
    def __init__(self):
        self.w = random_array(1, (4, 3))
        self.b = np.zeros(3)
        self._scale = 1.0

    @property
    def scale(self):
        return self._scale

    @scale.setter
    def scale(self, v):
        self._scale = v * 0.5


def test_setattr_with_a_constant_name_is_an_attribute_assignment():
    """`setattr(m, name, value)` with a name the loop gives is `m.<name> = value` (a property's
    setter runs as eagerly); a name the graph computes, or a module's attribute, stays eager."""
    def make():
        def f(x, m):
            err = x @ m.w + m.b
            for name, g in (("w", x.T @ err), ("b", err.sum(0))):
                setattr(m, name, getattr(m, name) - 0.01 * g)
            setattr(m, "scale", float(err.mean()))
            setattr(m, "seen", getattr(m, "seen", 0) + 1)
            return err

        return f, {"m": _Params()}

    calls = [lambda s, k=k: (random_array(k, (5, 4)), s["m"]) for k in range(8)]
    jf = check(make, calls, min_graph_calls=4)
    assert not fallback_reasons(jf), jf.explain()

    def by_data(x, m):
        setattr(m, "w" if x.sum() > 0 else "b", x.sum())  # (a name that is no constant: an error first)
        return x

    jf = check(lambda: (by_data, {"m": _Params()}), [lambda s, k=k: (random_array(k, (3,)), s["m"])
                                                     for k in range(6)], min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 or fallback_reasons(jf), jf.explain()
