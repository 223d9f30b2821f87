"""Steps too small for a graph to pay off: eager, jit keeping every graph, jit choosing by measurement.

    JANUS_LIKE_NATIVE=off PYTHONPATH=. taskset -c 1 python3 -m benchmarks.tiny_steps

Each step runs 50 argument sets x 40 rounds per block after warming up (so the measured choice
has made its decision); the three systems alternate, three blocks each; µs a call, best block.
"""
from __future__ import annotations

import math
import time

import numpy as np

import janus_like as jl

_rng = np.random.default_rng(0)
_W = _rng.standard_normal((4, 3)) * 0.1


def policy(obs, w):
    logits = obs @ w
    p = np.exp(logits - logits.max())
    p /= p.sum()
    return np.random.choice(3, p=p)


def isclose(v, best):
    return math.isclose(v, best, rel_tol=1e-3), math.floor(v * 10)


def affine(x, w, b):
    return np.tanh(x @ w + b)


def scalar_ema(st, v):
    st["ema"] = 0.9 * st["ema"] + 0.1 * v
    return st["ema"]


CASES = {
    "policy": (policy, lambda i: (_rng.standard_normal(4), _W)),
    "isclose": (isclose, lambda i: (1.0 + i * 1e-4, 1.0)),
    "affine": (affine, lambda i: (_rng.standard_normal((1, 8)), _rng.standard_normal((8, 8)), np.zeros(8))),
    "scalar_ema": (scalar_ema, lambda i: ({"ema": 0.0}, float(i))),
}


def main():
    print(f"{'step':12s} {'eager':>8s} {'graph':>8s} {'measured':>9s}  chosen (µs a call)")
    for name, (fn, make) in CASES.items():
        args = [make(i) for i in range(50)]
        systems = {"eager": fn, "graph": jl.jit(fn, choose="graph"), "measured": jl.jit(fn, choose="measured")}
        for f in systems.values():
            for _ in range(3):
                for a in args:
                    f(*a)
        best = dict.fromkeys(systems, float("inf"))
        for _ in range(3):
            for label, f in systems.items():
                start = time.perf_counter()
                for _ in range(40):
                    for a in args:
                        f(*a)
                best[label] = min(best[label], (time.perf_counter() - start) / (40 * len(args)) * 1e6)
        jf = systems["measured"]
        chosen = "eager" if jf.stats()["eager_by_choice"] else "graph"
        print(f"{name:12s} {best['eager']:8.2f} {best['graph']:8.2f} {best['measured']:9.2f}  {chosen}")


if __name__ == "__main__":
    main()
