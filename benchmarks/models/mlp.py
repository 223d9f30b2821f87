"""MLP classifier: batch 64, 784-256-256-10, ReLU, softmax cross-entropy, SGD (lr 0.05).

Large matmuls and few ops per step: the regime where eager overhead hardly matters, so every
system should be close to hand-written NumPy.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F

from ._common import he_normal, janus_stepper, next_batch, sgd_, softmax_cross_entropy

FULL = dict(batch=64, sizes=(784, 256, 256, 10), n_batches=4)
QUICK = dict(batch=8, sizes=(32, 16, 16, 10), n_batches=2)
LR = 0.05
NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")


def available():
    return None


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    sizes = cfg["sizes"]
    params = {}
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        params[f"w{i}"] = he_normal(rng, (fan_in, fan_out), fan_in)
        params[f"b{i}"] = np.zeros(fan_out, np.float32)
    batches = [(rng.standard_normal((cfg["batch"], sizes[0])).astype(np.float32),
                rng.integers(0, sizes[-1], cfg["batch"]))
               for _ in range(cfg["n_batches"])]
    return {"params": params, "batches": batches, "lr": LR, "step": 0, "config": cfg}


def numpy_step(state):
    p, lr = state["params"], state["lr"]
    x, y = next_batch(state)
    a1 = x @ p["w1"] + p["b1"]
    h1 = np.maximum(a1, 0)
    a2 = h1 @ p["w2"] + p["b2"]
    h2 = np.maximum(a2, 0)
    logits = h2 @ p["w3"] + p["b3"]
    loss, dlogits = softmax_cross_entropy(logits, y)

    dh2 = dlogits @ p["w3"].T
    dh2 *= a2 > 0
    dh1 = dh2 @ p["w2"].T
    dh1 *= a1 > 0
    grads = {"w3": h2.T @ dlogits, "b3": dlogits.sum(0),
             "w2": h1.T @ dh2, "b2": dh2.sum(0),
             "w1": x.T @ dh1, "b1": dh1.sum(0)}
    sgd_(p, grads, lr)
    return float(loss)


def janus_step(state, jit=None):
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    w1, b1, w2, b2, w3, b3 = (v[name] for name in NAMES)
    lr = state["lr"]

    def train_step(x, y):
        with jl.GradientTape() as tape:
            h = F.relu(x @ w1 + b1)
            h = F.relu(h @ w2 + b2)
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
        h = torch.relu(x @ t["w1"] + t["b1"])
        h = torch.relu(h @ t["w2"] + t["b2"])
        return torch.nn.functional.cross_entropy(h @ t["w3"] + t["b3"], y)

    return TorchStepper(loss_fn, t, state["batches"], state["lr"])


def jax_step(state):
    import jax
    import jax.numpy as jnp

    from ._jax import JaxStepper

    def loss_fn(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        h = jax.nn.relu(h @ p["w2"] + p["b2"])
        logp = jax.nn.log_softmax(h @ p["w3"] + p["b3"])
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    return JaxStepper(loss_fn, state["params"], state["batches"], state["lr"])
