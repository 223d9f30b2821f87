"""Run-time helpers the generated plan calls (bound as globals of the plan): a float mean from a
run-time count, a small broadcast as a copy. (The sigmoid in one buffer, which eager shares, is
`ops.primitives.sigmoid_one_buffer`.)"""
from __future__ import annotations

import numpy as np

from ..ops.registry import REGISTRY


def _broadcast_copy(x, shape):
    """np.broadcast_to's values as a new array (its view's Python wrapper costs more than the
    copy for small arrays)."""
    out = np.empty(shape, x.dtype)
    np.copyto(out, x)
    return out


def copy_is_exact(node, users) -> bool:
    """Whether every reader of `node` (top-level readers: `users` from scalars.readers) computes
    the same values from a contiguous copy as from the broadcast view: elementwise ops do, but a
    product or a reduction may take another loop (another rounding) on a stride-0 operand."""
    readers = users.get(node.id)
    return bool(readers) and all(getattr(REGISTRY.get(u.op), "elementwise", False) for u in readers)


def _mean(x, total, count, axis, keepdims):
    """A float mean from its sum and a run-time count; an empty one is left to ndarray.mean
    (its NaN and its warning)."""
    return total / count if count else x.mean(axis=axis, keepdims=keepdims)
