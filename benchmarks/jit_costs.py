"""What the JIT itself costs: warm-up (profiling) overhead, graph generation time, executor
overhead per node, and the guard program.

    python -m benchmarks.jit_costs [--json out.json]

* warm-up ratio: one instrumented (profiled) call over one plain eager call, steady state
  (the one-time compilation of the instrumented copy is reported separately);
* generation: wall time of generating + compiling the graph for one signature, and its size;
* executor overhead per node: a graph that is a chain of N cheap elementwise ops on a (1,)
  array, run by the generated plan and by the reference interpreter, minus the same chain
  written directly in NumPy, divided by N;
* steady-state call: eager vs jit vs hand-written NumPy on the LSTM and TreeRNN steps.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import janus_like as jl
from janus_like.executor import interpret
from janus_like.profiler import Profile
from janus_like.profiler.instrument import Hooks, profiled_callable

from .frameworks import blas_threads
from .models import lstm_lm, tree_rnn


def _median_time(fn, repeats=15, number=1):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return statistics.median(times)


def warmup_and_generation(module, repeats):
    state = module.make(0)
    eager = module.janus_step(state)
    train_step = eager.fn
    batches = eager.batches
    args = batches[0]
    eager_s = _median_time(lambda: train_step(*args), repeats)
    hooks = Hooks(Profile())
    t = time.perf_counter()
    profiled = profiled_callable(train_step, hooks)
    profiled(*args)
    first_profiled_s = time.perf_counter() - t
    profiled_s = _median_time(lambda: profiled_callable(train_step, hooks)(*args), repeats)
    jf = jl.jit(train_step)
    for i in range(jf.warmup):
        jf(*batches[i % len(batches)])
    t = time.perf_counter()
    jf(*batches[jf.warmup % len(batches)])  # generates the first graph and runs it
    first_graph_s = time.perf_counter() - t
    graphs = jf.graphs()
    return {
        "eager_ms": eager_s * 1e3,
        "profiled_ms": profiled_s * 1e3,
        "warmup_ratio": profiled_s / eager_s,
        "instrument_compile_ms": (first_profiled_s - profiled_s) * 1e3,
        "generate_ms": jf.stats()["generate_s"] * 1e3,
        "first_graph_call_ms": first_graph_s * 1e3,
        "nodes": graphs[0].graph.size() if graphs else 0,
        "assumptions": len(graphs[0].assumptions) if graphs else 0,
    }


def executor_overhead(n=400, repeats=15):
    x = np.ones(1)
    src = "def chain(x):\n" + "".join("    x = x + 1.0\n" for _ in range(n)) + "    return x\n"
    ns: dict = {}
    path = "/tmp/janus_like_chain_bench.py"
    with open(path, "w") as fh:
        fh.write(src)
    exec(compile(src, path, "exec"), ns)
    chain = ns["chain"]
    jf = jl.jit(chain)
    for _ in range(jf.warmup + 2):
        jf(x)
    g = jf.graphs()[0]
    slots = g.guard((x,))
    numpy_s = _median_time(lambda: chain(x), repeats, 20)
    plan_s = _median_time(lambda: g.plan(slots), repeats, 20)
    interp_s = _median_time(lambda: interpret(g.graph, slots), repeats, 20)
    guard_s = _median_time(lambda: g.guard((x,)), repeats, 200)
    call_s = _median_time(lambda: jf(x), repeats, 20)
    nodes = g.graph.size()
    return {
        "nodes": nodes,
        "plan_overhead_us_per_node": (plan_s - numpy_s) / n * 1e6,
        "interpreter_overhead_us_per_node": (interp_s - numpy_s) / n * 1e6,
        "guard_us": guard_s * 1e6,
        "call_overhead_us": (call_s - plan_s) * 1e6,
    }


def steady_state(module, steps=30, repeats=7):
    state = module.make(0)
    eager = module.janus_step(state)
    jit = module.janus_step(module.make(0), jit=jl.jit)
    numpy_state = module.make(0)
    for _ in range(6):
        jit()
    out = {}
    for name, fn in (("eager", eager), ("jit", jit), ("numpy", lambda: module.numpy_step(numpy_state))):
        out[name + "_ms"] = _median_time(fn, repeats, steps) * 1e3
    out["jit_speedup_over_eager"] = out["eager_ms"] / out["jit_ms"]
    out["jit_over_numpy"] = out["jit_ms"] / out["numpy_ms"]
    stats = jit.stats() or {}
    out["graph_share"] = stats.get("graph_calls", 0) / max(stats.get("calls", 1), 1)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args(argv)
    results = {}
    old = blas_threads()
    blas_threads(1)
    try:
        for name, module in (("lstm_lm", lstm_lm), ("tree_rnn", tree_rnn)):
            results[name] = {**warmup_and_generation(module, args.repeats), **steady_state(module)}
            print(name, json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in results[name].items()}))
        results["executor"] = executor_overhead()
        print("executor", json.dumps({k: round(v, 3) if isinstance(v, float) else v
                                      for k, v in results["executor"].items()}))
    finally:
        if old is not None:
            blas_threads(old)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return results


if __name__ == "__main__":
    main()
