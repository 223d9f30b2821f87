"""Parameter initializers: shape, dtype and an explicit `numpy.random.Generator` in, ndarray out.

Every initializer draws from the Generator it is given (or, when none is given, from a fresh
Generator seeded 0). None of them touches NumPy's global RNG: the JIT's contract includes
leaving that state exactly as eager execution would, and seeded runs must be reproducible.

Fan conventions (used by glorot_uniform and he_normal):
    2-D (in, out)                      the `Linear` layout (`x @ w`)
    N-D (out, in, k1, k2, ...)         the `Conv2D` layout (OIHW): fans scale by the kernel size
    1-D (n,)                           fan_in = fan_out = n

    >>> import numpy as np
    >>> w = glorot_uniform((4, 3), rng=np.random.default_rng(1))
    >>> w.shape, w.dtype
    ((4, 3), dtype('float32'))
"""
from __future__ import annotations

import math

import numpy as np


def default_rng() -> np.random.Generator:
    """A fresh Generator seeded 0: the source used when the caller passes no `rng`."""
    return np.random.default_rng(0)


def _rng(rng):
    return default_rng() if rng is None else rng


def fans(shape) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of this shape, following the conventions above."""
    shape = tuple(int(s) for s in shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def glorot_uniform(shape, dtype=np.float32, rng=None) -> np.ndarray:
    """Uniform on [-limit, limit] with limit = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""
    fan_in, fan_out = fans(shape)
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return _rng(rng).uniform(-limit, limit, size=tuple(shape)).astype(dtype)


def he_normal(shape, dtype=np.float32, rng=None) -> np.ndarray:
    """Normal with stddev sqrt(2 / fan_in) (He et al.), the usual choice before a ReLU."""
    fan_in, _ = fans(shape)
    return (_rng(rng).standard_normal(size=tuple(shape)) * math.sqrt(2.0 / fan_in)).astype(dtype)


def normal(shape, dtype=np.float32, rng=None, mean=0.0, stddev=1.0) -> np.ndarray:
    """Normal(mean, stddev) samples."""
    return (_rng(rng).standard_normal(size=tuple(shape)) * stddev + mean).astype(dtype)


def zeros(shape, dtype=np.float32, rng=None) -> np.ndarray:
    """All zeros (`rng` is accepted, and ignored, so every initializer has one signature)."""
    return np.zeros(tuple(shape), dtype=dtype)


def ones(shape, dtype=np.float32, rng=None) -> np.ndarray:
    """All ones (`rng` is accepted and ignored, like `zeros`)."""
    return np.ones(tuple(shape), dtype=dtype)


__all__ = ["default_rng", "fans", "glorot_uniform", "he_normal", "normal", "zeros", "ones"]
