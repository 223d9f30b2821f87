"""Run-time helpers the generated plan calls (bound as globals of the plan): a float mean from a
run-time count, a small broadcast as a copy. (The sigmoid in one buffer, which eager shares, is
`ops.primitives.sigmoid_one_buffer`.)"""
from __future__ import annotations

import numpy as np


def _broadcast_copy(x, shape):
    """np.broadcast_to's values as a new array (its view's Python wrapper costs more than the
    copy for small arrays)."""
    out = np.empty(shape, x.dtype)
    np.copyto(out, x)
    return out


def _mean(x, total, count, axis, keepdims):
    """A float mean from its sum and a run-time count; an empty one is left to ndarray.mean
    (its NaN and its warning)."""
    return total / count if count else x.mean(axis=axis, keepdims=keepdims)
