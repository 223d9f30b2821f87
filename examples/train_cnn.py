"""Train a tiny CNN (Conv2D, MaxPool2D, Linear) to tell three kinds of stripes apart.

Each 8x8 grayscale image holds one bar, horizontal, vertical or diagonal (the class), at a random
position, plus Gaussian noise. Two conv/pool stages and a linear head learn it in a few hundred
steps. All randomness comes from seeded Generators, so every run prints the same numbers.

    python examples/train_cnn.py
"""
from __future__ import annotations

import numpy as np

from janus_like import F, GradientTape, nn, optim

SIZE = 8


def make_stripes(n: int, rng: np.random.Generator):
    """(x float32 (n, 1, 8, 8), y int64 (n,)): class 0 horizontal, 1 vertical, 2 diagonal bar."""
    y = rng.integers(0, 3, n)
    x = 0.5 * rng.standard_normal((n, 1, SIZE, SIZE))
    offsets = rng.integers(0, SIZE, n)
    for i in range(n):
        k = offsets[i]
        if y[i] == 0:
            x[i, 0, k, :] += 1.0
        elif y[i] == 1:
            x[i, 0, :, k] += 1.0
        else:
            x[i, 0] += np.roll(np.eye(SIZE), k, axis=1)
    return x.astype(np.float32), y.astype(np.int64)


def make_model(rng):
    return nn.Sequential(
        nn.Conv2D(1, 8, kernel_size=3, padding=1, rng=rng),   # (N, 8, 8, 8)
        nn.ReLU(),
        nn.MaxPool2D(2),                                       # (N, 8, 4, 4)
        nn.Conv2D(8, 16, kernel_size=3, padding=1, rng=rng),  # (N, 16, 4, 4)
        nn.ReLU(),
        nn.MaxPool2D(2),                                       # (N, 16, 2, 2)
        nn.Flatten(),
        nn.Linear(16 * 2 * 2, 3, rng=rng),
    )


def train_step(model, opt, x, y):
    """One optimizer step on a batch; returns the loss before the update."""
    with GradientTape() as tape:
        loss = F.cross_entropy(model(x), y)
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    opt.apply_gradients(zip(grads, variables))
    return loss


def accuracy(model, x, y) -> float:
    predictions = F.argmax(model(x), axis=-1).numpy()
    return float(np.mean(predictions == y))


def main(steps: int = 200, batch_size: int = 32, log_every: int = 20, seed: int = 0, verbose: bool = True):
    """Train and return (list of per-step losses, final test accuracy)."""
    if not hasattr(F, "conv2d"):
        raise SystemExit("train_cnn.py needs janus_like.ops.conv (F.conv2d, F.max_pool2d), not found")
    rng = np.random.default_rng(seed)
    x_train, y_train = make_stripes(600, rng)
    x_test, y_test = make_stripes(200, rng)
    model = make_model(rng)
    opt = optim.SGD(lr=0.05, momentum=0.9)

    losses = []
    for step in range(1, steps + 1):
        batch = rng.integers(0, len(y_train), batch_size)
        loss = float(train_step(model, opt, x_train[batch], y_train[batch]))
        losses.append(loss)
        if verbose and (step % log_every == 0 or step == 1):
            print(f"step {step:4d}  loss {loss:.4f}")
    test_accuracy = accuracy(model, x_test, y_test)
    if verbose:
        print(f"test accuracy {test_accuracy:.3f}")
    return losses, test_accuracy


if __name__ == "__main__":
    main()
