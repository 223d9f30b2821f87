"""REINFORCE on CartPole (the simulator in `_cartpole.py`), one episode per step, SGD lr 0.05.

Policy: 4 -> 64 (tanh) -> 2 logits, softmax. One step = play one episode (until the pole falls
or 200 steps; the seed cycles through 16 values) sampling actions from the policy, compute the
normalised discounted returns (gamma 0.99) in NumPy, then one policy-gradient update:

    loss = -mean_t( log_softmax(policy(obs))[t, a_t] * R_t )

What is timed is the whole step: the rollout (Python simulator + one policy forward per
environment step) and the update. Under `jit`, both the per-step forward (`policy.probs`) and
the update over the collected episode are jitted separately; the rest (simulator, sampling,
returns) is ordinary Python either way. The update's inputs have the episode's length T as
their first dimension, so each new length is a new input signature for the JIT.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F, optim

from ._cartpole import discounted_returns, merged_stats, run_episode, softmax_rows
from ._common import Stepper, glorot_uniform, next_batch, sgd_

FULL = dict(hidden=64, cap=200, n_seeds=16)
QUICK = dict(hidden=8, cap=20, n_seeds=4)
LR = 0.05
GAMMA = 0.99
# Episode lengths depend on the policy, and the systems' policies drift apart by rounding after a
# few hundred steps: the runner compares time per environment step (see runner.py)
WORK_UNIT = "environment step"
NAMES = ("w1", "b1", "w2", "b2")


def available():
    return None


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    h = cfg["hidden"]
    params = {
        "w1": glorot_uniform(rng, (4, h), 4, h), "b1": np.zeros(h, np.float32),
        "w2": glorot_uniform(rng, (h, 2), h, 2), "b2": np.zeros(2, np.float32),
    }
    seeds = [(int(s),) for s in rng.integers(0, 2**31, cfg["n_seeds"])]
    return {"params": params, "batches": seeds, "lr": LR, "step": 0, "config": cfg, "work": 0}


def normalised_returns(steps):
    """Discounted returns scaled to mean 0, std 1 (the usual REINFORCE baseline), float32."""
    r = discounted_returns(steps, GAMMA)
    return ((r - r.mean()) / (r.std() + np.float32(1e-6))).astype(np.float32)


# ------------------------------------------------------------------ hand-written NumPy
def numpy_step(state):
    p, lr = state["params"], state["lr"]
    (seed,) = next_batch(state)

    def prob_left(obs):
        return float(softmax_rows(np.tanh(obs @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])[0])

    obs, actions, _, _ = run_episode(seed, prob_left, state["config"]["cap"])
    returns = normalised_returns(len(actions))
    steps = len(actions)
    state["work"] += steps
    rows = np.arange(steps)
    h = np.tanh(obs @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -(logp[rows, actions] * returns).mean()

    dlogits = np.exp(logp)
    dlogits[rows, actions] -= 1
    dlogits *= returns[:, None] / np.float32(steps)
    dz = (dlogits @ p["w2"].T) * (1 - h * h)
    grads = {"w2": h.T @ dlogits, "b2": dlogits.sum(0), "w1": obs.T @ dz, "b1": dz.sum(0)}
    sgd_(p, grads, lr)
    return float(loss)


# ------------------------------------------------------------------ janus_like
class Policy:
    def __init__(self, w1, b1, w2, b2):
        self.w1, self.b1, self.w2, self.b2 = w1, b1, w2, b2

    def logits(self, obs):
        return np.tanh(obs @ self.w1 + self.b1) @ self.w2 + self.b2

    def probs(self, obs):
        return F.softmax(self.logits(obs))

    def parameters(self):
        return [self.w1, self.b1, self.w2, self.b2]


def janus_step(state, jit=None):
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    policy = Policy(*(v[name] for name in NAMES))
    lr, cap = state["lr"], state["config"]["cap"]
    opt = optim.SGD(lr)  # plain SGD: var -= lr * grad

    def update(obs, actions, returns):
        with jl.GradientTape() as tape:
            logp = F.log_softmax(policy.logits(obs))
            loss = -F.mean(logp[np.arange(actions.shape[0]), actions] * returns)
        params = policy.parameters()
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    probs = policy.probs if jit is None else jit(policy.probs)
    update_step = update if jit is None else jit(update)

    def train_step(seed):
        obs, actions, _, _ = run_episode(seed, lambda o: float(probs(o)[0]), cap)
        state["work"] += len(actions)
        return update_step(obs, actions, normalised_returns(len(actions)))

    train_step.stats = merged_stats(update=update_step, policy=probs)
    return Stepper(train_step, state["batches"], lambda: {k: x.numpy().copy() for k, x in v.items()},
                   "eager" if jit is None else "jit", work=lambda: state["work"])
