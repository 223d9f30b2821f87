"""LeNet-5 on synthetic 1x28x28 images, batch 32, SGD lr 0.01:

    conv(6, 5x5, pad 2) - relu - maxpool 2 - conv(16, 5x5) - relu - maxpool 2
    - fc 400->120 - relu - fc 120->84 - relu - fc 84->10 - softmax cross-entropy

The janus_like step uses F.conv2d and F.max_pool2d (NCHW); the hand-written NumPy step does
convolution as im2col (`sliding_window_view`) + one matmul, and col2im for the input gradient.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F, optim

from . import _common as nn
from ._common import glorot_uniform, he_normal, janus_stepper, next_batch, sgd_, softmax_cross_entropy

FULL = dict(batch=32, n_batches=4)
QUICK = dict(batch=4, n_batches=2)
LR = 0.01
NAMES = ("c1w", "c1b", "c2w", "c2b", "f1w", "f1b", "f2w", "f2b", "f3w", "f3b")


def available():
    if not (hasattr(F, "conv2d") and hasattr(F, "max_pool2d")):
        return "janus_like.F has no conv2d / max_pool2d yet"
    return None


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    params = {
        "c1w": he_normal(rng, (6, 1, 5, 5), 1 * 25), "c1b": np.zeros(6, np.float32),
        "c2w": he_normal(rng, (16, 6, 5, 5), 6 * 25), "c2b": np.zeros(16, np.float32),
        "f1w": he_normal(rng, (400, 120), 400), "f1b": np.zeros(120, np.float32),
        "f2w": he_normal(rng, (120, 84), 120), "f2b": np.zeros(84, np.float32),
        "f3w": glorot_uniform(rng, (84, 10), 84, 10), "f3b": np.zeros(10, np.float32),
    }
    batches = [(rng.standard_normal((cfg["batch"], 1, 28, 28)).astype(np.float32),
                rng.integers(0, 10, cfg["batch"]))
               for _ in range(cfg["n_batches"])]
    return {"params": params, "batches": batches, "lr": LR, "step": 0, "config": cfg}


def numpy_step(state):
    p, lr = state["params"], state["lr"]
    x, y = next_batch(state)
    a1, cols1 = nn.conv2d_forward(x, p["c1w"], p["c1b"], padding=2)  # (N, 6, 28, 28)
    r1 = np.maximum(a1, 0)
    m1, pos1 = nn.max_pool2d_forward(r1, 2)  # (N, 6, 14, 14)
    a2, cols2 = nn.conv2d_forward(m1, p["c2w"], p["c2b"], padding=0)  # (N, 16, 10, 10)
    r2 = np.maximum(a2, 0)
    m2, pos2 = nn.max_pool2d_forward(r2, 2)  # (N, 16, 5, 5)
    flat = m2.reshape(len(x), -1)
    z1 = flat @ p["f1w"] + p["f1b"]
    h1 = np.maximum(z1, 0)
    z2 = h1 @ p["f2w"] + p["f2b"]
    h2 = np.maximum(z2, 0)
    logits = h2 @ p["f3w"] + p["f3b"]
    loss, dlogits = softmax_cross_entropy(logits, y)

    grads = {"f3w": h2.T @ dlogits, "f3b": dlogits.sum(0)}
    dz2 = (dlogits @ p["f3w"].T) * (z2 > 0)
    grads.update(f2w=h1.T @ dz2, f2b=dz2.sum(0))
    dz1 = (dz2 @ p["f2w"].T) * (z1 > 0)
    grads.update(f1w=flat.T @ dz1, f1b=dz1.sum(0))
    dm2 = (dz1 @ p["f1w"].T).reshape(m2.shape)
    da2 = nn.max_pool2d_backward(dm2, pos2, r2.shape, 2) * (a2 > 0)
    dm1, grads["c2w"], grads["c2b"] = nn.conv2d_backward(da2, cols2, m1.shape, p["c2w"], padding=0)
    da1 = nn.max_pool2d_backward(dm1, pos1, r1.shape, 2) * (a1 > 0)
    _, grads["c1w"], grads["c1b"] = nn.conv2d_backward(da1, cols1, x.shape, p["c1w"], padding=2, need_dx=False)
    sgd_(p, grads, lr)
    return float(loss)


def janus_step(state, jit=None):
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b = (v[name] for name in NAMES)
    lr = state["lr"]
    opt = optim.SGD(lr)  # plain SGD: var -= lr * grad

    def train_step(x, y):
        with jl.GradientTape() as tape:
            h = F.max_pool2d(F.relu(F.conv2d(x, c1w, c1b, stride=1, padding=2)), 2)
            h = F.max_pool2d(F.relu(F.conv2d(h, c2w, c2b, stride=1, padding=0)), 2)
            h = F.reshape(h, (x.shape[0], -1))
            h = F.relu(h @ f1w + f1b)
            h = F.relu(h @ f2w + f2b)
            loss = F.cross_entropy(h @ f3w + f3b, y)
        params = [c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b]
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return janus_stepper(train_step, state["batches"], v, jit)


def torch_step(state):
    import torch
    import torch.nn.functional as TF

    from ._torch import TorchStepper

    t = {k: torch.tensor(a, requires_grad=True) for k, a in state["params"].items()}

    def loss_fn(x, y):
        h = TF.max_pool2d(torch.relu(TF.conv2d(x, t["c1w"], t["c1b"], padding=2)), 2)
        h = TF.max_pool2d(torch.relu(TF.conv2d(h, t["c2w"], t["c2b"])), 2)
        h = torch.relu(h.reshape(x.shape[0], -1) @ t["f1w"] + t["f1b"])
        h = torch.relu(h @ t["f2w"] + t["f2b"])
        return TF.cross_entropy(h @ t["f3w"] + t["f3b"], y)

    return TorchStepper(loss_fn, t, state["batches"], state["lr"])


def jax_step(state):
    import jax
    import jax.numpy as jnp

    from ._jax import JaxStepper

    def conv(x, w, b, pad):
        out = jax.lax.conv_general_dilated(x, w, (1, 1), [(pad, pad), (pad, pad)],
                                           dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return out + b[None, :, None, None]

    def pool(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def loss_fn(p, x, y):
        h = pool(jax.nn.relu(conv(x, p["c1w"], p["c1b"], 2)))
        h = pool(jax.nn.relu(conv(h, p["c2w"], p["c2b"], 0)))
        h = jax.nn.relu(h.reshape(x.shape[0], -1) @ p["f1w"] + p["f1b"])
        h = jax.nn.relu(h @ p["f2w"] + p["f2b"])
        logp = jax.nn.log_softmax(h @ p["f3w"] + p["f3b"])
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    return JaxStepper(loss_fn, state["params"], state["batches"], state["lr"])
