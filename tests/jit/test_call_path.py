"""The steady-state call path: the graph that ran last is tried first (no signature key), its
finish is one generated function, and eager `Tensor[int]` skips the op dispatch. None of it
may change what a call returns, what state it leaves, or what the stats say."""
import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F

from .harness import assert_same, call_sequence, check, load_module, random_array, side_by_side

class Model:
    def __init__(self, seed=0):
        self.w = jl.Variable(random_array(seed, (3, 3)), name="w")
        self.steps = 0
        self.buf = np.zeros(3)


def _make_step():
    m = Model()

    def step(model, x, flag):
        y = np.tanh(x @ model.w)
        if flag > 0:  # one outcome while profiling: an asserted branch
            y = y * 2.0
        model.w.assign(model.w * 0.5)
        model.buf += y.sum(axis=0)
        return y, float(flag), {"s": y.sum(), "pair": (y, 1)}

    return step, m


def test_hot_graph_leaves_on_every_kind_of_break_and_matches_eager():
    shapes = [2, 2, 2, 2, 2, 5, 5, 2, 2, 2, 2, 2, 2]  # a new shape (guard), then back
    flags = [1, 1, 1, 1, 1, 1, 1, 1, -1, 1, -1, 1, 1]  # the other branch (assert), twice
    calls = call_sequence(len(shapes), lambda m, i: (m, random_array(i, (shapes[i], 3)), flags[i]))
    jf = side_by_side(_make_step, calls)  # exact mode: no native tier, so the fused call runs
    s = jf.stats()
    assert s["calls"] == s["warmup_calls"] + s["eager_calls"] + s["graph_calls"]
    assert s["graph_calls"] >= 6 and s["assert_failures"] >= 1
    # guards, plan and commit as one generated function (executor/fused.py); every break above
    # left it for the full path, which gave eager's result and state
    assert all(g.fast is not None and "def call(args)" in g.fast.source for g in jf.graphs())
    assert all(g.last_slots is not None for g in jf.graphs() if g.runs)


def test_a_user_error_in_a_later_call_surfaces_exactly_as_in_eager():
    def make():
        state = {"table": np.arange(4.0)}

        def f(state, i):
            return state["table"][i] * 2.0  # IndexError in eager for i >= 4

        return f, state

    idx = [0, 1, 2, 3, 1, 2, 9, 1, 3]
    jf = side_by_side(make, call_sequence(len(idx), lambda s, i: (s, idx[i])))
    assert jf.stats()["graph_calls"] >= 4


def test_stats_count_the_fast_path_like_the_full_path():
    @jl.jit
    def f(x):
        return F.tanh(x) * 2.0

    x = jl.tensor(np.ones(3, np.float32))
    for _ in range(10):
        f(x)
    s = f.stats()
    assert (s["calls"], s["warmup_calls"], s["graph_calls"], s["eager_calls"]) == (10, 3, 7, 0)
    assert s["graph_s"] > 0



def test_fused_counts_fold_into_counters_graph_runs_and_slots_without_double_counting():
    # the fused function counts in closure cells; counters, times, runs and last_slots read them
    f = jl.jit(lambda x, k: F.tanh(x) * k, reassociate=False)
    xs = [np.full(3, float(i), np.float32) for i in range(12)]
    for i in range(5):
        f(xs[i], 2.0)
    (g,) = f.graphs()
    assert g.fast is not None and g.runs == 2 and f.counters["graph_calls"] == 2
    before = dict(f.counters)  # what the wrapper does around each call
    f(xs[5], 2.0)
    assert f.counters["graph_calls"] == before["graph_calls"] + 1 and f.counters["calls"] == before["calls"] + 1
    assert g.last_slots[0] is xs[5]  # the fused run's slots
    f(xs[6], k=2.0)  # keywords: the full path (try_run) runs the same graph
    assert g.runs == 4 and g.last_slots[0] is xs[6]
    for i in range(7, 12):
        f(xs[i], 2.0)
    assert g.last_slots[0] is xs[11]
    for _ in range(2):  # reading twice counts nothing twice
        s = f.stats()
        assert (s["calls"], s["warmup_calls"], s["graph_calls"]) == (12, 3, 9)
    assert g.runs == 9 and g.time_s > 0 and f.times["graph_s"] > 0

def test_jit_disable_and_an_outer_tape_still_win_over_the_hot_graph(monkeypatch):
    @jl.jit
    def f(x):
        return x * x

    x = jl.Variable(np.array([3.0]))
    for _ in range(5):
        f(x)
    with jl.GradientTape() as tape:
        y = f(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [6.0])  # eager ops, recorded
    monkeypatch.setenv("JANUS_LIKE_DISABLE", "1")
    before = f.stats()["graph_calls"]
    f(x)
    assert f.stats()["graph_calls"] == before
    monkeypatch.setenv("JANUS_LIKE_DISABLE", "0")  # set but off: the full path, still the graph
    f(x)
    assert f.stats()["graph_calls"] == before + 1
    monkeypatch.delenv("JANUS_LIKE_DISABLE")
    f(x)
    assert f.stats()["graph_calls"] == before + 2


@settings(deadline=None, max_examples=25)
@given(kinds=st.lists(st.sampled_from(["tensor", "array", "list", "tuple", "dict", "const", "arg",
                                       "same_twice"]), min_size=1, max_size=4))
def test_generated_finish_builds_the_same_results_as_the_general_one(kinds):
    def make():
        state = {"v": jl.Variable(np.ones(2))}

        def f(state, x):
            t = F.exp(x)
            a = np.asarray(x) + 1.0
            parts = {"tensor": t, "array": a, "list": [t, a], "tuple": (a,), "dict": {"k": t, 3: a},
                     "const": "text", "arg": x, "same_twice": [a, a]}
            state["v"].assign(state["v"] + 1.0)
            return tuple(parts[k] for k in kinds)

        return f, state

    calls = call_sequence(6, lambda s, i: (s, jl.tensor(random_array(i, (2,)))))
    jf = side_by_side(make, calls)
    assert jf.stats()["graph_calls"] >= 3
    assert all(g._finish is not None for g in jf.graphs())  # the generated finish really ran


def test_effects_keep_the_general_finish():
    def make():
        def f(x):
            print("x", x.sum())
            return x * 2.0

        return f, None

    calls = call_sequence(6, lambda s, i: (random_array(i, (2,)),))
    jf = side_by_side(make, calls)
    assert not any(g._finish is not None for g in jf.graphs())


def test_tensor_int_and_slice_indexing_match_the_op():
    t = jl.tensor(np.arange(6.0).reshape(2, 3))
    for index in (0, 1, -1, slice(0, 1), slice(None, None, -1)):
        fast = t[index]
        slow = F.getitem(t, index)
        assert_same(fast, slow, f"t[{index!r}]")
    with pytest.raises(IndexError) as err:
        t[5]
    assert "op 'getitem'" in str(err.value) and "`t[5]`" in str(err.value)  # the op and the user's line


def test_tensor_indexing_under_a_tape_is_still_recorded():
    x = jl.Variable(np.array([1.0, 2.0, 3.0]))
    with jl.GradientTape() as tape:
        y = x[1] * 3.0 + x[0:2].sum()
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 4.0, 0.0])


def test_the_floating_point_error_state_is_seen_through_its_cache():
    from janus_like.executor import fp_errors_raise

    assert not fp_errors_raise()
    with np.errstate(over="raise"):
        assert fp_errors_raise()
        with np.errstate(over="warn"):
            assert not fp_errors_raise()
        assert fp_errors_raise()
    assert not fp_errors_raise()
    old = np.seterr(invalid="raise")
    try:
        assert fp_errors_raise()
    finally:
        np.seterr(**old)
    assert not fp_errors_raise()


def test_the_fused_call_reraises_a_user_error_through_the_full_path():
    def make():
        state = {"table": np.arange(4.0), "v": jl.Variable(np.zeros(2))}

        def f(state, i):
            state["v"].assign(state["v"] + 1.0)  # not committed when the call fails
            return state["table"][i] * 2.0

        return f, state

    idx = [0, 1, 2, 3, 1, 2, 9, 1, 3, 7, 0]
    jf = side_by_side(make, call_sequence(len(idx), lambda s, i: (s, idx[i])), native="off")
    assert any(g.fast is not None for g in jf.graphs())


def test_a_drawing_graphs_fused_call_puts_the_rngs_back_when_its_run_fails(tmp_path):
    """A graph that draws (the global RNG, a Generator) runs as a fused call too; when an assert
    after the draws fails (the speculated branch), the call returns MISS with both RNGs as they
    were, and the full path's eager run draws the same numbers eager draws."""
    module = load_module(tmp_path, """
        import numpy as np

        def f(x, rng):
            y = x + np.random.random(x.shape) + rng.normal(size=x.shape)
            if y.sum() > -100.0:
                return y * 2.0
            return y
    """)

    def make():
        return module.f, {"rng": np.random.default_rng(5)}

    def args(s, i):
        return (random_array(i, (3,)) * (-1000.0 if i in (6, 9) else 1.0), s["rng"])

    jf = check(make, call_sequence(12, args), min_graph_calls=4, native="off")
    assert all(g.fast is not None for g in jf.compiled)
    assert jf.stats()["assert_failures"] >= 1, jf.explain()


class _Node:
    def __init__(self, x=None, left=None, right=None):
        self.x, self.left, self.right = x, left, right


def _tree(shape, seed):
    """shape: nested pairs, e.g. ((0, 0), 0); every leaf gets a (4,) vector."""
    if not isinstance(shape, tuple):
        return _Node(x=random_array(seed, (4,)))
    return _Node(left=_tree(shape[0], 2 * seed + 1), right=_tree(shape[1], 2 * seed + 2))


class _TreeState:
    def __init__(self):
        self.w = jl.Variable(random_array(7, (8, 4)), name="w")
        self.seen = 0
        self.decay = 0.99


def _tree_step(effects):
    def make():
        def step(state, root):
            def encode(node):
                if node.left is None:
                    return node.x
                return np.tanh(np.concatenate([encode(node.left), encode(node.right)]) @ state.w)

            h = encode(root)
            if effects:  # state written (an attribute too: the compiled finish writes it)
                state.w.assign(state.w * state.decay)
                state.seen += 1  # a counter (the profile sees it change: a graph input)
            if effects == "print":  # a deferred print: the general finish, no fused call
                print("seen", state.seen)
            return h

        return step, _TreeState()

    return make


_SHAPES = [((0, 0), 0), (0, (0, 0)), ((0, 0), (0, 0))]


def _count_dispatches(monkeypatch):
    jit_function = importlib.import_module("janus_like.jit.function").JitFunction
    count = [0]
    full_path = jit_function._dispatch

    def counted(self, args, kwargs):
        count[0] += 1
        return full_path(self, args, kwargs)

    monkeypatch.setattr(jit_function, "_dispatch", counted)
    return count


@pytest.mark.parametrize("effects", [False, True, "print"])
def test_graphs_of_one_signature_are_tried_without_the_full_path(monkeypatch, effects):
    """Inputs cycling over the graphs of one signature (tree shapes): a miss of the graph that
    ran last tries the others directly (their fused calls, or try_run where the call prints),
    not the full path with its signature key; every call, a new shape included, matches eager's
    result and state."""
    dispatches = _count_dispatches(monkeypatch)
    trees = [_tree(_SHAPES[k], k) for k in range(3)]
    tail = [_tree(((0, 0), 0), 11), trees[0], _tree((0, 0), 9), trees[1], trees[2], trees[0]]
    seq = [trees[k] for k in [0, 1, 2] * 12] + tail
    jf = side_by_side(_tree_step(effects), call_sequence(len(seq), lambda s, i: (s, seq[i])), native="off")
    s = jf.stats()
    assert s["eager_calls"] <= 2 and s["graph_calls"] >= len(seq) - 10, s
    assert len(jf.graphs()) == 4  # one per tree shape: the three, and the two-leaf tree
    assert all((g.fast is None) == (effects == "print") for g in jf.graphs())
    # the full path: the warm-up, each new shape (its generation), the value relaxation (effects)
    # and the calls right after them (a graph just generated is not the hot one yet)
    assert dispatches[0] <= 16, dispatches[0]  # of 42 calls


def test_relaxing_a_value_drops_every_graph_of_the_signature_that_bets_on_it():
    """`state.decay` is the same in every warm-up call and changes on every call from the ninth
    on: after two failures it becomes a graph input. The graphs generated before that for the
    other tree shapes bet on it too; left in place, each of their shapes ran eagerly on every
    call (their value guard failed, and the relaxation was done)."""
    trees = [_tree(_SHAPES[k], k) for k in range(3)]
    seq = [trees[k] for k in [0, 1, 2] * 14]

    def call(s, i):
        s.decay = 0.99 if i < 8 else 0.99 - 0.001 * i
        return s, seq[i]

    jf = side_by_side(_tree_step(True), call_sequence(len(seq), call), native="off")
    s = jf.stats()
    assert s["regenerations"] == 1 and s["eager_calls"] <= 2, s
    assert len(jf.graphs()) == 3
    assert all(not any(a.kind == "value" and a.path == "arg0.decay" for a in g.assumptions) for g in jf.graphs())


def test_an_input_no_graph_can_be_made_for_leaves_the_other_graphs_of_its_signature_running():
    """A tree whose leaf has another size cannot be generated (the product's shapes clash; eager
    raises too). Its signature makes no new graphs after that, but the graphs it has keep
    running the tree shapes they accept, instead of every tree running eagerly from then on."""
    trees = [_tree(_SHAPES[k], k) for k in range(3)]
    odd = _tree((0, 0), 3)
    odd.left.x = random_array(5, (3,))  # concatenate gives 7 rows; `@ (8, 4)` raises in eager too
    seq = [trees[k] for k in [0, 1, 2] * 3] + [odd] + [trees[k] for k in [0, 1, 2] * 4] + [_tree((0, 0), 9)]
    jf = side_by_side(_tree_step(False), call_sequence(len(seq), lambda s, i: (s, seq[i])), native="off")
    s = jf.stats()
    assert s["eager_calls"] == 2 and s["graph_calls"] == 6 + 12, s  # the odd tree, and the new shape after it
    assert len(jf.graphs()) == 3
    assert "its 3 graphs still run the calls they accept" in jf.explain()


def test_a_graph_that_raises_where_eager_does_not_stops_every_graph_of_its_signature(monkeypatch):
    """A graph error eager does not make is a janus_like defect: none of the signature's graphs
    is trusted from then on (the other tree shapes' graphs included)."""
    from janus_like import executor as ex

    trees = [_tree(_SHAPES[k], k) for k in range(2)]
    seq = [trees[k] for k in [0, 1] * 5]
    ran = []
    honest = ex.CompiledGraph.try_run

    def broken_on_the_seventh(self, args):
        ran.append(1)
        if len(ran) == 3:
            return ex.RAISED, RuntimeError("boom")
        return honest(self, args)

    monkeypatch.setattr(ex.CompiledGraph, "try_run", broken_on_the_seventh)
    jf = side_by_side(_tree_step(True), call_sequence(len(seq), lambda s, i: (s, seq[i])), native="off",
                      check_interpreter=False)
    assert [fb.reason for fb in jf.fallbacks()].count("internal-error") == 1, jf.explain()
    assert jf.graphs() == [] and jf.stats()["eager_calls"] >= 3


def test_fused_calls_while_a_native_tier_waits_then_its_decision_when_due(monkeypatch):
    """With the native tier on "auto", a graph waits until its plan time would pay for
    compiling; meanwhile the fused function runs the plan, and once that time is spent it hands
    the call back to the full path, where the tier decides (here: a stub that declines)."""
    from janus_like.executor import native, tiering

    monkeypatch.setattr(native, "available", lambda: True)  # "auto" without Numba installed
    budget = {"s": 1e9}
    monkeypatch.setattr(tiering, "estimate_compile_s", lambda nodes, cached: budget["s"])
    decided = []

    def adopt(tier, plan, slots, rewind=None):
        decided.append(len(slots))
        tier._reject("declined by the test")

    monkeypatch.setattr(tiering.Tier, "adopt", adopt)
    m = Model()
    jf = jl.jit(lambda model, x: np.tanh(x @ model.w) * 2.0, native="auto")
    xs = [random_array(i, (2, 3)) for i in range(14)]
    for x in xs[:8]:  # 3 warm-up calls, 3 graph runs before the tier reads its budget, 2 fused
        np.testing.assert_array_equal(jf(m, x).numpy(), np.tanh(x @ m.w.numpy()) * 2.0)
    (g,) = jf.graphs()
    assert g.tier.pending and g.fast is not None and "DEADLINE" in g.fast.source
    fused_runs = g.counts.calls.cell_contents
    jf(m, xs[8])
    assert g.counts.calls.cell_contents == fused_runs + 1 and not decided  # a fused call
    budget["s"] = 0.0  # not read again: the tier keeps the budget it computed
    assert g.tier.wait_s(g.time_s) > 1e8
    g.tier._budget = g.time_s + 1e-9  # due once the plan has run 1 ns more
    g.fast = None  # (as before the budget was known): the next call goes through the full path
    step = iter(xs[9:])

    def call():
        x = next(step)
        np.testing.assert_array_equal(jf(m, x).numpy(), np.tanh(x @ m.w.numpy()) * 2.0)

    call()  # the full path: not due yet, and a fused function with the 1 ns left
    assert not decided and "DEADLINE" in g.fast.source
    runs = g.counts.calls.cell_contents
    call()  # a fused call: it spends the nanosecond
    assert g.counts.calls.cell_contents == runs + 1 and not decided
    call()  # the fused function hands it back; the full path finds the tier due
    assert decided == [len(g.last_slots)] and not g.tier.pending and "declined" in g.tier.note
    assert g.fast is not None and "DEADLINE" not in g.fast.source  # the plan's fused call from now on
    call(), call()
    assert jf.stats()["graph_calls"] == 11 and jf.stats()["calls"] == 14


def test_a_graph_made_without_an_optional_argument_does_not_take_a_call_that_passes_it():
    # the default was a constant in the graph of `f(x)`; `f(x, False)` reaches that hot graph
    # first and must not run in it (nor must `f(x, x, x)`, which raises in eager)
    def make():
        state = {"running": np.zeros(3)}

        def f(state, x, train=True):
            if train:
                state["running"] *= 0.5
                return x - x.mean(0)
            return x - state["running"]

        return f, state

    extra = [(), (), (), (), (), (False,), (), (True,), (False,), (), (1, 2), ()]
    calls = call_sequence(len(extra), lambda s, i: (s, random_array(i, (4, 3))) + extra[i])
    jf = side_by_side(make, calls)
    assert jf.stats()["graph_calls"] >= 6
    assert any(a.kind == "arity" for g in jf.graphs() for a in g.assumptions)


def test_the_guards_and_the_plans_globals_never_clash():
    """The fused call pastes the guard and the plan into one function: a name both use must be
    the same object, else there is no fused call (the guard's constants were K0, K1, ... like
    the plan's kernels K<node id>)."""
    @jl.jit(native="off")
    def step(x, st):
        y = np.nan_to_num(np.log(x * st["k"]), nan=-1.0, posinf=9.0)
        return np.tile(y, 2)[:3] + np.round(x, 1) + st["b"]

    st = {"k": 2.0, "b": np.ones(3)}
    for i in range(6):
        step(random_array(i, (3,)), st)
    for g in step.graphs():
        guard_env, plan_env = g.guard.parts[2], g.plan.parts[2]
        shared = set(guard_env) & set(plan_env) - {"np", "__builtins__"}
        assert all(guard_env[k] is plan_env[k] for k in shared), sorted(shared)
        assert g.fast is not None


@pytest.mark.parametrize("replace", [True, False])
def test_a_graph_keeps_no_argument_or_state_array_alive(monkeypatch, replace):
    """Outside the test suite's checks (JANUS_LIKE_VERIFY), a graph keeps none of its last
    run's slots: a parameter array the step replaced (`st["W"] = st["W"] - ...`) is freed when
    the call returns, as eagerly (a weak reference to it dies), and so is the batch."""
    import weakref

    monkeypatch.setenv("JANUS_LIKE_VERIFY", "0")

    def step(x, st):
        if replace:
            st["W"] = st["W"] - 0.1 * np.outer(x, x[:2])
        else:
            st["W"] -= 0.1 * np.outer(x, x[:2])
        return float(st["W"].sum())

    def call(st, i):
        st["alive"] = [r() is not None for r in st["refs"]]  # which earlier arrays still live
        x = np.full(3, 0.1 * i)
        st["refs"] += [weakref.ref(st["W"]), weakref.ref(x)]
        return x, st

    jf = side_by_side(lambda: (step, {"W": np.ones((3, 2)), "refs": []}), call_sequence(8, call))
    assert jf.stats()["graph_calls"] >= 4 and all(g.last_slots is None for g in jf.graphs())


class _Batch:
    def __init__(self, i, log):
        self.x, self.i, self.log = np.full(2, float(i)), i, log

    def __del__(self):
        self.log.append(self.i)


def test_the_call_a_graph_was_made_from_is_freed_too(monkeypatch):
    """The graph's outputs held the generator (its escape check, its new objects), and with it
    the objects of the call it was made from: that batch's `__del__` never ran."""
    monkeypatch.setenv("JANUS_LIKE_VERIFY", "0")

    def step(b, st):
        return b.x * 2

    jf = side_by_side(lambda: (step, {"deleted": []}), call_sequence(8, lambda s, i: (_Batch(i, s["deleted"]), s)))
    assert jf.stats()["graph_calls"] >= 4
