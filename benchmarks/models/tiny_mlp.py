"""Tiny MLP: batch 1, 32-32-32-2, tanh, softmax cross-entropy, SGD (lr 0.1).

Every array is tiny, so a step is almost nothing but per-op overhead: the regime where eager
execution loses most to hand-written NumPy and where a JIT has the most to win.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F

from ._common import glorot_uniform, janus_stepper, next_batch, sgd_, softmax_cross_entropy

FULL = dict(batch=1, sizes=(32, 32, 32, 2), n_batches=8)
QUICK = FULL  # already tiny
LR = 0.1
NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")


def available():
    return None


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    sizes = cfg["sizes"]
    params = {}
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        params[f"w{i}"] = glorot_uniform(rng, (fan_in, fan_out), fan_in, fan_out)
        params[f"b{i}"] = np.zeros(fan_out, np.float32)
    batches = [(rng.standard_normal((cfg["batch"], sizes[0])).astype(np.float32),
                rng.integers(0, sizes[-1], cfg["batch"]))
               for _ in range(cfg["n_batches"])]
    return {"params": params, "batches": batches, "lr": LR, "step": 0, "config": cfg}


def numpy_step(state):
    p, lr = state["params"], state["lr"]
    x, y = next_batch(state)
    h1 = np.tanh(x @ p["w1"] + p["b1"])
    h2 = np.tanh(h1 @ p["w2"] + p["b2"])
    logits = h2 @ p["w3"] + p["b3"]
    loss, dlogits = softmax_cross_entropy(logits, y)

    da2 = (dlogits @ p["w3"].T) * (1 - h2 * h2)
    da1 = (da2 @ p["w2"].T) * (1 - h1 * h1)
    grads = {"w3": h2.T @ dlogits, "b3": dlogits.sum(0),
             "w2": h1.T @ da2, "b2": da2.sum(0),
             "w1": x.T @ da1, "b1": da1.sum(0)}
    sgd_(p, grads, lr)
    return float(loss)


def janus_step(state, jit=None):
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    w1, b1, w2, b2, w3, b3 = (v[name] for name in NAMES)
    lr = state["lr"]

    def train_step(x, y):
        with jl.GradientTape() as tape:
            h = np.tanh(x @ w1 + b1)
            h = np.tanh(h @ w2 + b2)
            logits = h @ w3 + b3
            loss = F.cross_entropy(logits, y)
        params = [w1, b1, w2, b2, w3, b3]
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads):
            p.assign_sub(lr * g)
        return loss

    return janus_stepper(train_step, state["batches"], v, jit)


def torch_step(state):
    import torch

    from ._torch import TorchStepper

    t = {k: torch.tensor(a, requires_grad=True) for k, a in state["params"].items()}

    def loss_fn(x, y):
        h = torch.tanh(x @ t["w1"] + t["b1"])
        h = torch.tanh(h @ t["w2"] + t["b2"])
        return torch.nn.functional.cross_entropy(h @ t["w3"] + t["b3"], y)

    return TorchStepper(loss_fn, t, state["batches"], state["lr"])


def jax_step(state):
    import jax
    import jax.numpy as jnp

    from ._jax import JaxStepper

    def loss_fn(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        h = jnp.tanh(h @ p["w2"] + p["b2"])
        logp = jax.nn.log_softmax(h @ p["w3"] + p["b3"])
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    return JaxStepper(loss_fn, state["params"], state["batches"], state["lr"])
