"""Making a graph for a call (the JIT's GENERATE state, jit/function.py): generate it from the
function's AST and profile, optimize it, plan its commit (copies, index writes, in-place weight
updates, donated state arrays) and compile it; one thread at a time, with Python's cyclic
garbage collector paused."""
from __future__ import annotations

import contextlib
import gc
import threading
import time

from .. import executor as ex
from ..graphgen.evaluator import Generator
from ..graphgen.values import Unsupported
from ..passes import optimize
from ..passes.donate import donations
from ..passes.indexed_commits import indexed_commits
from ..passes.inplace import inplace_updates
from .assumptions import Fallback


class GenerationMixin:
    """Methods of JitFunction that make its graphs."""

    def _build(self, entry, args, name, dims=None, forced=None, sizes=None):
        """Generate, optimize and plan the commit copies of one graph for `args` (with `forced`:
        the outcomes of split branches it takes, see variants.py)."""
        gen = Generator(self.__wrapped__, name, self.profile, frozenset(entry.relaxed | self._relaxed_values),
                        unknown_dims=dims,
                        reassociate=self.reassociate, split={**entry.split, **(forced or {})},
                        regions=bool(self._regions), sizes=sizes,
                        static=frozenset(self._static_values)).generate(args)
        optimize(gen.graph, self.reassociate, entry.relaxed)
        # the guards', then the asserts' the graph runs (a pass may add one: passes/quotient.py)
        gen.assumptions += [n.params["assumption"] for n in gen.graph.asserts]
        gen.outputs.plan_copies()
        indexed_commits(gen)
        if self.reassociate:
            inplace_updates(gen)
        donations(gen)
        for slot in gen.slots:  # the values read at generation: kept, they would pin a weight array
            slot.value = None  # (and the batch) of that call for the graph's whole life
        return gen

    def _generate(self, entry, args, forced=None):
        """A new graph for this signature, or None (Unsupported: the reason is noted). Any other
        exception propagates: the caller lets eager decide whose error it is."""
        if not _GENERATING.acquire(blocking=False):  # another thread is generating: this call runs
            return None  # eagerly (the builder is one a process; the same thread may nest)
        try:
            with _collector_paused():
                return self._make_graph(entry, args, forced)
        finally:
            _GENERATING.release()

    def _make_graph(self, entry, args, forced):
        self._hot = None
        start = time.perf_counter()
        name = getattr(self.__wrapped__, "__qualname__", "fn")
        if self._dims and any(i < len(args) for i in self._dims):
            return self._make_polymorphic(entry, args, name, start)
        try:
            g = self._compiled(entry, args, name, forced)
        except Unsupported as exc:
            return self._failed(entry, exc, forced)
        except RecursionError:
            entry.eager_reason = Fallback("recursion-limit", "Python recursion limit during generation (a recursion "
                                          "whose end depends on a value the graph computes, such as a depth the "
                                          "warm-up saw vary, does not end while the graph is made)")
            self._note(entry.eager_reason)
            return None
        finally:
            self.times["generate_s"] += time.perf_counter() - start
        entry.graphs.insert(0, g)
        if self._static_values:
            self._kept_graphs.append(g)
        self.counters["graphs_generated"] += 1
        self._log("regen" if entry.relaxed else "graphs",
                  f"generated graph for {name}: {g.graph.size()} nodes, {len(g.assumptions)} assumptions"
                  + (f", relaxed {sorted(map(str, entry.relaxed))}" if entry.relaxed else ""))
        return g

    def _compiled(self, entry, args, name, forced):
        """The compiled graph for this call. Where the graph cannot be made because an int it
        reads as an input (an argument or a counter the warm-up saw vary, or a value relaxed after
        failures) is used as an axis, a size, an index or a recursion's depth, that int is kept as
        a value instead, from this call on: one graph per value, as for a shape. The ints read
        before the failure are kept, then those read before the next one, until the graph is
        made (at most MAX_KEEP_ROUNDS); then each is let go again where the graph is made without
        it, so a step counter read beside an axis stays an input. A step counter kept as a value
        makes a graph a call, none run twice, and is an input again after a few (function._unkeep)."""
        try:
            return self._compile(entry, args, name, forced)
        except (Unsupported, RecursionError) as exc:
            first = exc
        kept, exc = [], first
        for _ in range(MAX_KEEP_ROUNDS):
            ints = list(dict.fromkeys(t for t in getattr(exc, "dynamic_ints", ())
                                      if t not in self._static_values and t not in self._never_static))
            if not ints or isinstance(exc, Unsupported) and exc.reason not in _STRUCTURAL:
                break
            kept += ints
            self._static_values.update(ints)
            try:
                g = self._compile(entry, args, name, forced)
            except (Unsupported, RecursionError) as later:
                exc = later
                continue
            for t in list(kept) if len(kept) > 1 else ():
                h = self._letting_go(t, entry, args, name, forced)
                if h is not None:
                    g = h
                    kept.remove(t)
            self._log("regen", f"{', '.join(kept)} used as an axis, a size, an index or a depth: "
                               "one graph per value")
            return g
        self._static_values.difference_update(kept)
        raise first

    def _compile(self, entry, args, name, forced):
        return ex.CompiledGraph(self._build_any(entry, args, name, forced), self.mode, self.native,
                                self._fast, self._trial_at)

    def _letting_go(self, t, entry, args, name, forced):
        """The graph made with `t` an input again, or None (`t` stays kept)."""
        self._static_values.discard(t)
        try:
            return self._compile(entry, args, name, forced)
        except (Unsupported, RecursionError):
            self._static_values.add(t)
            return None


MAX_KEEP_ROUNDS = 4  # failures after which no more ints are kept for one graph (`_compiled`)
# why a graph could not be made that an int kept as a value may cure (`_compiled`)
_STRUCTURAL = frozenset({"data-dependent-python", "recursion-limit", "shape-dependent"})

_GENERATING = threading.RLock()  # graph generation, one thread at a time


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while a graph is generated (and back on after, if
    it was on). Generation allocates tens of thousands of long-lived objects (nodes, tuples,
    dicts), enough to trigger a full collection that walks every object in the process: about
    20 ms of the LSTM step's 0.3 s generation, for garbage that reference counting frees anyway
    (generation makes few reference cycles). The collection is deferred, not avoided: it runs
    later when the collector's thresholds say so, once."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
