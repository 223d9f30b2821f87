"""Training-step benchmark: every model in `benchmarks/models`, every available system.

    python -m benchmarks.runner [--models mlp,lstm_lm] [--quick] [--repeats N] [--json out.json] [--plot out.png]
                                [--device gpu]

For each model, in one process, each system (eager janus_like, `janus_like.jit` when it exists,
hand-written NumPy, PyTorch and JAX when installed) gets its own copy of the same initial
parameters and trains on the same batches in the same order. Each system first makes `--warmup`
calls, timed one by one and reported separately (the first call, the whole warm-up); then
`--repeats` timed blocks of `--steps` calls each, the systems interleaved block by block (in a
rotating order) so that drifts in machine load hit them all alike. A system's ms/step is the
median over its blocks. The loss of every call is recorded, and each system's losses over the
first `--check-steps` calls are compared with eager's: that is the jit-vs-eager agreement check
(and a cross-check of the other implementations). For `jit`, the JIT's counters are read after
the warm-up and again at the end, so the report says what share of the *steady-state* calls ran
as a graph and how many fallbacks, regenerations and new graphs happened there. Exit status 1
when a check fails or a system raises; progress goes to stderr, the table to stdout.

`--device gpu` runs the same steps on a GPU: janus_like's eager and jit on CuPy (the Variables
made with `janus_like.device("gpu")`, the batches moved to the device before timing) and PyTorch
on CUDA; hand NumPy, torch.compile, JAX and native stay CPU systems and are skipped, and so are
the models whose step makes host arrays itself (`models._common.HOST_ONLY`).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np

from . import frameworks
from .models import MODELS, load
from .models._common import HOST_ONLY, batches_on, numpy_stepper
from .tables import _progress, format_notes, format_table, plot

SYSTEMS = ("eager", "jit", "native", "numpy", "torch", "torch_compile", "jax")
GPU_SYSTEMS = ("eager", "jit", "torch")  # the systems `--device gpu` runs on the GPU
# Relative tolerance on the loss, per system, against eager janus_like. jit and hand NumPy do the
# same float32 arithmetic up to reordering; other frameworks use other kernels (e.g. logsumexp).
LOSS_RTOL = {"jit": 1e-4, "native": 1e-4, "numpy": 1e-4, "torch": 1e-3, "torch_compile": 1e-3, "jax": 1e-3}
LOSS_ATOL = 1e-6

# warm-up: the JIT profiles 3 calls, then generates one graph per new signature; the tree models
# cycle through 8 (quick: 4) tree shapes, so 12 (quick: 8) calls keep generation out of the
# steady state for everything except data-dependent shapes (the RL episode lengths)
QUICK_SETTINGS = dict(warmup=8, repeats=5, block_s=0.05, check_steps=10)
FULL_SETTINGS = dict(warmup=12, repeats=7, block_s=0.25, check_steps=20)
# JIT counters compared between the end of the warm-up and the end of the run
STEADY_COUNTERS = ("calls", "graph_calls", "eager_calls", "warmup_calls", "fallbacks", "regenerations",
                   "graphs_generated", "guard_failures", "assert_failures")


# ------------------------------------------------------------------ building systems
def build_systems(module, seed, quick, wanted, jit, device="cpu"):
    """{system: stepper} for the systems in `wanted` that can run, and {system: reason} for the
    ones that cannot. Every stepper starts from its own `module.make(seed, quick)`; on
    `device="gpu"` with its batches moved to the GPU and its parameters made there."""
    steppers, skipped = {}, {}
    for name in wanted:
        if device != "cpu" and name not in GPU_SYSTEMS:
            skipped[name] = f"runs on the CPU only (--device {device} runs {', '.join(GPU_SYSTEMS)})"
            continue
        if name in ("jit", "native") and jit is None:
            skipped[name] = "janus_like.jit is not available"
            continue
        if name == "native" and not frameworks.numba_available():
            skipped[name] = "numba is not installed (pip install 'janus_like[native]')"
            continue
        if name in ("torch", "torch_compile") and frameworks.torch_or_none() is None:
            skipped[name] = "torch is not installed"
            continue
        if name == "jax" and frameworks.jax_or_none() is None:
            skipped[name] = "jax is not installed"
            continue
        builder = {"torch": "torch_step", "torch_compile": "torch_step", "jax": "jax_step"}.get(name)
        if builder is not None and not hasattr(module, builder):
            skipped[name] = f"the model has no {builder}"
            continue
        state = module.make(seed, quick=quick)
        try:
            if device != "cpu" and name in ("eager", "jit"):
                from janus_like import backend

                state["batches"] = batches_on(state["batches"], device)
                with backend.device(device):  # the step's Variables are made on the device
                    steppers[name] = module.janus_step(
                        state, jit=functools.partial(jit, native="off") if name == "jit" else None)
            elif name == "eager":
                steppers[name] = module.janus_step(state)
            elif name == "jit":  # the NumPy plan only: native compilation is its own system
                steppers[name] = module.janus_step(state, jit=functools.partial(jit, native="off"))
            elif name == "native":  # each graph compiled with Numba at its first run
                stepper = module.janus_step(state, jit=functools.partial(jit, native="always"))
                stepper.system = "native"
                steppers[name] = stepper
            elif name == "numpy":
                steppers[name] = numpy_stepper(module, state)
            elif name == "torch_compile":
                stepper = module.torch_step(state)
                if not hasattr(stepper, "loss_fn"):
                    raise TypeError("its torch stepper has no loss_fn to compile")
                # the same eager step with its forward+loss compiled by torch.compile (the first
                # call, reported separately as `first ms`, includes the compilation)
                stepper.loss_fn = frameworks.torch_or_none().compile(stepper.loss_fn)
                stepper.system = "torch_compile"
                steppers[name] = stepper
            else:
                steppers[name] = getattr(module, builder)(state)
        except Exception as exc:  # noqa: BLE001 - one broken system must not stop the others
            skipped[name] = f"error while building: {type(exc).__name__}: {exc}"
    return steppers, skipped


def _safe_stats(stepper):
    try:
        return stepper.stats()
    except Exception as exc:  # noqa: BLE001
        return f"stats() raised {type(exc).__name__}: {exc}"


def jit_parts(stats):
    """{part: counters} from a stepper's `stats()`: one JitFunction's flat dict (part "") or,
    for steppers that jit several functions (the RL models), {name: flat dict}."""
    if not isinstance(stats, dict):
        return {}
    if "calls" in stats:
        return {"": stats}
    return {k: v for k, v in stats.items() if isinstance(v, dict) and "calls" in v}


def steady_state(before, after):
    """Per jitted part, the counters' growth from `before` (end of warm-up) to `after` (end of
    the run), plus `graph_share` = graph_calls / calls over that stretch. None without a JIT."""
    old = jit_parts(before)
    parts = {}
    for name, now in jit_parts(after).items():
        prev = old.get(name, {})
        d = {k: now.get(k, 0) - prev.get(k, 0) for k in STEADY_COUNTERS if isinstance(now.get(k), (int, float))}
        d["graph_share"] = d["graph_calls"] / d["calls"] if d.get("calls") else None
        parts[name] = d
    return parts or None


def _work(stepper):
    work = getattr(stepper, "work", None)
    return work() if callable(work) else None


# ------------------------------------------------------------------ one model
def run_model(name, args, jit):
    """Benchmark one model; returns its JSON record."""
    module = load(name)
    record = {"model": name, "doc": (module.__doc__ or "").strip().splitlines()[0], "systems": {},
              "skipped": {}, "checks": [], "errors": {}}
    reason = module.available()
    if args.device != "cpu" and name in HOST_ONLY:
        reason = f"not run on the {args.device}: {HOST_ONLY[name]}"
    if reason:
        record["skipped"]["*"] = reason
        _progress(f"[{name}] skipped: {reason}")
        return record
    steppers, skipped = build_systems(module, args.seed, args.quick, args.systems, jit, args.device)
    record["skipped"].update(skipped)
    for sys_name, why in skipped.items():
        _progress(f"[{name}] {sys_name}: skipped ({why})")
    losses = {s: [] for s in steppers}
    results = {}

    def failed(sys_name, exc):
        record["errors"][sys_name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        _progress(f"[{name}] {sys_name}: ERROR {record['errors'][sys_name]}")
        steppers.pop(sys_name, None)

    # warm-up: each call timed on its own, never part of the steady state
    for sys_name in list(steppers):
        stepper, times = steppers[sys_name], []
        _progress(f"[{name}] {sys_name}: warm-up, {args.warmup} calls")
        try:
            for _ in range(args.warmup):
                t0 = time.perf_counter()
                losses[sys_name].append(stepper())
                times.append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001
            failed(sys_name, exc)
            continue
        results[sys_name] = {"first_call_ms": times[0] * 1e3, "warmup_ms": sum(times) * 1e3,
                             "warmup_calls_ms": [t * 1e3 for t in times]}
    if not steppers:
        return record
    stats_after_warmup = {s: _safe_stats(steppers[s]) for s in steppers}

    # steps per block: enough for `block_s` seconds of the slowest system's warm-up calls (the
    # fastest of its last three: one of them may have generated a graph, as on one-off trees)
    if args.steps:
        steps = args.steps
    else:
        slowest = max(min(results[s]["warmup_calls_ms"][-3:]) for s in steppers) / 1e3
        steps = int(min(200, max(1, round(args.block_s / max(slowest, 1e-6)))))
    blocks = {s: [] for s in steppers}
    work = {s: [] for s in steppers}  # units of work per step in each block (None: not counted)
    for rep in range(args.repeats):
        order = list(steppers)
        order = order[rep % len(order):] + order[:rep % len(order)]
        _progress(f"[{name}] repeat {rep + 1}/{args.repeats}: {', '.join(order)} x {steps} steps")
        for sys_name in order:
            stepper, record_losses = steppers[sys_name], losses[sys_name].append
            gc.collect()  # start every block from the same collector state
            try:
                w0 = _work(stepper)
                t0 = time.perf_counter()
                for _ in range(steps):
                    record_losses(stepper())
                blocks[sys_name].append((time.perf_counter() - t0) / steps)
                w1 = _work(stepper)
                work[sys_name].append(None if w0 is None or w1 is None or w1 <= w0 else (w1 - w0) / steps)
            except Exception as exc:  # noqa: BLE001
                failed(sys_name, exc)
                results.pop(sys_name, None)
                blocks.pop(sys_name, None)

    for sys_name, samples in blocks.items():
        ms = statistics.median(samples) * 1e3
        results[sys_name].update(ms_per_step=ms, steps_per_s=1e3 / ms,
                                 blocks_ms=[s * 1e3 for s in samples], steps_per_block=steps,
                                 losses=losses[sys_name][:args.check_steps])
        stats = _safe_stats(steppers[sys_name])
        if stats is not None:
            results[sys_name]["stats"] = stats
            steady = steady_state(stats_after_warmup.get(sys_name), stats)
            if steady is not None:
                results[sys_name]["steady_state"] = steady
    # Where every system counts its work (the RL models' environment steps), the ratios compare
    # time per unit of work: the systems' episodes drift apart by rounding after a few hundred
    # steps, and block k of one system may then play 10% more environment steps than another's.
    per_unit = bool(blocks) and all(w and None not in w for s, w in work.items() if s in blocks)
    unit = getattr(module, "WORK_UNIT", "unit of work") if per_unit else None
    timed = {}  # system -> per-block times the ratios compare (ms per step, or per unit of work)
    for sys_name, samples in blocks.items():
        r = results[sys_name]
        if per_unit:
            r["blocks_work_per_step"] = work[sys_name]
            timed[sys_name] = [b / w for b, w in zip(r["blocks_ms"], work[sys_name])]
            r["ms_per_work_unit"] = statistics.median(timed[sys_name])
            r["work_unit"] = unit
        else:
            timed[sys_name] = r["blocks_ms"]
    record["ratios_per"] = unit or "step"
    eager_blocks = timed.get("eager")
    eager_ms = statistics.median(eager_blocks) if eager_blocks else None
    for sys_name, own in timed.items():
        r = results[sys_name]
        mine = statistics.median(own)
        r["speedup_vs_eager"] = eager_ms / mine if eager_ms else None
        # block k of every system covers the same steps in the same repeat: the ratio of the
        # two is immune to load drift between repeats and to work that changes over training
        r["speedup_vs_eager_paired"] = (statistics.median(e / b for e, b in zip(eager_blocks, own))
                                        if eager_blocks and len(eager_blocks) == len(own) else None)
        for ref in ("numpy", "torch"):  # time over hand NumPy's, and over PyTorch's where it ran
            ref_blocks = timed.get(ref)
            r[f"ratio_to_{ref}"] = mine / statistics.median(ref_blocks) if ref_blocks else None
            r[f"ratio_to_{ref}_paired"] = (statistics.median(b / n for n, b in zip(ref_blocks, own))
                                           if ref_blocks and len(ref_blocks) == len(own) else None)
    record["systems"] = results
    record["checks"] = check_losses(losses, args.check_steps)
    for check in record["checks"]:
        _progress(f"[{name}] check {check['system']} vs eager: {check['verdict']}")
    return record


def check_losses(losses, n):
    """Compare every system's first `n` losses with eager's (rtol from LOSS_RTOL)."""
    ref = losses.get("eager")
    if not ref:
        return []
    checks = []
    for sys_name, got in losses.items():
        if sys_name == "eager":
            continue
        k = min(n, len(ref), len(got))
        a, b = np.asarray(got[:k], np.float64), np.asarray(ref[:k], np.float64)
        rtol = LOSS_RTOL.get(sys_name, 1e-3)
        err = np.abs(a - b)
        ok = bool(np.all(err <= LOSS_ATOL + rtol * np.abs(b)))
        worst = float(np.max(err / np.maximum(np.abs(b), 1e-30))) if k else 0.0
        first_bad = None if ok else int(np.argmax(err > LOSS_ATOL + rtol * np.abs(b)))
        checks.append({
            "system": sys_name, "steps": k, "rtol": rtol, "atol": LOSS_ATOL, "max_rel_diff": worst,
            "ok": ok, "first_bad_step": first_bad,
            "verdict": (f"ok, max rel diff {worst:.1e} over {k} steps (rtol {rtol:g})" if ok else
                        f"MISMATCH at step {first_bad}: {float(a[first_bad])!r} vs eager {float(b[first_bad])!r} "
                        f"(rtol {rtol:g})"),
        })
    return checks


# the report (table, notes, plot): benchmarks/tables.py


@contextlib.contextmanager
def _threads(n):
    """Run with `n` BLAS threads (and torch intra-op threads), restoring the old counts after.
    Yields what is in force, for the JSON report."""
    old_blas = frameworks.blas_threads()
    torch = frameworks.torch_or_none() if "torch" in sys.modules or n else None
    old_torch = torch.get_num_threads() if torch is not None else None
    if n:
        frameworks.blas_threads(n)
        if torch is not None:
            torch.set_num_threads(n)
    try:
        yield {"blas": frameworks.blas_threads(), "torch": torch.get_num_threads() if torch is not None else None}
    finally:
        if n and old_blas is not None:
            frameworks.blas_threads(old_blas)
        if n and old_torch is not None:
            torch.set_num_threads(old_torch)


# ------------------------------------------------------------------ entry point
def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks.runner", description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {','.join(MODELS)}")
    p.add_argument("--systems", help="comma-separated, from " + ",".join(SYSTEMS) + " (default: all; with --quick "
                   "all but native, whose Numba compilation takes seconds to minutes per graph when not cached)")
    p.add_argument("--quick", action="store_true", help="small model sizes, few steps: a smoke run")
    p.add_argument("--repeats", type=int, help="timed blocks per system (median taken)")
    p.add_argument("--steps", type=int, help="calls per timed block (default: about --block-s seconds)")
    p.add_argument("--warmup", type=int, help="untimed-for-steady-state calls per system first")
    p.add_argument("--block-s", type=float, help="target seconds per timed block when --steps is not set")
    p.add_argument("--check-steps", type=int, help="losses compared with eager's over this many first calls")
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS (and torch) threads while benchmarking; 0 leaves them as they are (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", choices=("cpu", "gpu"),
                   help="gpu: janus_like eager/jit on CuPy and PyTorch on CUDA (the other systems are skipped)")
    p.add_argument("--json", metavar="PATH", help="write every number, the machine and versions as JSON")
    p.add_argument("--plot", metavar="PATH",
                   help="bar chart (PNG) of jit speedup and ratio to hand NumPy per model; needs matplotlib "
                        "(skipped with a message when it is missing)")
    args = p.parse_args(argv)
    defaults = QUICK_SETTINGS if args.quick else FULL_SETTINGS
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.systems is None:
        args.systems = ",".join(s for s in SYSTEMS if not (args.quick and s == "native"))
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    for m in args.models:
        if m not in MODELS:
            p.error(f"unknown model {m!r}; choose from {', '.join(MODELS)}")
    for s in args.systems:
        if s not in SYSTEMS:
            p.error(f"unknown system {s!r}; choose from {', '.join(SYSTEMS)}")
    if args.warmup < 1 or args.repeats < 1:
        p.error("--warmup and --repeats must be at least 1")
    if args.device == "gpu":
        from janus_like import backend

        if not backend.gpu_available():
            p.error(f"--device gpu: {backend.gpu_unavailable_reason()}")
        backend.normalize("gpu")
        torch = frameworks.torch_or_none()
        if torch is not None and torch.cuda.is_available():
            torch.set_default_device("cuda")  # the torch steps' tensors, made at build and step time
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    jit = frameworks.find_jit() if {"jit", "native"} & set(args.systems) else None
    started = time.perf_counter()
    records = []
    with _threads(args.threads) as threads_in_force:
        for i, name in enumerate(args.models, 1):
            _progress(f"== [{i}/{len(args.models)}] {name}")
            records.append(run_model(name, args, jit))
    elapsed = time.perf_counter() - started
    notes = format_notes(records)
    print(format_table(records) + ("\n" + notes if notes else ""))
    print(f"{'quick' if args.quick else 'full'} run, {elapsed:.1f} s; ms/step: median over {args.repeats} "
          f"blocks after {args.warmup} warm-up calls; vs eager = eager ms / system ms; "
          f"paired = median over repeats of eager block ms / system block ms; "
          f"vs numpy = system ms / hand-NumPy ms; np paired = median over repeats of system block ms / "
          f"hand-NumPy block ms (vs torch, torch paired: the same over PyTorch's, where it ran; "
          f"the ratios compare time per unit of work where a model counts it: "
          f"the RL models' environment steps); graph = steady-state calls run as a graph", flush=True)
    core, pinned = frameworks.openblas_core(), os.environ.get("OPENBLAS_CORETYPE")
    print(f"NumPy's OpenBLAS kernels: {core}" + (f" (pinned by OPENBLAS_CORETYPE={pinned})" if pinned else ""))
    failed = any(rec["errors"] or not all(c["ok"] for c in rec["checks"]) for rec in records)
    if args.json:
        report = {
            "machine": frameworks.machine_info(), "versions": frameworks.versions(),
            "threads": dict(threads_in_force, **{k: os.environ.get(k) for k in (
                "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}),
            "settings": {k: getattr(args, k) for k in ("models", "systems", "quick", "repeats", "steps", "warmup",
                                                       "block_s", "check_steps", "seed", "device")},
            "elapsed_s": elapsed, "ok": not failed, "models": records,
        }
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2, default=str)
        _progress(f"wrote {args.json}")
    if args.plot:
        plot(records, args.plot)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
