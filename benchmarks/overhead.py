"""Per-op overhead of eager janus_like over raw NumPy on tiny arrays.

On a (4,) float32 array the NumPy kernel itself takes well under a microsecond, so the difference
between `a + b` on ndarrays and on janus_like tensors is the framework's dispatch cost (unwrap,
op lookup, wrap, tape bookkeeping). The spec's targets: at most 5 µs added per op without a
tape, at most 10 µs with one GradientTape watching the input.

    python -m benchmarks.overhead [--repeats 31] [--number 2000] [--statistic min] [--json out.json]

`measure()` returns the same numbers as a dict.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import timeit

import numpy as np

import janus_like as jl
from janus_like import F

TARGET_EAGER_US = 5.0
TARGET_TAPE_US = 10.0

# name -> (NumPy statement, janus_like statement, input the tape watches). `a`, `b` are (4,)
# float32 and `m` is (4, 4) float32: ndarrays for the NumPy column, janus_like tensors for the
# eager columns. Same source text for both where possible, so the Python-level cost of the
# statement itself cancels out.
OPS = {
    "add": ("a + b", "a + b", "a"),
    "mul": ("a * b", "a * b", "a"),
    "tanh": ("np.tanh(a)", "F.tanh(a)", "a"),
    "np.tanh (protocol)": ("np.tanh(a)", "np.tanh(a)", "a"),
    "matmul 4x4": ("m @ m", "m @ m", "m"),
    "sum": ("a.sum()", "a.sum()", "a"),
    "getitem": ("a[1:3]", "a[1:3]", "a"),
}


def _time_us(stmt, namespace, repeats, number, tape_on=None):
    """(median, min) microseconds per execution of `stmt` over `repeats` timeit runs of `number`
    each. With `tape_on`, every run happens inside a fresh GradientTape watching that tensor
    (fresh, so the tape's record does not grow across runs)."""
    timer = timeit.Timer(stmt, globals=namespace)
    samples = []
    for _ in range(repeats):
        if tape_on is None:
            samples.append(timer.timeit(number))
            continue
        with jl.GradientTape() as tape:
            tape.watch(tape_on)
            samples.append(timer.timeit(number))
    return statistics.median(samples) / number * 1e6, min(samples) / number * 1e6


def measure(repeats: int = 31, number: int = 2000, ops=None, statistic: str = "median") -> dict:
    """Per-op timings in µs: {"ops": {name: {"numpy_us", "eager_us", "tape_us", "added_us",
    "added_tape_us", "eager_ok", "tape_ok", "min": {...}}}, "targets": {...}, "settings": {...}}.

    The top-level numbers use `statistic` over `repeats` runs: "median" (the default) or "min"
    (what timeit's docs suggest on a loaded machine, since load only ever adds time); "min" /
    "median" holds the other one."""
    if statistic not in ("median", "min"):
        raise ValueError(f"statistic must be 'median' or 'min', got {statistic!r}")
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal(4).astype(np.float32)
    b_np = rng.standard_normal(4).astype(np.float32)
    m_np = rng.standard_normal((4, 4)).astype(np.float32)
    numpy_ns = {"np": np, "a": a_np, "b": b_np, "m": m_np}
    a_t, b_t, m_t = jl.tensor(a_np), jl.tensor(b_np), jl.tensor(m_np)
    eager_ns = {"np": np, "F": F, "a": a_t, "b": b_t, "m": m_t}

    results = {}
    for name, (np_stmt, jl_stmt, watched) in OPS.items():
        if ops is not None and name not in ops:
            continue
        watched = eager_ns[watched]
        timings = (_time_us(np_stmt, numpy_ns, repeats, number),
                   _time_us(jl_stmt, eager_ns, repeats, number),
                   _time_us(jl_stmt, eager_ns, repeats, number, tape_on=watched))
        by_stat = {stat: _cell(*(t[i] for t in timings)) for i, stat in enumerate(("median", "min"))}
        other = "min" if statistic == "median" else "median"
        results[name] = dict(by_stat[statistic], **{other: by_stat[other]})
    return {
        "ops": results,
        "targets": {"added_us": TARGET_EAGER_US, "added_tape_us": TARGET_TAPE_US},
        "settings": {"repeats": repeats, "number": number, "statistic": statistic,
                     "array": "(4,) float32; matmul (4, 4) float32"},
    }


def _cell(numpy_us, eager_us, tape_us):
    return {"numpy_us": numpy_us, "eager_us": eager_us, "tape_us": tape_us,
            "added_us": eager_us - numpy_us, "added_tape_us": tape_us - numpy_us,
            "eager_ok": eager_us - numpy_us <= TARGET_EAGER_US,
            "tape_ok": tape_us - numpy_us <= TARGET_TAPE_US}


def format_table(result: dict) -> str:
    head = f"{'op':<20}{'numpy µs':>10}{'eager µs':>10}{'+tape µs':>10}{'added':>9}{'added+tape':>12}  target"
    lines = [head, "-" * len(head)]
    for name, r in result["ops"].items():
        verdict = "ok" if r["eager_ok"] and r["tape_ok"] else "OVER"
        lines.append(f"{name:<20}{r['numpy_us']:>10.2f}{r['eager_us']:>10.2f}{r['tape_us']:>10.2f}"
                     f"{r['added_us']:>9.2f}{r['added_tape_us']:>12.2f}  {verdict}")
    t = result["targets"]
    lines.append(f"targets: added <= {t['added_us']:.0f} µs without a tape, <= {t['added_tape_us']:.0f} µs "
                 f"with one; {result['settings']['statistic']} of {result['settings']['repeats']} runs "
                 f"x {result['settings']['number']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=31, help="timeit runs per cell (median taken)")
    parser.add_argument("--number", type=int, default=2000, help="executions per timeit run")
    parser.add_argument("--statistic", choices=("median", "min"), default="median",
                        help="over the runs of a cell (min is steadier on a loaded machine)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    result = measure(args.repeats, args.number, statistic=args.statistic)
    print(format_table(result))
    if args.json:
        from .frameworks import machine_info, versions

        result.update(machine=machine_info(), versions=versions())
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
