"""Character-level vanilla RNN (min-char-rnn style): vocabulary 60, hidden 100, 25 steps, batch 1.

    h_t = tanh(W_xh[x_t] + h_{t-1} @ W_hh + b_h)        (one-hot input = a row of W_xh)
    loss = mean over t of cross-entropy(h_t @ W_hy + b_y, x_{t+1})

The text is a deterministic synthetic stream from a random Markov chain over the vocabulary, cut
into consecutive 26-character windows. As in min-char-rnn the hidden state is carried from one
window to the next (truncated backpropagation through time): it lives in a non-trainable
Variable that the step reads at the start and assigns at the end. Gradients are clipped to
[-5, 5], then SGD with lr 0.1.

The janus_like step is a Python loop over time with a per-step loss, exactly as one writes it
imperatively; the hand-written NumPy step runs the recurrence in a loop but does the output
projection and softmax for all steps at once, and backpropagates through time by hand.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F

from ._common import janus_stepper, next_batch, softmax_cross_entropy

FULL = dict(vocab=60, hidden=100, steps=25, n_batches=16)
QUICK = dict(vocab=12, hidden=8, steps=5, n_batches=4)
LR = 0.1
CLIP = 5.0
NAMES = ("w_xh", "w_hh", "b_h", "w_hy", "b_y")


def available():
    return None


def synthetic_text(rng, vocab, length):
    """Ids from a sparse random Markov chain: each character has a few likely successors, so
    the text has structure for the RNN to learn."""
    logits = rng.standard_normal((vocab, vocab)) * 3.0
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    ids = np.empty(length, np.int64)
    ids[0] = rng.integers(0, vocab)
    u = rng.random(length)
    cdf = np.cumsum(probs, axis=1)
    for t in range(1, length):
        ids[t] = min(int(np.searchsorted(cdf[ids[t - 1]], u[t])), vocab - 1)
    return ids


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    v, h = cfg["vocab"], cfg["hidden"]
    params = {
        "w_xh": (rng.standard_normal((v, h)) * 0.01).astype(np.float32),
        "w_hh": (rng.standard_normal((h, h)) * 0.01).astype(np.float32),
        "b_h": np.zeros(h, np.float32),
        "w_hy": (rng.standard_normal((h, v)) * 0.01).astype(np.float32),
        "b_y": np.zeros(v, np.float32),
    }
    t = cfg["steps"]
    text = synthetic_text(rng, v, t * cfg["n_batches"] + 1)
    # consecutive windows of steps + 1 characters, overlapping by one (input t, target t + 1)
    batches = [(text[i * t:(i + 1) * t + 1],) for i in range(cfg["n_batches"])]
    return {"params": params, "batches": batches, "lr": LR, "step": 0, "config": cfg,
            "h": np.zeros(h, np.float32)}


def numpy_step(state):
    p, lr = state["params"], state["lr"]
    (ids,) = next_batch(state)
    inputs, targets = ids[:-1], ids[1:]
    steps = len(inputs)
    hs = np.empty((steps + 1, p["b_h"].shape[0]), np.float32)
    hs[0] = state["h"]
    xz = p["w_xh"][inputs] + p["b_h"]
    for t in range(steps):
        hs[t + 1] = np.tanh(xz[t] + hs[t] @ p["w_hh"])
    logits = hs[1:] @ p["w_hy"] + p["b_y"]
    loss, dlogits = softmax_cross_entropy(logits, targets)  # mean over steps, as in janus_step

    grads = {"w_hy": hs[1:].T @ dlogits, "b_y": dlogits.sum(0)}
    dhs = dlogits @ p["w_hy"].T
    dz = np.empty_like(dhs)
    dh_next = np.zeros_like(hs[0])
    for t in reversed(range(steps)):
        h = hs[t + 1]
        dz[t] = (dhs[t] + dh_next) * (1 - h * h)
        dh_next = p["w_hh"] @ dz[t]
    grads["w_hh"] = hs[:-1].T @ dz
    grads["b_h"] = dz.sum(0)
    dwxh = np.zeros_like(p["w_xh"])
    np.add.at(dwxh, inputs, dz)
    grads["w_xh"] = dwxh
    for name, g in grads.items():
        p[name] -= lr * np.clip(g, -CLIP, CLIP)
    state["h"] = hs[-1].copy()
    return float(loss)


def janus_step(state, jit=None):
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    w_xh, w_hh, b_h, w_hy, b_y = (v[name] for name in NAMES)
    carried = jl.Variable(state["h"].copy(), name="h", trainable=False)
    lr = state["lr"]

    def train_step(ids):
        steps = len(ids) - 1
        with jl.GradientTape() as tape:
            h = carried.value()
            loss = 0.0
            for t in range(steps):
                h = np.tanh(w_xh[ids[t]] + h @ w_hh + b_h)
                logits = F.reshape(h @ w_hy + b_y, (1, -1))
                loss = loss + F.cross_entropy(logits, ids[t + 1:t + 2])
            loss = loss / steps
        params = [w_xh, w_hh, b_h, w_hy, b_y]
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads):
            p.assign_sub(lr * F.clip(g, -CLIP, CLIP))
        carried.assign(h)
        return loss

    return janus_stepper(train_step, state["batches"], v, jit)
