"""Layers: Variables created once in `__init__`, a plain `forward` made of F calls.

`forward` methods stay straight-line imperative Python (attribute reads, F calls, loops over
lists, if/else on Python values) because the JIT converts their source into a graph.

Every layer with weights takes `rng`, an explicit `numpy.random.Generator`; without one it uses a
fresh Generator seeded 0 (so two layers of the same shape built without `rng` start equal: pass
one shared Generator to a model's layers to make them differ). Weights default to float32;
`dtype=np.float64` builds a double-precision layer (used by the gradient checks).
"""
from __future__ import annotations

import numpy as np

from ..ops import api as F
from ..ops.conv_params import pair_param, pool_params
from ..tensor import Variable
from . import init
from .module import Module




class Linear(Module):
    """y = x @ weight + bias, with weight of shape (in_features, out_features).

        >>> import numpy as np
        >>> layer = Linear(4, 2, rng=np.random.default_rng(0))
        >>> layer(np.ones((3, 4), np.float32)).shape
        (3, 2)

    weight: Glorot-uniform; bias: zeros (absent with `bias=False`)."""

    def __init__(self, in_features, out_features, bias=True, rng=None, dtype=np.float32):
        rng = init.default_rng() if rng is None else rng
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = Variable(init.glorot_uniform((in_features, out_features), dtype, rng), name="weight")
        self.bias = Variable(init.zeros((out_features,), dtype), name="bias") if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"{self.in_features}, {self.out_features}, bias={self.bias is not None}"


class Conv2D(Module):
    """2-D convolution in NCHW layout: (N, in_ch, H, W) -> (N, out_ch, H', W').

        >>> import numpy as np
        >>> conv = Conv2D(1, 4, kernel_size=3, padding=1)
        >>> conv(np.ones((2, 1, 8, 8), np.float32)).shape   # doctest: +SKIP
        (2, 4, 8, 8)

    weight: (out_ch, in_ch, kh, kw), He-normal; bias: (out_ch,) zeros. Runs `F.conv2d`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True, rng=None,
                 dtype=np.float32):
        rng = init.default_rng() if rng is None else rng
        kh, kw = pair_param(kernel_size, "size", "Conv2D")  # (the user's error at construction, not the first call)
        pair_param(stride, "stride", "Conv2D")
        pair_param(padding, "padding", "Conv2D")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = (kh, kw)
        self.stride, self.padding = stride, padding
        self.weight = Variable(init.he_normal((out_channels, in_channels, kh, kw), dtype, rng), name="weight")
        self.bias = Variable(init.zeros((out_channels,), dtype), name="bias") if bias else None

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, stride=self.stride, padding=self.padding)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")


class MaxPool2D(Module):
    """Max over `size` windows (NCHW); `stride` defaults to `size`. Runs `F.max_pool2d`."""

    def __init__(self, size, stride=None, padding=0):
        pool_params(type(self).__name__, size, stride, padding)
        self.size, self.stride, self.padding = size, stride, padding

    def forward(self, x):
        return F.max_pool2d(x, self.size, self.stride, self.padding)

    def extra_repr(self):
        return f"size={self.size}, stride={self.stride}, padding={self.padding}"


class AvgPool2D(Module):
    """Mean over `size` windows (NCHW); `stride` defaults to `size`. Runs `F.avg_pool2d`."""

    def __init__(self, size, stride=None, padding=0):
        pool_params(type(self).__name__, size, stride, padding)
        self.size, self.stride, self.padding = size, stride, padding

    def forward(self, x):
        return F.avg_pool2d(x, self.size, self.stride, self.padding)

    def extra_repr(self):
        return f"size={self.size}, stride={self.stride}, padding={self.padding}"


class Embedding(Module):
    """Rows of a (num_embeddings, dim) table picked by integer ids of any shape.

        >>> import numpy as np
        >>> Embedding(10, 3)(np.array([[1, 2], [3, 4]])).shape
        (2, 2, 3)

    weight: Normal(0, 1), as in PyTorch."""

    def __init__(self, num_embeddings, dim, rng=None, dtype=np.float32):
        rng = init.default_rng() if rng is None else rng
        self.num_embeddings, self.dim = int(num_embeddings), int(dim)
        self.weight = Variable(init.normal((num_embeddings, dim), dtype, rng), name="weight")

    def forward(self, ids):
        return F.embedding(self.weight, ids)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.dim}"


class LSTMCell(Module):
    """One LSTM step: `forward(x, (h, c)) -> (h, c)` with x (N, in), h and c (N, hidden).

        >>> import numpy as np
        >>> cell = LSTMCell(3, 5)
        >>> h, c = cell(np.ones((2, 3), np.float32), cell.initial_state(2))
        >>> h.shape, c.shape
        ((2, 5), (2, 5))

    Gates are ordered (input, forget, cell, output) along the last axis of w_x (in, 4*hidden),
    w_h (hidden, 4*hidden) and b (4*hidden,). The forget-gate bias starts at 1 (Jozefowicz et
    al. 2015) so early training does not forget the cell state by default."""

    def __init__(self, input_size, hidden_size, rng=None, dtype=np.float32):
        rng = init.default_rng() if rng is None else rng
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        hidden = self.hidden_size
        self.w_x = Variable(init.glorot_uniform((input_size, 4 * hidden), dtype, rng), name="w_x")
        self.w_h = Variable(init.glorot_uniform((hidden, 4 * hidden), dtype, rng), name="w_h")
        bias = init.zeros((4 * hidden,), dtype)
        bias[hidden:2 * hidden] = 1.0
        self.b = Variable(bias, name="b")

    def forward(self, x, state):
        h, c = state
        return F.lstm_cell(x, h, c, self.w_x, self.w_h, self.b)

    def initial_state(self, batch_size):
        """Zero (h, c) for a batch, in the cell's dtype."""
        zeros = np.zeros((batch_size, self.hidden_size), dtype=self.w_x.dtype)
        return zeros, zeros.copy()

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class GRUCell(Module):
    """One GRU step: `forward(x, h) -> h` with x (N, in) and h (N, hidden).

        >>> import numpy as np
        >>> cell = GRUCell(3, 5)
        >>> cell(np.ones((2, 3), np.float32), cell.initial_state(2)).shape
        (2, 5)

    Gates are ordered (reset, update, new) along the last axis of w_x (in, 3*hidden),
    w_h (hidden, 3*hidden), b_x and b_h (3*hidden,)."""

    def __init__(self, input_size, hidden_size, rng=None, dtype=np.float32):
        rng = init.default_rng() if rng is None else rng
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        hidden = self.hidden_size
        self.w_x = Variable(init.glorot_uniform((input_size, 3 * hidden), dtype, rng), name="w_x")
        self.w_h = Variable(init.glorot_uniform((hidden, 3 * hidden), dtype, rng), name="w_h")
        self.b_x = Variable(init.zeros((3 * hidden,), dtype), name="b_x")
        self.b_h = Variable(init.zeros((3 * hidden,), dtype), name="b_h")

    def forward(self, x, h):
        return F.gru_cell(x, h, self.w_x, self.w_h, self.b_x, self.b_h)

    def initial_state(self, batch_size):
        """Zero h for a batch, in the cell's dtype."""
        return np.zeros((batch_size, self.hidden_size), dtype=self.w_x.dtype)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class Dropout(Module):
    """Inverted dropout: in training mode zero each element with probability `rate` and scale the
    rest by 1 / (1 - rate); in eval mode return the input unchanged.

        >>> import numpy as np
        >>> drop = Dropout(0.5, np.random.default_rng(0))
        >>> x = np.ones((2, 4), np.float32)
        >>> drop.eval()(x) is x
        True

    The mask is drawn from `rng` (a numpy Generator; default: seeded 0), never the global RNG,
    so a seeded model drops the same units on every run."""

    def __init__(self, rate, rng=None):
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"Dropout rate must be in [0, 1), got {rate}")
        self.rate = float(rate)
        self.rng = init.default_rng() if rng is None else rng

    def forward(self, x):
        return F.dropout(x, self.rate, self.rng, self.training)

    def extra_repr(self):
        return f"rate={self.rate}"


class Sequential(Module):
    """Applies its layers in order: `Sequential(a, b, c)(x) == c(b(a(x)))`.

        >>> import numpy as np
        >>> model = Sequential(Linear(4, 8), ReLU(), Linear(8, 2))
        >>> model(np.ones((3, 4), np.float32)).shape
        (3, 2)

    Parameters are named by position: `layers.0.weight`, `layers.2.bias`."""

    def __init__(self, *layers):
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def __getitem__(self, index):
        return self.layers[index]

    def __len__(self):
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    def __repr__(self):
        lines = [f"  ({i}): " + repr(layer).replace("\n", "\n  ") for i, layer in enumerate(self.layers)]
        return "Sequential(\n" + "\n".join(lines) + "\n)"


class ReLU(Module):
    """max(x, 0), elementwise."""

    def forward(self, x):
        return F.relu(x)


class Tanh(Module):
    """tanh(x), elementwise."""

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise."""

    def forward(self, x):
        return F.sigmoid(x)


class Flatten(Module):
    """(N, d1, d2, ...) -> (N, d1 * d2 * ...): keeps the batch axis, flattens the rest."""

    def forward(self, x):
        return F.reshape(x, (x.shape[0], -1))
