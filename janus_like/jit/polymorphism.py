"""Unknown dimensions: one graph for every size of an input dimension that keeps changing.

When calls differ only in one dimension of one array argument (an RL episode length, a last
smaller batch) and at least `regen_after + 1` sizes were seen, the JIT generates a graph with that
dimension unknown: guards check the rank, the dtype and the other dimensions only. Shape-dependent
Python is refused while generating (`.shape`, `len()`, iterating an array), and the graph is
generated a second time for a *probe* size; the two must be identical node for node (ops, params,
constants, guards, commit plan). Anything that baked the size in (a `reshape` to it, an
`np.arange(n)`, a mean's count) shows up as a difference and the dimension stays fixed.

`UnknownDimsMixin` holds the JitFunction's side of it: signature keys, counting the sizes seen,
generating and probing the unknown-size graph, and giving a dimension up.
"""
from __future__ import annotations

import os
import time

import numpy as np

from .. import ir
from ..graphgen import masks
from ..graphgen.values import Unsupported
from ..ops.draws import Hole
from ..tensor import Tensor
from .assumptions import Fallback


def arg_key(a, unknown=None):
    """One argument's part of a signature key: the type, and for arrays and tensors the shape
    (with None for the axes in `unknown`) and dtype."""
    t = type(a)
    if t is np.ndarray or isinstance(a, Tensor):
        d = a if t is np.ndarray else a._data
        shape = d.shape
        if unknown:  # dimensions of unknown size do not split the cache
            shape = tuple(None if k in unknown else n for k, n in enumerate(shape))
        return (t, shape, d.dtype)
    return t


def varying_dims(old_key, new_key):
    """The (argument, axis) pairs in which two signature keys differ, when every differing
    argument is an array of the same type, rank and dtype differing in exactly one dimension
    (several arguments may vary together: states (T, 4) and returns (T,)); else None."""
    if len(old_key) != len(new_key):
        return None
    found = []
    for i, (a, b) in enumerate(zip(old_key, new_key)):
        if a == b:
            continue
        if not (isinstance(a, tuple) and isinstance(b, tuple) and a[0] is b[0] and a[2] == b[2]
                and len(a[1]) == len(b[1])):
            return None
        diff = [k for k, (x, y) in enumerate(zip(a[1], b[1])) if x != y]
        if len(diff) != 1 or None in (a[1][diff[0]], b[1][diff[0]]):
            return None
        found.append((i, diff[0]))
    return tuple(found) or None


def sizes_of(key, dims):
    return tuple(key[i][1][axis] for i, axis in dims)


def probe_args(args, unknown_dims):
    """Arguments with every unknown dimension one longer (zeros: only shapes matter)."""
    out = list(args)
    for i, axes in unknown_dims.items():
        a = args[i]
        data = a._data if isinstance(a, Tensor) else a
        shape = tuple(d + 1 if k in axes else d for k, d in enumerate(data.shape))
        probe = np.zeros(shape, data.dtype)
        out[i] = Tensor(probe) if isinstance(a, Tensor) else probe
    return tuple(out)


def _value(v, ids):
    if isinstance(v, ir.Node):
        return ("n", ids.get(v.id, -1))
    if isinstance(v, np.ndarray):
        return ("a", v.shape, str(v.dtype), v.tobytes())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(_value(x, ids) for x in v)
    if isinstance(v, dict):
        return ("d",) + tuple((k, _value(x, ids)) for k, x in sorted(v.items(), key=lambda kv: str(kv[0])))
    if type(v) is Hole:  # where a node's i-th input goes in a call's arguments (numpy_call, draw_of)
        return ("hole", v.index)
    if type(v).__name__ == "Assumption":
        return ("assume", v.kind, repr(v.expected))
    if isinstance(v, (int, float, str, bool, type(None), np.dtype, np.generic, slice)):
        return repr(v)
    return ("obj", id(v))


def signature(gen) -> tuple:
    """Everything about a generated graph except node ids and abstract shapes."""
    nodes = list(gen.graph.all_nodes())
    ids = {n.id: k for k, n in enumerate(nodes)}
    body = tuple((n.op, tuple(_value(i, ids) for i in n.inputs), _value(n.params, ids)) for n in nodes)
    outputs = tuple(_value(o, ids) for o in gen.graph.outputs)
    out = gen.outputs
    plan = (tuple(out.commits), repr(out.ops), repr([(getattr(f, "__name__", f), a, k) for f, a, k in out.effects]),
            repr(out.result))
    return body, outputs, gen.guard_src, plan


class UnknownDimsMixin:
    """The signature keys and unknown-dimension decisions of `function.JitFunction`."""

    def _key(self, args):
        dims = self._dims
        if not dims:
            return tuple(arg_key(a) for a in args)
        return tuple(arg_key(a, dims.get(i)) for i, a in enumerate(args))

    def _shape_variant(self, key) -> bool:
        """Count sizes of dimensions that differ between otherwise equal signatures; after
        `regen_after + 1` distinct sizes, make them unknown. True when the signature family changed."""
        for old in list(self._entries):
            found = varying_dims(old, key)
            if found is None or any(d in self._no_poly for d in found):
                continue
            sizes = self._sizes.setdefault(found, set())
            sizes.update((sizes_of(old, found), sizes_of(key, found)))
            if len(sizes) > self.regen_after:
                for i, axis in found:
                    self._dims[i] = frozenset(self._dims.get(i, frozenset()) | {axis})
                self._superseded = [k for k in self._entries if varying_dims(k, key) == found]
                self.counters["regenerations"] += 1
                self._log("regen", f"dimensions {list(found)} (argument, axis) vary: generating one graph "
                                   "for every size")
                return True
        return False

    def _give_up_dims(self, args, reason):
        for i, axes in self._dims.items():
            self._no_poly.update((i, a) for a in axes)
        self._dims = {}
        self._note(Fallback("shape-dependent", reason))

    def _generate_polymorphic(self, entry, args, name, forced=None):
        """The graph for unknown sizes: this call's, checked against a probe generation with every
        unknown dimension and every mask's stand-in count (graphgen/masks.py) one larger."""
        dims = dict(self._dims)
        reason = "shape-dependent" if dims else "data-dependent-shape"
        gen = self._build(entry, args, name, dims, forced, sizes=masks.FIRST)
        try:
            probe = self._build(entry, probe_args(args, dims), name, dims, forced, sizes=masks.FIRST + 1)
        except Unsupported as exc:  # e.g. a reshape that only works for some sizes
            raise Unsupported(reason, f"another size does not generate the same graph ({exc.detail})", exc.site)
        if signature(gen) != signature(probe):
            raise Unsupported(reason, "the graph changes with the size of the varying dimension" if dims else
                              "the graph changes with the number of items a boolean mask selects")
        return gen

    def _build_any(self, entry, args, name, forced):
        """`_build`, or for a step that selects with a mask it computes (`x[mask]`) the graph of
        unknown sizes (graphgen/masks.py)."""
        try:
            return self._build(entry, args, name, forced=forced)
        except Unsupported as exc:
            if not getattr(exc, "sized", False):
                raise
        return self._generate_polymorphic(entry, args, name, forced)

    def _make_polymorphic(self, entry, args, name, start):
        """The graph for this signature's unknown dimensions (replacing the per-size signatures
        it serves), or None when it cannot be made: the dimensions are given up."""
        from .. import executor as ex

        try:
            gen = self._generate_polymorphic(entry, args, name)
            g = ex.CompiledGraph(gen, self.mode, self.native, self._fast, self._trial_at)
        except Exception as exc:  # whatever the reason (a generator bug too): back to one graph per size
            if not isinstance(exc, Unsupported) and os.environ.get("JANUS_LIKE_DEBUG"):
                raise
            self._give_up_dims(args, f"{exc.reason}: {exc.detail}" if isinstance(exc, Unsupported)
                               else f"internal-error: {type(exc).__name__}: {exc}")
            for k in [k for k, e in self._entries.items() if e is entry]:
                del self._entries[k]
            return None
        finally:
            self.times["generate_s"] += time.perf_counter() - start
        for k in self._superseded:  # one graph now serves those sizes
            self._entries.pop(k, None)
        self._superseded = []
        entry.graphs.insert(0, g)
        self.counters["graphs_generated"] += 1
        self._log("regen", f"generated a graph for unknown dimensions {dict(self._dims)}: {g.graph.size()} nodes")
        return g
