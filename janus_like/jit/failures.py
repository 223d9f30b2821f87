"""What a JitFunction does when speculation fails (a mixin of `function.JitFunction`).

- generation is Unsupported: the signature runs eagerly with the reason (or, for a branch the
  profile never saw, is profiled again first; for a branch a conditional node cannot hold, one
  graph per outcome is made instead: variants.py);
- a guard or an assert fails: the failure is counted against its assumption, and after
  `regen_after` failures of a relaxable one the graph is regenerated with it relaxed; a container
  whose length guard keeps failing as it grows (`growing-container`, after GROWING_AFTER lengths)
  sends the signature eager;
- the graph raises, or generating it does: eager re-runs the call and decides whose error it is
  (eager raises too: the user's; else a janus_like defect, and that signature runs eagerly,
  unless the graph ran a `try` as if its body raised nothing: then it counts like a failed
  assumption).
"""
from __future__ import annotations

import ast
import collections
import os
import re

from .assumptions import INT64_RANGE, Fallback, user_site

GROWING_AFTER = 4  # length-guard failures of one container before `_growing` decides
WINDOW_RUNS_PER_MISS = 2  # graph runs per failure of a window's bounds assert that keep the window
REGROW_AFTER = 32  # eager calls before a growing log whose length is relaxed is tried again (doubling)


class FailuresMixin:
    def _failed(self, entry, exc, forced=None):
        if self._split(entry, exc):  # profile this call, then one graph per outcome
            self._note(Fallback(exc.reason, f"{exc.detail}: one graph per outcome there instead", exc.site))
            return None
        fb = Fallback(exc.reason, exc.detail, exc.site)
        self._note(fb)
        if self._variant_failed(entry, exc, forced):  # the calls taking these outcomes run eagerly
            return None
        if (exc.reason == "unprofiled-branch" or exc.retry) and entry.retries < 3:
            entry.retries += 1  # profile this call, then try again
        else:
            entry.eager_reason = fb
        return None

    def _assert_failed(self, entry, g, assumption, args):
        self._hot = None
        c = self.counters
        c["assert_failures"] += 1
        c["fallbacks"] += 1
        self._log("assumptions", assumption.failure_text if assumption is not None else "assert failed")
        self._count_failure(entry, g, assumption)
        return self._eager(args)

    def _guard_failed(self, entry, g, index, args=()):
        """Returns True when this call should just run eagerly (waiting to see if it repeats)."""
        self._hot = None
        if index < 0:
            self._note(Fallback("user-error", "reading an input raised (missing attribute or item)"))
            return False
        assumption = g.assumptions[index]
        self._log("assumptions", assumption.failure_text)
        if assumption.relax is not None and assumption.kind == "value" and \
                assumption.relax[1] not in self._static_values:  # (an int kept as a value: a new graph)
            self.counters["fallbacks"] += 1
            return not self._count_failure(entry, g, assumption)
        if assumption.kind in ("length", "keys") and self._growing(entry, assumption, args):
            return True
        return False  # a new structure/shape/type: specialize another graph

    def _growing(self, entry, assumption, args=()) -> bool:
        """A container's length failed its guard on more than GROWING_AFTER calls, each with a
        length not seen before (where the path can be followed from the arguments), and none of
        the signature's graphs ran twice: a log that grows every call, read back whole. Each new
        length would cost a generation and never run again; the signature runs eagerly. (Tree
        shapes or batches cycling through a few lengths reuse their graphs, or bring a length
        back, and never get here.)"""
        key = ("length", assumption.path)
        n = entry.failures[key] = entry.failures.get(key, 0) + 1
        size = _size_at(assumption.path, args)
        if size is not None:
            seen = entry.lengths.setdefault(assumption.path, set())
            if size in seen or None in seen:  # a length came back (None marks that it did once)
                seen.add(None)
                return False
            seen.add(size)
        if n <= GROWING_AFTER or any(h.runs > 1 for h in entry.graphs):
            return False
        relax = assumption.relax  # a list only len() reads: its length becomes a graph input
        if relax is not None and relax not in entry.relaxed:
            entry.relaxed.add(relax)
            entry.graphs[:] = [h for h in entry.graphs if all(a.relax != relax for a in h.assumptions)]
            self.counters["regenerations"] += 1
            self._log("regen", f"len({assumption.path}) changed on {n} calls: read when the graph runs")
            return False
        entry.eager_reason = Fallback("growing-container", f"the length of {assumption.path} changed on {n} calls "
                                                           "and no graph ran twice", assumption.site)
        room = _room_at(assumption.path, args)
        if room is not None:  # a bounded deque (a score window) stops growing when full: generate again then
            entry.regrow = [room + 1, room + 1, key]
        elif ("length", assumption.path) in entry.relaxed:  # its last items may become readable as it grows
            wait = REGROW_AFTER if entry.regrow is None else 2 * entry.regrow[1]
            entry.regrow = [wait, wait, key]
        self._note(entry.eager_reason)
        return True

    def _retry_growing(self, entry) -> bool:
        """Whether this call generates again for a signature a growing log sent eager, its length
        relaxed: a window of its last items (`history[-10:]`) reads the whole log while the log is
        shorter, a new graph per length, and only a longer log is read by its last items. After
        REGROW_AFTER eager calls (then twice as many each time) one graph is generated; a new
        length failing its guard sends the signature eager again at once. The graphs that ran
        once (lengths gone by) are dropped."""
        regrow = entry.regrow
        if regrow is None or entry.eager_reason is None or entry.eager_reason.reason != "growing-container":
            return False
        regrow[0] -= 1
        if regrow[0] > 0:
            return False
        entry.eager_reason = None
        entry.failures[regrow[2]] = GROWING_AFTER - 1  # this call's guard failure, then one more new length
        entry.graphs[:] = [g for g in entry.graphs if g.runs > 1]
        self.counters["regenerations"] += 1
        self._log("regen", f"{regrow[2][1]} grew for {regrow[1]} eager calls: generating again")
        return True

    def _region_graph(self, entry, args):
        """Graphs were made and not reused (tree shapes that never repeat): once, a graph that
        stages the function's self-recursive callees as recursion regions (graphgen/recursion.py),
        which walk any tree at run time. Kept only when it holds one; None otherwise."""
        self._regions = True
        try:
            g = self._generate(entry, args)
            misses = list(g.gen.region_misses) if g is not None else []
        except Exception as exc:  # noqa: BLE001 - the call runs eagerly as it would have without regions
            if os.environ.get("JANUS_LIKE_DEBUG"):
                raise
            g, misses = None, [f"generating the graph failed ({type(exc).__name__}: {exc})"]
        if g is not None and any(n.op == "recursion" for n in g.graph.all_nodes()):
            self._log("regen", "staged the recursive functions as recursion regions: one graph for every tree")
            return g
        if g is not None:
            entry.graphs.remove(g)
        self.region_misses = misses or ["no self-recursive call with one tree argument"]
        self._log("regen", "no self-recursive function could be staged as a recursion region "
                           f"({'; '.join(self.region_misses)}); new shapes run eagerly")
        self._regions = False
        return None

    def _count_failure(self, entry, g, assumption):
        assumption.failures += 1
        self._note(Fallback("assumption", assumption.failure_text(), assumption.site))
        key = assumption.relax
        if key is None:
            return False
        n = entry.failures[key] = entry.failures.get(key, 0) + 1
        if key[0] == "window" and g is not None and g.runs >= WINDOW_RUNS_PER_MISS * n:
            return False  # a shorter last batch once an epoch (windows.py): that call alone runs eagerly
        if (n >= self.regen_after or key in self._relaxed_values) and key not in entry.relaxed:
            entry.relaxed.add(key)
            if key[0] == "value":  # a step counter changes whatever the shapes: other signatures'
                self._relaxed_values.add(key)  # graphs read it as an input from their next generation
            # Every graph of the signature that bets on it goes, not only the one that failed:
            # one left for another input structure (a tree shape) would fail the same way on
            # each call of that structure, and send it to eager every time. (In place: the
            # list is also the hot graph's peers.)
            entry.graphs[:] = [h for h in entry.graphs
                               if h is not g and all(a.relax != key for a in h.assumptions)]
            self.counters["regenerations"] += 1
            self._log("regen", f"relaxing {key[0]} assumption at {assumption.site} after {n} failures")
            return True
        return False

    def _generation_raised(self, entry, exc, args):
        """Generating raised: evaluating the user's code on values the graph bakes in (a
        constant `1 / 0`), or a generator defect. Eager runs the call: when it raises the same
        exception, it is the user's error, reported at eager's source line; else a janus_like
        defect. Either way the signature runs eagerly from then on."""
        self.counters["fallbacks"] += 1
        entry.eager_reason = Fallback("internal-error", f"{type(exc).__name__}: {exc}")
        try:
            result = self._eager(args)
        except Exception as eager_exc:
            _forget_context(eager_exc, exc)
            if type(eager_exc) is type(exc) and str(eager_exc) == str(exc):
                fb = Fallback("user-error", f"generation raised {type(exc).__name__}: {exc}, as eager does",
                              user_site(eager_exc))
                if entry.retries < 3:  # this call's inputs raise: a later call's may not (a bad batch)
                    entry.retries += 1
                    entry.eager_reason = None
                    self._note(fb)
                    raise
                entry.eager_reason = fb
            else:
                entry.graphs.clear()
            self._note(entry.eager_reason)
            raise
        if getattr(exc, "forced", None) and self._variant_failed(entry, exc, None):
            # generated for outcomes of split branches this call does not take (the profile's
            # majority, or a guess after a miss): the code on that path raises, as eager would
            # there; the calls taking those outcomes run eagerly, the other graphs stay
            entry.eager_reason = None
            self._note(Fallback("user-error", f"generation raised {type(exc).__name__}: {exc} on the outcomes "
                                              f"{_outcomes(exc.forced)} of split branches, which this call does "
                                              "not take (the calls taking them run eagerly)"))
            return result
        entry.graphs.clear()  # a generator defect: the signature's other graphs are not trusted either
        self._note(entry.eager_reason)
        return result

    def _raised(self, entry, g, exc, args):
        """The graph raised: eager re-runs the call. When eager raises too, it is the user's
        error (eager's exception reaches the caller); when eager succeeds, the graph computes
        something eager does not: a janus_like defect (that signature runs eagerly from then on),
        or, in a graph that ran a `try` as if its body raised nothing, an exception eager's
        handler caught: counted like a failed assumption, the signature goes eager after
        `regen_after` of them (an occasional exception keeps the graphs)."""
        self._hot = None
        self.counters["fallbacks"] += 1
        text = f"graph raised {type(exc).__name__}: {exc}"
        try:
            result = self._eager(args)
        except Exception:
            self._note(Fallback("user-error", text))
            raise
        sites = g.gen.try_sites
        fb = (Fallback("try", f"{text}, which eager's handler caught (try at {', '.join(sites)})") if sites
              else Fallback("internal-error", f"{text}, where eager did not"))
        self._note(fb)
        if sites:
            key = ("try", tuple(sites))
            entry.failures[key] = entry.failures.get(key, 0) + 1
            if entry.failures[key] < self.regen_after:
                return result
        entry.graphs.clear()  # a defect for this signature: none of its graphs is trusted (in place: the peers)
        entry.eager_reason = fb
        if os.environ.get("JANUS_LIKE_DEBUG") and not sites:
            raise RuntimeError(f"janus_like: {fb.detail}") from exc
        return result


def _outcomes(forced) -> str:
    """Split branches' outcomes ({site key: taken}) as text: "train.py:12 taken, train.py:15 not taken"."""
    return ", ".join(f"{os.path.basename(key[0])}:{key[1]} {'taken' if taken else 'not taken'}"
                     for key, taken in forced.items())


_STEP = re.compile(r"\.(\w+)|\[('(?:[^'\\]|\\.)*'|-?\d+)\]")
_MISSING = object()


def _object_at(path, args):
    """The object an assumption's path names (`arg1`, `arg0.history`, `arg0['window']`), followed
    from the call's arguments; _MISSING for a path that cannot be followed."""
    head = re.match(r"arg(\d+)", path)
    if head is None:
        return _MISSING
    try:
        obj, at = args[int(head.group(1))], head.end()
        while at < len(path):
            step = _STEP.match(path, at)
            if step is None:
                return _MISSING
            obj = getattr(obj, step.group(1)) if step.group(1) else obj[ast.literal_eval(step.group(2))]
            at = step.end()
    except Exception:
        return _MISSING
    return obj


def _room_at(path, args):
    """How many more items the bounded deque an assumption's path names takes before it is full;
    None for anything else."""
    obj = _object_at(path, args)
    if not isinstance(obj, collections.deque) or obj.maxlen is None:
        return None
    return max(obj.maxlen - len(obj), 0)


def _size_at(path, args):
    """len() of the container an assumption's path of attributes names (`arg1`, `arg0.history`);
    None for a path with items or anything that fails."""
    obj = _MISSING if "[" in path else _object_at(path, args)
    try:
        return None if obj is _MISSING else len(obj)
    except Exception:
        return None


def _forget_context(error, generation_error):
    """Eager ran while the generation's exception was being handled, so Python made that one the
    context of the first exception eager raised: cut it, so that the user's traceback shows
    eager's chain only ("During handling of the above exception" with janus_like's frames)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if error.__context__ is generation_error:
            error.__context__ = None
            return
        error = error.__context__


def rejected(g, index) -> Fallback:
    """Why a graph's guards rejected the call it was generated from: which of its checks failed
    (arrays the commit writes that share memory with other inputs, tied weights `E` and `E.T`;
    a read-only array the step writes; an input that could not be read again)."""
    failed = g.assumptions[index] if type(index) is int and 0 <= index < len(g.assumptions) else None
    if failed is None:
        return Fallback("unsupported-syntax", "reading the inputs again raised where the graph was made")
    if failed.kind == "alias":
        return Fallback("view-write", f"inputs share memory with an array written in place ({failed.describe()})")
    if failed.kind == "writeable":
        return Fallback("user-error", f"an array the call writes in place is read-only ({failed.describe()})")
    if failed.kind == "type" and failed.expected == INT64_RANGE:
        return Fallback("data-dependent-python", f"a Python int outside int64's range, which the graph holds as an "
                                                 f"int64 ({failed.describe()})")
    return Fallback("unsupported-syntax", f"the graph's own check failed on its inputs ({failed.describe()})")
