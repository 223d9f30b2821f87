"""`min(1.0, clip / norm)`: min/max of Python numbers and one-element NumPy values the graph
computes. Which argument eager gets depends on the data, and so does the result's type (a
Python float, a numpy.float64 or float32, a one-element array). The profiler records which
argument each warm-up call got; the graph takes that argument and asserts that the builtin,
run on the values, gives it again; where the pick keeps changing, a two-argument site gets one
graph per argument. Side by side with eager on call sequences that keep the pick, change it
once, change it back and forth, and reach NaN."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import janus_like as jl
from janus_like import optim

from .harness import assumption_kinds, call_sequence, check, load_module


def clip_step(params, grads, lr=0.1, max_norm=1.0):
    norm = np.sqrt(sum(np.sum(g * g) for g in grads))
    scale = min(1.0, max_norm / (norm + 1e-6))
    for p, g in zip(params, grads):
        p -= lr * scale * g
    return scale


def _grads(dtype, scales):
    def args(s, i):
        rng = np.random.default_rng(i)
        return s, [(rng.standard_normal(p.shape) * scales[i]).astype(dtype) for p in s]
    return args


def _params(dtype):
    rng = np.random.default_rng(99)
    return [rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal(3).astype(dtype)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_clipping_scale_is_staged_with_the_pick_asserted(dtype):
    # small gradients: min gives 1.0 (a Python float, so float32 parameters stay float32 as
    # eager's); call 7 has a large gradient, min gives the NumPy scalar: the assert fails, eager runs
    scales = [0.01] * 7 + [50.0] + [0.01] * 4
    jf = check(lambda: (clip_step, _params(dtype)), call_sequence(12, _grads(dtype, scales)), min_graph_calls=6)
    assert "pick" in assumption_kinds(jf), jf.explain()
    assert jf.stats()["assert_failures"] == 1, jf.explain()


def test_the_other_argument_picked_gives_the_numpy_scalar():
    scales = [50.0] * 6 + [0.001] + [50.0] * 3  # the scale is the NumPy value, except at call 6
    jf = check(lambda: (clip_step, _params(np.float32)), call_sequence(10, _grads(np.float32, scales)),
               min_graph_calls=5)
    assert jf.stats()["assert_failures"] == 1, jf.explain()


def _split_graphs(jf):
    """The graphs with a split pick's assert: {expected outcome: times run}."""
    return {a.expected: g.runs for g in jf.compiled for a in g.assumptions
            if a.kind == "pick" and a.relax and a.relax[0] == "split"}


def test_a_pick_that_keeps_failing_is_split_into_one_graph_per_argument():
    # a clip that binds on every other step: the assert fails regen_after times, then the site
    # has two graphs, the Python float's and the NumPy scalar's, and every later call runs one
    scales = [0.01] * 4 + [50.0, 0.01] * 6
    jf = check(lambda: (clip_step, _params(np.float32)), call_sequence(16, _grads(np.float32, scales)),
               min_graph_calls=8)
    assert "kept changing" in jf.explain(), jf.explain()
    graphs = _split_graphs(jf)
    assert set(graphs) == {True, False} and min(graphs.values()) >= 3, jf.explain()
    assert jf.stats()["eager_calls"] <= 3, jf.explain()


@pytest.mark.parametrize("majority", [0.01, 50.0])
def test_picks_that_differ_in_warm_up_are_split(majority):
    # the first graph made takes the argument the warm-up calls (and the call that found the
    # site split, profiled too) got more often
    minority = 50.0 if majority == 0.01 else 0.01
    scales = [majority, minority, majority, majority] + [0.01, 50.0, 50.0, 0.01, 50.0, 0.01]
    jf = check(lambda: (clip_step, _params(np.float64)), call_sequence(10, _grads(np.float64, scales)),
               min_graph_calls=5)
    assert "differed between warm-up calls" in jf.explain(), jf.explain()
    assert set(_split_graphs(jf)) == {True, False}, jf.explain()
    first = [a.expected for a in jf.compiled[0].assumptions if a.kind == "pick"]
    assert first == [majority == 0.01], jf.explain()


def test_picks_of_three_arguments_that_differ_stay_eager():
    def f(x):
        return x * min(1.0, x.sum(), 2.0 * x.max())  # which of three the data decides

    calls = [lambda s, i=i: (np.full(3, [0.1, 5.0, -1.0][i % 3]),) for i in range(8)]
    jf = check(lambda: (f, None), calls, min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and "differed between warm-up calls" in jf.explain(), jf.explain()


def floors(x, k):
    lo = max([1e-3, x.std(), 0.05])  # a list, a NumPy scalar in the middle
    hi = min(x[:1], 2)  # a one-element array or a Python int
    top = max(np.float32(x.max()), x.min())  # NumPy scalars of two dtypes
    return x / lo, hi * x, top


def test_lists_sizes_and_dtypes_mix(tmp_path):
    def args(s, i):
        x = np.random.default_rng(i).uniform(0.1, 1.0, 5)
        x[0] += 4.0 * (i == 6)  # min(x[:1], 2) gives 2 once
        return x, i

    calls = call_sequence(10, args)
    jf = check(lambda: (floors, None), calls, min_graph_calls=4)
    assert "pick" in assumption_kinds(jf), jf.explain()


def test_nan_fails_the_pick_where_eager_gets_the_other_argument():
    # min(1.0, nan) is 1.0 (nan < 1.0 is false), min(nan, 1.0) is nan: as the builtin decides
    def f(x, k):
        return min(1.0, x.sum()), min(x.sum(), 1.0), x * max(0.5, x.sum())

    calls = [lambda s, i=i: (np.full(3, np.nan if i in (5, 8) else 0.1 * (i + 6)), i) for i in range(10)]
    jf = check(lambda: (f, None), calls, min_graph_calls=1)
    assert jf.stats()["assert_failures"] >= 1, jf.explain()


@settings(max_examples=20, deadline=None)
@given(values=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32),
                                 st.sampled_from([0.0, -0.0, 1.0, 2.0])), min_size=10, max_size=10),
       dtype=st.sampled_from(["float32", "float64"]), func=st.sampled_from(["min", "max"]),
       first=st.sampled_from(["1.0", "1", "x.sum()"]))
def test_any_values_give_eagers_results(tmp_path_factory, values, dtype, func, first):
    second = "x.sum()" if first != "x.sum()" else "1.0"
    module = load_module(tmp_path_factory.mktemp("picks"),
                         "import numpy as np\n\n\ndef f(x, w):\n"
                         f"    s = {func}({first}, {second})\n"
                         "    w *= s\n"
                         "    return s, x * s\n", "hypothesis_picks")

    def args(s, i):
        return np.array([values[i], 0.0], dtype=dtype), s

    check(lambda: (module.f, np.ones(3, dtype=dtype)), call_sequence(10, args), min_graph_calls=0)


def clipped_sgd(st, x, y, clip=1e-3):
    with jl.GradientTape() as tape:
        h = np.tanh(x @ st["w1"])
        loss = (((h @ st["w2"])[:, 0] - y) ** 2).mean()
    grads = tape.gradient(loss, [st["w1"], st["w2"]])
    norm = np.sqrt(sum(np.sum(g * g) for g in grads))  # a Tensor
    scale = min(1.0, clip / (norm + 1e-6))
    st["opt"].apply_gradients([(g * scale, w) for g, w in zip(grads, [st["w1"], st["w2"]])])
    return float(loss), scale


def test_a_tensor_norm_from_a_tape():
    def make():
        r = np.random.default_rng(1)
        return clipped_sgd, {"w1": jl.Variable(r.standard_normal((8, 6)) * 0.1),
                             "w2": jl.Variable(r.standard_normal((6, 1)) * 0.1), "opt": optim.SGD(0.01)}

    def args(s, i):
        r = np.random.default_rng(i)  # the scale is the Tensor; call 6's gradients are zero: 1.0
        return s, r.standard_normal((16, 8)) * (i != 6), r.standard_normal(16) * 3.0

    jf = check(make, call_sequence(10, args), min_graph_calls=5)
    assert "pick" in assumption_kinds(jf) and jf.stats()["assert_failures"] == 1, jf.explain()


class Head:
    def __init__(self, w):
        self.w = w

    def score(self, x):
        return float((x @ self.w).sum())


def best_head(heads, x):
    best = max(heads, key=lambda h: h.score(x))  # objects
    word = min(["left", "right", "stay"], key=lambda a: abs(len(a) - x.sum()))  # strings
    arr = max([x, -x, x * 0.5], key=lambda v: v[0])  # arrays
    top = max(heads, key=lambda h: max(h.score(x), -1e9))  # a min/max call inside the key function
    return best.w * 2.0, word, arr, top.w


def test_items_by_keys_the_graph_computes():
    # the scan over the keys is the graph's (callbacks.py); which item it found is asserted
    # against the warm-up's, and the item is eager's own object; call 6 picks others
    def args(s, i):
        return s, np.ones(3) * (-1.0 if i == 6 else 1.0)

    jf = check(lambda: (best_head, [Head(np.full(3, float(i))) for i in range(3)]),
               [lambda s, i=i: args(s, i) for i in range(9)], min_graph_calls=5)
    assert "pick" in assumption_kinds(jf) and jf.stats()["assert_failures"] == 1, jf.explain()


def louder(a, b):
    return 2.0 * max(a, b, key=lambda v: float(np.abs(v).sum()))  # an array, by keys the graph computes


def test_a_two_item_pick_by_keys_that_varies_is_split():
    def args(s, i):
        r = np.random.default_rng(i)
        return r.standard_normal(4) * (3.0 if i % 3 == 1 else 1.0), r.standard_normal(4) * (3.0 if i % 3 == 2 else 1.0)

    jf = check(lambda: (louder, None), call_sequence(12, args), min_graph_calls=6)
    assert set(_split_graphs(jf)) == {True, False}, jf.explain()


def test_the_graph_tried_first_changes_after_two_calls_of_the_other_argument():
    # a clip binding now and then: the graph of the usual argument stays the one tried first
    # after one call of the other (which ran the other graph), and gives way after two in a row
    jf = jl.jit(clip_step, choose="graph")
    params, grads = _params(np.float32), _grads(np.float32, [0.01] * 4 + [50.0, 0.01] * 3 + [0.01] * 3 + [50.0, 50.0])

    def hot_outcome():
        return [a.expected for a in jf._hot.assumptions if a.kind == "pick"]

    outcomes = []
    for i in range(15):
        jf(*grads(params, i))
        outcomes.append(hot_outcome() if jf._hot is not None else None)
    assert jf.stats()["graph_calls"] >= 8, jf.explain()
    assert outcomes[-6:] == [[True], [True], [True], [True], [True], [False]], str(outcomes)


def clip_each(params, grads, lr=0.1, c=1.0):
    for p, g in zip(params, grads):  # per parameter: the loop's iterations may pick differently
        s = min(1.0, c / (np.sqrt(np.sum(g * g)) + 1e-6))
        p -= lr * s * g
    return p.sum()


def test_a_pick_in_a_loop_whose_iterations_differ_stays_eager():
    # one graph per outcome would assert one outcome for every iteration: the signature stays
    # eager instead of running graphs that fail their asserts
    scales = [(0.01, 50.0), (0.01, 0.01), (50.0, 0.01)] * 4

    def args(s, i):
        r = np.random.default_rng(i)
        return s, [(r.standard_normal(p.shape) * scales[i][k]).astype(np.float32) for k, p in enumerate(s)]

    jf = check(lambda: (clip_each, _params(np.float32)), call_sequence(12, args), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and jf.stats()["assert_failures"] == 0, jf.explain()
    assert "in a loop: the argument it gives varies" in jf.explain(), jf.explain()


def test_a_pick_in_a_loop_whose_iterations_agree_is_speculated():
    def args(s, i):
        r = np.random.default_rng(i)
        return s, [(r.standard_normal(p.shape) * 0.01).astype(np.float32) for p in s]

    jf = check(lambda: (clip_each, _params(np.float32)), call_sequence(8, args), min_graph_calls=5)
    assert "pick" in assumption_kinds(jf), jf.explain()
