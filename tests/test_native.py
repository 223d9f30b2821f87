"""Native (Numba) execution of graphs: the translated function agrees with the NumPy plan and with
eager on call sequences that break assumptions; unsupported graphs keep the plan and say why.
Skipped when Numba is not installed (it is an optional extra)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import janus_like as jl
from janus_like import F
from janus_like.executor import interpret, native, tiering

numba = pytest.importorskip("numba", reason="native tests need the optional numba (pip install 'janus_like[native]')")


@pytest.fixture(autouse=True, scope="module")
def _cache(tmp_path_factory):
    import os

    old = os.environ.get("JANUS_LIKE_CACHE_DIR")
    os.environ["JANUS_LIKE_CACHE_DIR"] = str(tmp_path_factory.mktemp("native_cache"))
    yield
    if old is None:
        del os.environ["JANUS_LIKE_CACHE_DIR"]
    else:
        os.environ["JANUS_LIKE_CACHE_DIR"] = old


def close(a, b, path="value"):
    a, b = (x.numpy() if isinstance(x, jl.Tensor) else x for x in (a, b))
    assert type(a) is type(b), f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b), f"{path}: {a.dtype}{np.shape(a)} vs {b.dtype}{np.shape(b)}"
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


class Model:
    def __init__(self, seed=0, n_in=6, hidden=8, n_out=3):
        rng = np.random.default_rng(seed)
        self.w1 = jl.Variable((rng.standard_normal((n_in, hidden)) * 0.5).astype(np.float32))
        self.b1 = jl.Variable(np.zeros(hidden, np.float32))
        self.w2 = jl.Variable((rng.standard_normal((hidden, n_out)) * 0.5).astype(np.float32))
        self.b2 = jl.Variable(np.zeros(n_out, np.float32))
        self.opt = jl.optim.SGD(0.1)
        self.steps = 0

    def params(self):
        return [self.w1, self.b1, self.w2, self.b2]


def train_step(m, x, y):
    """An MLP step: tanh, cross-entropy through x[arange, labels], reductions, an assumption on
    the loss (a branch), attribute and Variable writes."""
    with jl.GradientTape() as tape:
        h = F.tanh(x @ m.w1 + m.b1)
        logits = h @ m.w2 + m.b2
        loss = F.cross_entropy(logits, y)
    grads = tape.gradient(loss, m.params())
    if float(np.abs(x).max()) > 100.0:  # never seen during warm-up: an assert in the graph
        loss = loss * 0
    m.opt.apply_gradients(zip(grads, m.params()))
    m.steps += 1
    return loss


def data(i, batch=4, n_in=6, n_out=3):
    rng = np.random.default_rng(100 + i)
    x = rng.standard_normal((batch, n_in)).astype(np.float32)
    if i == 7:  # breaks the branch assumption: the loss is huge
        x = x * 1e4
    return x, rng.integers(0, n_out, batch)


def run_side_by_side(step, calls=10, native="always"):
    eager_m, jit_m = Model(), Model()
    jf = jl.jit(step, native=native)
    for i in range(calls):
        x, y = data(i)
        close(jf(jit_m, x, y), step(eager_m, x, y), f"result of call {i}")
        for k, (a, b) in enumerate(zip(jit_m.params(), eager_m.params())):
            close(a.numpy(), b.numpy(), f"parameter {k} after call {i}")
        assert jit_m.steps == eager_m.steps
    return jf


def test_native_training_step_matches_eager_and_falls_back_on_a_failed_assert():
    jf = run_side_by_side(train_step, calls=10)
    g = jf.graphs()[0]
    assert g.tier.run is not None or "slower" in g.tier.note, g.tier.note
    s = jf.stats()
    assert s["assert_failures"] >= 1  # call 7 failed the branch assert inside native code, then ran eagerly
    assert s["graph_calls"] >= 5
    assert "native:" in jf.explain()


def test_native_function_agrees_with_the_reference_interpreter():
    jf = run_side_by_side(train_step, calls=6)
    g = jf.graphs()[0]
    run = native.compile_native(g.graph)
    got, want = run(g.last_slots), interpret(g.graph, g.last_slots)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def ops_program(x, w, idx):
    """Reductions with axes and keepdims, broadcasting, concatenate, transposes, max/min,
    where/maximum, an embedding-style gather and its scatter-add gradient (repeated ids)."""
    with jl.GradientTape() as tape:
        tape.watch(w)
        e = w[idx]  # (k, d): rows of w, ids may repeat
        z = np.concatenate([x, e[:2]], axis=0)
        m = z.max(axis=1, keepdims=True) - z.min(axis=0)
        r = np.maximum(z - m, 0.5) * np.where(z > 0, z, -z)
        total = r.mean(axis=0).sum() + (z.T @ z).sum() / 10.0 + e[None, :, 1:].sum()
    return total, tape.gradient(total, w)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000))
def test_native_ops_match_eager_on_random_values(seed):
    jf = _OPS.get("jf")
    if jf is None:
        jf = _OPS["jf"] = jl.jit(ops_program, native="always")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    w = jl.Variable(rng.standard_normal((7, 5)).astype(np.float32))
    idx = rng.integers(0, 7, 4)
    want = ops_program(x, w, idx)
    got = jf(x, w, idx)
    close(got[0], want[0], "total")
    close(got[1], want[1], "gradient")


_OPS: dict = {}


def test_native_ops_program_ran_natively():
    jf = _OPS.get("jf") or jl.jit(ops_program, native="always")
    rng = np.random.default_rng(0)
    for _ in range(5):
        jf(rng.standard_normal((3, 5)).astype(np.float32), jl.Variable(np.ones((7, 5), np.float32)),
           rng.integers(0, 7, 4))
    notes = [g.tier.note for g in jf.graphs()]
    assert any(n.startswith("native: on") or "slower" in n for n in notes), notes


def with_random(x):
    return x + np.random.uniform(size=x.shape)


def test_unsupported_graph_keeps_the_plan_and_says_why():
    jf = jl.jit(with_random, native="always")
    np.random.seed(0)
    outs = [jf(np.ones(3)) for _ in range(6)]
    np.random.seed(0)
    assert all(np.array_equal(a, with_random(np.ones(3))) for a in outs)
    g = jf.graphs()[0]
    assert g.tier.run is None and "unsupported" in g.tier.note and "np_random" in g.tier.note
    assert jf.stats()["native_graphs"] == 0


def _with_py_number(x, k):
    return x * 2.0 + math.cos(k)  # a Python function in the graph (PY_OP): no native translation


def test_a_graph_the_translator_rejects_gets_the_fused_call():
    # the rejection came from `due`, and left the graph on the slow call path (try_run and the
    # spec-walking finish) for good
    jf = jl.jit(_with_py_number, native="auto")
    for k in range(12):
        np.testing.assert_array_equal(jf(np.ones(3), k), _with_py_number(np.ones(3), k))
    (g,) = jf.graphs()
    assert "not used" in g.tier.note and not g.tier.pending, g.tier.note
    assert g.fast is not None


def test_policy_resolution(monkeypatch):
    assert tiering.resolve_policy(None, reassociate=False) == "off"  # exact mode never goes native
    assert tiering.resolve_policy(True, reassociate=True) == "always"
    assert tiering.resolve_policy(False, reassociate=True) == "off"
    monkeypatch.setenv("JANUS_LIKE_NATIVE", "off")
    assert tiering.resolve_policy(None, reassociate=True) == "off"
    monkeypatch.delenv("JANUS_LIKE_NATIVE")
    assert tiering.resolve_policy(None, reassociate=True) == "auto"
    with pytest.raises(ValueError, match="native= must be one of"):
        tiering.resolve_policy("sometimes", reassociate=True)


def scaled_tanh(x):
    return np.tanh(x) * 2.0


def test_auto_waits_until_the_plan_time_pays_for_compiling():
    jf = jl.jit(scaled_tanh, native="auto")
    for _ in range(20):
        jf(np.ones(4, np.float32))
    g = jf.graphs()[0]
    assert g.tier.pending and g.tier.run is None  # microseconds of plan time: nowhere near a compile
    assert g.tier.due(g.runs, plan_s=1e6)  # ... until the plan has cost more than compiling


def test_disagreement_is_detected():
    convert, why = tiering._converters([np.ones(3, np.float32)], [np.zeros(3, np.float32)])
    assert why and "differs" in why
    convert, why = tiering._converters([np.ones(3, np.float64)], [np.ones(3, np.float32)])
    assert why and "float64" in why
    convert, why = tiering._converters([1.5], [np.float32(1.5)])
    assert why is None and convert[0][1] is np.float32


def test_benchmark_runner_native_system(tmp_path, capsys):
    import json

    from benchmarks import runner

    rc = runner.main(["--models", "tiny_mlp", "--systems", "eager,native", "--quick", "--repeats", "1",
                      "--steps", "5", "--warmup", "4", "--json", str(tmp_path / "r.json")])
    report = json.loads((tmp_path / "r.json").read_text())
    assert rc == 0 and report["ok"] is True
    record = report["models"][0]
    assert record["systems"]["native"]["ms_per_step"] > 0
    assert all(c["ok"] for c in record["checks"])
    assert "native tiny_mlp: 1 of 1 graphs run natively" in capsys.readouterr().out


def test_unknown_dimension_graph_runs_natively_at_every_size():
    """An actor-critic update over episodes of any length (one graph for unknown dimensions):
    sizes are read at run time, so one native function serves every length, 1 included."""
    def make():
        rng = np.random.default_rng(3)
        w = jl.Variable((rng.standard_normal((4, 2)) * 0.3).astype(np.float32))
        v = jl.Variable((rng.standard_normal((4, 1)) * 0.3).astype(np.float32))

        def update(states, actions, returns):
            with jl.GradientTape() as tape:
                logp = F.log_softmax(states @ w)
                value = F.reshape(states @ v, (-1,))
                adv = returns - value
                loss = -F.mean(logp[np.arange(actions.shape[0]), actions] * returns) + 0.5 * F.mean(adv * adv)
            gw, gv = tape.gradient(loss, [w, v])
            w.assign_sub(0.1 * gw)
            v.assign_sub(0.1 * gv)
            return loss

        return update, (w, v)

    def episode(t, k):
        r = np.random.default_rng(k)
        return (r.standard_normal((t, 4)).astype(np.float32), r.integers(0, 2, t),
                r.standard_normal(t).astype(np.float32))

    lengths = [5, 7, 9, 12, 15, 20, 8, 1, 33, 2, 6, 1, 17]
    fe, pe = make()
    fj, pj = make()
    jf = jl.jit(fj, native="always")
    for k, t in enumerate(lengths):
        close(fe(*episode(t, k)), jf(*episode(t, k)), f"call {k} (length {t})")
        for a, b in zip(pe, pj):
            close(a.numpy(), b.numpy(), f"call {k} parameters")
    graphs = [g for g in jf.graphs() if g.graph.polymorphic]
    assert graphs and graphs[0].tier.run is not None, [g.tier.note for g in jf.graphs()]
    assert graphs[0].runs >= 5 and jf.stats()["eager_calls"] == 0
    assert graphs[0].tier.mismatches == 0  # every length ran the native function, none the plan


def test_row_sums_and_reversed_copies_translate():
    """cumsum down axis 0 (the row-chain pass) and a copy of reversed rows (the stacking pass)."""
    from janus_like import ir

    f32 = np.dtype(np.float32)
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, ((5, 3), f32))
    v = ir.Node(ir.INPUT, (), {"slot": 1, "name": "v"}, ((4,), f32))
    c2 = ir.Node("cumsum", (x,), {"axis": 0}, ((5, 3), f32))
    c1 = ir.Node("cumsum", (v,), {"axis": 0}, ((4,), f32))
    rev = ir.Node("getitem", (x,), {"index": ((("s", 3, None, -1),), True)}, ((4, 3), f32))
    cp = ir.Node("copy", (rev,), {}, ((4, 3), f32))
    g = ir.Graph("g", [x, v, c2, c1, rev, cp], [c2, c1, cp], 2)
    rng = np.random.default_rng(0)
    slots = [rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
    got = native.compile_native(g)(slots)
    for a, b in zip(got, interpret(g, slots)):
        assert np.array_equal(a, b)  # running sums in order: the same bits


def test_a_translator_error_keeps_the_plan(monkeypatch):
    def broken(graph):
        raise RuntimeError("a bug in the translator")

    monkeypatch.setattr(native, "translate", broken)

    @jl.jit(native="always")
    def f(x):
        return np.tanh(x) * 2.0

    x = np.ones(3, np.float32)
    for _ in range(6):
        np.testing.assert_array_equal(f(x), np.tanh(x) * 2.0)
    s = f.stats()
    assert s["fallbacks"] == 0 and s["graph_calls"] >= 3
    assert "translation failed" in f.graphs()[0].tier.note


def test_the_hot_call_runs_the_native_function_from_the_fused_call():
    """Once adopted, the native function is called from the graph's one generated call function
    (guards, native call, commit). Whatever it cannot take makes that function miss and the
    full path decide as before: a new shape (guard), a failed assert (eager), an FP error state
    that raises (the plan, which raises like eager), a strided view the compiled signature does
    not accept (the plan; after ten, the plan for good, fused in its turn)."""
    def make():
        w = jl.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))

        def policy(obs):
            h = F.tanh((obs * obs) @ w)
            if float(F.sum(obs)) > 50.0:  # never seen during warm-up: an assert
                h = h * 0
            w.assign_add(0.01 * h.numpy().sum(0) * np.ones((4, 1), np.float32))
            return F.softmax(h)

        return policy, w

    pe, we = make()
    pj, wj = make()
    jf = jl.jit(pj, native="always")
    big = np.full((5, 4), 30.0, np.float32)
    wide = np.arange(40, dtype=np.float32).reshape(5, 8) / 40
    calls = [np.full((5, 4), 0.1 * k, np.float32) for k in range(6)]
    calls += [np.ones((2, 4), np.float32), big, np.ones((5, 4), np.float32)]
    calls += [wide[:, ::2]] * 12 + [np.full((5, 4), 0.3, np.float32)] * 3

    def check(k, obs):
        try:
            want = pe(obs)
        except FloatingPointError:
            with pytest.raises(FloatingPointError):
                jf(obs)
            return
        close(jf(obs), want, f"call {k}")
        close(wj.numpy(), we.numpy(), f"w after call {k}")

    for k, obs in enumerate(calls[:6]):
        check(k, obs)
    g = jf.graphs()[0]
    assert g.tier.run is not None, g.tier.note
    assert "NATIVE(" in g.fast.source
    runs = g.runs
    with np.errstate(over="raise"):  # while the graph is hot: the fused call must not run it natively
        check(6, np.tile(np.float32([1e30, -1e30, 0, 0]), (5, 1)))  # raises in the plan and in eager
    check(7, calls[6])  # another shape: another graph
    check(8, calls[7])  # the assert fails: eager
    check(9, calls[8])
    assert g.runs > runs and jf.stats()["assert_failures"] >= 1
    for k, obs in enumerate(calls[9:], 10):
        check(k, obs)
    assert g.tier.run is None and "argument types vary" in g.tier.note
    assert g.fast is not None and "NATIVE(" not in g.fast.source


def test_the_native_source_of_a_graph_does_not_depend_on_what_was_generated_before():
    """The source text keys Numba's disk cache: the same step generated after other graphs (its
    nodes' process-wide ids all shifted) must translate to the same text, or a later process
    compiles again (minutes for a tree model's graphs) instead of loading."""
    def source():
        f = jl.jit(train_step, native="off")
        m = Model()
        for i in range(4):
            f(m, *data(i))
        (g,) = f.graphs()
        return native.translate(g.graph)[0], g.graph

    first, g1 = source()
    for _ in range(3):  # other graphs in between: thousands of node ids
        source()
    second, g2 = source()
    assert min(n.id for n in g2.all_nodes()) > max(n.id for n in g1.all_nodes())
    assert first == second
    assert "v0 = " in first or "v1 = " in first
