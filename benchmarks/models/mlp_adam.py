"""The `mlp` classifier (batch 64, 784-256-256-10, ReLU) trained with Adam (lr 1e-3) instead of SGD.

Adam keeps two state arrays per parameter and updates them with about a dozen elementwise ops
a step: for the 200 K-element first weight that is as much memory traffic as a matrix product.
Hand-written NumPy updates the moments in their own arrays (`m *= beta1; m += (1 - beta1) * g`);
the jit's plan writes them into the old arrays when only it sees them (passes/donate.py). The
PyTorch step is torch.optim.Adam (its for-each form); the JAX step applies the same formulas in
one jitted function.
"""
from __future__ import annotations

import numpy as np

from janus_like import optim

from . import _mlp
from . import mlp as _base
from ._common import next_batch, softmax_cross_entropy

FULL, QUICK = _base.FULL, _base.QUICK
LR, BETA1, BETA2, EPS = 1e-3, 0.9, 0.999, 1e-8
available = _base.available


def make(seed, quick=False):
    return _mlp.make(seed, QUICK if quick else FULL, LR, init="he")


def numpy_step(state):
    p = state["params"]
    if "m" not in state:
        state["m"] = {k: np.zeros_like(a) for k, a in p.items()}
        state["v"] = {k: np.zeros_like(a) for k, a in p.items()}
    x, y = next_batch(state)
    a1 = x @ p["w1"] + p["b1"]
    h1 = np.maximum(a1, 0)
    a2 = h1 @ p["w2"] + p["b2"]
    h2 = np.maximum(a2, 0)
    loss, dlogits = softmax_cross_entropy(h2 @ p["w3"] + p["b3"], y)
    da2 = dlogits @ p["w3"].T
    da2 *= a2 > 0
    da1 = da2 @ p["w2"].T
    da1 *= a1 > 0
    grads = {"w3": h2.T @ dlogits, "b3": dlogits.sum(0), "w2": h1.T @ da2, "b2": da2.sum(0),
             "w1": x.T @ da1, "b1": da1.sum(0)}
    t = state["step"]  # next_batch counted this step: t = 1, 2, ...
    c1, c2 = np.float32(1 - BETA1 ** t), np.float32(1 - BETA2 ** t)
    for k, g in grads.items():
        m, v = state["m"][k], state["v"][k]
        m *= BETA1
        m += (1 - BETA1) * g
        v *= BETA2
        g *= g
        g *= 1 - BETA2
        v += g
        d = v / c2
        np.sqrt(d, out=d)
        d += EPS
        u = m / c1
        u /= d
        u *= LR
        p[k] -= u
    return float(loss)


def janus_step(state, jit=None):
    return _mlp.janus_step(state, "relu", jit, opt=optim.Adam(LR, BETA1, BETA2, EPS))


def torch_step(state):
    import torch

    from ._torch import TorchStepper

    t = {k: torch.tensor(a, requires_grad=True) for k, a in state["params"].items()}

    def loss_fn(x, y):
        h = torch.relu(x @ t["w1"] + t["b1"])
        h = torch.relu(h @ t["w2"] + t["b2"])
        return torch.nn.functional.cross_entropy(h @ t["w3"] + t["b3"], y)

    stepper = TorchStepper(loss_fn, t, state["batches"], LR)
    opt = torch.optim.Adam(list(t.values()), lr=LR, betas=(BETA1, BETA2), eps=EPS, foreach=True)

    def call():
        batch = stepper.batches[stepper.calls % len(stepper.batches)]
        stepper.calls += 1
        opt.zero_grad(set_to_none=True)
        loss = stepper.loss_fn(*batch)  # (torch.compile's system replaces it)
        loss.backward()
        opt.step()
        return float(loss.detach())

    return _Adam(stepper, call)


class _Adam:
    """A stepper whose call is `call` and whose parameters (and loss function) are `base`'s."""

    def __init__(self, base, call):
        self.base, self._call, self.system = base, call, base.system

    @property
    def loss_fn(self):
        return self.base.loss_fn

    @loss_fn.setter
    def loss_fn(self, fn):
        self.base.loss_fn = fn

    def __call__(self) -> float:
        return self._call()

    def parameters(self) -> dict:
        return self.base.parameters()

    def stats(self):
        return None


def jax_step(state):
    import jax
    import jax.numpy as jnp

    from ._jax import JaxStepper

    def loss_fn(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        h = jax.nn.relu(h @ p["w2"] + p["b2"])
        logits = h @ p["w3"] + p["b3"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    base = JaxStepper(loss_fn, state["params"], state["batches"], LR)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, base.params)
    moments = {"m": zeros, "v": zeros, "t": 0}

    @jax.jit
    def update(p, m, v, t, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        m = jax.tree_util.tree_map(lambda a, b: BETA1 * a + (1 - BETA1) * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: BETA2 * a + (1 - BETA2) * b * b, v, g)
        c1, c2 = 1 - BETA1 ** t, 1 - BETA2 ** t
        p = jax.tree_util.tree_map(lambda w, a, b: w - LR * (a / c1) / (jnp.sqrt(b / c2) + EPS), p, m, v)
        return loss, p, m, v

    def call():
        i = base.calls % len(base.batches)
        base.calls += 1
        moments["t"] += 1
        loss, base.params, moments["m"], moments["v"] = update(base.params, moments["m"], moments["v"],
                                                               jnp.float32(moments["t"]), *base.batches[i])
        return float(loss)

    return _Adam(base, call)
