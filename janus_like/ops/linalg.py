"""Linear-algebra primitives: matmul, tensordot, dot, einsum (any number of operands) and linear
systems, with gradients.

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


def _parse_einsum(subscripts, ndims):
    """The operands' and the output's subscripts with '...' spelled out as letters (the same
    letters for the same trailing broadcast dimensions of every operand), implicit output as
    NumPy forms it (the letters used once, sorted, after the broadcast dimensions)."""
    subscripts = subscripts.replace(" ", "")
    ins, out = subscripts.split("->") if "->" in subscripts else (subscripts, None)
    ins = ins.split(",")
    if len(ins) != len(ndims):
        raise ValueError(f"einsum: {len(ins)} operand subscripts for {len(ndims)} operands")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in subscripts][::-1]
    n_ell = max((nd - len(s.replace("...", "")) for s, nd in zip(ins, ndims) if "..." in s), default=0)
    ell = "".join(spare[:n_ell])
    ins = [s.replace("...", ell[n_ell - (nd - len(s.replace("...", ""))):] if n_ell else "")
           for s, nd in zip(ins, ndims)]
    if out is None:
        letters = "".join(ins)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return ins, out


def _einsum_operand_grad(g, subs, out_sub, operands, i):
    target, target_sub = operands[i], subs[i]
    if len(set(target_sub)) != len(target_sub):
        raise NotImplementedError("einsum gradients do not support repeated indices in one operand")
    others = [s for j, s in enumerate(subs) if j != i]
    kept = "".join(c for c in target_sub if c in out_sub or any(c in s for s in others))
    spec = ",".join([out_sub] + others) + "->" + kept
    res = F.einsum(spec, g, *[o for j, o in enumerate(operands) if j != i])
    if kept != target_sub:  # indices summed only in the target: broadcast back
        expand = tuple(k for k, c in enumerate(target_sub) if c not in kept)
        res = F.broadcast_like(F.expand_dims(res, expand), target)
    return F.sum_to(res, target)  # '...' dimensions of size 1 broadcast against the others


def _einsum_vjp(g, out, *operands, subscripts):
    subs, so = _parse_einsum(subscripts, [len(o.shape) for o in operands])
    return tuple(wants(i) and _einsum_operand_grad(g, subs, so, operands, i) for i in range(len(operands)))


def _einsum(xp, *operands, subscripts):
    out = xp.einsum(subscripts, *operands)
    # one operand: NumPy may give a view of it ("ij->ji", "ii->i"); ops give fresh arrays
    return out.copy() if len(operands) == 1 and isinstance(out, xp.ndarray) else out


register("einsum", _einsum, vjp=_einsum_vjp, doc="np.einsum of any number of operands, '...' included")


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


def _solve(xp, a, b):
    if xp is not np and b.ndim > 1 and a.shape[:-2] != b.shape[:-2]:
        # CuPy's solve wants equal batch shapes where NumPy broadcasts them
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a, b = xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:])
    return xp.linalg.solve(a, b)


register("solve", _solve, vjp=_solve_vjp, raises=True,
         doc="x with a @ x = b (np.linalg.solve), a square, b a matrix or a vector")
register("inv", lambda xp, a: xp.linalg.inv(a), vjp=_inv_vjp, raises=True,
         doc="the inverse of square a (np.linalg.inv)")
