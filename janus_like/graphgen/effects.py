"""Calls whose effect reaches outside the graph's values (a mixin of the graph generator): a
`print`/logging call deferred to after the commit, seeing its arguments as they are when it is
made; a standard-library clock read when the graph runs; a `functools.lru_cache` helper of
constants, whose cached result becomes a graph constant.
"""
from __future__ import annotations

import string

from ..ops.registry import P
from .support import _as_kind
from .values import CACHED, OPAQUE, DeferredStr, ObjRef, Sym, Unsupported, VarRef, VarSnapshot


class EffectsMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def defer(self, fn, args, kwargs):
        if self.pure_depth:
            raise Unsupported("unsupported-syntax", "print inside a data-dependent branch", self.site)
        snap = self.snapshot_for_effect
        self.effects.append((fn, [snap(a) for a in args], {k: snap(v) for k, v in kwargs.items()}, self.site))
        return None

    def snapshot_for_effect(self, v):
        """What a deferred print/log call must see: state as it is *now*, not after the commit."""
        if isinstance(v, VarRef):
            return VarSnapshot(Sym(v.node, "tensor"), v.var)
        if isinstance(v, Sym) and v.origin is not None:  # the live buffer is written at commit
            return _as_kind(Sym(v.node, "array").copy(), v.kind)
        if isinstance(v, Sym):  # its value now: a later in-place write (`y += 1`) points v at a new node
            return Sym(v.node, v.kind)
        if isinstance(v, ObjRef) and isinstance(v.obj, (list, tuple, dict)):
            items = self.materialize(v, self.site)
            if isinstance(items, dict):
                return {k: self.snapshot_for_effect(x) for k, x in items.items()}
            return type(items)(self.snapshot_for_effect(x) for x in items)
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(self.snapshot_for_effect(x) for x in v)
        if isinstance(v, dict):
            return {k: self.snapshot_for_effect(x) for k, x in v.items()}
        return v

    def clock_read(self, func):
        """`time.perf_counter()`: a node that reads the clock when the graph runs (ops/draws.py)."""
        return _as_kind(self.builder.emit(P.clock, (), {"fn": func}), "py")

    def cached_call(self, func, args, kwargs):
        """A `functools.lru_cache` function of constants (`posenc(T, d)` with T a guarded size):
        called now, its result is a constant of the graph, the object eager's calls get from the
        cache. An in-place write into it (eager's would change the cache) is not staged."""
        plain = (int, float, str, bool, bytes, type(None))
        if not all(type(a) in plain or (type(a) is tuple and all(type(e) in plain for e in a))
                   for a in (*args, *kwargs.values())):
            raise Unsupported("unsupported-call", f"the lru_cache function {func.__name__} of graph values or "
                                                  "objects", self.site)
        out = self.lift(func(*args, **kwargs))
        if isinstance(out, Sym):
            out = Sym(out.node, out.kind)
            out.view = (OPAQUE, CACHED)
        return out

    def formatted_part(self, value, conv, spec):
        """One `{value!conv:spec}` of an f-string or a str.format: its text now, or (a graph value)
        the value as it is now, formatted when the effect that prints or logs it runs."""
        if isinstance(value, (Sym, ObjRef)):
            return (self.snapshot_for_effect(value), conv, spec)
        return _CONVERSIONS[conv](value, spec)

    @staticmethod
    def formats_graph_values(args, kwargs) -> bool:
        """Whether str.format's arguments hold graph values or text made from them."""
        return any(isinstance(v, (Sym, ObjRef, DeferredStr)) for v in (*args, *kwargs.values()))

    def str_format(self, template, args, kwargs):
        """`"loss {:.4f} at {step}".format(loss, step=k)` with graph values: a deferred string, as
        an f-string is. Fields that reach into a value (`{0.shape}`, `{d[k]}`) or nested specs
        stay eager."""
        parts, auto = [], 0
        for literal, field, spec, conv in string.Formatter().parse(template):
            if literal:
                parts.append(literal)
            if field is None:
                continue
            if "{" in (spec or "") or not (field == "" or field.isdigit() or field.isidentifier()):
                raise Unsupported("data-dependent-python", f"str.format field {{{field}}} of graph values", self.site)
            if (field == "" and auto is None) or (field.isdigit() and auto):  # Python's own errors
                raise ValueError("cannot switch from " + ("manual field specification to automatic field numbering"
                                                          if field == "" else
                                                          "automatic field numbering to manual field specification"))
            if field == "":
                field, auto = auto, auto + 1
            elif field.isdigit():
                auto = None
            value = kwargs[field] if isinstance(field, str) and not field.isdigit() else args[int(field)]
            if isinstance(value, DeferredStr):  # an f-string of graph values: its parts, as they are
                if conv not in (None, "s") or spec:
                    raise Unsupported("data-dependent-python", "a format spec for text made from graph values",
                                      self.site)
                parts.extend(value.parts)
                continue
            parts.append(self.formatted_part(value, conv or "", spec or ""))
        return DeferredStr(parts)


_CONVERSIONS = {"": format, "s": lambda x, s: format(str(x), s), "r": lambda x, s: format(repr(x), s),
                "a": lambda x, s: format(ascii(x), s)}
