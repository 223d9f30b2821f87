"""Advantage actor-critic (A2C, one worker) on CartPole (`_cartpole.py`), one episode per step.

Network: a shared torso 4 -> 64 (tanh), a policy head 64 -> 2 logits and a value head 64 -> 1.
One step = play one episode (until the pole falls or 200 steps; the seed cycles through 16
values) sampling from the policy, compute discounted returns (gamma 0.95) in NumPy,
bootstrapped with the critic's value of the last state when the episode hit the cap, then one
update over the episode:

    advantage  = R_t - stop_gradient(V(s_t))
    loss = -mean(log pi(a_t | s_t) * advantage) + 0.5 * mean((R_t - V(s_t))^2) - 0.01 * mean(entropy)

SGD, lr 0.01. What is timed is the whole step: the rollout (Python simulator + one policy
forward per environment step) and the update. Under `jit`, the per-step policy forward
(`model.probs`) and the update over the episode are jitted separately; the simulator, sampling,
returns and the (rare) bootstrap value stay ordinary Python. The update's inputs have the
episode's length as their first dimension, so each new length is a new input signature.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F, optim

from ._cartpole import discounted_returns, merged_stats, run_episode, softmax_rows
from ._common import Stepper, glorot_uniform, next_batch, sgd_

FULL = dict(hidden=64, cap=200, n_seeds=16)
QUICK = dict(hidden=8, cap=20, n_seeds=4)
LR = 0.01
GAMMA = 0.95
# Episode lengths depend on the policy, and the systems' policies drift apart by rounding after a
# few hundred steps: the runner compares time per environment step (see runner.py)
WORK_UNIT = "environment step"
VALUE_COEF = 0.5
ENTROPY_COEF = 0.01
NAMES = ("w1", "b1", "w_pi", "b_pi", "w_v", "b_v")


def available():
    return None


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    h = cfg["hidden"]
    params = {
        "w1": glorot_uniform(rng, (4, h), 4, h), "b1": np.zeros(h, np.float32),
        "w_pi": glorot_uniform(rng, (h, 2), h, 2), "b_pi": np.zeros(2, np.float32),
        "w_v": glorot_uniform(rng, (h, 1), h, 1), "b_v": np.zeros(1, np.float32),
    }
    seeds = [(int(s),) for s in rng.integers(0, 2**31, cfg["n_seeds"])]
    return {"params": params, "batches": seeds, "lr": LR, "step": 0, "config": cfg, "work": 0}


# ------------------------------------------------------------------ hand-written NumPy
def numpy_step(state):
    p, lr = state["params"], state["lr"]
    (seed,) = next_batch(state)

    def prob_left(obs):
        return float(softmax_rows(np.tanh(obs @ p["w1"] + p["b1"]) @ p["w_pi"] + p["b_pi"])[0])

    obs, actions, last, fell = run_episode(seed, prob_left, state["config"]["cap"])
    bootstrap = 0.0 if fell else float((np.tanh(last @ p["w1"] + p["b1"]) @ p["w_v"] + p["b_v"])[0])
    returns = discounted_returns(len(actions), GAMMA, bootstrap)
    steps = len(actions)
    state["work"] += steps
    rows = np.arange(steps)

    h = np.tanh(obs @ p["w1"] + p["b1"])
    logits = h @ p["w_pi"] + p["b_pi"]
    values = (h @ p["w_v"] + p["b_v"])[:, 0]
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    probs = np.exp(logp)
    advantage = returns - values
    entropy = -(probs * logp).sum(axis=1)
    loss = (-(logp[rows, actions] * advantage).mean() + VALUE_COEF * (advantage * advantage).mean()
            - ENTROPY_COEF * entropy.mean())

    inv_t = np.float32(1.0 / steps)
    onehot = np.zeros_like(probs)
    onehot[rows, actions] = 1
    dlogits = (-(onehot - probs) * advantage[:, None] + ENTROPY_COEF * probs * (logp + entropy[:, None])) * inv_t
    dvalues = (2 * VALUE_COEF * inv_t) * (values - returns)
    dh = dlogits @ p["w_pi"].T + dvalues[:, None] @ p["w_v"].T
    dpre = dh * (1 - h * h)
    grads = {"w_pi": h.T @ dlogits, "b_pi": dlogits.sum(0), "w_v": h.T @ dvalues[:, None],
             "b_v": dvalues.sum(keepdims=True), "w1": obs.T @ dpre, "b1": dpre.sum(0)}
    sgd_(p, grads, lr)
    return float(loss)


# ------------------------------------------------------------------ janus_like
class ActorCritic:
    def __init__(self, w1, b1, w_pi, b_pi, w_v, b_v):
        self.w1, self.b1, self.w_pi, self.b_pi, self.w_v, self.b_v = w1, b1, w_pi, b_pi, w_v, b_v

    def torso(self, obs):
        return np.tanh(obs @ self.w1 + self.b1)

    def probs(self, obs):
        return F.softmax(self.torso(obs) @ self.w_pi + self.b_pi)

    def value(self, obs):
        return self.torso(obs) @ self.w_v + self.b_v

    def __call__(self, obs):
        """Logits (T, 2) and values (T,) for a batch of observations."""
        h = self.torso(obs)
        return h @ self.w_pi + self.b_pi, F.reshape(h @ self.w_v + self.b_v, (-1,))

    def parameters(self):
        return [self.w1, self.b1, self.w_pi, self.b_pi, self.w_v, self.b_v]


def janus_step(state, jit=None):
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    model = ActorCritic(*(v[name] for name in NAMES))
    lr, cap = state["lr"], state["config"]["cap"]
    opt = optim.SGD(lr)  # plain SGD: var -= lr * grad

    def update(obs, actions, returns):
        with jl.GradientTape() as tape:
            logits, values = model(obs)
            logp = F.log_softmax(logits)
            advantage = returns - F.stop_gradient(values)
            policy_loss = -F.mean(logp[np.arange(actions.shape[0]), actions] * advantage)
            value_loss = F.mean((returns - values) ** 2)
            entropy = -F.mean(F.sum(F.exp(logp) * logp, axis=1))
            loss = policy_loss + VALUE_COEF * value_loss - ENTROPY_COEF * entropy
        params = model.parameters()
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    probs = model.probs if jit is None else jit(model.probs)
    update_step = update if jit is None else jit(update)

    def train_step(seed):
        obs, actions, last, fell = run_episode(seed, lambda o: float(probs(o)[0]), cap)
        state["work"] += len(actions)
        bootstrap = 0.0 if fell else float(model.value(last)[0])
        return update_step(obs, actions, discounted_returns(len(actions), GAMMA, bootstrap))

    train_step.stats = merged_stats(update=update_step, policy=probs)
    return Stepper(train_step, state["batches"], lambda: {k: x.numpy().copy() for k, x in v.items()},
                   "eager" if jit is None else "jit", work=lambda: state["work"])
