"""Benchmark models, one file each, all with the same interface:

    make(seed, quick=False) -> state      synthetic data + float32 initial parameters (dict)
    numpy_step(state) -> float            one SGD step by hand in NumPy, updating state in place
    janus_step(state, jit=None) -> step   imperative janus_like training step; step() -> float
    torch_step(state) / jax_step(state)   the same step in PyTorch / JAX (when installed)
    available() -> str | None             why the model cannot run here (None: it can)

`state` holds "params" (name -> float32 array), "batches" (a list of argument tuples, used in
turn: step i trains on batches[i % len(batches)]), "lr" and "step". Every builder copies the
initial parameters, so several systems can start from one `make` with the same seed and be
compared step by step.
"""
from __future__ import annotations

import importlib

MODELS = ("tiny_mlp", "mlp", "mlp_adam", "tree_rnn", "lstm_lm", "lenet", "resnet", "char_rnn", "tree_lstm", "gan",
          "reinforce", "a2c", "tree_rnn_oneoff", "tree_lstm_oneoff")


def load(name: str):
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")
    return importlib.import_module(f"{__name__}.{name}")
