"""Smoke tests for benchmarks/: the implementations agree and the harness runs.

Not timing tests: they check that every model's hand-written NumPy step and its eager janus_like
step compute the same loss and the same parameter update from the same seed (which validates
both), that the JIT (once it exists) agrees with eager on them, and that the runner and the
overhead benchmark still run end to end on tiny settings.
"""
from __future__ import annotations

import json
import statistics

import numpy as np
import pytest

from benchmarks import frameworks, overhead, runner, tables
from benchmarks.models import MODELS, _common, load
from benchmarks.models._common import numpy_stepper

STEPS = 3
LOSS_RTOL = 1e-4
F32_EPS = float(np.finfo(np.float32).eps)


def _model(name):
    module = load(name)
    reason = module.available()
    if reason:
        pytest.skip(f"{name}: {reason}")
    return module


def _run(stepper, steps=STEPS):
    return [stepper() for _ in range(steps)]


def assert_same_updates(initial, got, expected, rtol=1e-4):
    """got - initial == expected - initial, up to `rtol` of the largest update plus the rounding
    of the parameters themselves (an update is a small difference of float32 numbers)."""
    assert set(got) == set(expected) == set(initial)
    for name in initial:
        p0 = initial[name].astype(np.float64)
        d_got = got[name].astype(np.float64) - p0
        d_exp = expected[name].astype(np.float64) - p0
        assert got[name].dtype == np.float32, f"{name} is {got[name].dtype}, not float32"
        assert np.abs(d_exp).max() > 0, f"{name} was not updated"
        tol = rtol * np.abs(d_exp).max() + 4 * F32_EPS * np.abs(p0).max()
        err = np.abs(d_got - d_exp).max()
        assert err <= tol, f"update of {name!r} differs by {err:.3g} (tolerance {tol:.3g})"


@pytest.mark.parametrize("name", MODELS)
def test_make_is_deterministic_float32(name):
    module = load(name)
    a, b, c = module.make(0, quick=True), module.make(0, quick=True), module.make(1, quick=True)
    for key in a["params"]:
        assert a["params"][key].dtype == np.float32
        np.testing.assert_array_equal(a["params"][key], b["params"][key])
    assert any(not np.array_equal(a["params"][k], c["params"][k]) for k in a["params"])
    assert repr(a["batches"]) == repr(b["batches"])


@pytest.mark.parametrize("name", MODELS)
def test_eager_janus_step_matches_hand_numpy(name):
    module = _model(name)
    initial = {k: v.copy() for k, v in module.make(0, quick=True)["params"].items()}
    by_hand = numpy_stepper(module, module.make(0, quick=True))
    eager = module.janus_step(module.make(0, quick=True))
    np.testing.assert_allclose(_run(eager), _run(by_hand), rtol=LOSS_RTOL)
    assert_same_updates(initial, eager.parameters(), by_hand.parameters())


@pytest.mark.parametrize("name", MODELS)
def test_jit_matches_eager(name):
    jit = frameworks.find_jit()
    if jit is None:
        pytest.skip("janus_like.jit does not exist yet")
    module = _model(name)
    eager = module.janus_step(module.make(0, quick=True))
    jitted = module.janus_step(module.make(0, quick=True), jit=jit)
    steps = 8  # past any warm-up, so generated graphs run too
    np.testing.assert_allclose(_run(jitted, steps), _run(eager, steps), rtol=runner.LOSS_RTOL["jit"])


@pytest.mark.parametrize("framework", ["torch", "jax"])
@pytest.mark.parametrize("name", MODELS)
def test_other_frameworks_match_eager(name, framework):
    if (frameworks.torch_or_none() if framework == "torch" else frameworks.jax_or_none()) is None:
        pytest.skip(f"{framework} is not installed")
    module = _model(name)
    if not hasattr(module, f"{framework}_step"):
        pytest.skip(f"{name} has no {framework}_step")
    eager = module.janus_step(module.make(0, quick=True))
    other = getattr(module, f"{framework}_step")(module.make(0, quick=True))
    np.testing.assert_allclose(_run(other), _run(eager), rtol=runner.LOSS_RTOL[framework])


def _numeric_grad(f, arr, idx, eps=1e-6):
    old = arr[idx]
    arr[idx] = old + eps
    up = f()
    arr[idx] = old - eps
    down = f()
    arr[idx] = old
    return (up - down) / (2 * eps)


@pytest.mark.parametrize("padding", [0, 2])
def test_hand_numpy_conv_and_pool_gradients(padding):
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((2, 3, 8, 8)), rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    out, cols = _common.conv2d_forward(x, w, b, padding)
    assert out.shape == (2, 4, 8 + 2 * padding - 2, 8 + 2 * padding - 2)
    dout = rng.standard_normal(out.shape)
    dx, dw, db = _common.conv2d_backward(dout, cols, x.shape, w, padding)
    loss = lambda: float((_common.conv2d_forward(x, w, b, padding)[0] * dout).sum())  # noqa: E731
    for arr, grad in ((x, dx), (w, dw), (b, db)):
        for _ in range(3):
            idx = tuple(int(rng.integers(0, s)) for s in arr.shape)
            assert _numeric_grad(loss, arr, idx) == pytest.approx(grad[idx], rel=1e-6, abs=1e-8)

    y = rng.standard_normal((2, 3, 6, 6))
    pooled, pos = _common.max_pool2d_forward(y, 2)
    np.testing.assert_array_equal(pooled, y.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    g = rng.standard_normal(pooled.shape)
    dy = _common.max_pool2d_backward(g, pos, y.shape, 2)
    pool_loss = lambda: float((_common.max_pool2d_forward(y, 2)[0] * g).sum())  # noqa: E731
    for idx in [(0, 0, 0, 0), (1, 2, 3, 4), (1, 1, 5, 5)]:
        assert _numeric_grad(pool_loss, y, idx) == pytest.approx(dy[idx], rel=1e-6, abs=1e-8)


def test_runner_quick_smoke(tmp_path, capsys):
    """Every model through the runner on the smallest settings (a few seconds in all)."""
    out = tmp_path / "bench.json"
    models = list(MODELS)
    rc = runner.main(["--models", ",".join(models), "--quick", "--repeats", "2", "--steps", "2",
                      "--warmup", "2", "--check-steps", "4", "--json", str(out)])
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    jit_exists = frameworks.find_jit() is not None
    # whether the JIT agrees with eager is test_jit_matches_eager's business; here only the
    # harness: without a JIT everything must pass, with one the status must reflect its checks
    all_ok = all(not rec["errors"] and all(c["ok"] for c in rec["checks"]) for rec in report["models"])
    assert rc == (0 if all_ok else 1), printed
    assert report["ok"] is all_ok
    if not jit_exists:
        assert rc == 0, printed
    assert report["machine"]["cpu_count"] >= 1
    assert report["versions"]["numpy"] == np.__version__
    assert [m["model"] for m in report["models"]] == models
    for record in report["models"]:
        if "*" in record["skipped"]:  # the whole model cannot run here (e.g. no conv ops)
            continue
        systems = record["systems"]
        for name in ("eager", "numpy"):
            r = systems[name]
            assert r["ms_per_step"] > 0 and len(r["blocks_ms"]) == 2 and len(r["warmup_calls_ms"]) == 2
            assert r["steps_per_block"] == 2
            assert r["first_call_ms"] == r["warmup_calls_ms"][0]
        assert systems["eager"]["speedup_vs_eager"] == pytest.approx(1.0)
        assert systems["eager"]["speedup_vs_eager_paired"] == pytest.approx(1.0)
        assert systems["numpy"]["ratio_to_numpy"] == pytest.approx(1.0)
        assert systems["numpy"]["ratio_to_numpy_paired"] == pytest.approx(1.0)
        timed = {k: systems[k]["blocks_ms"] for k in ("eager", "numpy")}
        if record["ratios_per"] != "step":  # the RL models: time per environment step
            assert record["model"] in ("reinforce", "a2c") and record["ratios_per"] == "environment step"
            timed = {k: [b / w for b, w in zip(v, systems[k]["blocks_work_per_step"])] for k, v in timed.items()}
        assert systems["eager"]["ratio_to_numpy_paired"] == pytest.approx(statistics.median(
            e / n for e, n in zip(timed["eager"], timed["numpy"])))
        checks = {c["system"]: c for c in record["checks"]}
        assert checks["numpy"]["ok"] and checks["numpy"]["steps"] == 4
        if not jit_exists:
            assert "jit" in record["skipped"]
        else:  # timed and checked against eager, or its error reported
            assert ("jit" in systems and "jit" in checks) or "jit" in record["errors"]
            if "stats" in systems.get("jit", {}):
                assert json.dumps(systems["jit"]["stats"], default=str)
                for part in systems["jit"]["steady_state"].values():
                    assert part["calls"] >= 4  # 2 blocks x 2 steps (RL: and every policy call)
                    assert 0 <= part["graph_calls"] <= part["calls"]
        assert record["model"] in printed
    assert "ms/step" in printed


def test_runner_reports_a_failing_system(monkeypatch, tmp_path, capsys):
    """A system that raises is reported (status 1), and the others still run."""
    module = load("tiny_mlp")

    def broken(state):
        raise RuntimeError("boom")

    monkeypatch.setattr(module, "numpy_step", broken)
    rc = runner.main(["--models", "tiny_mlp", "--systems", "eager,numpy", "--quick", "--repeats", "1",
                      "--steps", "1", "--warmup", "1", "--json", str(tmp_path / "r.json")])
    report = json.loads((tmp_path / "r.json").read_text())
    assert rc == 1 and report["ok"] is False
    record = report["models"][0]
    assert "boom" in record["errors"]["numpy"]
    assert record["systems"]["eager"]["ms_per_step"] > 0
    assert "ERROR" in capsys.readouterr().out


class _Counted:
    """A stub model whose systems do `units` units of work per step (counted, not timed)."""
    WORK_UNIT = "widget"
    units = {"eager": 3, "numpy": 1}

    @staticmethod
    def available():
        return None

    @staticmethod
    def make(seed, quick=False):
        return {"params": {"w": np.zeros(1, np.float32)}, "batches": [()], "step": 0, "work": 0}

    @classmethod
    def _step(cls, state, system):
        state["work"] += cls.units[system] or 0
        return 1.0

    @classmethod
    def numpy_step(cls, state):
        return cls._step(state, "numpy")

    @classmethod
    def janus_step(cls, state, jit=None):
        counted = None if cls.units.get("eager") is None else (lambda: state["work"])
        return _common.Stepper(lambda: cls._step(state, "eager"), [()], lambda: state["params"], "eager",
                               work=counted)


def _counted_record(monkeypatch, units):
    monkeypatch.setattr(_Counted, "units", units)
    monkeypatch.setattr(runner, "load", lambda name: _Counted)
    return runner.run_model("counted", runner.parse_args(["--models", "tiny_mlp", "--quick", "--repeats", "3",
                                                          "--steps", "2", "--warmup", "1", "--systems", "eager,numpy"]),
                            None)


def test_runner_compares_time_per_unit_of_work_where_every_system_counts_it(monkeypatch):
    """The RL models' episodes differ between systems once rounding flips an action: the ratio
    columns then compare time per environment step, not per training step."""
    record = _counted_record(monkeypatch, {"eager": 3, "numpy": 1})
    eager, hand = record["systems"]["eager"], record["systems"]["numpy"]
    assert record["ratios_per"] == "widget" and eager["work_unit"] == "widget"
    assert eager["blocks_work_per_step"] == [3, 3, 3] and hand["blocks_work_per_step"] == [1, 1, 1]
    per_unit = [b / 3 for b in eager["blocks_ms"]]
    assert eager["ms_per_work_unit"] == pytest.approx(statistics.median(per_unit))
    assert eager["ratio_to_numpy_paired"] == pytest.approx(statistics.median(
        e / n for e, n in zip(per_unit, hand["blocks_ms"])))
    assert eager["ratio_to_numpy"] == pytest.approx(statistics.median(per_unit) / statistics.median(hand["blocks_ms"]))
    assert eager["ms_per_step"] == pytest.approx(statistics.median(eager["blocks_ms"]))  # the column stays per step
    assert "time per widget" in runner.format_notes([record]) and "eager 3-3" in runner.format_notes([record])
    # one system that does not count: back to time per step for all
    record = _counted_record(monkeypatch, {"eager": None, "numpy": 1})
    eager, hand = record["systems"]["eager"], record["systems"]["numpy"]
    assert record["ratios_per"] == "step" and "blocks_work_per_step" not in eager
    assert eager["ratio_to_numpy_paired"] == pytest.approx(statistics.median(
        e / n for e, n in zip(eager["blocks_ms"], hand["blocks_ms"])))
    assert "time per" not in runner.format_notes([record])


def test_overhead_measure_smoke():
    result = overhead.measure(repeats=2, number=20, ops=["add", "getitem"])
    assert set(result["ops"]) == {"add", "getitem"}
    for r in result["ops"].values():
        assert r["numpy_us"] > 0 and r["eager_us"] > 0 and r["tape_us"] > 0
        assert r["added_us"] == pytest.approx(r["eager_us"] - r["numpy_us"])
    assert "added" in overhead.format_table(result)


def test_find_jit_never_raises():
    jit = frameworks.find_jit()
    assert jit is None or callable(jit)


def test_steady_state_counts_only_calls_after_the_warm_up():
    before = {"calls": 5, "graph_calls": 1, "eager_calls": 1, "warmup_calls": 3, "fallbacks": 0,
              "regenerations": 0, "graphs_generated": 1, "guard_failures": 0, "assert_failures": 0}
    after = dict(before, calls=15, graph_calls=9, eager_calls=3, fallbacks=2, regenerations=1, graphs_generated=2)
    (part,) = runner.steady_state(before, after).values()
    assert part["calls"] == 10 and part["graph_calls"] == 8 and part["graph_share"] == pytest.approx(0.8)
    assert part["eager_calls"] == 2 and part["fallbacks"] == 2 and part["regenerations"] == 1
    assert part["warmup_calls"] == 0 and part["graphs_generated"] == 1
    # several jitted functions per step (the RL models): one entry each, in the model's order
    parts = runner.steady_state({"update": before, "policy": before}, {"update": after, "policy": before})
    assert list(parts) == ["update", "policy"] and parts["policy"]["graph_share"] is None
    assert tables.format_graph_share(parts) == "80/-%"
    assert runner.steady_state(None, None) is None and tables.format_graph_share(None) == "-"


def _quick_record(name):
    return runner.run_model(name, runner.parse_args(["--models", name, "--quick", "--repeats", "1", "--steps", "1",
                                                     "--warmup", "4", "--systems", "eager,jit"]),
                            frameworks.find_jit())


def test_runner_steady_state_for_several_jitted_functions():
    if frameworks.find_jit() is None:
        pytest.skip("janus_like.jit does not exist yet")
    record = _quick_record("reinforce")
    steady = record["systems"]["jit"]["steady_state"]
    assert set(steady) == {"update", "policy"}
    assert steady["update"]["calls"] == 1
    assert steady["policy"]["calls"] >= 1  # one per environment step of the episode
    assert "update" in runner.format_notes([record]) and "policy" in runner.format_notes([record])


def test_plot_without_matplotlib_is_skipped_with_a_message(monkeypatch, tmp_path, capsys):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    out = tmp_path / "plot.png"
    rc = runner.main(["--models", "tiny_mlp", "--systems", "eager,numpy", "--quick", "--repeats", "1",
                      "--steps", "1", "--warmup", "1", "--plot", str(out)])
    assert rc == 0 and not out.exists()
    assert "matplotlib" in capsys.readouterr().err


def test_the_table_compares_with_pytorch_where_it_ran():
    def system(ms, **ratios):
        return {"ms_per_step": ms, "steps_per_s": 1e3 / ms, "speedup_vs_eager": 2.0 / ms, "first_call_ms": 1.0,
                "warmup_ms": 2.0, "ratio_to_numpy": None, **ratios}

    record = {"model": "m", "checks": [], "skipped": {"numpy": "CPU only"}, "errors": {},
              "systems": {"eager": system(2.0), "jit": system(1.0, ratio_to_torch=0.8, ratio_to_torch_paired=0.75)}}
    header, _, eager, jit, skipped = tables.format_table([record]).splitlines()
    assert header.split()[11:15] == ["vs", "torch", "torch", "paired"]
    assert jit.split()[8:10] == ["0.80", "0.75"] and eager.split()[8:10] == ["-", "-"] and "CPU only" in skipped
    del record["systems"]["jit"]["ratio_to_torch"], record["systems"]["jit"]["ratio_to_torch_paired"]
    assert "torch" not in tables.format_table([record]).splitlines()[0]  # no PyTorch run: no columns for it


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    record = {"model": "m", "systems": {
        "eager": {"ms_per_step": 2.0, "speedup_vs_eager": 1.0, "ratio_to_numpy": 4.0},
        "jit": {"ms_per_step": 1.0, "speedup_vs_eager": 2.0, "ratio_to_numpy": 2.0}}}
    out = tmp_path / "plot.png"
    assert runner.plot([record], str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cartpole_episodes_are_deterministic_and_data_dependent():
    from benchmarks.models import _cartpole

    def always_left(obs):
        return 1.0

    a = _cartpole.run_episode(7, always_left, cap=500)
    b = _cartpole.run_episode(7, always_left, cap=500)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[3] and (a[1] == 0).all()  # pushing left always tips the pole within a few dozen steps
    lengths = {len(_cartpole.run_episode(seed, lambda obs: 0.5, cap=500)[1]) for seed in range(8)}
    assert len(lengths) > 1  # the episode length depends on the data
    assert len(_cartpole.run_episode(3, lambda obs: float(obs[2] < 0), cap=25)[1]) == 25  # the cap
    np.testing.assert_allclose(_cartpole.discounted_returns(3, 0.5, bootstrap=8.0), [2.75, 3.5, 5.0])


def test_gan_hand_softplus_gradient_matches_the_tape():
    """The hand-written NumPy GAN differentiates relu(x) + log(1 + exp(-|x|)) exactly as the
    tape does, including at x == 0 (where a dead discriminator puts its logits)."""
    import janus_like as jl

    from benchmarks.models import gan

    x = np.array([-3.0, -0.5, 0.0, 0.25, 4.0], np.float32)
    v = jl.Variable(x.copy())
    with jl.GradientTape() as tape:
        y = jl.F.sum(gan.softplus(v))
    (g,) = tape.gradient(y, [v])
    np.testing.assert_allclose(np.asarray(g), gan._softplus_grad(x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(gan.softplus(jl.tensor(x))), gan._softplus(x), rtol=1e-6)
