"""MLP GAN on a synthetic 2-D ring of 8 Gaussians, batch 64, alternating updates, SGD lr 0.01.

    generator      z (8) -> 128 -> 128 -> 2          ReLU hidden layers, linear output
    discriminator  x (2) -> 128 -> 128 -> 1 logit    ReLU hidden layers

One training step is two updates, each with its own GradientTape: first the discriminator on
real samples and detached fakes G(z_d) (non-saturating BCE with logits:
mean softplus(-D(real)) + mean softplus(D(fake))), then the generator on fresh noise z_g
(mean softplus(-D(G(z_g)))). The step returns d_loss + g_loss (a single number for the loss
checks). Networks are `MLP` objects looping over a list of `Dense` layers. softplus is written
stably as relu(x) + log(1 + exp(-|x|)); the hand-written NumPy step differentiates that same
formula: sigmoid(x) everywhere except at exactly 0, where relu and |x| contribute 0 (a dead
discriminator outputs exactly 0 there, so the convention matters).
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F, optim

from ._common import glorot_uniform, he_normal, janus_stepper, next_batch, sgd_

FULL = dict(noise=8, hidden=128, batch=64, n_batches=8)
QUICK = dict(noise=4, hidden=8, batch=4, n_batches=2)
LR = 0.01


def available():
    return None


def _layer_names(prefix, n):
    return [f"{prefix}{k}_{p}" for k in range(n) for p in ("w", "b")]


G_NAMES = _layer_names("g", 3)
D_NAMES = _layer_names("d", 3)


def _mlp_params(rng, prefix, sizes):
    params = {}
    for k, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        last = k == len(sizes) - 2
        params[f"{prefix}{k}_w"] = (glorot_uniform(rng, (fan_in, fan_out), fan_in, fan_out) if last
                                    else he_normal(rng, (fan_in, fan_out), fan_in))
        params[f"{prefix}{k}_b"] = np.zeros(fan_out, np.float32)
    return params


def real_samples(rng, n):
    """n points from 8 Gaussians (std 0.05) evenly spaced on the unit circle."""
    angle = rng.integers(0, 8, n) * (2 * np.pi / 8)
    centres = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return (centres + 0.05 * rng.standard_normal((n, 2))).astype(np.float32)


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    z, h, b = cfg["noise"], cfg["hidden"], cfg["batch"]
    params = {**_mlp_params(rng, "g", (z, h, h, 2)), **_mlp_params(rng, "d", (2, h, h, 1))}
    batches = [(real_samples(rng, b), rng.standard_normal((b, z)).astype(np.float32),
                rng.standard_normal((b, z)).astype(np.float32)) for _ in range(cfg["n_batches"])]
    return {"params": params, "batches": batches, "lr": LR, "step": 0, "config": cfg}


# ------------------------------------------------------------------ hand-written NumPy
def _softplus(x):
    return np.maximum(x, 0) + np.log(1 + np.exp(-np.abs(x)))


def _softplus_grad(x):
    """d/dx of `_softplus` as written: sigmoid(x) for x != 0, and 0 at x == 0 (the subgradient
    relu' = 0 and |x|' = sign(0) = 0 that janus_like's primitives use)."""
    e = np.exp(-np.abs(x))
    return (x > 0) - np.sign(x) * e / (1 + e)


def _mlp_forward(p, prefix, x):
    """Returns the output and the per-layer (input, pre-activation) pairs for backward."""
    cache = []
    n = sum(1 for k in p if k.startswith(prefix) and k.endswith("_w"))
    for k in range(n):
        z = x @ p[f"{prefix}{k}_w"] + p[f"{prefix}{k}_b"]
        cache.append((x, z))
        x = z if k == n - 1 else np.maximum(z, 0)
    return x, cache


def _mlp_backward(p, prefix, cache, dout, grads=None):
    """Accumulates parameter gradients into `grads` (when given); returns d input."""
    n = len(cache)
    for k in reversed(range(n)):
        x, z = cache[k]
        if k != n - 1:
            dout = dout * (z > 0)
        if grads is not None:
            for name, g in ((f"{prefix}{k}_w", x.T @ dout), (f"{prefix}{k}_b", dout.sum(0))):
                grads[name] = grads[name] + g if name in grads else g
        dout = dout @ p[f"{prefix}{k}_w"].T
    return dout


def numpy_step(state):
    p, lr = state["params"], state["lr"]
    real, z_d, z_g = next_batch(state)
    n = len(real)

    # discriminator update on real and (detached) fake samples
    fake, _ = _mlp_forward(p, "g", z_d)
    d_real, cache_real = _mlp_forward(p, "d", real)
    d_fake, cache_fake = _mlp_forward(p, "d", fake)
    d_loss = _softplus(-d_real).mean() + _softplus(d_fake).mean()
    d_grads = {}
    _mlp_backward(p, "d", cache_real, -_softplus_grad(-d_real) / np.float32(n), d_grads)
    _mlp_backward(p, "d", cache_fake, _softplus_grad(d_fake) / np.float32(n), d_grads)
    sgd_(p, d_grads, lr)

    # generator update through the freshly updated discriminator
    fake, cache_g = _mlp_forward(p, "g", z_g)
    d_out, cache_d = _mlp_forward(p, "d", fake)
    g_loss = _softplus(-d_out).mean()
    dfake = _mlp_backward(p, "d", cache_d, -_softplus_grad(-d_out) / np.float32(n))
    g_grads = {}
    _mlp_backward(p, "g", cache_g, dfake, g_grads)
    sgd_(p, g_grads, lr)
    return float(d_loss + g_loss)


# ------------------------------------------------------------------ janus_like
class Dense:
    def __init__(self, w, b, activation=None):
        self.w, self.b, self.activation = w, b, activation

    def __call__(self, x):
        y = x @ self.w + self.b
        return y if self.activation is None else self.activation(y)


class MLP:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        params = []
        for layer in self.layers:
            params += [layer.w, layer.b]
        return params


def softplus(x):
    return F.relu(x) + np.log(1 + np.exp(-np.abs(x)))


def _build_mlp(v, prefix, n):
    return MLP([Dense(v[f"{prefix}{k}_w"], v[f"{prefix}{k}_b"], None if k == n - 1 else F.relu)
                for k in range(n)])


def janus_step(state, jit=None):
    v = {name: jl.Variable(a.copy(), name=name) for name, a in state["params"].items()}
    generator, discriminator = _build_mlp(v, "g", 3), _build_mlp(v, "d", 3)
    lr = state["lr"]
    opt = optim.SGD(lr)  # plain SGD: var -= lr * grad

    def train_step(real, z_d, z_g):
        fake = generator(z_d)  # outside the discriminator's tape: the generator is not updated here
        with jl.GradientTape() as d_tape:
            d_loss = F.mean(softplus(-discriminator(real))) + F.mean(softplus(discriminator(fake)))
        d_params = discriminator.parameters()
        opt.apply_gradients(zip(d_tape.gradient(d_loss, d_params), d_params))

        with jl.GradientTape() as g_tape:
            g_loss = F.mean(softplus(-discriminator(generator(z_g))))
        g_params = generator.parameters()
        opt.apply_gradients(zip(g_tape.gradient(g_loss, g_params), g_params))
        return d_loss + g_loss

    return janus_stepper(train_step, state["batches"], v, jit)
