"""Linear-algebra primitives: matmul, tensordot, dot and two-operand einsum, with gradients.

Each gradient rule is written with `F` ops, so it runs on a tape and inside a graph alike.
"""
from __future__ import annotations

import numpy as np

from . import api as F
from .primitives import _nd, _unb
from .registry import _builder, register, wants


def _matmul_vjp(g, out, a, b):
    wa, wb = wants(0), wants(1)
    if _nd(a) == 1 and _nd(b) == 1:
        return wa and F.mul(g, b), wb and F.mul(g, a)
    if _nd(a) == 1 and _nd(b) == 2:  # (k,) @ (k, m) -> (m,): a vector-matrix product each way
        ga = wa and F.matmul(g, F.swapaxes(b, -1, -2))
        if wb and _builder[0] is None:  # eager: the outer product as a broadcast multiply, the same
            return ga, F.mul(F.expand_dims(a, -1), g)  # products ((k, 1) @ (1, m): 10.8 -> 4.0 us at 128 x 64)
        # in a graph, the product the weight-gradient folding pass (passes/fold.py) sums over nodes
        return ga, wb and F.matmul(F.expand_dims(a, -1), F.expand_dims(g, -2))
    if _nd(a) == 1:  # (k,) @ (..., k, m) -> (..., m)
        g2 = F.expand_dims(g, -2)
        return (wa and F.sum_to(F.matmul(g2, F.swapaxes(b, -1, -2)), a),
                wb and F.sum_to(F.matmul(F.expand_dims(a, -1), g2), b))
    if _nd(b) == 1:  # (..., n, k) @ (k,) -> (..., n)
        return (wa and F.sum_to(F.mul(F.expand_dims(g, -1), b), a),
                wb and F.sum_to(F.squeeze(F.matmul(F.swapaxes(a, -1, -2), F.expand_dims(g, -1)), -1), b))
    return (wa and F.sum_to(F.matmul(g, F.swapaxes(b, -1, -2)), a),
            wb and F.sum_to(F.matmul(F.swapaxes(a, -1, -2), g), b))


register("matmul", lambda xp, a, b: xp.matmul(a, b), vjp=_matmul_vjp)


def _normalize_axes(axes, na, nb):
    if isinstance(axes, int):
        return list(range(na - axes, na)), list(range(axes))
    ax_a, ax_b = axes
    ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
    ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
    return [a % na for a in ax_a], [b % nb for b in ax_b]


def _tensordot_vjp(g, out, a, b, axes=2):
    na, nb = _nd(a), _nd(b)
    ax_a, ax_b = _normalize_axes(axes, na, nb)
    free_a = [i for i in range(na) if i not in ax_a]
    free_b = [i for i in range(nb) if i not in ax_b]
    nfa, nfb = len(free_a), len(free_b)
    ga = gb = None
    if wants(0):
        ga = F.tensordot(g, b, axes=(tuple(range(nfa, nfa + nfb)), tuple(free_b)))
        order = free_a + [ax_a[ax_b.index(bx)] for bx in sorted(ax_b)]
        ga = F.transpose(ga, tuple(int(i) for i in np.argsort(order)))
    if wants(1):
        gb = F.tensordot(a, g, axes=(tuple(free_a), tuple(range(nfa))))
        order = [ax_b[ax_a.index(axx)] for axx in sorted(ax_a)] + free_b
        gb = F.transpose(gb, tuple(int(i) for i in np.argsort(order)))
    return ga, gb


register("tensordot", lambda xp, a, b, axes=2: xp.tensordot(a, b, axes=axes), vjp=_tensordot_vjp)


def _dot_vjp(g, out, a, b):
    if _nd(a) == 0 or _nd(b) == 0:
        return wants(0) and _unb(F.mul(g, b), a), wants(1) and _unb(F.mul(g, a), b)
    if _nd(a) <= 2 and _nd(b) <= 2:
        return _matmul_vjp(g, out, a, b)
    return _tensordot_vjp(g, out, a, b, axes=((_nd(a) - 1,), (max(_nd(b) - 2, 0),)))


register("dot", lambda xp, a, b: xp.dot(a, b), vjp=_dot_vjp)


def _parse_einsum(subscripts):
    subscripts = subscripts.replace(" ", "")
    if "." in subscripts:
        raise NotImplementedError("einsum gradients do not support '...' yet")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins = subscripts
        letters = ins.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    a, b = ins.split(",")
    return a, b, out


def _einsum_operand_grad(g, out_sub, other, other_sub, target, target_sub):
    if len(set(target_sub)) != len(target_sub):
        raise NotImplementedError("einsum gradients do not support repeated indices in one operand")
    kept = "".join(c for c in target_sub if c in out_sub or c in other_sub)
    res = F.einsum(f"{out_sub},{other_sub}->{kept}", g, other)
    if kept != target_sub:  # indices summed only in the target: broadcast back
        expand = tuple(i for i, c in enumerate(target_sub) if c not in kept)
        res = F.broadcast_like(F.expand_dims(res, expand), target)
    return res


def _einsum_vjp(g, out, a, b, subscripts):
    sa, sb, so = _parse_einsum(subscripts)
    return (wants(0) and _einsum_operand_grad(g, so, b, sb, a, sa),
            wants(1) and _einsum_operand_grad(g, so, a, sa, b, sb))


register("einsum", lambda xp, a, b, subscripts: xp.einsum(subscripts, a, b), vjp=_einsum_vjp)


# ------------------------------------------------------------------ linear systems
# `np.linalg.solve(a, b)` and `np.linalg.inv(a)` of square matrices (a ridge regression head, a
# Gaussian-process step): x = a⁻¹ b, so db = a⁻ᵀ g and da = -db xᵀ; inv: da = -outᵀ g outᵀ.
def _solve_vjp(g, out, a, b):
    vector = len(b.shape) == 1  # NumPy 2's rule: only a 1-D b is a vector
    gb = F.solve(F.swapaxes(a, -1, -2), g)
    if not wants(0):
        return None, F.sum_to(gb, b)
    ga = F.neg(F.mul(F.expand_dims(gb, -1), F.expand_dims(out, -2)) if vector
               else F.matmul(gb, F.swapaxes(out, -1, -2)))
    return F.sum_to(ga, a), (F.sum_to(gb, b) if wants(1) else None)


def _inv_vjp(g, out, a):
    t = F.swapaxes(out, -1, -2)
    return (F.neg(F.matmul(F.matmul(t, g), t)),)


register("solve", lambda xp, a, b: xp.linalg.solve(a, b), vjp=_solve_vjp,
         doc="x with a @ x = b (np.linalg.solve), a square, b a matrix or a vector")
register("inv", lambda xp, a: xp.linalg.inv(a), vjp=_inv_vjp, doc="the inverse of square a (np.linalg.inv)")
