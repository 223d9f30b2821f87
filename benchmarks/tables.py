"""The runner's report: the table, the notes under it and the optional plot, from the records
`runner.run_model` returns (also what `--json` writes)."""
from __future__ import annotations

import json
import sys

import numpy as np


def _progress(msg):
    print(msg, file=sys.stderr, flush=True)


def format_graph_share(steady):
    """The steady-state graph share for a table cell: "100%", or "41/100%" for several parts
    (in the order the model lists them, e.g. update/policy); "-" when there is none."""
    if not steady:
        return "-"
    shares = [p["graph_share"] for p in steady.values()]
    if all(v is None for v in shares):
        return "-"
    return "/".join("-" if v is None else f"{100 * v:.0f}" for v in shares) + "%"


def _ratio(v):
    return "-" if v is None else f"{v:.2f}x"


def _over(v):
    return "-" if v is None else f"{v:.2f}"


def format_table(records):
    """One row per (model, system): timings, or why the system did not run."""
    # PyTorch's columns only where it ran (a GPU run has no hand-NumPy column to compare with)
    torch = any(r.get("ratio_to_torch") is not None for rec in records for r in rec["systems"].values())
    cols = ("model", "system", "ms/step", "steps/s", "vs eager", "paired", "vs numpy", "np paired",
            *(("vs torch", "torch paired") if torch else ()), "first ms", "warm-up ms", "graph", "loss")
    refs = ("numpy", "torch") if torch else ("numpy",)
    timed, other = [], []
    for rec in records:
        verdicts = {c["system"]: "ok" if c["ok"] else "MISMATCH" for c in rec["checks"]}
        for sys_name, r in rec["systems"].items():
            if "ms_per_step" in r:
                timed.append((rec["model"], sys_name, f"{r['ms_per_step']:.3f}", f"{r['steps_per_s']:.1f}",
                              "-" if r["speedup_vs_eager"] is None else f"{r['speedup_vs_eager']:.2f}x",
                              _ratio(r.get("speedup_vs_eager_paired")),
                              *(_over(r.get(f"ratio_to_{ref}{kind}")) for ref in refs for kind in ("", "_paired")),
                              f"{r['first_call_ms']:.2f}", f"{r['warmup_ms']:.2f}",
                              format_graph_share(r.get("steady_state")),
                              "ref" if sys_name == "eager" else verdicts.get(sys_name, "-")))
        for sys_name, why in rec["skipped"].items():
            other.append((rec["model"], sys_name, "skipped: " + why))
        for sys_name, err in rec["errors"].items():
            other.append((rec["model"], sys_name, "ERROR: " + err.splitlines()[-1][:100]))
    widths = [max([len(c)] + [len(row[i]) for row in timed]) for i, c in enumerate(cols)]
    widths[0] = max([widths[0]] + [len(row[0]) for row in other])
    widths[1] = max([widths[1]] + [len(row[1]) for row in other])

    def line(row):
        return "  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths)))

    out = [line(cols), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in timed]
    out += ["  ".join((row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2])) for row in other]
    return "\n".join(out)


def format_notes(records):
    notes = []
    for rec in records:
        for c in rec["checks"]:
            notes.append(f"check {rec['model']}/{c['system']} vs eager: {c['verdict']}")
        jit = rec["systems"].get("jit", {})
        for part, d in (jit.get("steady_state") or {}).items():
            name = rec["model"] + (f"/{part}" if part else "")
            share = "-" if d["graph_share"] is None else f"{100 * d['graph_share']:.1f}%"
            notes.append(f"jit steady state {name}: {d.get('calls', 0)} calls, {share} as graph "
                         f"({d.get('eager_calls', 0)} eager, {d.get('warmup_calls', 0)} profiled); "
                         f"{d.get('fallbacks', 0)} fallbacks, {d.get('regenerations', 0)} regenerations, "
                         f"{d.get('graphs_generated', 0)} graphs generated, "
                         f"{d.get('guard_failures', 0)} guard failures")
        nstats = rec["systems"].get("native", {}).get("stats") or {}
        if nstats:
            parts = nstats.values() if all(isinstance(v, dict) for v in nstats.values()) else [nstats]
            native = sum(p.get("native_graphs", 0) for p in parts)
            total = sum(p.get("graphs_cached", 0) for p in parts)
            fused = sum(p.get("fused_graphs", 0) for p in parts)
            compile_s = sum(p.get("native_compile_s", 0.0) for p in parts)
            notes.append(f"native {rec['model']}: {native} of {total} graphs run natively, {fused} as plans with "
                         f"fused elementwise loops (compile/load {compile_s:.1f} s, in the warm-up column)")
        unit = rec.get("ratios_per", "step")
        if unit != "step":
            spread = ", ".join(f"{s} {min(r['blocks_work_per_step']):.0f}-{max(r['blocks_work_per_step']):.0f}"
                               for s, r in rec["systems"].items() if r.get("blocks_work_per_step"))
            notes.append(f"{rec['model']}: the ratio columns compare time per {unit} ({unit}s per "
                         f"step in a block: {spread})")
        stats = jit.get("stats")
        if stats is not None:
            text = json.dumps(stats, default=str, sort_keys=True)
            notes.append(f"jit stats {rec['model']}: {text[:300]}{'...' if len(text) > 300 else ''}")
    return "\n".join(notes)


def plot(records, path):
    """Bar charts per model: jit's speedup over eager, and eager's and jit's ratio to hand NumPy.
    matplotlib is optional (the `bench` extra): without it, say so and return False."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except Exception as exc:  # noqa: BLE001 - ImportError, or a broken install
        _progress(f"--plot: matplotlib is not available ({type(exc).__name__}: {exc}); no plot written. "
                  f"Install it with `pip install matplotlib` (or the `bench` extra).")
        return False
    rows = [(rec["model"], rec["systems"]) for rec in records
            if "ms_per_step" in rec["systems"].get("eager", {})]
    if not rows:
        _progress("--plot: no model has eager timings; no plot written")
        return False
    models = [m for m, _ in rows]
    x = np.arange(len(models))

    def values(system, key):
        return [s.get(system, {}).get(key) or np.nan for _, s in rows]

    fig, (left, right) = plt.subplots(2, 1, figsize=(max(6, 0.6 * len(models) + 2), 8), constrained_layout=True)
    speedup = [p if not np.isnan(p) else u for p, u in zip(values("jit", "speedup_vs_eager_paired"),
                                                              values("jit", "speedup_vs_eager"))]
    bars = left.bar(x, speedup, color=["tab:green" if v >= 1 else "tab:red" for v in np.nan_to_num(speedup)])
    left.bar_label(bars, labels=["" if np.isnan(v) else f"{v:.2f}x" for v in speedup], fontsize=8)
    left.axhline(1.0, color="black", linewidth=0.8)
    left.set_title("jit speedup over eager, paired by block (higher is better)")
    left.set_ylabel("eager ms / jit ms")
    width = 0.4
    for offset, system in ((-width / 2, "eager"), (width / 2, "jit")):
        right.bar(x + offset, values(system, "ratio_to_numpy"), width, label=system)
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set_yscale("log")
    right.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    right.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    right.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    right.set_title("time relative to hand-written NumPy (lower is better)")
    right.set_ylabel("system ms / numpy ms (log scale)")
    right.legend()
    for ax in (left, right):
        ax.set_xticks(x, models, rotation=30, ha="right")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    _progress(f"wrote {path}")
    return True
