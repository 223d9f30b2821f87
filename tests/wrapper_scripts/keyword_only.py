"""A step with keyword-only parameters, called with and without them."""
import numpy as np


def step(w, g, lr=0.1, *, mom=0.9, clip=None):
    w -= lr * mom * g
    if clip is not None:
        np.clip(w, -clip, clip, out=w)
    return float(w.sum())


w = np.ones(3)
for k in range(12):
    print(step(w, np.full(3, 0.5), lr=0.01 * k, mom=0.5))
for k in range(8):
    print(step(w, np.full(3, 0.5), 0.01 * k))
print(step(w, np.full(3, 0.5), clip=0.2))
