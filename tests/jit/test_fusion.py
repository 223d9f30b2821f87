"""Elementwise groups fused into Numba loops (executor/fusion.py), adopted by the native tier.

The fused loop computes each op in the dtype NumPy's loop would, with correctly rounded IEEE
operations, so the plan with fused groups gives eager's bits: every test here runs in exact
mode (`reassociate=False`, where an explicit `native=` allows only this bit-exact candidate)
and compares results and all state with eager after every call. `MIN_GAIN` is lifted so that
the fused plan is adopted whatever its speed on the test's small arrays.
"""
import numpy as np
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F
from janus_like.executor import fusion, tiering
from janus_like.passes import donate

from .harness import (HOLDS, GraphRecorder, call_sequence, chain_program, check, fallback_reasons, held_then_written,
                      load_module, random_array, side_by_side)
from .test_donation import (OPTIMIZERS, _ADAM_LIKE, _NAMES, _PRELUDE, _arrays, _batches, _make, _pair,
                            _recording, _same_step, _sqrt_calls, _sqrt_make, update_programs)

pytest.importorskip("numba")


@pytest.fixture(autouse=True, scope="module")
def adopt_when_correct():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tiering, "MIN_GAIN", float("inf"))
        yield


def _fused(jf):
    """The first graph running a fused plan; no call may have fallen back because a graph
    raised where eager did not."""
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
    graphs = [g for g in jf.graphs() if g.runs and g.tier.plan is not None]
    assert graphs, [g.tier.note for g in jf.graphs()]
    return graphs[0]


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_optimizer_updates_run_fused_with_eager_bits(opt_name):
    make, seen = _recording(_make(opt_name))
    jf = side_by_side(make, _batches(12), native="always")
    g = _fused(jf)
    assert g.plan is g.tier.plan and g.plan.fused >= 1 and "FK0(" in g.plan.source, g.tier.note
    assert "native: fused elementwise kernels" in g.tier.note and "rounds differently" in g.tier.note
    # the kernel writes the new state into the old arrays (donated, as the NumPy lines would)
    before = [id(a) for a in _arrays(seen[1])]
    jf(random_array(7, (16, 300), np.float32))
    assert [id(a) for a in _arrays(seen[1])] == before
    assert "fused elementwise kernels" in jf.explain() and jf.stats()["fused_graphs"] == 1


@pytest.mark.parametrize("kind", HOLDS)
def test_a_held_state_array_is_not_written_by_the_kernel(kind):
    fn_e, state_e, jf, state_j, xs = _pair(native="always")
    _fused(jf)
    held_then_written(kind, state_j["opt"].get_slot(state_j["w1"], "m"), lambda: _fused(jf),
                      lambda x: _same_step(fn_e, state_e, jf, state_j, x), xs)


def test_raising_error_modes_run_the_numpy_lines():
    """Invalid square roots: with NumPy set to raise, the calls that take one fall back (eager
    raises there too), which the kernel, raising nothing, would not do."""
    with np.errstate(invalid="raise"):
        jf = side_by_side(_sqrt_make(), _sqrt_calls(), native="always", check_interpreter=False)
    assert jf.stats()["graph_calls"] >= 4 and _fused(jf)
    with np.errstate(invalid="ignore"):
        jf = side_by_side(_sqrt_make(), _sqrt_calls(), native="always", check_interpreter=False)
    assert jf.stats()["fallbacks"] == 0


def test_non_contiguous_and_read_only_operands_run_the_numpy_lines():
    def make():
        w = jl.Variable(np.asfortranarray(random_array(3, (200, 100))), name="w")
        m = jl.Variable(np.zeros((200, 100)), name="m")

        def step(g, h):
            m.assign(m * 0.9 + g * 0.1)
            w.assign_sub(m * 0.5 + h * h)
            return F.sum(g)

        return step, {"w": w, "m": m}

    def args(s, i):
        g = random_array(i, (200, 100))
        h = np.asfortranarray(random_array(i + 50, (200, 100))) if i % 3 == 0 else random_array(i + 50, (200, 100))
        if i % 4 == 1:
            h.flags.writeable = False
        return g, h
    jf = side_by_side(make, call_sequence(14, args), native="always")
    assert jf.stats()["graph_calls"] >= 6 and _fused(jf)


def test_a_value_read_before_the_chain_ends_splits_the_group():
    """`d` is read by a reduction before the ops that read it after: the group making `d` may
    not take them in (it would run after the reduction), so it ends at `d`; `d * s - y * 3.0`
    is a group of its own, and `d / 4.0`, alone, stays a NumPy call."""
    def make():
        def step(x, y):
            d = x * 2.0 + y
            s = F.sum(d)
            return d * s - y * 3.0, d / 4.0
        return step, {}
    jf = side_by_side(make, call_sequence(10, lambda s, i: (random_array(i, (64, 40)), random_array(i + 9, (64, 40)))),
                      native="always")
    g = _fused(jf)
    groups = fusion.find_groups(g.graph)
    assert [[m.op for m in x.members] for x in groups] == [["mul", "add"], ["mul", "mul", "sub"]]
    assert _fused(jf).plan.fused == 2 and jf.stats()["fallbacks"] == 0


def test_mixed_dtypes_and_scalars_cast_as_numpy_does():
    """float32 arrays with float64 arrays, 0-d arrays, NumPy scalars and Python numbers: each op
    promotes and rounds as its NumPy loop does."""
    def make():
        def step(a, b, c, mask, k):
            t = a * np.float32(0.3) + 1.1
            u = t / (b * 3 + np.sqrt(np.abs(a)))  # float64
            v = -(t - c) * k + mask
            return u * 0.5, v / 7.0, t
        return step, {}

    def args(s, i):
        k = np.array(1.5 + i, np.float32) if i % 2 else 0.1 * (i + 1)  # a Python float rounds to float32 first
        return (random_array(i, (50, 30), np.float32), random_array(i + 1, (50, 30)),
                np.float32(0.25 * i), random_array(i + 2, (50, 30)) > 0, k)
    jf = side_by_side(make, call_sequence(12, args), native="always")
    assert _fused(jf).plan.fused >= 1


def test_a_fused_plan_that_differs_from_the_plan_is_not_adopted(monkeypatch):
    monkeypatch.setitem(fusion.OPS, "add", "{} + {} * 1.0000001")
    jf = side_by_side(_make("adam"), _batches(10), native="always")
    g = [g for g in jf.graphs() if g.runs][0]
    assert g.tier.plan is None and "fused plan disagrees with the plan: output" in g.tier.note, g.tier.note


def test_the_fused_plan_is_only_adopted_when_faster(monkeypatch):
    monkeypatch.setattr(tiering, "MIN_GAIN", 0.0)
    jf = side_by_side(_make("adam"), _batches(10), native="always")
    g = [g for g in jf.graphs() if g.runs][0]
    assert g.tier.plan is None and "fused plan slower" in g.tier.note, g.tier.note


def test_exact_mode_needs_an_explicit_policy_and_never_goes_whole_graph_native(monkeypatch):
    monkeypatch.delenv("JANUS_LIKE_NATIVE", raising=False)
    assert tiering.resolve_policy(None, reassociate=False) == "off"
    assert tiering.resolve_policy("auto", reassociate=False) == "auto-exact"
    assert tiering.resolve_policy(True, reassociate=False) == "always-exact"
    assert tiering.resolve_policy("off", reassociate=False) == "off"


# ------------------------------------------------------------------ generated programs
# test_donation's update programs (three Variables of shape (8, 16), donated with the size rule
# lowered), and chains of the fused ops over arrays of two dtypes, scalars and numbers, each
# value possibly read in the middle of a chain, returned or stored; fused from 4 elements up.

_FORMS = ["({} + {})", "({} * {})", "({} - {})", "({} / {})", "-{}", "np.sqrt(np.abs({}))", "np.abs({})",
          "np.tanh({})", "F.sum({})"]


@st.composite
def chains(draw):
    return chain_program(draw, ["def f(x, y, z, k):", "    s = np.float32(0.5)"], ["x", "y", "z", "k", "2.5", "s"],
                         _FORMS, 6)


_CHAIN_PRELUDE = "import numpy as np\nimport janus_like as jl\nfrom janus_like import F\n\n" \
                 "a = jl.Variable(np.linspace(-1.0, 1.0, 128).reshape(8, 16).astype(np.float32), name='a')\n\n"


def _run_generated(directory, source, calls):
    def make():
        mod = load_module(directory, source, "fused")
        return mod.f, {name: getattr(mod, name) for name in _NAMES + ("a",) if hasattr(mod, name)}
    with pytest.MonkeyPatch.context() as patch, GraphRecorder() as rec:
        patch.setattr(donate, "MIN_ELEMENTS", 64)
        patch.setattr(fusion, "MIN_ELEMENTS", 4)
        jf = check(make, calls, min_graph_calls=0, native="always")
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
    fused = [g for g in rec.compiled if g.tier.plan is not None]
    event(f"fused groups: {max((g.plan.fused for g in fused), default=0)}")
    return rec


@settings(deadline=None)
@example(program=("def f(x, y, z, k):\n    s = np.float32(0.5)\n    t0 = (x * y)\n    t1 = F.sum(t0)\n"
                  "    t2 = (t0 - x)\n    t3 = (t2 / k)\n    a.assign(a * 0.9 + t3)\n    return (t3, t1)\n"),
         dtypes=[np.float32] * 3)
@given(program=chains(), dtypes=st.lists(st.sampled_from([np.float32, np.float64]), min_size=3, max_size=3))
def test_generated_chains_match_eager(tmp_path_factory, program, dtypes):
    directory = tmp_path_factory.mktemp("chains", numbered=True)

    def call(i):
        def args(state):
            x, y, z = (random_array(i * 3 + j, (8, 16), dt) for j, dt in enumerate(dtypes))
            k = np.array(0.75 + i, dtypes[0]) if i % 2 else 0.1 * (i + 1)  # a 0-d array or a Python number
            return x, y, z, k
        return args
    with np.errstate(all="ignore"):
        _run_generated(directory, _CHAIN_PRELUDE + program, [call(i) for i in range(9)])


@settings(deadline=None)
@example(program=_ADAM_LIKE)
@given(program=update_programs())
def test_generated_updates_match_eager(tmp_path_factory, program):
    directory = tmp_path_factory.mktemp("updates", numbered=True)
    calls = [lambda s, i=i: (random_array(i, (8, 16)),) for i in range(9)]
    with np.errstate(all="ignore"):
        _run_generated(directory, _PRELUDE + program, calls)


class _Dropout:
    def __init__(self):
        self.rng = np.random.default_rng(5)
        self.drop = 0.1


def _dropout_step(s, x):
    keep = (s.rng.random(x.shape) >= s.drop) / (1 - s.drop)
    u = np.random.random(x.shape)  # (NumPy's global generator too)
    return ((x * keep) * 2.0 + u / 3.0).sum()


def test_a_graph_that_draws_is_tiered_without_advancing_the_users_generators():
    """The tier runs the plan and its fused candidate on a call's inputs to compare and time them:
    each run drew from the step's Generator and NumPy's global one, so the call run after drew
    other numbers than eager (a dropout mask after a chain of 2 K elements), and the candidate,
    drawing its own, never agreed with the plan. Their states are put back between runs."""
    jf = side_by_side(lambda: (_dropout_step, _Dropout()),
                      [lambda s, i=i: (s, random_array(i, (64, 32))) for i in range(12)], native="always")
    g = _fused(jf)
    assert g.plan.fused >= 1, g.tier.note
