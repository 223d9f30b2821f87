"""Plain NumPy with every kind of state a tutorial script touches: module-level arrays rebound
through `global` and updated in place, a function that mutates its argument arrays, dicts of
arrays, the NumPy global RNG, and a helper module from this directory."""
import sys

import numpy as np

from helper_mod import normalize_rows

np.random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
W = np.random.randn(6, 4)
running = np.zeros(4)
history = {"loss": np.zeros(1)}
step_count = 0


def noisy_step(x):
    """Reads W, rebinds a global, updates module arrays in place, draws from the global RNG."""
    global step_count, W
    h = np.tanh(x @ W)
    noise = np.random.randn(*h.shape) * 0.01
    running[:] = 0.9 * running + 0.1 * h.mean(axis=0)
    W = W - 0.01 * (x.T @ (h + noise))
    history["loss"] += np.sum(h * h)
    step_count = step_count + 1
    return h


def scale_in_place(a, factor):
    a *= factor
    np.clip(a, -1.0, 1.0, out=a)


def per_step(xs):
    states = {}
    states[-1] = np.zeros((1, 4))
    for t in range(len(xs)):
        states[t] = np.tanh(xs[t] @ W[:4] + states[t - 1])
    return states[len(xs) - 1]


for i in range(12):
    x = normalize_rows(np.random.randn(5, 6))
    h = noisy_step(x)
    scale_in_place(h, 1.5)
    last = per_step([h[j:j + 1] for j in range(3)])
    print(f"{i:2d} {h.sum():.12f} {running.sum():.12f} {last.sum():.12f}")
print("steps", step_count, "loss %.12f" % history["loss"][0], "W %.12f" % W.sum())
