"""Run-time helpers the generated plan calls (bound as globals of the plan): the in-place sigmoid
with its error state, a float mean from a run-time count, a small broadcast as a copy."""
from __future__ import annotations

import numpy as np


def _broadcast_copy(x, shape):
    """np.broadcast_to's values as a new array (its view's Python wrapper costs more than the
    copy for small arrays)."""
    out = np.empty(shape, x.dtype)
    np.copyto(out, x)
    return out


try:  # NumPy 2 keeps the floating-point error state in a context variable
    from numpy._core._ufunc_config import _extobj_contextvar as _ERR_STATE
except ImportError:  # pragma: no cover - NumPy 1.x: np.errstate
    _ERR_STATE = None
_QUIET: dict = {}  # an error state -> the same state with overflow ignored
_ONE = {np.dtype(t): np.array(1, t) for t in (np.float16, np.float32, np.float64)}


def _over_ignored():
    """The current error state with overflow ignored: what `np.errstate(over="ignore")` sets,
    made once per state (a key stays referenced, so its id is never reused for another)."""
    state = _ERR_STATE.get()
    quiet = _QUIET.get(state)
    if quiet is None:
        with np.errstate(over="ignore"):
            quiet = _ERR_STATE.get()
        if len(_QUIET) >= 64:
            _QUIET.clear()
        _QUIET[state] = quiet
    return quiet


def _sigmoid(x):
    """The sigmoid primitive's 1 / (1 + exp(-x)) on a float array, bit for bit, in one buffer:
    three ufuncs write in place where the primitive allocates four arrays (14.7 -> 10.5 us on a
    strided 16 x 128 LSTM gate). Only the exp runs with overflow ignored, and it sets that state
    directly: building, entering and leaving an `np.errstate` took ~2 us of the ~14 (the
    context variable's set and reset, ~0.4). The 1s are 0-d arrays of x's dtype, which NumPy
    does not convert at each call (the same loop and value as the Python int)."""
    t = np.negative(x)
    if _ERR_STATE is None:  # pragma: no cover
        with np.errstate(over="ignore"):
            np.exp(t, out=t)
    else:
        token = _ERR_STATE.set(_over_ignored())
        try:
            np.exp(t, out=t)
        finally:
            _ERR_STATE.reset(token)
    one = _ONE.get(t.dtype, 1)
    np.add(t, one, out=t)
    return np.true_divide(one, t, out=t)


def _mean(x, total, count, axis, keepdims):
    """A float mean from its sum and a run-time count; an empty one is left to ndarray.mean
    (its NaN and its warning)."""
    return total / count if count else x.mean(axis=axis, keepdims=keepdims)
