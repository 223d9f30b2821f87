"""LSTM language model: vocab 1000, embedding 64, hidden 128, batch 16, 20 time steps.

The janus_like step is a Python loop over time calling F.lstm_cell (gates ordered i, f, g, o)
and a per-step softmax cross-entropy over the vocabulary, averaged over steps. The hand-written
NumPy step does what an expert would: one embedding gather and one input projection for all
steps, the recurrence in a loop, one output projection and softmax for all steps, and
backpropagation through time by hand. SGD, lr 0.1.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F, optim

from ._common import glorot_uniform, janus_stepper, next_batch, sgd_, sigmoid, softmax_cross_entropy

FULL = dict(vocab=1000, embed=64, hidden=128, batch=16, steps=20, n_batches=4)
QUICK = dict(vocab=50, embed=8, hidden=16, batch=4, steps=5, n_batches=2)
LR = 0.1
NAMES = ("emb", "w_x", "w_h", "b", "w_out", "b_out")


def available():
    return None


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    v, e, h = cfg["vocab"], cfg["embed"], cfg["hidden"]
    params = {
        "emb": (rng.standard_normal((v, e)) * 0.1).astype(np.float32),
        "w_x": glorot_uniform(rng, (e, 4 * h), e, 4 * h),
        "w_h": glorot_uniform(rng, (h, 4 * h), h, 4 * h),
        "b": np.zeros(4 * h, np.float32),
        "w_out": glorot_uniform(rng, (h, v), h, v),
        "b_out": np.zeros(v, np.float32),
    }
    # token ids (batch, steps + 1): inputs are [:, :-1], next-token targets are [:, 1:]
    batches = [(rng.integers(0, v, (cfg["batch"], cfg["steps"] + 1)),) for _ in range(cfg["n_batches"])]
    return {"params": params, "batches": batches, "lr": LR, "step": 0, "config": cfg}


def numpy_step(state):
    p, lr = state["params"], state["lr"]
    (ids,) = next_batch(state)
    inputs, targets = ids[:, :-1], ids[:, 1:]
    batch, steps = inputs.shape
    hidden = p["w_h"].shape[0]

    # forward: input projections for all steps at once, then the recurrence
    x = p["emb"][inputs]  # (B, T, E)
    xz = x @ p["w_x"] + p["b"]  # (B, T, 4H)
    h = np.zeros((batch, hidden), np.float32)
    c = np.zeros((batch, hidden), np.float32)
    hs = np.empty((batch, steps, hidden), np.float32)
    cache = []
    for t in range(steps):
        z = xz[:, t] + h @ p["w_h"]
        i, f, o = sigmoid(z[:, :hidden]), sigmoid(z[:, hidden:2 * hidden]), sigmoid(z[:, 3 * hidden:])
        g = np.tanh(z[:, 2 * hidden:3 * hidden])
        c_prev, h_prev = c, h
        c = f * c_prev + i * g
        tc = np.tanh(c)
        h = o * tc
        hs[:, t] = h
        cache.append((i, f, g, o, c_prev, h_prev, tc))
    logits = hs.reshape(-1, hidden) @ p["w_out"] + p["b_out"]
    # mean over all (b, t) equals the mean over steps of per-step batch means
    loss, dlogits = softmax_cross_entropy(logits, targets.reshape(-1))

    # backward through time
    grads = {"w_out": hs.reshape(-1, hidden).T @ dlogits, "b_out": dlogits.sum(0)}
    dhs = (dlogits @ p["w_out"].T).reshape(batch, steps, hidden)
    dz_all = np.empty((batch, steps, 4 * hidden), np.float32)
    h_prevs = np.empty((batch, steps, hidden), np.float32)
    dh_next = np.zeros((batch, hidden), np.float32)
    dc_next = np.zeros((batch, hidden), np.float32)
    for t in reversed(range(steps)):
        i, f, g, o, c_prev, h_prev, tc = cache[t]
        dh = dhs[:, t] + dh_next
        dc = dh * o * (1 - tc * tc) + dc_next
        dz = dz_all[:, t]
        dz[:, :hidden] = dc * g * i * (1 - i)
        dz[:, hidden:2 * hidden] = dc * c_prev * f * (1 - f)
        dz[:, 2 * hidden:3 * hidden] = dc * i * (1 - g * g)
        dz[:, 3 * hidden:] = dh * tc * o * (1 - o)
        dh_next = dz @ p["w_h"].T
        dc_next = dc * f
        h_prevs[:, t] = h_prev
    dz2 = dz_all.reshape(-1, 4 * hidden)
    grads["w_h"] = h_prevs.reshape(-1, hidden).T @ dz2
    grads["w_x"] = x.reshape(-1, x.shape[-1]).T @ dz2
    grads["b"] = dz2.sum(0)
    demb = np.zeros_like(p["emb"])
    np.add.at(demb, inputs.reshape(-1), dz2 @ p["w_x"].T)
    grads["emb"] = demb
    sgd_(p, grads, lr)
    return float(loss)


def janus_step(state, jit=None):
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    emb, w_x, w_h, b, w_out, b_out = (v[name] for name in NAMES)
    lr = state["lr"]
    opt = optim.SGD(lr)  # plain SGD: var -= lr * grad

    def train_step(ids):
        batch, steps = ids.shape[0], ids.shape[1] - 1
        hidden = w_h.shape[0]
        with jl.GradientTape() as tape:
            h = np.zeros((batch, hidden), np.float32)
            c = np.zeros((batch, hidden), np.float32)
            loss = 0.0
            for t in range(steps):
                x = F.embedding(emb, ids[:, t])
                h, c = F.lstm_cell(x, h, c, w_x, w_h, b)
                logits = h @ w_out + b_out
                loss = loss + F.cross_entropy(logits, ids[:, t + 1])
            loss = loss / steps
        params = [emb, w_x, w_h, b, w_out, b_out]
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return janus_stepper(train_step, state["batches"], v, jit)


def torch_step(state):
    import torch

    from ._torch import TorchStepper

    t = {k: torch.tensor(a, requires_grad=True) for k, a in state["params"].items()}
    hidden = state["params"]["w_h"].shape[0]

    def loss_fn(ids):
        batch, steps = ids.shape[0], ids.shape[1] - 1
        h = torch.zeros(batch, hidden)
        c = torch.zeros(batch, hidden)
        loss = 0.0
        for s in range(steps):
            z = t["emb"][ids[:, s]] @ t["w_x"] + h @ t["w_h"] + t["b"]
            i, f, g, o = z.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            loss = loss + torch.nn.functional.cross_entropy(h @ t["w_out"] + t["b_out"], ids[:, s + 1])
        return loss / steps

    return TorchStepper(loss_fn, t, state["batches"], state["lr"])


def jax_step(state):
    import jax
    import jax.numpy as jnp

    from ._jax import JaxStepper

    hidden = state["params"]["w_h"].shape[0]

    def loss_fn(p, ids):
        batch, steps = ids.shape[0], ids.shape[1] - 1
        h = jnp.zeros((batch, hidden), jnp.float32)
        c = jnp.zeros((batch, hidden), jnp.float32)
        loss = 0.0
        for s in range(steps):  # unrolled at trace time, like the janus_like loop
            z = p["emb"][ids[:, s]] @ p["w_x"] + h @ p["w_h"] + p["b"]
            i, f, g, o = jnp.split(z, 4, axis=1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            logp = jax.nn.log_softmax(h @ p["w_out"] + p["b_out"])
            loss = loss - jnp.mean(jnp.take_along_axis(logp, ids[:, s + 1, None], axis=1))
        return loss / steps

    return JaxStepper(loss_fn, state["params"], state["batches"], state["lr"])
