"""CartPole in NumPy / plain Python for the policy-gradient benchmarks (`reinforce`, `a2c`).

The classic cart-pole equations (Barto, Sutton & Anderson 1983, as in OpenAI Gym's
CartPole-v0): Euler steps of 0.02 s, force +-10 N, the episode ends when the pole leans more
than 12 degrees or the cart leaves [-2.4, 2.4], or at a step cap. Reward 1 per step.

Everything random comes from one `numpy.random.Generator` per episode, seeded by the batch's
seed: the start state (uniform in [-0.05, 0.05]^4), then one uniform draw per step to sample the
action. Given the same policy probabilities, every system therefore plays the same episode.
"""
from __future__ import annotations

import math

import numpy as np

GRAVITY, MASS_CART, MASS_POLE, HALF_LENGTH, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = MASS_CART + MASS_POLE
POLE_MASS_LENGTH = MASS_POLE * HALF_LENGTH
THETA_LIMIT = 12 * 2 * math.pi / 360
X_LIMIT = 2.4


class CartPole:
    """One episode's environment. `reset()` -> observation; `step(action)` -> (observation, fell)."""

    def __init__(self, rng):
        self.rng = rng
        self.state = (0.0, 0.0, 0.0, 0.0)

    def reset(self):
        self.state = tuple(float(v) for v in self.rng.uniform(-0.05, 0.05, 4))
        return np.array(self.state, np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = FORCE if action == 1 else -FORCE
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot * theta_dot * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (
            HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos * cos / TOTAL_MASS))
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        x, x_dot = x + TAU * x_dot, x_dot + TAU * x_acc
        theta, theta_dot = theta + TAU * theta_dot, theta_dot + TAU * theta_acc
        self.state = (x, x_dot, theta, theta_dot)
        fell = abs(x) > X_LIMIT or abs(theta) > THETA_LIMIT
        return np.array(self.state, np.float32), fell


def run_episode(seed, prob_left, cap):
    """Play one episode with the policy `prob_left(observation) -> float` (probability of
    pushing left). Returns (observations (T, 4) float32, actions (T,) int64, last observation,
    fell): the episode stops when the pole falls or after `cap` steps, so T depends on the
    policy and the seed."""
    rng = np.random.default_rng(seed)
    env = CartPole(rng)
    obs = env.reset()
    observations, actions = [], []
    fell = False
    while not fell and len(actions) < cap:
        action = 0 if rng.random() < prob_left(obs) else 1
        observations.append(obs)
        actions.append(action)
        obs, fell = env.step(action)
    return np.stack(observations), np.array(actions, np.int64), obs, fell


def discounted_returns(steps, gamma, bootstrap=0.0):
    """Reward-to-go of `steps` rewards of 1 (float32), plus gamma^(T-t) * bootstrap."""
    out = np.empty(steps, np.float64)
    running = float(bootstrap)
    for t in reversed(range(steps)):
        running = 1.0 + gamma * running
        out[t] = running
    return out.astype(np.float32)


def softmax_rows(logits):
    """Softmax over the last axis, written like janus_like's (max subtracted, exp, divide)."""
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def merged_stats(**jitted):
    """A `stats()` for steppers that jit several functions: {name: that function's stats}
    for the ones that are jitted (the runner reads either this or one flat stats dict)."""
    def stats():
        return {name: fn.stats() for name, fn in jitted.items() if callable(getattr(fn, "stats", None))} or None
    return stats
