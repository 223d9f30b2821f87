"""Tiny MLP: batch 1, 32-32-32-2, tanh, softmax cross-entropy, SGD (lr 0.1).

Every array is tiny, so a step is almost nothing but per-op overhead: the regime where eager
execution loses most to hand-written NumPy and where a JIT has the most to win.
"""
from __future__ import annotations

from . import _mlp

FULL = dict(batch=1, sizes=(32, 32, 32, 2), n_batches=8)
QUICK = FULL  # already tiny
LR = 0.1
NAMES = _mlp.NAMES


def available():
    return None


def make(seed, quick=False):
    return _mlp.make(seed, QUICK if quick else FULL, LR, init="glorot")


def numpy_step(state):
    return _mlp.numpy_step(state, "tanh")


def janus_step(state, jit=None):
    return _mlp.janus_step(state, "tanh", jit)


def torch_step(state):
    return _mlp.torch_step(state, "tanh")


def jax_step(state):
    return _mlp.jax_step(state, "tanh")
