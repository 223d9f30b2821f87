"""The benchmark models' janus_like training steps on the GPU: eager and jit side by side.

Each model's step is built with `jl.device("gpu")` (its Variables on the device) and fed
batches moved to the device; the jitted step must give eager's losses and parameters after
every call, and run as GPU graphs. On the CPU stand-in (`fake`) and on CuPy where a GPU is
present (`cupy`)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import janus_like as jl

from benchmarks import frameworks, runner
from benchmarks.models import MODELS, load
from benchmarks.models._common import HOST_ONLY
from jit.harness import check_plans_match_interpreter
from test_devices import DEVICES, _use_gpu

STEPS = 7


def _run(module, system):
    steppers, skipped = runner.build_systems(module, 0, True, [system], jl.jit, "gpu")
    assert not skipped, skipped
    stepper = steppers[system]
    losses, params = [], []
    for _ in range(STEPS):
        losses.append(stepper())
        params.append(stepper.parameters())
    return losses, params, stepper


@pytest.mark.parametrize("kind", DEVICES)
@pytest.mark.parametrize("name", [m for m in MODELS if m not in HOST_ONLY])
def test_a_models_training_step_on_the_gpu_jitted_matches_eager(name, kind, monkeypatch):
    _use_gpu(monkeypatch, kind)
    module = load(name)
    eager_losses, eager_params, _ = _run(module, "eager")
    jit_losses, jit_params, jitted = _run(module, "jit")
    for i, (le, lj, pe, pj) in enumerate(zip(eager_losses, jit_losses, eager_params, jit_params)):
        np.testing.assert_allclose(lj, le, rtol=1e-4, err_msg=f"{name}: loss of call {i}")
        for k in pe:
            np.testing.assert_allclose(pj[k], pe[k], rtol=1e-4, atol=1e-6, err_msg=f"{name}: {k} after call {i}")
    stats = jitted.stats()
    assert stats["graph_calls"] >= STEPS - 3, jitted.fn.explain()
    graphs = jitted.fn.graphs()
    assert graphs and all(g.devices for g in graphs), "the graphs run on the GPU"
    assert check_plans_match_interpreter(jitted.fn) >= 1  # the GPU plans compute what the interpreter does


@pytest.mark.parametrize("kind", DEVICES)
def test_the_runner_times_the_gpu_systems_and_skips_the_others(kind, monkeypatch, tmp_path, capsys):
    _use_gpu(monkeypatch, kind)
    torch = frameworks.torch_or_none()
    default = torch.get_default_device() if torch is not None else None
    out = tmp_path / "gpu.json"
    try:
        rc = runner.main(["--models", "tiny_mlp,lstm_lm", "--systems", "eager,jit,numpy,torch", "--device", "gpu",
                          "--quick", "--repeats", "2", "--steps", "2", "--warmup", "4", "--json", str(out)])
    finally:
        if torch is not None:
            torch.set_default_device(default)
    printed = capsys.readouterr().out
    assert rc == 0, printed
    report = json.loads(out.read_text())
    assert report["settings"]["device"] == "gpu"
    tiny, lstm = report["models"]
    assert set(tiny["systems"]) >= {"eager", "jit"} and "CPU only" in tiny["skipped"]["numpy"]
    assert all(c["ok"] for c in tiny["checks"]) and tiny["systems"]["jit"]["steady_state"]
    assert "np.zeros" in lstm["skipped"]["*"]


def test_the_gpu_cost_probe_runs_or_says_why_not(capsys):
    from benchmarks import gpu_costs
    from janus_like import backend

    rc = gpu_costs.main(["--models", "tiny_mlp"])
    captured = capsys.readouterr()
    if backend.gpu_available():
        assert rc == 0 and "CuPy µs per call" in captured.out and "tiny_mlp: 1 graph(s)" in captured.out
    else:
        assert rc == 2 and "no GPU" in captured.err
