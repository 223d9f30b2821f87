"""Elementwise functions beyond the core arithmetic: rounding and integer division
(`idx // width`, `t % period`, `np.floor`), the bitwise ops on integers, log1p / expm1 / log2 /
log10, reciprocal, arctan / sinh / cosh, logaddexp (softplus as `np.logaddexp(0, z)` in a binary
cross-entropy), and the NaN and infinity tests. Each calls the NumPy ufunc of its name, so a graph
gives eager's bits. The rounding ops, the bitwise ops and the tests have no gradient rule (a tape
does not follow them, as for `sign` and the comparisons); `remainder` is differentiated like
`a - floor(a / b) * b`."""
from __future__ import annotations

import math

from . import api as F
from .primitives import _elementwise, _is_float, _unb
from .registry import wants

# ------------------------------------------------------------------ not differentiable
for _name in ("floor", "ceil", "rint", "isnan", "isinf", "isfinite"):
    _elementwise(_name, (lambda u: lambda xp, x: getattr(xp, u)(x))(_name))
_elementwise("floor_divide", lambda xp, a, b: xp.floor_divide(a, b))
# bitwise ops on integers and booleans (`idx ^ 1`, `flags & 4`, `k >> 1`): NumPy's ufuncs
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"):
    _elementwise(_name, (lambda u: lambda xp, *operands: getattr(xp, u)(*operands))(_name))
_elementwise("round", lambda xp, x, decimals=0: xp.round(x, decimals))  # np.round / x.round(): halves to even


# ------------------------------------------------------------------ differentiable
def _remainder_vjp(g, o, a, b):
    return (wants(0) and _is_float(o) and _unb(g, a),
            wants(1) and _is_float(o) and _unb(F.neg(F.mul(g, F.floor_divide(a, b))), b))


_elementwise("remainder", lambda xp, a, b: xp.remainder(a, b), _remainder_vjp)
_elementwise("log1p", lambda xp, x: xp.log1p(x), lambda g, o, x: (F.div(g, F.add(x, 1)),))
_elementwise("expm1", lambda xp, x: xp.expm1(x), lambda g, o, x: (F.mul(g, F.add(o, 1)),))
_elementwise("log2", lambda xp, x: xp.log2(x), lambda g, o, x: (F.div(g, F.mul(x, math.log(2.0))),))
_elementwise("log10", lambda xp, x: xp.log10(x), lambda g, o, x: (F.div(g, F.mul(x, math.log(10.0))),))
_elementwise("reciprocal", lambda xp, x: xp.reciprocal(x), lambda g, o, x: (F.neg(F.mul(g, F.mul(o, o))),))
_elementwise("arctan", lambda xp, x: xp.arctan(x), lambda g, o, x: (F.div(g, F.add(F.mul(x, x), 1)),))
_elementwise("sinh", lambda xp, x: xp.sinh(x), lambda g, o, x: (F.mul(g, F.cosh(x)),))
_elementwise("cosh", lambda xp, x: xp.cosh(x), lambda g, o, x: (F.mul(g, F.sinh(x)),))
_elementwise("tan", lambda xp, x: xp.tan(x), lambda g, o, x: (F.mul(g, F.add(F.mul(o, o), 1)),))
# d/dx arcsin x = 1 / sqrt(1 - x^2), arccos its negation: infinite (and NaN past) |x| = 1, as eager's tape
_elementwise("arcsin", lambda xp, x: xp.arcsin(x), lambda g, o, x: (F.div(g, F.sqrt(F.sub(1, F.mul(x, x)))),))
_elementwise("arccos", lambda xp, x: xp.arccos(x), lambda g, o, x: (F.neg(F.div(g, F.sqrt(F.sub(1, F.mul(x, x))))),))


def _arctan2_vjp(g, o, a, b):  # atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
    r = F.add(F.mul(a, a), F.mul(b, b))
    return (wants(0) and _unb(F.div(F.mul(g, b), r), a), wants(1) and _unb(F.neg(F.div(F.mul(g, a), r)), b))


_elementwise("arctan2", lambda xp, a, b: xp.arctan2(a, b), _arctan2_vjp)
_elementwise("hypot", lambda xp, a, b: xp.hypot(a, b),  # d/da sqrt(a^2 + b^2) = a / out
             lambda g, o, a, b: (wants(0) and _unb(F.div(F.mul(g, a), o), a),
                                 wants(1) and _unb(F.div(F.mul(g, b), o), b)))
# np.nan_to_num (a loss or gradient made finite): its gradient passes where x is finite
_elementwise("nan_to_num", lambda xp, x, nan=0.0, posinf=None, neginf=None: xp.nan_to_num(x, nan=nan, posinf=posinf,
                                                                                            neginf=neginf),
             lambda g, o, x, nan=0.0, posinf=None, neginf=None: (F.where(F.isfinite(x), g, 0),))


def _logaddexp_vjp(g, o, a, b):  # d/da log(e^a + e^b) = e^(a - out): a softplus's sigmoid
    return (wants(0) and _unb(F.mul(g, F.exp(F.sub(a, o))), a),
            wants(1) and _unb(F.mul(g, F.exp(F.sub(b, o))), b))


_elementwise("logaddexp", lambda xp, a, b: xp.logaddexp(a, b), _logaddexp_vjp)
