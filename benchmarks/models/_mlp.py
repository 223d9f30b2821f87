"""The three-layer MLP classifier shared by `mlp` and `tiny_mlp`, which differ only in sizes,
initialisation and activation: every system's step is written once here, parameterised by the
activation (`relu` or `tanh`)."""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F, optim

from ._common import glorot_uniform, he_normal, janus_stepper, next_batch, sgd_, softmax_cross_entropy

NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")


def _relu_backward(d, a, h):
    d *= a > 0
    return d


def _tanh_backward(d, a, h):
    return d * (1 - h * h)


# activation name (also torch's, and jax.nn's / jax.numpy's): NumPy forward, NumPy backward
# (d, pre-activation, output), the janus_like function
ACTIVATIONS = {
    "relu": (lambda a: np.maximum(a, 0), _relu_backward, F.relu),
    "tanh": (np.tanh, _tanh_backward, np.tanh),
}


def make(seed, cfg, lr, init):
    rng = np.random.default_rng(seed)
    sizes = cfg["sizes"]
    params = {}
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        if init == "he":
            params[f"w{i}"] = he_normal(rng, (fan_in, fan_out), fan_in)
        else:
            params[f"w{i}"] = glorot_uniform(rng, (fan_in, fan_out), fan_in, fan_out)
        params[f"b{i}"] = np.zeros(fan_out, np.float32)
    batches = [(rng.standard_normal((cfg["batch"], sizes[0])).astype(np.float32),
                rng.integers(0, sizes[-1], cfg["batch"]))
               for _ in range(cfg["n_batches"])]
    return {"params": params, "batches": batches, "lr": lr, "step": 0, "config": cfg}


def numpy_step(state, activation):
    forward, backward = ACTIVATIONS[activation][:2]
    p, lr = state["params"], state["lr"]
    x, y = next_batch(state)
    a1 = x @ p["w1"] + p["b1"]
    h1 = forward(a1)
    a2 = h1 @ p["w2"] + p["b2"]
    h2 = forward(a2)
    logits = h2 @ p["w3"] + p["b3"]
    loss, dlogits = softmax_cross_entropy(logits, y)

    da2 = backward(dlogits @ p["w3"].T, a2, h2)
    da1 = backward(da2 @ p["w2"].T, a1, h1)
    grads = {"w3": h2.T @ dlogits, "b3": dlogits.sum(0),
             "w2": h1.T @ da2, "b2": da2.sum(0),
             "w1": x.T @ da1, "b1": da1.sum(0)}
    sgd_(p, grads, lr)
    return float(loss)


def janus_step(state, activation, jit=None, opt=None):
    """`opt`: the optimizer (default: plain SGD at the state's learning rate, var -= lr * grad)."""
    act = ACTIVATIONS[activation][2]
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    w1, b1, w2, b2, w3, b3 = (v[name] for name in NAMES)
    opt = optim.SGD(state["lr"]) if opt is None else opt

    def train_step(x, y):
        with jl.GradientTape() as tape:
            h = act(x @ w1 + b1)
            h = act(h @ w2 + b2)
            logits = h @ w3 + b3
            loss = F.cross_entropy(logits, y)
        params = [w1, b1, w2, b2, w3, b3]
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return janus_stepper(train_step, state["batches"], v, jit)


def torch_step(state, activation):
    import torch

    from ._torch import TorchStepper

    act = getattr(torch, activation)
    t = {k: torch.tensor(a, requires_grad=True) for k, a in state["params"].items()}

    def loss_fn(x, y):
        h = act(x @ t["w1"] + t["b1"])
        h = act(h @ t["w2"] + t["b2"])
        return torch.nn.functional.cross_entropy(h @ t["w3"] + t["b3"], y)

    return TorchStepper(loss_fn, t, state["batches"], state["lr"])


def jax_step(state, activation):
    import jax
    import jax.numpy as jnp

    from ._jax import JaxStepper

    act = getattr(jax.nn if activation == "relu" else jnp, activation)

    def loss_fn(p, x, y):
        h = act(x @ p["w1"] + p["b1"])
        h = act(h @ p["w2"] + p["b2"])
        logp = jax.nn.log_softmax(h @ p["w3"] + p["b3"])
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    return JaxStepper(loss_fn, state["params"], state["batches"], state["lr"])
