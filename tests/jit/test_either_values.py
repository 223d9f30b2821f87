"""A name that holds an ndarray after one branch and a Tensor after the other (scheduled
sampling, `x = seq[t] if random.random() < p else prediction`): the conditional node selects
between the two as a Tensor, and ops on it compute what eager computes. Only the type differs,
so where the type could show (the value or one derived from it returned, stored in state or in
a container that outlives the call, printed, type-checked, written in place) the signature keeps
one graph per outcome or runs eagerly, and every call agrees with eager.
"""
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F

from .harness import check, fallback_reasons, load_module, random_array, within


def _model():
    r = np.random.default_rng(0)
    return {"wx": jl.Variable(r.standard_normal((3, 8)).astype(np.float32) * 0.4),
            "wh": jl.Variable(r.standard_normal((8, 8)).astype(np.float32) * 0.4),
            "wo": jl.Variable(r.standard_normal((8, 3)).astype(np.float32) * 0.4), "log": []}


def _seqs(n, steps=5):
    return [lambda s, i=i: (s["m"], random_array(i, (steps, 2, 3)).astype(np.float32)) for i in range(n)]


def scheduled_sampling(m, seq, p=0.5):
    with jl.GradientTape() as tape:
        h = np.zeros((seq.shape[1], 8), np.float32)
        x, loss = seq[0], 0.0
        for t in range(1, seq.shape[0]):
            h = np.tanh(x @ m["wx"] + h @ m["wh"])
            pred = h @ m["wo"]
            loss = loss + F.mean((pred - seq[t]) ** 2)
            x = seq[t] if random.random() < p else pred  # the data, or the model's own prediction
    vs = [m["wx"], m["wh"], m["wo"]]
    for v, g in zip(vs, tape.gradient(loss, vs)):
        v.assign_sub(0.1 * g)
    return loss


def test_scheduled_sampling_is_one_graph():
    with within(1e-5, 1e-6):
        jf = check(lambda: (scheduled_sampling, {"m": _model()}), _seqs(24), min_graph_calls=18,
                      reassociate=True)
    assert not fallback_reasons(jf) and jf.stats()["graphs_generated"] == 1, jf.explain()


def test_if_statement_either_way_round():
    """The Tensor in the `then` branch, the ndarray in `else`; the outcome comes from the data."""
    def step(m, seq):
        with jl.GradientTape() as tape:
            h = seq[0] @ m["wx"]
            if float(np.sum(seq[1])) > 0:
                x = np.tanh(h)
            else:
                x = seq[2] @ np.ones((3, 8), np.float32)
            loss = F.mean((x @ m["wh"]) ** 2) + F.mean(h * h)  # wx has a gradient after either outcome
        m["wx"].assign_sub(0.1 * tape.gradient(loss, m["wx"]))
        return loss

    check(lambda: (step, {"m": _model()}), _seqs(16), min_graph_calls=10)


def _escaping(tail):
    """A step whose merged value (or one computed from it) reaches `tail`."""
    def step(m, seq):
        h = np.tanh(seq[0] @ m["wx"]) @ m["wo"]
        x = seq[1] if float(np.sum(seq[2])) > 0 else h
        y = x * 2.0 + seq[3]
        return tail(m, x, y)
    return step


def _tail_cases():
    def returned(m, x, y):
        return x

    def derived_returned(m, x, y):
        return y

    def in_a_tuple(m, x, y):
        return 1.0, [y]

    def stored(m, x, y):
        m["last"] = y
        return 0.0

    def appended(m, x, y):
        m["log"].append(x)
        return len(m["log"])

    def type_checked(m, x, y):
        return 1.0 if isinstance(y, jl.Tensor) else 2.0

    def type_named(m, x, y):
        return type(x).__name__

    def has_numpy(m, x, y):
        return 1.0 if hasattr(y, "numpy") else 2.0

    def attribute(m, x, y):  # .numpy() is a Tensor's own: after the ndarray branch eager raises
        return float(np.sum(y.numpy()))

    def printed(m, x, y):
        print(y)
        return 0.0

    def nested(m, x, y):
        z = y if float(np.sum(y)) > 0 else np.asarray(y)
        return z

    def converted(m, x, y):  # np.asarray: an ndarray either way, so one graph serves
        return np.asarray(y) + 1.0

    def reduced(m, x, y):  # a Tensor either way once it meets a Tensor operand
        return F.mean(y * m["wo"][0])
    return [returned, derived_returned, in_a_tuple, stored, appended, type_checked, type_named, has_numpy,
            attribute, printed, nested, converted, reduced]


def test_the_type_never_shows():
    for tail in _tail_cases():
        jf = check(lambda: (_escaping(tail), {"m": _model()}), _seqs(14), min_graph_calls=0)
        shows = "ndarray after one outcome" in jf.explain()  # split: one graph per outcome of the branch
        assert shows == (tail.__name__ not in ("converted", "reduced")), (tail.__name__, jf.explain())
        assert jf.stats()["graph_calls"] >= 4, (tail.__name__, jf.explain())


def test_in_place_write_keeps_eager_semantics():
    """`x += 1` writes the input sequence after the ndarray branch and makes a new Tensor after
    the other: never staged as one graph."""
    def step(m, seq):
        h = np.tanh(seq[0] @ m["wx"]) @ m["wo"]
        x = seq[1] if float(np.sum(seq[2])) > 0 else h
        x += 1.0
        return F.mean(x * m["wo"][0])

    check(lambda: (step, {"m": _model()}), _seqs(14), min_graph_calls=0)


def test_an_ndarray_has_no_tensor_methods():
    """`hasattr(y, "numpy")` of an ndarray the graph computes is False, as eager's, and
    `y.numpy()` raises eager's AttributeError (the graph's array values once answered as Tensors)."""
    def step(m, seq):
        y = seq[0] @ np.ones((3, 2), np.float32)
        t = y @ m["wo"][:2]
        a = y.numpy() if hasattr(y, "numpy") else y
        b = t.numpy() if hasattr(t, "numpy") else t
        return float(np.sum(a)), float(np.sum(b)), hasattr(y, "exp"), hasattr(t, "exp")

    check(lambda: (step, {"m": _model()}), _seqs(6), min_graph_calls=3)

    def wrong(m, seq):
        return (seq[0] * 2.0).numpy()

    jf = check(lambda: (wrong, {"m": _model()}), _seqs(5), min_graph_calls=0)
    assert "user-error" in fallback_reasons(jf), jf.explain()


# What a generated step does with `x` (an ndarray or a Tensor, by the branch) and `y` (computed
# from x with no other Tensor operand): each line keeps x and y of one broadcast shape (2, 3)
_USES = ["y = y * 2.0 + seq[3]", "y = np.tanh(y)", "y = y[::-1] + 0.5", "y = np.maximum(y, 0.0) - x",
         "y = np.asarray(y) + 1.0", "y = y @ np.ones((3, 3), np.float32)", "y = y + np.sum(y, axis=0)",
         "y = y.T.T * 0.5", "y = y.reshape(3, 2).reshape(2, 3)", "y = np.where(y > 0.0, y, 0.1 * y)",
         "y = y + m['w'][:2]",  # a Tensor whatever x is
         "y = y if float(np.sum(seq[4])) > 0 else y * 0.5",  # a second branch
         "y = y if float(np.sum(seq[4])) > 0 else np.asarray(y)",
         "out.append(y)", "out.append(float(np.sum(y)))", "m['last'] = y", "y += 1.0", "y[0] = 0.0",
         "out.append(isinstance(y, jl.Tensor))", "out.append(hasattr(y, 'numpy'))", "print(float(np.sum(y)))",
         "print(y)", "out.append(y.shape[0] + y.ndim)"]
_ENDS = ["return y", "return float(np.sum(y))", "return F.mean(y * m['w'][0])", "return out", "return (y, x)",
         "return np.asarray(y)"]


@settings(max_examples=40, deadline=None)
@given(uses=st.lists(st.sampled_from(_USES), max_size=4), end=st.sampled_from(_ENDS),
       then_tensor=st.booleans(), seed=st.integers(0, 1000))
def test_generated_uses_of_a_value_of_either_type(tmp_path_factory, uses, end, then_tensor, seed):
    """Whatever the step does with the merged value — ops that keep the type a question, ops that
    settle it, returns, state, type checks, in-place writes, prints — every call agrees with
    eager: the branch is one conditional node, or one graph per outcome, or eager."""
    arms = ["np.tanh(seq[0] @ m['w'][:3])", "seq[1] * 1.0"]
    a, b = arms if then_tensor else arms[::-1]
    source = "\n".join(["import numpy as np", "import janus_like as jl", "from janus_like import F", "",
                        "def step(m, seq):", "    out = []", f"    x = {a} if float(np.sum(seq[2])) > 0 else {b}",
                        "    y = x * 1.0"] + [f"    {u}" for u in uses] + [f"    {end}"])
    module = load_module(tmp_path_factory.mktemp("either"), source)
    def make():
        w = np.random.default_rng(seed).standard_normal((3, 3)).astype(np.float32)
        return module.step, {"m": {"w": jl.Variable(w)}}

    calls = [lambda s, i=i: (s["m"], np.random.default_rng(seed + i).standard_normal((5, 2, 3)).astype(np.float32))
             for i in range(12)]
    check(make, calls, min_graph_calls=0)
