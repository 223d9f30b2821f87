"""Shapes and dtypes of graph nodes without running the op, for the ops where running it costs.

The builder learns a node's (shape, dtype) by calling the op on representatives: zeros of the
input shapes (0-d zeros for elementwise ops). That is NumPy's own answer, errors included, but
it computes: the LSTM step's 180 products ran real matrix products on zeros, and each of its
~900 elementwise nodes paid ~30 µs of warning and error-state bookkeeping, together about a
quarter of the generation time (and of the first call).

Two shortcuts, each taken only where its answer is NumPy's by construction:

- `RULES`: shape rules for products, transposes, reductions back to a shape and index
  gradients, applied when every array operand is a float node (float16/32/64, one dtype for
  products). Anything else, or shapes the rule does not recognise (a contraction mismatch, a
  broadcast that fails), returns None and the builder runs the op as before, so errors keep
  NumPy's text.
- `ElementwiseDtypes`: an elementwise op's result shape is the broadcast of its operands'
  shapes; its dtype depends only on the op, its parameters, the operands' dtypes and, for
  Python numbers, their types (NEP 50) and, for ints, their values (an int that does not fit
  raises). The first evaluation for such a key runs the op on 0-d representatives; later ones
  reuse its dtype.

With `JANUS_LIKE_VERIFY=1` (the test suite) every shortcut is checked against running the op.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ops.primitives import sum_to_axes

_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def _matmul(avals, params):
    (a, da), (b, db) = avals
    if da != db or not a or not b:
        return None
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return None
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        return None
    shape = tuple(batch) + (a2[-2], b2[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return shape, da


def _dot(avals, params):
    (a, da), (b, db) = avals
    if da != db or not 1 <= len(a) <= 2 or not 1 <= len(b) <= 2 or a[-1] != b[0]:
        return None
    return a[:-1] + b[1:], da


def _transpose(avals, params):
    ((x, dx),) = avals
    axes = params.get("axes")
    if axes is None:
        return tuple(reversed(x)), dx
    axes = [int(i) for i in axes]
    n = len(x)
    if len(axes) != n or sorted(i % n for i in axes) != list(range(n)) or any(not -n <= i < n for i in axes):
        return None
    return tuple(x[i] for i in axes), dx


def _sum_to(avals, params):
    (g, dg), (like, dl) = avals
    if len(g) < len(like) or any(l != 1 and l != d for l, d in zip(like, g[len(g) - len(like):])):
        return None
    axes = sum_to_axes(g, like)
    if not axes:
        shape = g
    elif len(g) > len(like):
        shape = like
    else:
        shape = tuple(1 if i in axes else d for i, d in enumerate(g))
    return shape, dl  # summed in g's float dtype, then cast to like's


def _getitem_grad(avals, params):
    if params.get("dense"):
        return None
    (g, dg), (x, dx) = avals[:2]
    return x, dx


def _broadcast_like(avals, params):
    (x, dx), (like, dl) = avals
    try:
        if tuple(np.broadcast_shapes(x, like)) != like:
            return None
    except ValueError:
        return None
    return like, dx


def _square(shape):
    return len(shape) >= 2 and shape[-1] == shape[-2]


def _solve(avals, params):  # NumPy 2: a 1-D b is a vector, else a stack of matrices
    (a, da), (b, db) = avals
    if not _square(a) or not b or b[0 if len(b) == 1 else -2] != a[-1]:
        return None
    try:
        stack = np.broadcast_shapes(a[:-2], b[:-2] if len(b) > 1 else ())
    except ValueError:
        return None
    return tuple(stack) + (tuple(b) if len(b) == 1 else tuple(b[-2:])), np.result_type(da, db)


def _inv(avals, params):
    ((a, da),) = avals
    return (tuple(a), da) if _square(a) else None


# op name -> (array avals (shape, dtype) of the operands, params) -> aval or None
RULES = {"matmul": _matmul, "dot": _dot, "transpose": _transpose, "sum_to": _sum_to,
         "getitem_grad": _getitem_grad, "broadcast_like": _broadcast_like, "solve": _solve, "inv": _inv}
# ops whose rule is the only way to a shape: run on stand-in operands (zeros) they would fail
# (a singular matrix), so the check that runs every op anyway (JANUS_LIKE_VERIFY) skips them
UNSAMPLED = frozenset({"solve", "inv"})


_ARITY = {"transpose": 1, "getitem_grad": 2, "inv": 1}  # getitem_grad's index operands follow its two arrays


def by_rule(op, inputs, params):
    """The rule's (shape, dtype) for `op` on `inputs` (nodes or literals), or None: no rule,
    an operand that is not a float node of known shape, or shapes the rule leaves to NumPy."""
    rule = RULES.get(op.name)
    if rule is None:
        return None
    arity = _ARITY.get(op.name, 2)
    if len(inputs) < arity or (len(inputs) > arity and op.name != "getitem_grad"):
        return None
    avals = []
    for i in inputs[:arity]:
        if not isinstance(i, ir.Node) or i.hint is not None or i.aval is None:
            return None
        shape, dtype = i.aval
        dtype = np.dtype(dtype)
        if dtype not in _FLOATS:
            return None
        avals.append((tuple(shape), dtype))
    return rule(avals, params)


def _frozen(value):
    """A hashable stand-in for a parameter value (raises TypeError where there is none)."""
    if isinstance(value, (list, tuple)):
        return (type(value),) + tuple(_frozen(v) for v in value)
    hash(value)
    return (type(value), value)


class ElementwiseDtypes:
    """Result dtypes of elementwise ops, by op, parameters and the representatives' types,
    dtypes, ranks and, for scalars, values (NumPy 1's value-based casting reads them, and an
    int that does not fit raises)."""

    def __init__(self):
        self._known: dict = {}

    @staticmethod
    def key(op, reps, params):
        parts = [op.name]
        try:
            for k in sorted(params):
                parts.append((k, _frozen(params[k])))
            for r in reps:
                if isinstance(r, (np.ndarray, np.generic)):
                    parts.append(("a", r.dtype, r.item()) if r.ndim == 0 else ("A", r.dtype, r.ndim))
                elif r is None or type(r) in (bool, int, float, complex):
                    parts.append(("v", type(r), r))
                else:
                    return None
            key = tuple(parts)
            hash(key)
        except (TypeError, ValueError):
            return None
        return key

    def get(self, key):
        return None if key is None else self._known.get(key)

    def put(self, key, dtype):
        if key is not None:
            self._known[key] = dtype


DTYPES = ElementwiseDtypes()  # shared: the answer depends only on the key
