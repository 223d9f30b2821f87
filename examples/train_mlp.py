"""Train a small MLP on synthetic 3-class data with GradientTape and Adam.

The data are three noisy concentric rings in the plane (the class is the ring), so a linear
model cannot separate them and the hidden layers have to earn their keep. Everything random
comes from seeded Generators, so every run prints the same numbers.

    python examples/train_mlp.py
"""
from __future__ import annotations

import numpy as np

from janus_like import F, GradientTape, nn, optim


def make_rings(n_per_class: int, rng: np.random.Generator):
    """(x float32 (3n, 2), y int64 (3n,)): ring k has radius k + 1 plus Gaussian noise."""
    xs, ys = [], []
    for label in range(3):
        angle = rng.uniform(0.0, 2.0 * np.pi, n_per_class)
        radius = label + 1.0 + 0.15 * rng.standard_normal(n_per_class)
        xs.append(np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1))
        ys.append(np.full(n_per_class, label))
    x = np.concatenate(xs).astype(np.float32)
    y = np.concatenate(ys).astype(np.int64)
    order = rng.permutation(len(y))
    return x[order], y[order]


class MLP(nn.Module):
    def __init__(self, sizes, rng):
        self.layers = [nn.Linear(n_in, n_out, rng=rng) for n_in, n_out in zip(sizes[:-1], sizes[1:])]

    def forward(self, x):
        # ReLU between layers, raw logits out (cross_entropy applies the softmax)
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)


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


def main(steps: int = 200, batch_size: int = 64, log_every: int = 20, seed: int = 0, verbose: bool = True):
    """Train and return (list of per-step losses, final test accuracy)."""
    rng = np.random.default_rng(seed)
    x_train, y_train = make_rings(300, rng)
    x_test, y_test = make_rings(100, rng)
    model = MLP([2, 32, 32, 3], rng)
    opt = optim.Adam(lr=0.01)

    losses = []
    for step in range(1, steps + 1):
        batch = rng.integers(0, len(y_train), batch_size)
        loss = float(train_step(model, opt, x_train[batch], y_train[batch]))
        losses.append(loss)
        if verbose and (step % log_every == 0 or step == 1):
            print(f"step {step:4d}  loss {loss:.4f}")
    test_accuracy = accuracy(model, x_test, y_test)
    if verbose:
        print(f"train accuracy {accuracy(model, x_train, y_train):.3f}  test accuracy {test_accuracy:.3f}")
    return losses, test_accuracy


if __name__ == "__main__":
    main()
