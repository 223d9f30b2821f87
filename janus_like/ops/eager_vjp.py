"""Gradient rules on NumPy arrays for the eager backward pass's most frequent ops.

The rules in `primitives.py` and `linalg.py` are written with `F` ops so that one rule serves a
tape, a graph and a tape recording another tape's backward pass. Eagerly, each of those ops goes
through the dispatcher (unwrap, call, wrap a Tensor): a tanh's rule is three dispatches, ~4.5 us
where its three ufuncs take ~1.1. When no tape records the backward pass, `autodiff._backward`
calls the rule here instead: the same NumPy calls on the same operands in the same order, so the
same bits (tests/test_eager_backward_shortcuts.py compares them on every gradient case).

A rule takes `(w, g, out, *inputs, **params)` with arrays (Python numbers stay numbers) and `w`
the tuple of wanted inputs (None: all), and returns one cotangent per input (None for one not
wanted or not differentiable), or None to leave the call to the general rule.
"""
from __future__ import annotations

import numpy as np

from .primitives import _axes, _expand_dims, _is_float, _reduced_count, _sum_to
from .registry import REGISTRY


def _unb(g, x):
    """primitives._unb on arrays: g summed to x's shape and float dtype (None for a number)."""
    if type(x) is np.ndarray and x.shape == g.shape and x.dtype == g.dtype:  # what _sum_to returns then
        return g if x.dtype.kind in "fc" else None
    if not hasattr(x, "shape") or not _is_float(x):
        return None
    return _sum_to(np, g, x)


def _binary(rule_a, rule_b):
    def rule(w, g, out, a, b):
        return (rule_a(g, out, a, b) if w is None or w[0] else None,
                rule_b(g, out, a, b) if w is None or w[1] else None)
    return rule


def _swapped(b):  # api.swapaxes(b, -1, -2) as the transpose it binds
    axes = list(range(b.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return np.transpose(b, tuple(axes))


def _matmul(w, g, out, a, b):
    na, nb = np.ndim(a), np.ndim(b)
    wa, wb = w is None or w[0], w is None or w[1]
    if na == 1 and nb == 2:  # linalg._matmul_vjp's eager case
        return (np.matmul(g, _swapped(b)) if wa else None,
                np.multiply(_expand_dims(np, a, -1), g) if wb else None)
    if na >= 2 and nb >= 2:
        return (_sum_to(np, np.matmul(g, _swapped(b)), a) if wa else None,
                _sum_to(np, np.matmul(_swapped(a), g), b) if wb else None)
    return None


def _concatenate(w, g, out, *xs, axis=0):
    nd = np.ndim(xs[0])
    ax = axis % nd
    grads, start = [], 0
    for x in xs:
        stop = start + x.shape[ax]
        grads.append(g[(slice(None),) * ax + (slice(start, stop),)])
        start = stop
    return tuple(grads)


def _restored(g, x, axis, keepdims):
    """primitives._restore on arrays: the reduced axes put back so g broadcasts against x."""
    nd = np.ndim(x)
    if keepdims or nd == 0:
        return g
    return _expand_dims(np, g, _axes(axis, nd)) if np.ndim(g) or axis is not None else g


def _sum(w, g, out, x, axis=None, keepdims=False, dtype=None):
    return (np.broadcast_to(_restored(g, x, axis, keepdims), np.shape(x)),)


def _mean(w, g, out, x, axis=None, keepdims=False):
    count = _reduced_count(x, _axes(axis, np.ndim(x)))
    return (np.true_divide(np.broadcast_to(_restored(g, x, axis, keepdims), np.shape(x)), count),)


_RULES = {
    "add": _binary(lambda g, o, a, b: _unb(g, a), lambda g, o, a, b: _unb(g, b)),
    "sub": _binary(lambda g, o, a, b: _unb(g, a), lambda g, o, a, b: _unb(np.negative(g), b)),
    "mul": _binary(lambda g, o, a, b: _unb(np.multiply(g, b), a), lambda g, o, a, b: _unb(np.multiply(g, a), b)),
    "div": _binary(lambda g, o, a, b: _unb(np.true_divide(g, b), a),
                   lambda g, o, a, b: _unb(np.negative(np.multiply(g, np.true_divide(o, b))), b)),
    "tanh": lambda w, g, o, x: (np.multiply(g, np.subtract(1, np.multiply(o, o))),),
    "sigmoid": lambda w, g, o, x: (np.multiply(g, np.multiply(o, np.subtract(1, o))),),
    "relu": lambda w, g, o, x: (np.multiply(g, np.greater(x, 0)),),
    "exp": lambda w, g, o, x: (np.multiply(g, o),),
    "log": lambda w, g, o, x: (np.true_divide(g, x),),
    "neg": lambda w, g, o, x: (np.negative(g),),
    "matmul": _matmul,
    "concatenate": _concatenate,
    "sum": _sum,
    "mean": _mean,
    "reshape": lambda w, g, o, x, shape: (np.reshape(g, np.shape(x)),),
}
for _name, _rule in _RULES.items():
    REGISTRY[_name].eager_vjp = _rule
