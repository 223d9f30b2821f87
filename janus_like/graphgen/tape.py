"""GradientTape inside a graph (`SymbolicTape`): it records the ops the builder adds on watched
values, and its `gradient` emits the backward pass as graph nodes using the registry's vjp
rules — the same rules the eager tape uses (autodiff.py), keyed as eager keys its tape ids (a
Variable by its object, any other value by its node). Loops and conditional nodes record one
entry each (loop_grad.py, cond_grad.py), whose backward pass `recompute` and `backward_entries`
build.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..errors import GradientError
from ..ops import api as F
from ..tensor import Tensor
from .values import Sym, Unsupported, VarRef, array_copy

LOOP_GRAD = "loop-grad"  # a tape entry standing for a whole loop node (see loop_grad.py)
COND_GRAD = "cond-grad"  # ... and for a whole conditional node (see cond_grad.py)


def _key(v):
    if isinstance(v, _FrozenVar):
        return ("var", id(v.ref))
    return ("var", id(v)) if isinstance(v, VarRef) else v.node


class _FrozenVar(Sym):
    """A Variable's value as a tape entry keeps it (its node then: a later assign must not leak
    in), still keyed as the Variable: an outer tape recording the inner one's backward pass
    (a gradient penalty, `jl.grad` under a tape) sees the Variable it reads."""

    __slots__ = ("ref",)

    def __init__(self, ref, node):
        super().__init__(node, "tensor")
        self.ref = ref


class ValueOf(_FrozenVar):
    """`Variable.value()`: keyed as the Variable (eager's snapshot keeps its tape identity), but,
    as eager's plain Tensor, not watched by a tape that reads it (only the Variable's own reads are)."""

    __slots__ = ()


def _snapshot(a):
    if isinstance(a, (VarRef, _FrozenVar)):
        return _FrozenVar(a.ref if isinstance(a, _FrozenVar) else a, a.node)
    return Sym(a.node, a.kind)


class SymbolicTape:
    """GradientTape inside a graph: records ops on watched values; `gradient` emits the backward
    pass as nodes built by each op's vjp rule."""

    def __init__(self, builder, persistent=False, watch_accessed_variables=True):
        self.builder = builder
        self.persistent = persistent
        self.watch_vars = watch_accessed_variables
        self.watched: set = set()
        self.entries: list = []
        self.used = False

    def watch(self, value):
        from ..autodiff import _flatten

        for v in _flatten(value):
            if isinstance(v, Sym):
                self.watched.add(_key(v))

    def record(self, op, args, params, out):
        if op.vjp is None:
            return
        hit = False
        keys, snaps = [], []
        for a in args:
            if isinstance(a, Sym):
                k = _key(a)
                if k in self.watched:
                    hit = True
                elif isinstance(a, (VarRef, _FrozenVar)) and not isinstance(a, ValueOf) and self.watch_vars \
                        and self.builder.trainable(a.ref if isinstance(a, _FrozenVar) else a):
                    self.watched.add(k)  # (a Variable with trainable=False is not watched unless asked: eager's)
                    hit = True
                keys.append(k)
                snaps.append(_snapshot(a))
            else:
                keys.append(None)
                snaps.append(a)
        if hit:
            self.entries.append((op, keys, snaps, params, out.node, out.kind))
            self.watched.add(out.node)

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        from ..autodiff import _flatten, _map_structure

        if self.used and not self.persistent:
            raise Unsupported("user-error", "GradientTape.gradient called twice on a non-persistent tape")
        self.used = True
        me = self in self.builder.tapes
        if me:
            self.builder.tapes.remove(self)
        try:
            grads = self._backward(_flatten(target), output_gradients)
        finally:
            if me:
                self.builder.tapes.append(self)
        if not self.persistent:
            self.entries = []

        picked = {}

        def pick(s):
            if not isinstance(s, Sym):
                raise Unsupported("unsupported-call", f"gradient source is a {type(s).__name__}, not a tensor",
                                  self.builder.site)
            if _key(s) in picked:  # a source listed twice: its one Tensor, as eager's
                return picked[_key(s)]
            g = grads.get(_key(s))
            if g is None and unconnected_gradients == "zero":
                g = F.zeros_like(s)
            picked[_key(s)] = g = Sym(g.node, g.kind) if isinstance(g, Sym) else g  # (one Tensor per source)
            return g

        return _map_structure(pick, sources)

    def _backward(self, targets, output_gradients):
        from ..autodiff import _flatten, non_scalar_target

        seeds = _flatten(output_gradients) if output_gradients is not None else [None] * len(targets)
        if len(seeds) != len(targets):
            raise Unsupported("user-error", f"output_gradients has {len(seeds)} entries for {len(targets)} targets",
                              self.builder.site)
        grads: dict = {}
        for t, seed in zip(targets, seeds):
            if not (isinstance(t, Sym) and t.kind == "tensor"):  # a NumPy or Python value: eager's constant,
                continue  # connected to nothing (`sum([])`, 0, as a loss)
            if seed is None:
                if t.size != 1:
                    raise GradientError(non_scalar_target(t))
                seed = F.ones_like(t)
            seed = _seed(self.builder, seed)
            if seed.dtype != t.dtype and np.issubdtype(t.dtype, np.inexact):  # cotangents keep the primal's dtype
                seed = F.cast(seed, t.dtype)
            _acc(grads, _key(t), seed)
        for entry in reversed(self.entries):
            if entry[0] in (LOOP_GRAD, COND_GRAD):  # a loop or conditional node: its own backward node
                entry[1].backward(grads, _acc)
                continue
            op, keys, snaps, params, out_node, out_kind = entry
            g = grads.get(out_node)
            if g is None:
                continue
            in_grads = op.vjp(g, Sym(out_node, out_kind), *snaps, **params)
            for k, gx in zip(keys, in_grads):
                if k is not None and gx is not None:
                    _acc(grads, k, gx)
        for entry in self.entries:
            if entry[0] == COND_GRAD:
                entry[1].check_connected(grads)
        return {k: (Sym(v.node, "tensor") if isinstance(v, Sym) else v) for k, v in grads.items()}


def _seed(builder, seed):
    """An output gradient as eager's backward pass takes it: a Tensor as it is, anything else as
    `Tensor(seed)`, a copy (a later write to the caller's array does not reach the gradient)."""
    if isinstance(seed, Sym):
        return seed if seed.kind == "tensor" else Sym(array_copy(Sym(seed.node, "array")).node, "tensor")
    if isinstance(seed, Tensor):
        return builder.constant(seed, "tensor")
    return builder.constant(np.array(seed), "tensor")


def _acc(grads, key, g):
    prev = grads.get(key)
    grads[key] = g if prev is None else F.add(prev, g)


def recompute(builder, nodes, clone):
    """Add copies of `nodes` (a loop body or a branch, for its backward pass) to the builder's
    current block, reading the copies of each other and the values in `clone` (node id -> node),
    which gains an entry per copy; returns `mapped`, the renaming of recorded nodes to copies."""
    for m in nodes:
        inputs = tuple(clone.get(x.id, x) if isinstance(x, ir.Node) else x for x in m.inputs)
        clone[m.id] = builder.add(ir.Node(m.op, inputs, dict(m.params), m.aval, m.site, errstate=m.errstate,
                                          hint=m.hint))

    def mapped(key):
        return clone.get(key.id, key) if isinstance(key, ir.Node) else key

    return mapped


def backward_entries(entries, local, mapped):
    """Apply the vjp rules of plain tape `entries`, last first, accumulating into `local` (key ->
    gradient) in the eager tape's order; `mapped` renames recorded nodes to recomputed ones (a
    loop body or a branch cloned for its backward pass)."""
    for op, keys, snaps, params, out_node, out_kind in reversed(entries):
        g = local.get(mapped(out_node))
        if g is None:
            continue
        args = [Sym(mapped(s.node), s.kind) if isinstance(s, Sym) else s for s in snaps]
        in_grads = op.vjp(g, Sym(mapped(out_node), out_kind), *args, **params)
        for k, gx in zip(keys, in_grads):
            if k is not None and gx is not None:
                _acc(local, mapped(k), gx)
