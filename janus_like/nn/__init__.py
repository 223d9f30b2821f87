"""Neural-network building blocks: `Module` and layers made of Variables and F calls.

Input: arrays or tensors. Output: tensors. A module's Variables are found through its attributes
(`parameters()`), so models are plain Python classes; `forward` methods stay plain imperative
code that the JIT can convert.

    >>> import numpy as np
    >>> from janus_like import nn
    >>> rng = np.random.default_rng(0)
    >>> model = nn.Sequential(nn.Linear(4, 16, rng=rng), nn.ReLU(), nn.Linear(16, 3, rng=rng))
    >>> [name for name, _ in model.named_parameters()]
    ['layers.0.weight', 'layers.0.bias', 'layers.2.weight', 'layers.2.bias']
"""
from . import init  # noqa: F401
from .layers import (  # noqa: F401
    AvgPool2D,
    Conv2D,
    Dropout,
    Embedding,
    Flatten,
    GRUCell,
    Linear,
    LSTMCell,
    MaxPool2D,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
)
from .module import Module  # noqa: F401

__all__ = ["Module", "Linear", "Conv2D", "MaxPool2D", "AvgPool2D", "Embedding", "LSTMCell", "GRUCell",
           "Dropout", "Sequential", "ReLU", "Tanh", "Sigmoid", "Flatten", "init"]
