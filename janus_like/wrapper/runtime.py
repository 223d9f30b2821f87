"""The wrapper's runtime: hotness counters, the jit-or-not decision, and per-call spans.

Input: calls arriving through the prologues `rewrite` inserted. Output: each hot function either
runs through a `HotFunction` (a `janus_like.jit` JitFunction plus a stopwatch), or is *demoted*
(its clean code put back, so it costs nothing from then on) when it does not look like array
code or the JIT never managed to run it as a graph.

    cold:     hot[i]() -> False                       (one C-level iterator step per call)
    hot:      call[i](*args) -> decide once:
                  array code?  -> HotFunction(jit(clean copy)) handles this and later calls
                  otherwise    -> fn.__code__ = clean code; run it
"""
from __future__ import annotations

import ast
import itertools
import sys
import threading
import time
import types

from .rewrite import FunctionSite, code_index

_ARRAY_MODULES = ("numpy", "janus_like", "cupy")
_FALSE = itertools.repeat(False).__next__
_TRUE = itertools.repeat(True).__next__
SPAN_CAP = 20000  # per function; totals are always exact
KINDS = ("warmup", "generate", "graph", "eager", "fallback")


class Runtime:
    """Shared by every module rewritten for one run (bound to `__janus_like_rt__` in each)."""

    def __init__(self, *, warmup: int = 3, hot_after: int = 2, demote_after: int = 5):
        self.warmup = warmup
        self.hot_after = max(1, hot_after)
        self.demote_after = demote_after
        self.hot: list = []  # id -> callable answering "is it hot now?"
        self.call: list = []  # id -> what the prologue forwards to once hot
        self.sites: list[FunctionSite] = []
        self.functions: dict = {}  # id -> the (prologue-carrying) function object
        self.hot_functions: list[HotFunction] = []
        self.demoted: dict = {}  # id -> reason
        self.sources: dict = {}  # filename -> original source text
        self._clean: dict = {}  # filename -> {(qualname, firstlineno): clean code}
        self.t0 = time.perf_counter()

    # ---------------------------------------------------------------- set-up (load time)
    def new_site(self, qualname, module, filename, lineno) -> FunctionSite:
        site = FunctionSite(len(self.sites), qualname, module, filename, lineno)
        self.sites.append(site)
        n = self.hot_after - 1  # calls that stay cold; the next one decides
        self.hot.append(itertools.chain(itertools.repeat(False, n), itertools.repeat(True)).__next__)
        self.call.append(_Decide(self, site.id))
        return site

    @staticmethod
    def trim():
        """The prologue's handler: the exception leaving a forwarded call loses the prologue's
        and the runtime's frames (jit/frames.py), so code that catches it sees eager's."""
        from ..jit.frames import trim

        trim(sys.exc_info()[1])

    def register(self, index):
        def record(fn):
            self.functions[index] = fn
            return fn
        return record

    # ---------------------------------------------------------------- the decision
    def clean_code(self, fn):
        """The function's code compiled from the unmodified source (same name, lines, cells)."""
        filename = fn.__code__.co_filename
        table = self._clean.get(filename)
        if table is None:
            module_code = compile(ast.parse(self.sources[filename], filename), filename, "exec", dont_inherit=True)
            table = self._clean[filename] = code_index(module_code)
        return table[(fn.__code__.co_qualname, fn.__code__.co_firstlineno)]

    def clean_copy(self, fn):
        code = self.clean_code(fn)
        copy = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        copy.__kwdefaults__ = fn.__kwdefaults__
        copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
        copy.__annotations__ = dict(fn.__annotations__)
        copy.__dict__.update(fn.__dict__)
        return copy

    def demote(self, index, reason: str) -> None:
        fn = self.functions.get(index)
        if fn is not None and fn.__code__.co_filename in self.sources:
            fn.__code__ = self.clean_code(fn)
        self.hot[index] = _FALSE
        self.demoted[index] = reason

    def decide(self, index, args, kwargs):
        """First hot call: the HotFunction to run it through, or None (demoted)."""
        fn = self.functions.get(index)
        if fn is None:  # the register decorator never ran (should not happen)
            self.hot[index] = _FALSE
            return None
        from ..jit.function import _REGISTRY, jit

        if any(getattr(j, "__wrapped__", None) is fn for j in _REGISTRY):
            self.demote(index, "the script jits it itself")
            return None
        if not looks_like_array_code(fn, args, kwargs, self.clean_code(fn)):
            self.demote(index, "no array code (not jitted)")
            return None
        # reassociate=False: an unmodified script must print exactly what `python script.py` prints
        hot = HotFunction(self, index, jit(self.clean_copy(fn), warmup=self.warmup, reassociate=False))
        self.hot_functions.append(hot)
        self.call[index] = hot
        return hot


class _Decide:
    """`call[i]` until the decision is made."""

    __slots__ = ("rt", "index")

    def __init__(self, rt, index):
        self.rt, self.index = rt, index

    def __call__(self, *args, **kwargs):
        hot = self.rt.decide(self.index, args, kwargs)
        if hot is None:
            return self.rt.functions[self.index](*args, **kwargs)  # its code is clean now
        return hot(*args, **kwargs)


class HotFunction:
    """A jitted function plus a stopwatch: each call is timed and classified by which of the
    JitFunction's counters moved (warm-up, generation, graph, eager, fallback)."""

    def __init__(self, rt, index, jf):
        self.rt, self.index, self.jf = rt, index, jf
        self.site = rt.sites[index]
        self.spans: list = []  # (start, end, kind, thread id)
        self.totals = {k: 0.0 for k in KINDS}
        self.counts = {k: 0 for k in KINDS}
        self.calls = 0
        self.check_at = jf.warmup + rt.demote_after
        self.demoted = False

    def __call__(self, *args, **kwargs):
        jf = self.jf  # (keyword arguments too: the JitFunction binds them, jit/function.py `_positional`)
        c = jf.counters
        before = (c["warmup_calls"], c["graph_calls"], c["graphs_generated"], c["fallbacks"])
        gen_before = jf.times["generate_s"]
        start = time.perf_counter()
        try:
            return jf(*args, **kwargs)
        finally:
            end = time.perf_counter()
            self._record(start, end, before, jf.times["generate_s"] - gen_before)

    def _record(self, start, end, before, generate_s):
        c = self.jf.counters
        if c["warmup_calls"] != before[0]:
            kind = "warmup"
        elif c["fallbacks"] != before[3]:
            kind = "fallback"
        elif c["graph_calls"] != before[1]:
            kind = "graph"
        else:
            kind = "eager"
        tid = threading.get_ident()
        if generate_s > 0 or c["graphs_generated"] != before[2]:
            generate_s = min(generate_s, end - start)
            self._add(start, start + generate_s, "generate", tid)
            start += generate_s
        self._add(start, end, kind, tid)
        self.calls += 1
        if self.calls == self.check_at:
            self._maybe_demote()

    def _maybe_demote(self):
        """Checked after warm-up + 5, 10, 20, 40, ... calls: a function that mostly runs eagerly
        through the JIT only pays its overhead, so it gets its plain code back."""
        self.check_at = 2 * self.check_at - self.jf.warmup
        c = self.jf.counters
        after_warmup = c["calls"] - c["warmup_calls"]
        if self.demoted or 2 * c["graph_calls"] >= after_warmup:
            return
        reason = "never ran as a graph" if c["graph_calls"] == 0 else \
            f"ran as a graph in only {c['graph_calls']} of {after_warmup} calls after warm-up"
        fbs = sorted(self.jf.fallbacks(), key=lambda fb: -fb.count)
        if fbs:
            reason += f" (most common fallback: [{fbs[0].reason}] {fbs[0].detail})"
        self.demoted = True
        self.rt.demote(self.index, reason)

    def _add(self, start, end, kind, tid):
        self.totals[kind] += end - start
        self.counts[kind] += 1
        if len(self.spans) < SPAN_CAP:
            self.spans.append((start, end, kind, tid))


def looks_like_array_code(fn, args, kwargs, code=None) -> bool:
    """Cheap guess: an argument holds arrays/tensors, or the code names NumPy or janus_like."""
    if "numpy" not in sys.modules:
        return False
    if any(_holds_arrays(a) for a in list(args) + list(kwargs.values())):
        return True
    g = fn.__globals__
    for name in _names(code or fn.__code__):
        v = g.get(name)
        if v is None:
            continue
        mod = v.__name__ if isinstance(v, types.ModuleType) else getattr(v, "__module__", None)
        if isinstance(mod, str) and mod.startswith(_ARRAY_MODULES):
            return True
    return False


def _names(code):
    yield from code.co_names
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            yield from _names(const)


def _is_array(v) -> bool:
    mod = type(v).__module__
    return isinstance(mod, str) and mod.startswith(_ARRAY_MODULES) and hasattr(v, "shape")


def _holds_arrays(v, depth: int = 2) -> bool:
    if _is_array(v):
        return True
    if depth == 0:
        return False
    if isinstance(v, (list, tuple)):
        return any(_holds_arrays(x, depth - 1) for x in v[:16])
    if isinstance(v, dict):
        return any(_holds_arrays(x, depth - 1) for x in itertools.islice(v.values(), 16))
    d = getattr(v, "__dict__", None)
    if isinstance(d, dict) and not isinstance(v, (type, types.ModuleType, types.FunctionType)):
        return any(_holds_arrays(x, depth - 1) for x in itertools.islice(d.values(), 16))
    return False
