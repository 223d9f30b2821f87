"""Tape-based reverse-mode autodiff with TensorFlow Eager semantics.

    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    dy_dx = tape.gradient(y, x)

A tape records every op whose inputs it watches (watched tensors, outputs of recorded ops, and
every Variable read while it is active). `gradient` walks the record backwards applying each op's
vector-Jacobian rule; those rules run through `bind`, so an enclosing tape records the backward
pass too — which is how nested tapes give higher-order derivatives.
"""
from __future__ import annotations

import itertools

import numpy as np

from .errors import GradientError
from .ops import api as F
from .ops.indexing import build_index, is_basic
from .ops.registry import REGISTRY, _tapes, _wanted
from .tensor import Tensor, Variable, _wrap


class GradientTape:
    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self.persistent = persistent
        self.watch_accessed_variables = watch_accessed_variables
        self._watched: set[int] = set()
        self._entries: list = []
        self._used = False
        self._recording = False

    # ---------------------------------------------------------------- recording
    def __enter__(self):
        _tapes.append(self)
        self._recording = True
        return self

    def __exit__(self, *exc):
        self._stop()
        return False

    def _stop(self):
        if self._recording:
            _tapes.remove(self)
            self._recording = False

    def watch(self, tensor):
        for t in _flatten(tensor):
            if not isinstance(t, Tensor):
                raise TypeError(f"GradientTape.watch expects tensors, got {type(t).__name__}")
            self._watched.add(t._tid)

    def _record(self, op, args, params, outs):
        """An entry (op, input values, params, output values, input tape ids, output tape ids)
        when an input is watched. A tensor is kept as the array and id it has now: later assigns
        to a Variable, or functional updates (t[i] = v, t += 1) that rebind a Tensor object, must
        not leak in. A tensor input has an id, an array or a number has None."""
        watched = self._watched
        hit = False
        inputs = []
        tids = []
        for a in args:
            if isinstance(a, Tensor):
                tid = a._tid
                tids.append(tid)
                if tid in watched:
                    hit = True
                elif type(a) is Variable and self.watch_accessed_variables and a.trainable:
                    watched.add(tid)
                    hit = True
                inputs.append(a._data)
            else:
                tids.append(None)
                inputs.append(a)
        if hit:
            otids = tuple(o._tid for o in outs)
            self._entries.append((op, inputs, params, tuple(o._data for o in outs), tuple(tids), otids))
            watched.update(otids)

    # ---------------------------------------------------------------- gradients
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """d(target)/d(sources). `sources` may be a tensor, list, tuple, dict or nested structure;
        the result has the same structure. Unconnected sources give None, or zeros with
        `unconnected_gradients="zero"`."""
        if self._used and not self.persistent:
            raise GradientError("GradientTape.gradient can only be called once on a non-persistent tape; "
                                "use GradientTape(persistent=True) to compute several gradients")
        self._used = True
        was_recording = self._recording
        if was_recording:
            _tapes.remove(self)  # the backward pass is not recorded on this tape itself
        try:
            grads = _backward(self._entries, target, output_gradients, _flatten(sources))
        finally:
            if was_recording:
                _tapes.append(self)
        if not self.persistent:
            self._entries = []

        picked = {}

        def pick(s):
            if not isinstance(s, Tensor):
                raise TypeError(f"gradient sources must be tensors or variables, got {type(s).__name__}")
            if s._tid in picked:  # a source listed twice (tied weights): its one Tensor
                return picked[s._tid]
            g = grads.get(s._tid)
            if type(g) is np.ndarray:
                g = _wrap(g)
            if g is None and unconnected_gradients == "zero":
                g = F.zeros_like(s)
            picked[s._tid] = g
            return g

        return _map_structure(pick, sources)


def non_scalar_target(t) -> str:
    """The error text of a gradient of a non-scalar target `t` without output_gradients."""
    return (f"gradient of a non-scalar target (shape {tuple(t.shape)}) needs output_gradients of the same "
            f"shape; reduce it first (e.g. loss.sum()) or pass output_gradients=")


def _backward(entries, target, output_gradients, sources=None):
    """Cotangents by tensor id. With `sources`, only ops on a path from a source get their rule
    applied, and a rule is told (`registry.wants`) which of its inputs lead to a source: the
    others' cotangents (an input batch's, a constant's) would be discarded, so they are never
    computed. The cotangents that are computed are the same ops in the same order: the same bits.
    A cotangent is a Tensor, or (from an array rule, ops/eager_vjp.py) a bare NumPy array: no
    tape records this backward pass, so it needs no identity until a tensor rule takes it."""
    targets = _flatten(target)
    seeds = _flatten(output_gradients) if output_gradients is not None else [None] * len(targets)
    if len(seeds) != len(targets):
        raise GradientError(f"output_gradients has {len(seeds)} entries for {len(targets)} targets")
    grads: dict[int, Tensor] = {}
    owned: set[int] = set()  # tids whose gradient is a sum made here (aliased by nothing else)
    for t, seed in zip(targets, seeds):
        if not isinstance(t, Tensor):  # a NumPy or Python value: a constant, connected to nothing
            continue
        if seed is None:
            if t.size != 1:
                raise GradientError(non_scalar_target(t))
            seed = F.ones_like(t)
        seed = seed if isinstance(seed, Tensor) else Tensor(seed)
        if seed.dtype != t.dtype and np.issubdtype(t.dtype, np.inexact):  # cotangents keep the primal's dtype
            seed = F.cast(seed, t.dtype)
        _accumulate(grads, owned, t._tid, seed)
    reach = _reachable(entries, sources) if sources is not None else None
    arrays = _ARRAYS and not _tapes  # (the rules below start no tape)
    for op, inputs, params, outs, tids, otids in reversed(entries):
        if len(otids) == 1:
            g = grads.get(otids[0])
            if g is None:
                continue
        else:
            out_grads = [grads.get(t) for t in otids]
            if all(gg is None for gg in out_grads):
                continue
            g = None
        wanted = None
        if reach is not None and not reach.issuperset(tids):
            if reach.isdisjoint(tids):
                continue
            wanted = tuple(t in reach for t in tids)
        if g is None:
            g = tuple(F.zeros_like(o) if gg is None else _wrap(gg) if type(gg) is np.ndarray else gg
                      for gg, o in zip(out_grads, outs))
        if op is _GETITEM and (wanted is None or wanted[0]) and _rows_added(grads, owned, tids[0], inputs, g, params):
            continue
        in_grads = None
        if arrays and op.eager_vjp is not None:
            gd = g if type(g) is np.ndarray else g._data if type(g) is Tensor else None
            if type(gd) is np.ndarray:
                in_grads = op.eager_vjp(wanted, gd, outs[0], *inputs, **params)
                if in_grads is not None:
                    in_grads = [r if r is None or type(r) is np.ndarray else _wrap(r) for r in in_grads]
        if in_grads is None:
            if type(g) is np.ndarray:
                g = _wrap(g)
            out = _tensor(outs[0], otids[0]) if len(otids) == 1 else tuple(map(_tensor, outs, otids))
            previous = _wanted[0]
            _wanted[0] = wanted
            try:
                in_grads = op.vjp(g, out, *[d if t is None else _tensor(d, t) for d, t in zip(inputs, tids)], **params)
            finally:
                _wanted[0] = previous
        for t, gx, w in zip(tids, in_grads, wanted or _ALL):
            if gx is not None and w and t is not None:
                _accumulate(grads, owned, t, gx)
    return grads


_ALL = itertools.repeat(True)  # every input wanted
_GETITEM = REGISTRY["getitem"]
_ARRAYS = True  # the NumPy rules of ops/eager_vjp.py where an op has one (tests switch them off)


def _reachable(entries, sources):
    """Ids of the tensors that depend on a source: the sources, then every output of a recorded
    op with such an input (in recording order, so a value rebound later is not confused)."""
    reach = {s._tid for s in sources if isinstance(s, Tensor)}
    update = reach.update
    for _op, _inputs, _params, _outs, tids, otids in entries:
        if not reach.isdisjoint(tids):
            update(otids)
    return reach


def _tensor(data, tid):
    """The tensor a recorded value was (its array and tape id), for a rule written on tensors."""
    t = _new(Tensor)
    t._data = data
    t._tid = tid
    return t


_new = object.__new__


def _rows_added(grads, owned, tid, inputs, g, params) -> bool:
    """A basic index's cotangent (`x[3]`, `x[:, 64:128]`: each position once) added in place into
    the positions it selected, `grad[idx] += g`, where the rule (getitem_grad) would build a
    zero array of x's whole shape and the accumulation add all of it: a TreeRNN leaf's embedding
    row in a (500, 64) table, an LSTM gate's columns. The same one addition per selected element
    as the dense sum; the other elements are not added 0 (equal values; a -0.0 stays -0.0 where
    the dense sum makes it 0.0). Only
    for NumPy floats of one dtype, and not while an outer tape records the backward pass (it
    must see the rule's ops)."""
    if type(g) is Tensor:
        g = g._data
    if _tapes or type(g) is not np.ndarray or tid is None:
        return False
    index = params["index"]
    x = inputs[0]
    if not is_basic(index) or g.dtype != x.dtype or x.dtype.kind != "f":
        return False
    prev = grads.get(tid)
    if prev is None:  # the first: a fresh zero array, owned (nothing else references it)
        dense = np.zeros(x.shape, x.dtype)
        dense[build_index(index, inputs[1:])] = g
        grads[tid] = dense
        owned.add(tid)
        return True
    if type(prev) is Tensor:
        prev = prev._data
    if tid not in owned or type(prev) is not np.ndarray or prev.dtype != x.dtype or prev.shape != x.shape:
        return False
    prev[build_index(index, inputs[1:])] += g
    return True


def _accumulate(grads, owned, tid, g):
    """Add gradient `g` into the slot of tensor `tid`. The first sum is a new array that nothing
    else references (vjp rules may return views or their own cotangent, so a first contribution
    is never written to); later contributions of the same shape and dtype are added into it in
    place, which saves allocating and page-faulting a weight-sized array per use. Not while an
    outer tape records the backward pass: it must see each sum as its own op."""
    prev = grads.get(tid)
    if prev is None:
        grads[tid] = g
        return
    if tid in owned and not _tapes:
        gd = g if type(g) is np.ndarray else g._data if type(g) is Tensor else None
        if type(prev) is np.ndarray:
            if type(gd) is np.ndarray and gd.shape == prev.shape and gd.dtype == prev.dtype:
                prev += gd  # same value as add(prev, g): the same one rounding per element
                return
        elif type(gd) is type(prev._data) and gd.shape == prev.shape and gd.dtype == prev.dtype:  # same device
            prev._data += gd
            return
    grads[tid] = F.add(prev, g)
    owned.add(tid)


def _flatten(x):
    if isinstance(x, dict):
        return [leaf for k in x for leaf in _flatten(x[k])]
    if isinstance(x, (list, tuple)):
        return [leaf for i in x for leaf in _flatten(i)]
    return [x]


def _map_structure(fn, x):
    if isinstance(x, dict):
        return {k: _map_structure(fn, v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_map_structure(fn, v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_map_structure(fn, v) for v in x)
    return fn(x)


# ------------------------------------------------------------------ functional forms
def value_and_grad(fn, argnums=0):
    """`value_and_grad(f)(*args)` -> (f(*args), df/d args[argnums]). Arguments are converted to
    tensors when they are arrays or Python floats; `argnums` may be an int or a tuple."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def wrapped(*args, **kwargs):
        args = list(args)
        for i in nums:
            if not isinstance(args[i], Tensor):
                args[i] = Tensor(np.asarray(args[i], dtype=float) if isinstance(args[i], (int, float)) else args[i])
        with GradientTape() as tape:
            for i in nums:
                tape.watch(args[i])
            value = fn(*args, **kwargs)
        grads = tape.gradient(value, [args[i] for i in nums], unconnected_gradients="zero")
        return value, (grads[0] if single else tuple(grads))

    wrapped.__name__ = f"value_and_grad({getattr(fn, '__name__', 'fn')})"
    wrapped._janus_inline = True  # plain Python on a tape: jitted code calling it inlines it (graphgen/calls.py)
    return wrapped


def grad(fn, argnums=0):
    """`grad(f)(*args)`: the gradient of scalar-valued f with respect to args[argnums]."""
    vg = value_and_grad(fn, argnums)

    def wrapped(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    wrapped.__name__ = f"grad({getattr(fn, '__name__', 'fn')})"
    wrapped._janus_inline = True
    return wrapped


__all__ = ["GradientTape", "grad", "value_and_grad", "_wrap"]
