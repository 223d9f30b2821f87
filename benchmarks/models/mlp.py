"""MLP classifier: batch 64, 784-256-256-10, ReLU, softmax cross-entropy, SGD (lr 0.05).

Large matmuls and few ops per step: the regime where eager overhead hardly matters, so every
system should be close to hand-written NumPy.
"""
from __future__ import annotations

from . import _mlp

FULL = dict(batch=64, sizes=(784, 256, 256, 10), n_batches=4)
QUICK = dict(batch=8, sizes=(32, 16, 16, 10), n_batches=2)
LR = 0.05
NAMES = _mlp.NAMES


def available():
    return None


def make(seed, quick=False):
    return _mlp.make(seed, QUICK if quick else FULL, LR, init="he")


def numpy_step(state):
    return _mlp.numpy_step(state, "relu")


def janus_step(state, jit=None):
    return _mlp.janus_step(state, "relu", jit)


def torch_step(state):
    return _mlp.torch_step(state, "relu")


def jax_step(state):
    return _mlp.jax_step(state, "relu")
