"""Graph or eager by measurement (janus_like/jit/choice.py): a graph measured slower than the
function itself hands its calls back to it. The choice changes speed only: every test here runs
eager and jit side by side and compares results, printed text, state and RNGs after every call,
across trials, routes, rechecks and calls that break the graph's assumptions. Timings decide
nothing here: the tests set the margin (GAIN) so that one side always wins."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import janus_like as jl
from janus_like.jit import choice

from .harness import call_sequence, check, side_by_side

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _quick(mp, gain, trial_after=4, block=2, recheck=8, early=2.0):
    mp.setattr(choice, "TRIAL_AFTER", trial_after)
    mp.setattr(choice, "BLOCK_MAX", block)
    mp.setattr(choice, "RECHECK", recheck)
    mp.setattr(choice, "GAIN", gain)
    mp.setattr(choice, "EARLY", early)


EAGER_WINS, GRAPH_WINS = 1e9, 0.0


def ema(st, v):
    st["ema"] = 0.9 * st["ema"] + 0.1 * v
    st["n"] += 1
    return st["ema"]


def make_ema():
    return ema, {"ema": 0.0, "n": 0}


def emas(n):
    return call_sequence(n, lambda s, i: (s, float(i)))


def graph_only_eager_calls(make, calls):
    """Eager calls the same sequence makes with every graph kept (regenerations: `st["n"]` is
    first speculated constant)."""
    return side_by_side(make, calls, choose="graph").stats()["eager_calls"]


def test_a_graph_measured_slower_hands_its_calls_to_the_function(monkeypatch):
    _quick(monkeypatch, EAGER_WINS)
    jf = side_by_side(make_ema, emas(60), choose="measured")
    (g,) = jf.graphs()
    s = jf.stats()
    assert g.choice is not None and g.choice.eager and g.choice.trials >= 2, jf.explain()
    assert s["eager_by_choice"] == 1 and s["calls"] == 60
    # warm-up 3, the generating call, 4 fused runs, then trials (6 blocks of 2) and routes of 8, 16
    assert s["graph_calls"] <= 21 and s["eager_calls"] >= 36, s
    assert s["eager_s"] > 0
    assert "runs eagerly by measurement (eager " in jf.explain()


def test_a_graph_measured_faster_keeps_its_calls_and_is_measured_again(monkeypatch):
    _quick(monkeypatch, GRAPH_WINS)
    jf = side_by_side(make_ema, emas(60), choose="measured")
    (g,) = jf.graphs()
    s = jf.stats()
    assert not g.choice.eager and g.choice.trials >= 2 and s["eager_by_choice"] == 0, jf.explain()
    assert g.fast is g.choice.plain  # the fused function again, after each trial
    chosen = s["eager_calls"] - graph_only_eager_calls(make_ema, emas(60))
    assert 6 * (g.choice.trials - 1) < chosen <= 6 * g.choice.trials, s  # 3 eager blocks of 2 a trial
    assert s["graph_calls"] == 60 - 3 - s["eager_calls"], s
    assert "runs as a graph by measurement" in jf.explain()


def test_a_step_eager_is_far_slower_at_pays_for_one_eager_block(monkeypatch):
    _quick(monkeypatch, EAGER_WINS, early=0.0)  # any eager block counts as far slower
    jf = side_by_side(make_ema, emas(20), choose="measured")
    (g,) = jf.graphs()
    assert not g.choice.eager and g.choice.trials == 1
    assert jf.stats()["eager_calls"] - graph_only_eager_calls(make_ema, emas(20)) == 2  # one block
    assert "(its mean so far)" in g.choice.note


def test_choose_graph_never_measures(monkeypatch):
    _quick(monkeypatch, EAGER_WINS)
    jf = side_by_side(make_ema, emas(40), choose="graph")
    (g,) = jf.graphs()
    assert g.choice is None and g.trial is None and jf.stats()["eager_by_choice"] == 0
    assert jf.stats()["graph_calls"] + jf.stats()["eager_calls"] == 37


def test_the_environment_variable_chooses_and_bad_values_are_named(monkeypatch):
    _quick(monkeypatch, EAGER_WINS)
    monkeypatch.setenv("JANUS_LIKE_CHOOSE", "measured")
    assert jl.jit(ema).choose == "measured"
    assert jl.jit(ema, choose="graph").choose == "graph"
    monkeypatch.setenv("JANUS_LIKE_CHOOSE", "fastest")
    with pytest.raises(ValueError, match="JANUS_LIKE_CHOOSE='fastest' is not one of 'measured', 'graph'"):
        jl.jit(ema)
    with pytest.raises(ValueError, match="choose='eager' is not one of"):
        jl.jit(ema, choose="eager")


def branchy(st, x):
    if x > 0:
        st["n"] += 1
    st["w"] *= 0.5
    return st["n"] * x + st["w"].sum()


def make_branchy():
    return branchy, {"n": 0, "w": np.ones(3)}


@pytest.mark.parametrize("gain", [EAGER_WINS, GRAPH_WINS])
def test_calls_that_break_assumptions_during_trials_and_routes(monkeypatch, gain):
    # positive ints, then negatives (the speculated branch fails), floats (a new signature),
    # arrays; a route runs them without guards, a trial's graph block hands them back
    def arg(i):
        return [i + 1, -i, 0.5 * i, np.full(3, float(i))][(i // 9) % 4] if i > 8 else i + 1

    _quick(monkeypatch, gain)
    jf = side_by_side(make_branchy, call_sequence(80, lambda s, i: (s, arg(i))), choose="measured")
    assert any(g.choice is not None for g in jf.graphs()), jf.explain()


def test_a_routed_graph_offers_some_calls_to_its_guards_and_a_new_shape_gets_its_own_graph(monkeypatch):
    _quick(monkeypatch, EAGER_WINS, recheck=1000)
    monkeypatch.setattr(choice, "GUARD_EVERY", 2)
    w = np.linspace(-1, 1, 12).reshape(4, 3)
    jf = side_by_side(lambda: (affine, None),
                      call_sequence(60, lambda s, i: (w, np.full((2, 4) if i < 30 else (5, 4), 0.1 * i))),
                      choose="measured")
    assert len(jf.graphs()) == 2 and all(g.choice is not None and g.choice.eager for g in jf.graphs()), jf.explain()


def lookup(d, k):
    return d[k] * 2 + 1


def test_errors_in_routed_and_trial_calls_are_eagers(monkeypatch):
    _quick(monkeypatch, EAGER_WINS, early=1e9)  # (a slow first eager block on a loaded machine: no early stop)
    keys = ["a"] * 10 + ["b", "a", "a", "zz", "a"] * 8
    jf = side_by_side(lambda: (lookup, None), call_sequence(len(keys), lambda s, i: ({"a": 1.5, "b": 2.0}, keys[i])),
                      choose="measured")
    assert jf.stats()["eager_by_choice"] == 1, jf.explain()


def logged(log, x):
    log.append(x * 2)
    print("step", len(log))
    return x + 1


def test_a_graph_without_a_fused_call_is_measured_too(monkeypatch):
    # (no early stop: one slow eager block of this printing step, 145 µs on a loaded machine,
    # against the graph's 18 µs ended the trial for the graph)
    _quick(monkeypatch, EAGER_WINS, early=1e9)
    jf = side_by_side(lambda: (logged, []), call_sequence(40, lambda s, i: (s, float(i))), choose="measured")
    (g,) = jf.graphs()
    assert g.choice is not None and g.choice.plain is None and g.choice.eager, jf.explain()


def affine(w, x):
    return np.tanh(x @ w)


def test_graph_calls_after_routes_match_the_interpreter(monkeypatch):
    _quick(monkeypatch, GRAPH_WINS)
    w = np.linspace(-1, 1, 12).reshape(4, 3)
    check(lambda: (affine, None), call_sequence(40, lambda s, i: (w, np.full((2, 4), 0.1 * i))), choose="measured")


@given(st.integers(1, 6), st.integers(1, 3), st.integers(1, 9), st.lists(st.booleans(), min_size=1, max_size=6),
       st.lists(st.sampled_from(["pos", "neg", "float", "array"]), min_size=20, max_size=60))
def test_random_switching_between_graph_and_eager_matches_eager(trial_after, block, recheck, wins, kinds):
    # each decision is drawn in turn from `wins` (True: eager is chosen), cycling
    picks = iter(wins * 100)
    values = {"pos": lambda i: i + 1, "neg": lambda i: -i - 1, "float": lambda i: 0.25 * i,
              "array": lambda i: np.full(3, 0.5 * i)}
    with pytest.MonkeyPatch.context() as mp:
        _quick(mp, GRAPH_WINS, trial_after, block, recheck)
        chosen = choice.ChoiceMixin._chosen

        def drawn(self, g, trial):
            mp.setattr(choice, "GAIN", EAGER_WINS if next(picks) else GRAPH_WINS)
            chosen(self, g, trial)

        mp.setattr(choice.ChoiceMixin, "_chosen", drawn)
        side_by_side(make_branchy, call_sequence(len(kinds), lambda s, i: (s, values[kinds[i]](i))),
                     choose="measured")


def test_a_call_the_graph_misses_in_a_trial_costs_the_graph_its_whole_path(monkeypatch):
    """A graph block's call that the graph misses (a failed assert: the full path then runs
    the call eagerly) counts with the time of that path, not as if it had not happened: a graph
    that misses often is measured at what it costs."""
    from types import SimpleNamespace

    from janus_like.executor.fused import MISS

    now = [0.0]
    monkeypatch.setattr(choice, "_clock", lambda: now[0])

    def advance(by, result):
        now[0] += by
        return result

    times = {"warmup_s": 0.0, "generate_s": 0.0}
    jf = SimpleNamespace(_plain=lambda args: advance(5.0, "eager"), _eager_counted=lambda s: None,
                         _chosen=lambda g, t: None, times=times)
    trial = choice.Trial(jf, SimpleNamespace(time_s=10.0, runs=1), lambda args: advance(1.0, "graph" if args[0] else MISS),
                         block=2)
    assert [trial((True,)), trial((True,))] == ["eager", "eager"]  # the eager block: 5 a call
    assert trial((True,)) == "graph"  # the graph block: a hit (1), then a miss (1) and its path (5)
    assert trial((False,)) is MISS and trial.open is not None
    # the full path ran the call eagerly (5) after generating a graph (40): a one-off, not counted
    assert trial.charged(lambda *a: times.update(generate_s=40.0) or advance(45.0, "full path"), False) == "full path"
    assert trial.means == {"eager": [5.0], "graph": [3.5]} and trial.open is None


def mixed_outcomes(st, x):
    h = np.tanh(x @ st["w"])
    for j in range(4):  # one split branch: a graph per outcome takes the calls where all four agree
        if h[:, j].mean() > (0 if j % 2 else -10):
            st["log"].append(j)
    st["w"] -= 0.01 * x.T @ h
    return float(h.sum())


@pytest.mark.parametrize("gain", [EAGER_WINS, GRAPH_WINS])
def test_trials_of_a_split_branch_whose_outcomes_mix_are_charged_their_misses(monkeypatch, gain):
    _quick(monkeypatch, gain)
    charged = []
    original = choice.Trial.charged
    monkeypatch.setattr(choice.Trial, "charged", lambda self, *a: charged.append(1) or original(self, *a))
    calls = call_sequence(60, lambda s, i: (s, np.random.default_rng(i).standard_normal((6, 3))))
    jf = side_by_side(lambda: (mixed_outcomes, {"w": np.linspace(-1, 1, 12).reshape(3, 4), "log": []}), calls,
                      choose="measured")
    assert charged and jf.stats()["fallbacks"] > 0, jf.explain()
