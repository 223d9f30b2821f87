"""JitFunction: the speculative JIT's state machine.

    WARMUP    first `warmup` calls run eagerly from an instrumented copy (the profiler watches)
    GRAPH     a cached graph whose guards hold runs as one transaction
    GENERATE  no graph fits: generate one from the AST + profile (relaxing what kept failing)
    EAGER     no cached graph accepts the call and generation is impossible for this signature,
              or an assumption failed: run `fn` itself — the user always gets the eager result

Failures are counted per assumption; after `regen_after` failures of a relaxable assumption
the graph is regenerated with it relaxed (a conditional instead of a guessed branch, a graph
input instead of a baked-in scalar).
"""
from __future__ import annotations

import functools
import inspect
import os
import time
import types
import weakref

from .. import executor as ex
from ..executor.fused import MISS as _MISS
from ..profiler import Profile
from ..profiler.instrument import profiled_callable, Hooks
from ..ops.registry import _tapes
from ..executor.tiering import resolve_policy
from ..graphgen.support import keyword_only, split_call
from .assumptions import REASONS, Fallback
from .failures import FailuresMixin, rejected
from .generation import GenerationMixin
from .options import check_options
from .switches import DISABLE_NAME as _DISABLE_NAME, ENV_GET as _env_get, disabled as _disabled
from .polymorphism import UnknownDimsMixin
from .variants import VariantsMixin, is_split
from .explain import ReportingMixin
from . import choice as _choice
from .frames import CALLS as _CALLS, trim as _trim
from .choice import ChoiceMixin, resolve_choice


# Graphs cached for at most MAX_GRAPHS signatures (tree shapes, sizes, types) per function;
# beyond FREE_GRAPHS a new signature gets a graph only while at least half of the cached graphs
# ran twice or more. A dataset cycling through 16 or 32 tree shapes then runs every shape as a
# graph (TreeLSTM with 32 shapes: 0.81 ms a step against 12.0 ms when only 8 were cached and
# the rest ran eagerly), while a stream of one-off shapes stops generating after FREE_GRAPHS:
# each graph would cost its generation (30-180 ms for the tree models) and a guard check on every
# later call (~7 µs), and never run again. 64 rather than 32: the TreeRNN with 64 shapes cycling
# took 1.0-1.8 ms a call with half of them eager, 0.20 ms with all 64 cached (a TreeRNN graph
# holds ~0.7 MB). The graph that last accepted the same argument objects is tried first
# (`_hints`), so a cached shape costs one guard check, not a scan of the others' guards.
MAX_GRAPHS = 64
FREE_GRAPHS = 8
KEPT_TRIES = 4  # graphs made for ints kept as values, none run twice: the ints are inputs again
_MAX_HINTS = 1 << 14
_NO_HINT = (lambda: None, ())


class _Entry:
    __slots__ = ("graphs", "eager_reason", "failures", "relaxed", "retries", "split", "split_failed", "lengths",
                 "regrow")

    def __init__(self):
        self.graphs: list = []
        self.eager_reason: Fallback | None = None
        self.failures: dict = {}
        self.relaxed: set = set()
        self.retries = 0
        self.split: dict = {}  # branches generated once per outcome (variants.py): site key -> the outcome
        self.split_failed: set = set()  # the outcome combinations whose generation failed
        self.lengths: dict = {}  # container path -> lengths its failed length guards met (failures._growing)
        self.regrow = None  # [eager calls left, the next wait, failure key] before a growing log's retry


class JitFunction(GenerationMixin, FailuresMixin, VariantsMixin, UnknownDimsMixin, ReportingMixin, ChoiceMixin):
    """A function compiled speculatively. Call it like the original; see `stats()`/`explain()`."""

    _janus_jit = True

    def __init__(self, fn, warmup: int = 3, max_graphs: int = MAX_GRAPHS, regen_after: int = 2, mode: str = "plan",
                 bound=None, reassociate: bool = True, native=None, choose=None):
        if isinstance(fn, types.MethodType):
            bound, fn = fn.__self__, fn.__func__
        elif not isinstance(fn, types.FunctionType) and callable(fn) and not isinstance(fn, type):
            call = getattr(type(fn), "__call__", None)
            if isinstance(call, types.FunctionType):  # an nn.Module or other callable object
                bound, fn = fn, call
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"jit expects a Python function, method or callable object, got {type(fn).__name__}")
        self.__wrapped__ = fn
        self._kwonly = keyword_only(fn)  # (graphgen.support: keyword-only parameters, or None)
        self.__self__ = bound
        functools.update_wrapper(self, fn)
        self.warmup = warmup
        self.max_graphs = max_graphs
        self.regen_after = regen_after
        self.mode = mode
        self.reassociate = reassociate
        self.native = resolve_policy(native, reassociate)
        self.choose = resolve_choice(choose)
        self._trial_at = _choice.TRIAL_AFTER if self.choose == "measured" else None  # graph runs before eager's trial
        self.profile = Profile()
        self._hooks = Hooks(self.profile)
        self._entries: dict = {}
        self._fallbacks: dict = {}
        self._dims: dict = {}  # argument index -> axes of unknown size (see polymorphism.py)
        self._sizes: dict = {}  # (argument, axis) -> sizes seen
        self._no_poly: set = set()  # (argument, axis) whose graphs turned out to depend on the size
        self._superseded: list = []  # per-size signatures a pending unknown-dimension graph replaces
        self._hot = None  # the CompiledGraph that ran last (see __call__); None after any other event
        self._hot_peers: list = []  # the graphs of _hot's signature (its entry's list, live)
        self._pending = None  # (graph, the hot graph's runs) when it took a call the hot one missed (variants.py)
        self._hints: dict = {}  # ids of a call's arguments -> (the graph that accepted them, its peers)
        self._relaxed_values: set = set()  # values relaxed in any signature: varying in all (failures.py)
        self._static_values: set = set()  # ints kept as values, one graph per value (generation._compiled)
        self._never_static: set = set()  # ints kept as values that changed every call (_unkeep)
        self._kept_graphs: list = []  # the graphs made while ints were kept as values
        self._regions = None  # recursion regions: None untried, then whether graphs stage them (_region_graph)
        self.region_misses: list[str] = []  # why none could be staged, when they were tried and were not
        self._counters = dict(calls=0, warmup_calls=0, eager_calls=0, graph_calls=0, fallbacks=0,
                              graphs_generated=0, regenerations=0, guard_failures=0, assert_failures=0)
        self._times = dict(warmup_s=0.0, eager_s=0.0, graph_s=0.0, generate_s=0.0)
        self._fast = ex.Counts()  # graph calls counted by the fused functions (executor/fused.py)
        self._eager_fast = ex.Counts()  # eager calls chosen by measurement (choice.py)
        self.events: list = []  # (time, kind, text) for reports: the first explain.EVENTS_KEPT
        self.events_dropped = 0  # events after those (counted only)
        # the JIT's own attributes: any other is the user's (`train.lr`, `train.history`, the
        # function's own copied by update_wrapper), read and written by graphs like a function's
        self._internal = frozenset(self.__dict__).union(("_internal",)) - frozenset(fn.__dict__)
        _REGISTRY.append(self)

    def _fold(self):
        """The fused functions' graph calls and time into the counters."""
        for counts, kind in ((self._fast, "graph"), (self._eager_fast, "eager")):
            calls, seconds = counts.take()
            if calls:
                self._counters["calls"] += calls
                self._counters[f"{kind}_calls"] += calls
                self._times[f"{kind}_s"] += seconds

    @property
    def counters(self) -> dict:
        """calls, warmup_calls, eager_calls, graph_calls, fallbacks, graphs_generated, ..."""
        self._fold()
        return self._counters

    @property
    def times(self) -> dict:
        """Seconds spent warming up, eager, as graphs and generating."""
        self._fold()
        return self._times

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return _BoundJit(self, obj)

    # ================================================================== the state machine
    def __call__(self, *args, **kwargs):
        try:  # (an exception leaves with the user's frames only: jit/frames.py)
            if self.__self__ is not None:
                args = (self.__self__,) + args
            if self._kwonly is not None:  # every call's values as one tuple, the keyword-only ones last,
                positional = self._defaults_filled(args) if not kwargs else None  # so that `step(x, st, 0.3)`
                if positional is None:  # is not `lr=0.3`
                    positional = self._positional(args, kwargs)
                if positional is None:
                    self.counters["calls"] += 1
                    return self._eager_with(Fallback("kwargs", "a call its signature does not bind"), args, kwargs)
                args, kwargs = positional, {}
            hot = self._hot
            if hot is not None and not kwargs and not _tapes and _env_get(_DISABLE_NAME) is None:
                # The steady state: the graph that ran last, tried first, without computing the
                # signature key. Its guards check everything the graph relies on, so a call it
                # accepts is one it computes correctly; anything else takes the full path below.
                fast = hot.fast  # guards, plan, commit and statistics in one function (executor/fused.py)
                result = fast(args) if fast is not None else self._run_hot(hot, args)
                if result is not _MISS:
                    return result
                if fast.__class__ is _choice.Trial and fast.open is not None:  # a trial's graph block missed: the
                    self._hot = None  # full path's time is the graph's cost too (choice.Trial.charged)
                    return fast.charged(self._dispatch, args, kwargs)
                # The other graphs of its signature (a tree model's other tree shapes), the same
                # way: any graph whose guards accept the call computes it correctly. A guard that
                # fails costs its prefix of the guards; the full path would also compute the key.
                # First the peer that accepted these very argument objects last time (a dataset's
                # trees come back every epoch): cycling through 64 shapes, the scan below missed
                # ~32 guards a call. A stale hint (ids are reused) only costs its guards' miss.
                ids = tuple(map(id, args))
                ref, peers = self._hints.get(ids, _NO_HINT)
                hint = ref()
                if hint is not None and hint is not hot and hint in peers:  # (not dropped since)
                    result = self._run_hot(hint, args)
                    if result is not _MISS:
                        if self._takes_over(hot, hint):
                            self._hot, self._hot_peers = hint, peers
                        return result
                for g in self._hot_peers:
                    if g is not hot and g is not hint:
                        result = self._run_hot(g, args)
                        if result is not _MISS:
                            if self._takes_over(hot, g):
                                self._hot = g
                            self._hint(ids, g, self._hot_peers)
                            return result
                self._hot = None
            return self._dispatch(args, kwargs)
        except BaseException as exc:
            _trim(exc)
            raise

    def _hint(self, ids, g, peers):
        """Remember that graph g (of the signature whose graphs are `peers`) accepted arguments
        with these ids."""
        if len(self._hints) >= _MAX_HINTS:  # a stream of new objects: start over
            self._hints.clear()
        self._hints[ids] = (weakref.ref(g), peers)  # a graph dropped from the cache is not kept alive

    def _run_hot(self, g, args):
        """The call's result from graph g, or _MISS (its guards rejected the call, or the run
        failed: the full path runs it again and handles the failure)."""
        fast = g.fast  # guards, plan, commit and statistics in one function (executor/fused.py)
        if fast is not None:
            return fast(args)
        result = self._run_tried(g, args)
        if result is not _MISS:
            self._maybe_trial(g)
        return result

    def _run_tried(self, g, args):
        """A graph's call on the full path (`try_run`), MISS when it did not complete."""
        status, result = g.try_run(args, keep=True)  # (a failure: the full path takes it, not run again)
        if status is not ex.OK:
            return _MISS
        self._counters["calls"] += 1
        self._counters["graph_calls"] += 1
        self._times["graph_s"] += g.last_s
        return result

    def _dispatch(self, args, kwargs):
        if kwargs:
            positional = self._positional(args, kwargs)
            if positional is None:  # keyword-only parameters, **kwargs, or a bad call: eager says
                self.counters["calls"] += 1
                return self._eager_with(Fallback("kwargs", "keyword arguments that cannot be passed "
                                                           "positionally"), args, kwargs)
            args = positional
        c = self.counters
        c["calls"] += 1
        if _disabled():
            c["eager_calls"] += 1
            return self._plain(args)
        if _tapes:  # an eager GradientTape is recording: a graph would hide the ops from it
            self._note(Fallback("under-tape", "called while an eager GradientTape is recording"))
            return self._eager(args)
        # ---- WARMUP: profile eagerly
        if c["warmup_calls"] < self.warmup:
            return self._profiled(args)
        key = self._key(args)
        entry = self._entries.get(key)
        if entry is None:
            if self._shape_variant(key):  # a dimension keeps changing: one graph for all its sizes
                key = self._key(args)
                entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
        # ---- GRAPH: try cached graphs, most recently used first. An entry that makes no new
        # graphs (eager_reason: generating failed for some input) still runs the ones it has on
        # the calls they accept: one odd tree must not send every other tree shape to eager.
        guard_failure, split_misses = None, []
        for i, g in enumerate(entry.graphs):
            start = time.perf_counter()
            status, payload = g.try_run(args)
            if status == ex.OK:
                c["graph_calls"] += 1
                self.times["graph_s"] += time.perf_counter() - start
                if i:
                    entry.graphs.insert(0, entry.graphs.pop(i))
                self._hot = g
                self._hot_peers = entry.graphs
                if len(entry.graphs) > 1:  # hints are read only among a signature's several graphs
                    self._hint(tuple(map(id, args)), g, entry.graphs)
                self._maybe_trial(g)  # (measured against eager once it has run TRIAL_AFTER calls)
                return payload
            if status == ex.GUARD_FAILED:
                guard_failure = (g, payload)
                continue
            if status == ex.ASSERT_FAILED:
                if is_split(payload):  # the other outcome's graph may take it
                    split_misses.append((g, payload))
                    continue
                return self._assert_failed(entry, g, payload, args)
            return self._raised(entry, g, payload, args)
        if split_misses:
            return self._other_outcome(entry, split_misses, args, guard_failure)
        if entry.eager_reason is not None and not self._retry_growing(entry):
            return self._eager(args)
        # ---- GENERATE
        if guard_failure is not None:
            c["guard_failures"] += 1
            if self._guard_failed(entry, *guard_failure, args):
                return self._eager(args)
        if self._static_values and (len(self._kept_graphs) >= KEPT_TRIES or self._cache_full() is not None) \
                and not any(g.runs >= 2 for g in self._kept_graphs):
            self._unkeep()
        full = self._cache_full()
        if full is not None and self._regions is None and full.startswith(f"{FREE_GRAPHS} or more"):
            g = self._region_graph(entry, args)
            if g is not None:
                return self._first_run(entry, g, args, *g.try_run(args))
        if full is not None:
            c["fallbacks"] += 1
            fb = Fallback("max-graphs", full)
            said = self._fallbacks.get((fb.reason, fb.site, fb.detail))
            if said is None:  # said once (logged); counted every time
                self._note(fb)
            else:
                said.count += 1
            return self._eager(args)
        try:
            g = self._generate(entry, args)
        except Exception as exc:  # user code on baked-in values (1 / 0), or a generator bug: eager decides
            if os.environ.get("JANUS_LIKE_DEBUG"):
                raise
            return self._generation_raised(entry, exc, args)
        if g is None:
            return self._profiled(args) if entry.eager_reason is None else self._eager(args)
        return self._first_run(entry, g, args, *g.try_run(args))

    def _first_run(self, entry, g, args, status, payload):
        """The result of a graph's first run, on the call it was generated for; eager's after a
        failed assert, a guard failure or an exception."""
        if status == ex.OK:
            self.counters["graph_calls"] += 1
            return payload
        if status == ex.ASSERT_FAILED:
            if is_split(payload):  # the call takes the other outcome of a split branch: its graph
                return self._other_outcome(entry, [(g, payload)], args)
            return self._assert_failed(entry, g, payload, args)
        if status == ex.GUARD_FAILED:  # an input the commit writes overlaps another, is read-only, or a read raised
            fb = rejected(g, payload)
            self._note(fb)
            entry.graphs.remove(g)
            entry.eager_reason = fb
            return self._eager(args)
        return self._raised(entry, g, payload, args)

    # ================================================================== phases
    def _profiled(self, args):
        c = self.counters
        c["warmup_calls"] += 1
        self.profile.calls += 1
        for i, a in enumerate(args):  # argument values: an int that varies becomes a graph input
            self.profile.record_value(("arg", i), a)
        fn = profiled_callable(self.__wrapped__, self._hooks)
        start = time.perf_counter()
        pos, kw = split_call(self._kwonly, args)
        try:
            return fn(*pos, **kw)
        finally:
            self.times["warmup_s"] += time.perf_counter() - start

    def _eager(self, args):
        self.counters["eager_calls"] += 1
        start = time.perf_counter()
        try:
            return self._plain(args)
        finally:
            self.times["eager_s"] += time.perf_counter() - start

    def _eager_with(self, fallback, args, kwargs):
        self._note(fallback)
        self.counters["eager_calls"] += 1
        return self.__wrapped__(*args, **kwargs)

    def _positional(self, args, kwargs):
        """The call's values as one tuple: the positional parameters', then (with the defaults
        filled in) the keyword-only ones' (graphgen.support.split_call makes the call again)."""
        try:
            bound = inspect.signature(self.__wrapped__).bind(*args, **kwargs)
        except TypeError:
            return None
        bound.apply_defaults()
        if not bound.kwargs:
            return tuple(bound.args)
        kw = self._kwonly
        if kw is None or len(bound.args) != kw[0]:
            return None
        return tuple(bound.args) + tuple(bound.arguments[name] for name in kw[1])

    def _defaults_filled(self, args):
        """A positional call's values (`_positional`) from the function's current defaults, without
        inspect (~20 µs a call); None where that is not enough (a parameter without a default
        missing, too many arguments: `_positional` decides)."""
        fn, (n, names) = self.__wrapped__, self._kwonly
        kwdefaults, defaults = fn.__kwdefaults__, fn.__defaults__ or ()
        if kwdefaults is None or len(kwdefaults) != len(names) or not n - len(defaults) <= len(args) <= n:
            return None
        return args + defaults[len(args) - (n - len(defaults)):] + tuple(kwdefaults[name] for name in names)

    def _plain(self, args):
        """The function's own call on the values `args` (`_positional`)."""
        if self._kwonly is None:
            return self.__wrapped__(*args)
        pos, kw = split_call(self._kwonly, args)
        return self.__wrapped__(*pos, **kw)

    def _total_graphs(self):
        return sum(len(e.graphs) for e in self._entries.values())

    def _unkeep(self):
        """The ints kept as values (generation._compiled) took a new value on every call since
        (a step counter in a slice bound): none of the KEPT_TRIES graphs made for them ran twice.
        They are inputs again from now on, which sends the signatures that needed them eager,
        and those graphs go."""
        self._log("regen", f"{', '.join(sorted(self._static_values))} kept as values took a new value every "
                           "call: read as inputs again")
        self._never_static |= self._static_values
        self._static_values.clear()
        gone = set(map(id, self._kept_graphs))
        self._kept_graphs = []
        for e in self._entries.values():
            e.graphs[:] = [g for g in e.graphs if id(g) not in gone]

    def _cache_full(self) -> str | None:
        """Why a new signature gets no graph (it runs eagerly), or None."""
        n = self._total_graphs()
        if n >= self.max_graphs:
            return f"{self.max_graphs} graphs cached; new signatures run eagerly"
        if n >= FREE_GRAPHS and 2 * sum(g.runs >= 2 for e in self._entries.values() for g in e.graphs) < n:
            return (f"{FREE_GRAPHS} or more graphs cached and fewer than half of them ran twice; new signatures "
                    "run eagerly until the cached ones are reused")
        return None


_CALLS.update(f.__code__ for f in (JitFunction._plain, JitFunction._eager_with, JitFunction._profiled))


class _BoundJit:
    """`@jit` on a method, accessed through an instance."""

    _janus_jit = True

    def __init__(self, jf, obj):
        self._jf = jf
        self.__self__ = obj
        self.__wrapped__ = jf.__wrapped__

    def __call__(self, *args, **kwargs):
        try:
            return self._jf(self.__self__, *args, **kwargs)
        except BaseException as exc:
            _trim(exc)
            raise

    def stats(self):
        return self._jf.stats()

    def explain(self):
        return self._jf.explain()


_REGISTRY: list = []


def jit(fn=None, *, warmup: int = 3, max_graphs: int = MAX_GRAPHS, regen_after: int = 2, mode: str = "plan",
        reassociate: bool = True, native=None, choose=None):
    """Speculatively compile `fn` (function, bound method, or callable object such as an
    nn.Module). Usable as `@jit` or `@jit(warmup=2)`.

    `warmup`: profiled eager calls before the first graph. `max_graphs`: bound on cached graphs
    (past 8, new ones are made only while half of the cached graphs are being reused).
    `regen_after`: failures of one assumption before regenerating with it relaxed. `mode`:
    "plan" (generated code) or "interpret" (reference interpreter). `reassociate` (default on)
    allows passes that change the order of floating-point additions (folding per-time-step weight
    gradients into one matmul, merging embedding scatter-adds); those results match eager up to
    rounding. `reassociate=False` gives bit-identical results. `native` ("auto", "always", "off";
    default $JANUS_LIKE_NATIVE or "auto"; needs the optional Numba, reassociating mode only)
    compiles a graph to one native function once its plan time has paid for the compilation
    ("auto") or at its first run ("always"), and keeps it only when it agrees with the plan and is
    faster (see `executor/tiering.py`). `choose` ("measured", "graph"; default $JANUS_LIKE_CHOOSE
    or "measured"): with "measured", a graph that takes longer a call than the function itself
    (a step of a few Python numbers) hands its calls back to the function (see `jit/choice.py`).

        >>> import numpy as np, janus_like
        >>> @janus_like.jit
        ... def f(x):
        ...     return np.tanh(x) * 2
        >>> x = np.ones(3)
        >>> all((f(x) == np.tanh(x) * 2).all() for _ in range(5))
        True
    """
    check_options(warmup=warmup, max_graphs=max_graphs, regen_after=regen_after, mode=mode, reassociate=reassociate,
                   native=native, choose=choose)
    make = functools.partial(JitFunction, warmup=warmup, max_graphs=max_graphs, regen_after=regen_after, mode=mode,
                             reassociate=reassociate, native=native, choose=choose)
    return make if fn is None else make(fn)


__all__ = ["jit", "JitFunction", "REASONS"]
