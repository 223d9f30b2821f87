"""A two-layer MLP classifier on synthetic spiral data, in plain NumPy (no janus_like).

The tutorial way: parameters in a module-level dict, a forward pass, a hand-written backward
pass, and SGD with momentum updating the arrays in place. Run it both ways and compare:

    python examples/mlp_numpy.py
    janus-like run --report out/ examples/mlp_numpy.py
"""
import sys

import numpy as np

np.random.seed(0)
N, D, K, H = 100, 2, 3, 64  # points per class, input dim, classes, hidden units
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 600
batch_size = 64
lr, momentum, reg = 0.5, 0.9, 1e-3


def make_spirals(n, k):
    x = np.zeros((n * k, 2))
    y = np.zeros(n * k, dtype=np.int64)
    for j in range(k):
        ix = range(n * j, n * (j + 1))
        r = np.linspace(0.0, 1.0, n)
        t = np.linspace(j * 4, (j + 1) * 4, n) + np.random.randn(n) * 0.2
        x[ix] = np.c_[r * np.sin(t), r * np.cos(t)]
        y[ix] = j
    return x, y


X, y = make_spirals(N, K)
params = {
    "W1": 0.1 * np.random.randn(D, H), "b1": np.zeros((1, H)),
    "W2": 0.1 * np.random.randn(H, K), "b2": np.zeros((1, K)),
}
velocity = {k: np.zeros_like(v) for k, v in params.items()}


def forward(xb):
    hidden = np.maximum(0, xb @ params["W1"] + params["b1"])  # ReLU
    scores = hidden @ params["W2"] + params["b2"]
    return hidden, scores


def train_step(xb, yb):
    """One SGD-with-momentum step on a batch; returns the loss before the update."""
    n = xb.shape[0]
    hidden, scores = forward(xb)
    scores = scores - np.max(scores, axis=1, keepdims=True)
    exp = np.exp(scores)
    probs = exp / np.sum(exp, axis=1, keepdims=True)
    data_loss = -np.sum(np.log(probs[np.arange(n), yb])) / n
    reg_loss = 0.5 * reg * (np.sum(params["W1"] * params["W1"]) + np.sum(params["W2"] * params["W2"]))
    # backward
    dscores = probs.copy()
    dscores[np.arange(n), yb] -= 1
    dscores /= n
    grads = {"W2": hidden.T @ dscores + reg * params["W2"], "b2": np.sum(dscores, axis=0, keepdims=True)}
    dhidden = dscores @ params["W2"].T
    dhidden[hidden <= 0] = 0
    grads["W1"] = xb.T @ dhidden + reg * params["W1"]
    grads["b1"] = np.sum(dhidden, axis=0, keepdims=True)
    for name in params:
        velocity[name] *= momentum
        velocity[name] -= lr * grads[name]
        params[name] += velocity[name]
    return data_loss + reg_loss


def accuracy(xs, ys):
    _, scores = forward(xs)
    return np.mean(np.argmax(scores, axis=1) == ys)


for step in range(steps):
    batch = np.random.randint(0, len(y), batch_size)
    loss = train_step(X[batch], y[batch])
    if step % 100 == 0:
        print(f"step {step:4d}  loss {loss:.6f}")
print(f"training accuracy: {accuracy(X, y):.3f}")
print("checksum: %.10f" % sum(np.abs(v).sum() for v in params.values()))
