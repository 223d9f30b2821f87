"""Gradient descent until the loss is below a tolerance, written inside one jitted function.

The number of steps depends on the data and the tolerance, so the `while` is a loop node: the
weights (a Variable assigned in the body), the step counter (a Python int before the loop) and
the loss are carried from one iteration to the next (`janus_like/graphgen/loops.py`). Eager
and jit fit the same problems from the same start; the script checks that they agree and
prints both times:

    python examples/fit_until_converged.py [problems]
"""
import sys
import time

import numpy as np

import janus_like as jl
from janus_like import F


def make_fit(dim):
    w = jl.Variable(np.zeros(dim), name="w")

    def fit(X, y, tol):
        k = 0
        loss = F.mean((X @ w - y) ** 2)
        while loss > tol:
            with jl.GradientTape() as tape:
                loss = F.mean((X @ w - y) ** 2)
            w.assign_sub(0.1 * tape.gradient(loss, w))
            k += 1
        return loss, k

    return fit, w


def main(problems=40, dim=8, rows=64, seed=0, out=print):
    rng = np.random.default_rng(seed)
    data = [(X, X @ rng.standard_normal(dim), float(rng.choice([1e-2, 1e-3, 1e-4, 1e-5])))
            for X in (rng.standard_normal((rows, dim)) for _ in range(problems))]
    eager_fit, eager_w = make_fit(dim)
    fit, jit_w = make_fit(dim)
    fit = jl.jit(fit)
    times = {"eager": 0.0, "jit": 0.0}
    steps = 0
    for X, y, tol in data:
        for name, f, w in (("eager", eager_fit, eager_w), ("jit", fit, jit_w)):
            w.assign(np.zeros(dim))
            start = time.perf_counter()
            loss, k = f(X, y, tol)
            times[name] += time.perf_counter() - start
            if name == "eager":
                expect = (float(loss), k, w.numpy().copy())
            elif k != expect[1] or not np.allclose([float(loss), *w.numpy()], [expect[0], *expect[2]], rtol=1e-9):
                raise AssertionError(f"jit disagrees with eager: {(float(loss), k)} vs {expect[:2]}")
        steps += k
    stats = fit.stats()
    out(f"{problems} problems, {steps} gradient steps in all; jit and eager agree on every loss, "
        f"step count and weight (to 1e-9)")
    out(f"eager {times['eager'] * 1e3:.1f} ms, jit {times['jit'] * 1e3:.1f} ms "
        f"({times['eager'] / times['jit']:.1f}x; the jit time includes 3 profiled calls and generation)")
    out(f"jit calls: {stats['graph_calls']} as a graph, {stats['warmup_calls']} warm-up, "
        f"{stats['eager_calls']} eager, {stats['fallbacks']} fallbacks")
    return stats


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
