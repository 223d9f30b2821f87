"""Calls whose effect reaches outside the graph's values (a mixin of the graph generator): a
`print`/logging call deferred to after the commit, seeing its arguments as they are when it is
made; a standard-library clock read when the graph runs; a `functools.lru_cache` helper of
constants, whose cached result becomes a graph constant.
"""
from __future__ import annotations

import collections
import logging
import logging.handlers
import re
import string
import types

import numpy as np

from ..ops.registry import P
from .attributes import user_method
from .support import _any_abstract, _any_objref, _as_kind, _str_parts
from .values import (CACHED, OPAQUE, DeferredStr, ObjRef, Sym, Unsupported, VarRef, VarSnapshot, array_copy,
                     numpy_scalar)


class LoggedAt:
    """A logging call deferred to the commit, whose record names the user's line and function as
    eager's does (logging finds its caller by walking the stack: the commit's `finish` here).
    `caller`: (filename, line, function) at the call in the jitted code."""

    __slots__ = ("fn", "logger", "caller")

    def __init__(self, fn, logger, caller):
        self.fn, self.logger, self.caller = fn, logger, caller

    def __call__(self, *args, **kwargs):
        logger = getattr(self.logger, "logger", self.logger)  # (a LoggerAdapter's)
        filename, line, func = self.caller
        name = getattr(func, "__name__", "<lambda>")  # (a function, or a LocalFunction: both have one)
        logger.findCaller = lambda stack_info=False, stacklevel=1: (filename, line, name, None)
        try:
            return self.fn(*args, **kwargs)
        finally:
            del logger.findCaller


# handlers that keep records: the standard library's buffers and queues, pytest's capture
_KEEPING = (logging.handlers.BufferingHandler, logging.handlers.QueueHandler)


def _keeps_records(logger) -> bool:
    """Whether a record logged through `logger` reaches a handler known to keep it (a
    MemoryHandler, a QueueHandler, pytest's `caplog`): that handler holds the logged objects
    themselves, where a deferred call gives copies of their values at the log call. A handler
    of the user's own is taken to format the record in `emit`, as most do."""
    logger = getattr(logger, "logger", logger)  # (a LoggerAdapter's)
    while logger is not None:
        if any(isinstance(h, _KEEPING) or type(h).__name__ == "LogCaptureHandler" for h in logger.handlers):
            return True
        logger = logger.parent if logger.propagate else None
    return False


class EffectsMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def defer(self, fn, args, kwargs):
        if self.pure_depth:
            raise Unsupported("unsupported-syntax", "print inside a data-dependent branch", self.site)
        if fn is print:  # an object shown by its class's own method: that text, made here
            args = [DeferredStr(self.formatted_parts(a, "s", "")) if _own_text_object(a) else a for a in args]
        if any(_own_text(a) for a in (*args, *kwargs.values())):
            raise Unsupported("data-dependent-python", "logging an object whose class has its own "
                                                       "__str__/__repr__/__format__", self.site)
        if isinstance(fn, LoggedAt) and _keeps_records(fn.logger) and any(
                isinstance(a, (Sym, ObjRef)) and not (isinstance(a, Sym) and a.kind == "py") for a in args):
            raise Unsupported("unsupported-call", "logging arrays or objects to a handler that may keep the record "
                                                  "(its args are the objects themselves, formatted later)", self.site)
        snap = self.snapshot_for_effect
        self.effects.append((fn, [snap(a) for a in args], {k: snap(v) for k, v in kwargs.items()}, self.site))
        return None

    def snapshot_for_effect(self, v):
        """What a deferred print/log call must see: state as it is *now*, not after the commit."""
        if isinstance(v, VarRef):
            return VarSnapshot(Sym(v.node, "tensor"), v.var)
        if isinstance(v, Sym) and v.origin is not None:  # the live buffer is written at commit
            return _as_kind(array_copy(Sym(v.node, "array")), v.kind)
        if isinstance(v, Sym):  # its value now: a later in-place write (`y += 1`) points v at a new node
            return Sym(v.node, v.kind)
        if isinstance(v, ObjRef) and isinstance(v.obj, (list, tuple, dict, collections.deque)) \
                and type(v.obj) not in (list, tuple, dict) and not hasattr(v.obj, "_fields"):
            # a Counter, a defaultdict, a deque: its text is its class's, of its state now
            raise Unsupported("data-dependent-python", f"text of a {type(v.obj).__name__} from the inputs", self.site)
        if isinstance(v, ObjRef) and isinstance(v.obj, (list, tuple, dict)):
            items = self.materialize(v, self.site)
            if isinstance(items, dict):
                return {k: self.snapshot_for_effect(x) for k, x in items.items()}
            snaps = [self.snapshot_for_effect(x) for x in items]
            if isinstance(v.obj, tuple) and hasattr(v.obj, "_fields"):  # a namedtuple's text names its class
                return tuple.__new__(type(v.obj), snaps)
            return type(items)(snaps)
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
        cache (a guard calls it again on every call and checks it gives that object). An in-place
        write into it (eager's would change the cache) is not staged."""
        ref, func = func, func.obj
        plain = (int, float, str, bool, bytes, type(None))
        if not all(type(a) in plain or (type(a) is tuple and all(type(e) in plain for e in a))
                   for a in (*args, *kwargs.values())):
            raise Unsupported("unsupported-call", f"the lru_cache function {func.__name__} of graph values or "
                                                  "objects", self.site)
        value = func(*args, **kwargs)
        self.prog.check_call_identity(ref.slot, args, kwargs, value, self.site)
        out = self.lift(value)
        if isinstance(out, Sym):
            out = Sym(out.node, out.kind)
            out.view = (OPAQUE, CACHED)
        return out

    def logger_query(self, logger, name, args, kwargs):
        """`logger.isEnabledFor(logging.DEBUG)`, `logger.getEffectiveLevel()`: asked now, and asked
        again by a guard on every call (a level set between calls fails it). Other methods of a
        logger (`setLevel`, `addHandler`) stay eager."""
        if name not in ("isEnabledFor", "getEffectiveLevel") or kwargs or _any_abstract(args) \
                or not all(type(a) is int for a in args):
            raise Unsupported("unsupported-call", f"Logger.{name} inside the function", self.site)
        result = getattr(logger.obj, name)(*args)
        call = f"{name}({', '.join(map(str, args))})"
        self.prog.check_result(logger.slot, f"{{v}}.{call}", result, self.site)
        return result

    def formatted_parts(self, value, conv, spec):
        """The parts of one `{value!conv:spec}` of an f-string, a str.format or a str()/repr():
        its text now, or (a graph value) the value as it is now, formatted when the effect that
        prints or logs it runs (or after the commit, for text returned or stored). An input
        object whose class shows it with its own method has that method run inlined here: its
        text is of the object's state at this point."""
        if _own_text_object(value):
            return self.shown_parts(value, conv, spec)
        if _any_abstract(value) or _any_objref(value):
            if _own_text(value):  # (inside a container: shown by the container's repr, later)
                raise Unsupported("data-dependent-python", "text of a container holding an object whose class has "
                                                           "its own __str__/__repr__/__format__", self.site)
            _formats(value, lambda v: _CONVERSIONS[conv](v, spec), self.site)
            return [(self.snapshot_for_effect(value), conv, spec)]
        return [_CONVERSIONS[conv](value, spec)]

    def shown_parts(self, obj, conv, spec):
        """`format(obj, spec)`, `str(obj)` or `repr(obj)` by the methods of obj's class, inlined."""
        klass = type(obj.obj)
        if conv == "" and user_method(klass, "__format__"):
            name, args, after = "__format__", [obj, spec], ""
        elif conv in ("", "s") and user_method(klass, "__str__"):
            name, args, after = "__str__", [obj], spec
        else:  # object's __str__ and __format__ show the repr
            name, args, after = "__repr__", [obj], spec
        method = getattr(klass, name)
        if conv == "a" or (conv == "" and after and name == "__repr__") or not isinstance(method, types.FunctionType):
            raise Unsupported("data-dependent-python", f"{conv or 'format'} of a {klass.__name__} object the inputs "
                                                       "hold", self.site)
        self.class_member(klass, name)
        text = self.inline(method, args, {})
        if isinstance(text, str):
            return [format(text, after)]
        if isinstance(text, DeferredStr) and not after:
            return list(text.parts)
        raise Unsupported("data-dependent-python", f"{klass.__name__}.{name} giving {type(text).__name__}", self.site)

    @staticmethod
    def formats_graph_values(args, kwargs) -> bool:
        """Whether str.format's arguments hold graph values or text made from them."""
        values = (*args, *kwargs.values())  # (a list or dict holding one: `"{}".format([loss])`)
        return any(isinstance(v, DeferredStr) for v in values) or _any_abstract(values) or _any_objref(values)

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
            parts.extend(self.formatted_parts(value, conv or "", spec or ""))
        return DeferredStr(parts)

    def percent_format(self, template, right):
        """`"step %d loss %.4f" % (step, loss)` with graph values: a deferred string, each
        directive applied to its value alone (`"%.4f" % (loss,)`, as Python formats each in
        turn). `*` widths, `%(name)s` keys and a mapping on the right stay eager."""
        if isinstance(right, dict) or isinstance(right, ObjRef) and isinstance(right.obj, dict):
            raise Unsupported("data-dependent-python", "%-formatting of a mapping of graph values", self.site)
        values = list(right) if isinstance(right, tuple) else [right]
        parts, at, used = [], 0, 0
        for m in _DIRECTIVE.finditer(template):
            parts.append(template[at:m.start()])
            at = m.end()
            if m.group(0) == "%%":
                parts.append("%")
                continue
            if m.group("key") is not None or "*" in m.group(0) or m.group("type") is None:
                raise Unsupported("data-dependent-python", f"%-formatting directive {m.group(0)!r} of graph values",
                                  self.site)
            if used == len(values):
                raise Unsupported("user-error", "not enough arguments for format string", self.site)
            value, used = values[used], used + 1
            if isinstance(value, DeferredStr):  # text made from graph values: its parts, as they are
                if m.group(0) != "%s":
                    raise Unsupported("data-dependent-python", "a %-directive for text made from graph values",
                                      self.site)
                parts.extend(value.parts)
            elif m.group(0) in ("%s", "%r", "%a"):  # str()/repr()/ascii(), as a field of an f-string
                parts.extend(self.formatted_parts(value, m.group(0)[1], ""))
            elif _any_objref(value):
                raise Unsupported("data-dependent-python", f"{m.group(0)!r} of an input object", self.site)
            elif _any_abstract(value):
                _formats(value, lambda v, d=m.group(0): d % (v,), self.site)
                parts.append((self.snapshot_for_effect(value), "%", m.group(0)))
            else:
                parts.append(m.group(0) % (value,))
        if used != len(values):
            raise Unsupported("user-error", "not all arguments converted during string formatting", self.site)
        parts.append(template[at:])
        return DeferredStr([p for p in parts if p != ""])


# a printf-style directive (`%-8.3f`, `%d`, `%%`); `type` None: one Python would reject
_DIRECTIVE = re.compile(r"%(?:%|(?:\((?P<key>[^)]*)\))?[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d*))?[hlL]?"
                        r"(?P<type>[diouxXeEfFgGcrsa])?)")

_CONVERSIONS = {"": format, "s": lambda x, s: format(str(x), s), "r": lambda x, s: format(repr(x), s),
                "a": lambda x, s: format(ascii(x), s)}


def _formats(value, fmt, site):
    """Check that a graph value formats as asked (`f"{y:.2f}"` of a 1-d array raises TypeError):
    the text is made after the commit, so an error then would come after the step's writes, or
    not at all for text nothing reads. A spec's error depends on the value's type, not its
    numbers: a stand-in of the same type, shape and dtype raises it now, and the step runs
    eagerly, raising it where eager does."""
    if not isinstance(value, Sym) or value.node.aval is None or value.kind == "tensor":
        return
    dtype = np.dtype(value.node.aval[1])
    if value.kind == "py":
        stand_in = {"b": True, "i": 1, "u": 1, "f": 1.0, "c": 1j}.get(dtype.kind)
    else:
        stand_in = np.zeros(value.shape, dtype)
        stand_in = stand_in[()] if value.ndim == 0 and numpy_scalar(value) else stand_in
    if stand_in is None:
        return
    try:
        fmt(stand_in)
    except (TypeError, ValueError) as exc:
        raise Unsupported("user-error", f"formatting a graph value: {exc}", site) from exc


def _own_text(v, reached=False) -> bool:
    """Whether v (an input object, or a container holding some) is shown by a method its class
    defines (not `object`'s, an enum's or a library's): text of the object's state at the time."""
    if isinstance(v, ObjRef):
        return _own_text(v.obj, True)
    if isinstance(v, (list, tuple, dict)):
        return any(_own_text(x, reached) for x in (v.values() if isinstance(v, dict) else v))
    if not reached or isinstance(v, (int, float, str, bool, type(None))):
        return False
    return any(user_method(type(v), name) is not None for name in ("__str__", "__repr__", "__format__"))


def _own_text_object(v) -> bool:
    """An input object, not a container, shown by its class's own method (`shown_parts` runs it)."""
    return isinstance(v, ObjRef) and not isinstance(v.obj, (list, tuple, dict)) and _own_text(v)


def joined_text(sep, items, site):
    """`sep.join(items)` of text and formatted graph values: one deferred text."""
    if not all(isinstance(t, (str, DeferredStr)) for t in items):
        raise Unsupported("user-error", "str.join of an item that is not text", site)
    parts = []
    for k, t in enumerate(items):
        parts += ([sep] if k and sep else []) + _str_parts(t)
    return DeferredStr(parts)
