"""Hot functions whose assumptions break half way: a batch shape change, a branch that flips,
a Python scalar that changes, and a list that gets longer."""
import numpy as np

np.random.seed(3)
w = np.random.randn(8, 8) * 0.1
threshold = 10.0


def layer(x):
    y = np.tanh(x @ w)
    if y.sum() > threshold:  # flips once the global threshold drops
        y = y * 0.5
    else:
        y = y + 0.1
    return y


def accumulate(parts):
    total = np.zeros(8)
    for p in parts:
        total += p.sum(axis=0)
    return total


for i in range(24):
    batch = 4 if i < 12 else 7  # shape change half way
    if i == 16:
        threshold = -10.0  # branch flip
    x = np.random.randn(batch, 8)
    y = layer(x)
    parts = [y[:2]] * (2 if i < 18 else 3)  # trip count change
    t = accumulate(parts)
    print(f"{i:2d} {batch} {y.sum():.12f} {t.sum():.12f}")
