"""The window parameters of convolution and pooling (`F.conv2d`, `F.max_pool2d`, `nn.Conv2D`...):
an int or a pair of ints each, checked where the user passes them, so that a stride of 0 or a
negative padding is the user's error named with the op (not a division by zero or a broadcasting
error from inside the kernel)."""
from __future__ import annotations

import operator

_LEAST = {"size": 1, "stride": 1, "padding": 0}


def pair_param(v, what, op="conv2d"):
    """An int or a pair of ints (`what`: size, stride or padding of `op`) as a pair, checked:
    sizes and strides positive, paddings not negative."""
    pair = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    try:
        if len(pair) != 2:
            raise TypeError
        pair = (operator.index(pair[0]), operator.index(pair[1]))
    except TypeError:
        raise TypeError(f"{op} {what} must be an int or a pair of ints, got {v!r}") from None
    least = _LEAST[what]
    if min(pair) < least:
        raise ValueError(f"{op} {what} must be {'positive' if least else 'non-negative'}, got {v!r}")
    return pair


def pool_params(op, size, stride, padding):
    """A pooling op's checked parameters (stride defaults to the window), as its node's params."""
    size = pair_param(size, "size", op)
    stride = size if stride is None else pair_param(stride, "stride", op)
    padding = pair_param(padding, "padding", op)
    if padding[0] >= size[0] or padding[1] >= size[1]:
        raise ValueError(f"{op} padding {padding} must be smaller than the window {size}")
    return dict(size=size, stride=stride, padding=padding)
