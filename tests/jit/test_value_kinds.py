"""What kind of value a graph value is, where the code asks: `flag is True` of a bool the graph
computes (which singleton it is), `hasattr`/`getattr`/`np.isscalar` of a Python number the graph
computes (a float has no `.dtype`), `.item()` of a one-element array that is not 0-d, `+x` of a
bool array (NumPy raises), `np.stack` of graph arrays and constants (an ndarray, not a Tensor),
and ndarray methods given a Tensor (`x.dot(w)`: NumPy makes w an array, so the result is an
ndarray and no gradient flows through it). Each case runs eager and jit side by side and
compares results and state after every call."""
import numpy as np
import pytest

import janus_like as jl

from .harness import check, fallback_reasons, random_array


def _calls(n=10, shape=(4,)):
    return [lambda s, i=i: (s, random_array(i, shape)) for i in range(n)]


def _make(step):
    return lambda: (step, {"w": np.zeros(1), "log": []})


def identities(st, x):
    st["w"] += 1.0
    a, b = bool(x[0] > 0), bool(x[1] > 0)
    return (+a, -b, a is True, a is not False, a is b, a is not b, np.all(x > -9) is np.True_,
            x.any() is not np.True_, (x > 0).all() is np.False_, x.sum() is None)


def attributes(st, x, lr):
    st["w"] -= lr * x[:1]
    v, n = float(x.sum()), int(x[0] > 0)
    return (hasattr(v, "dtype"), getattr(v, "shape", "none"), getattr(n, "dtype", None), hasattr(v, "real"),
            np.isscalar(v), np.isscalar(lr), np.isscalar(x.sum()), np.isscalar(x), np.isscalar(np.array(x.sum())))


def stacks(st, x):
    st["w"] += 1.0
    st["log"].append(np.stack([np.float64(1), x.sum()]))
    return (np.stack([x.sum(), 1.0]), np.hstack([1.0, x]), np.vstack([x, [1.0] * 4]),
            np.concatenate([[0.5], x]), np.stack([[1.0, 2.0], x[:2]]), np.column_stack([x, np.ones(4)]))


def formatted(st, x, lr):
    st["w"] += 1.0
    v = lr * 2
    return "{}".format([v]), "{}".format({"v": v}), "a={a}".format(a=(v, 1)), "{}".format(v)


def items(st, x):
    st["w"] += 1.0
    return (x[:1] * 2).item(), x.reshape(2, 2)[:1, :1].item(), (x[1:2] > 0).item(), x.sum().item()


CASES = {"identities": (identities, _calls()), "items": (items, _calls()),
         "formatted": (formatted, [lambda s, i=i: (s, random_array(i, (4,)), 0.1 * (i + 1)) for i in range(10)]),
         "attributes": (attributes, [lambda s, i=i: (s, random_array(i, (4,)), 0.1 * (i + 1)) for i in range(10)]),
         "stacks": (stacks, _calls())}


@pytest.mark.parametrize("name", sorted(CASES))
def test_kinds_of_graph_values_side_by_side(name):
    step, calls = CASES[name]
    jf = check(_make(step), calls, min_graph_calls=5)
    assert not fallback_reasons(jf), jf.explain()


def test_unary_plus_of_a_bool_array_raises_as_eager():
    def step(st, x):
        st["w"] += 1.0
        return +(x > 0)

    jf = check(_make(step), _calls(), min_graph_calls=0)
    assert fallback_reasons(jf) == {"op-error"}, jf.explain()


def test_ndarray_methods_given_tensors_give_ndarrays_without_gradients():
    """`x.dot(w)`, `x.take(t)`, `x.searchsorted(t)` of an ndarray x: NumPy converts the Tensor, so the
    result is an ndarray, and a tape sees a constant (w gets no gradient through it)."""
    def step(w, x, ids):
        with jl.GradientTape() as tape:
            loss = jl.F.sum(w * 2.0) + x.dot(w).sum()
            h = x.T.dot(jl.tensor(np.ones(4)))
        g = tape.gradient(loss, w)
        return x.dot(w), x.take(ids), x[0].searchsorted(ids), h, g

    def make():
        return step, {"w": jl.Variable(random_array(7, (3, 2)))}

    calls = [lambda s, i=i: (s["w"], random_array(i, (4, 3)), jl.tensor(np.array([i % 3, 1, 2, 0])))
             for i in range(10)]
    check(make, calls, min_graph_calls=5)


def test_gradients_of_a_fancy_index_with_a_slice_run_as_graphs():
    """`h[:, ids]` under a tape: the gradient adds into the selected columns (an index with a
    slice in the plan's add.at call)."""
    def step(w, x, ids):
        with jl.GradientTape() as tape:
            loss = (x * w)[:, ids].sum() + jl.F.take(x * w, ids, axis=1).sum()
        return tape.gradient(loss, w)

    def make():
        return step, {"w": jl.Variable(random_array(7, (2, 3)))}

    calls = [lambda s, i=i: (s["w"], random_array(i, (2, 3)), np.array([i % 3, 1])) for i in range(10)]
    jf = check(make, calls, min_graph_calls=5)
    assert not fallback_reasons(jf), jf.explain()


def test_a_zero_d_variables_gradient_is_a_zero_d_array():
    """The gradient of a 0-d Variable broadcast against a matrix is the sum of a matrix kept 0-d
    (a 0-d ndarray, as eager's), not a NumPy scalar: its type, `isinstance`, and what `.numpy()`
    and an optimizer step hold."""
    def step(st, x):
        a = st["a"]
        with jl.GradientTape() as tape:
            loss = (x * a).sum()
        g = tape.gradient(loss, a)
        out = g.numpy(), type(g.numpy()).__name__, isinstance(np.array(x.sum()), np.ndarray), g
        a.assign_sub(0.1 * g)
        return out

    def make():
        return step, {"a": jl.Variable(np.float32(0.5))}

    check(make, [lambda s, i=i: (s, random_array(i, (2, 3)).astype(np.float32)) for i in range(10)], min_graph_calls=5)


def test_a_builtin_method_held_in_the_state_reads_its_object_at_each_call():
    """`st["get"] = d.get` (networkx's views hold `adj.items` this way): its call ran when the
    graph was generated, and every later call got that result while `d` changed."""
    def make():
        d = {"a": 1.0, "b": 2.0}

        def step(x, st):
            t = x * st["get"]("a", 0.0)
            for _, w in st["items"]():
                t = t + w * x
            return t

        return step, {"get": d.get, "items": d.items, "d": d}

    def call(i):
        def args(s):
            if i == 5:
                s["d"]["c"] = 10.0
            if i == 7:
                s["d"]["a"] = 5.0
            return np.full(2, 1.0 + i), s
        return args

    check(make, [call(i) for i in range(10)], min_graph_calls=4)


def test_returned_dicts_with_keys_named_like_the_commits_own_tags():
    """Keys "const", "index", "list" of a returned dict were read as parts of the commit's own
    description: a shared list came back as two lists, or the graph failed (an internal error)."""
    def step(st, x):
        st["w"] += 1.0
        hist = [float(x.sum())]
        return {"const": hist, "b": hist}, {"index": 3, "loss": x.sum()}, {"list": x[:2].tolist()}

    jf = check(_make(step), _calls(), min_graph_calls=5)
    assert not fallback_reasons(jf), jf.explain()


def test_dict_keys_the_graph_builds_are_the_compilers_strings():
    """A pickled history is the same bytes: pickle memoizes strings by identity, and the graph's
    keys were the AST's strings, not the interned ones eager's dicts hold."""
    import pickle

    def step(st, x, blob):
        st["w"] *= 0.5
        st["log"].append({"loss": float(x.sum()), "step": len(st["log"])})
        return len(blob)

    calls = [lambda s, i=i: (s, random_array(i, (4,)), pickle.dumps(s["log"])) for i in range(10)]
    check(_make(step), calls, min_graph_calls=5)
