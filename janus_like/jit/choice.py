"""Graph or eager, by measurement: a graph that runs a call slower than Python does is not used.

A graph costs a fixed price per call (its guards, the commit, the fused call's bookkeeping:
0.3-0.6 µs) that a step of a few Python numbers or one 4x3 product does not earn back: eagerly
`st["ema"] = 0.9 * st["ema"] + 0.1 * v` takes 0.1 µs, as a graph 0.6 µs. So every graph is
measured against the function itself, on the user's own calls, once it has settled:

1. After TRIAL_AFTER runs (the fused function hands that call back: `executor/fused.py`'s
   `_trial_at` cell), the graph's calls go through a `Trial` for six blocks, eager and graph
   alternating, each call timed the same way. A block is as many calls as take BLOCK_S, at most
   BLOCK_MAX. The trial stops after its first eager block when eager took more than EARLY times
   the graph's mean so far (a big step pays for one eager call, not six blocks).
2. Eager is chosen when its best block took at most GAIN of the graph's best: from then on the
   calls that reach the graph (its signature's steady-state calls) run `fn` itself through a
   generated route, counted as eager calls. The route checks the graph's guards on one call in
   GUARD_EVERY only: a call they reject (a new batch size, new types) goes the full way, where
   its own graph is found or made, and that graph takes the steady state over. Otherwise the
   graph stays.
3. Either way the choice is measured again after RECHECK calls, doubling each time up to
   RECHECK_MAX: a route runs that many calls, then a new trial starts from its next call.

Running `fn` is always correct: it is what the user gets without the JIT, the graph's
fallback. So the choice changes speed only, never results or state, and a wrong measurement
(a noisy machine) costs speed until the next trial. `jit(choose="graph")` or
JANUS_LIKE_CHOOSE=graph keeps every graph (the test suite does, so its counts do not depend on
timing; `tests/jit/test_choice.py` tests the choice itself).
"""
from __future__ import annotations

import functools
import os
import time
import types

from ..executor.fused import MISS

CHOICES = ("measured", "graph")
TRIAL_AFTER = 64
BLOCK_S, BLOCK_MAX, ROUNDS = 1e-4, 16, 3
EARLY = 2.0
GAIN = 0.95
RECHECK, RECHECK_MAX = 4096, 1 << 20
GUARD_EVERY = 64  # a power of two
_clock = time.perf_counter


def resolve_choice(choose) -> str:
    """The jit's `choose`: the argument, else JANUS_LIKE_CHOOSE, else "measured"."""
    value = choose if choose is not None else (os.environ.get("JANUS_LIKE_CHOOSE") or "measured")
    if value not in CHOICES:
        source = "choose" if choose is not None else "JANUS_LIKE_CHOOSE"
        raise ValueError(f"jit: {source}={value!r} is not one of {', '.join(map(repr, CHOICES))}")
    return value


class Choice:
    """A graph's record of its measurements: the graph call without a trial or route (`plain`:
    the fused function, or None for the full path), the next recheck interval, the last
    outcome as text for explain() and reports."""

    __slots__ = ("plain", "interval", "eager", "note", "trials")

    def __init__(self, plain):
        self.plain = plain
        self.interval = RECHECK
        self.eager = False  # the calls run eagerly now
        self.note = None
        self.trials = 0


class Trial:
    """Installed as the graph's `fast` for one measurement: alternating blocks of eager and
    graph calls, each timed around the call."""

    def __init__(self, jf, g, graph_call, block):
        self.jf, self.g, self.graph_call, self.block = jf, g, graph_call, block
        self.kinds = ("eager", "graph") * ROUNDS
        self.step = self.n = 0
        self.acc = 0.0
        self.means = {"eager": [], "graph": []}
        self.open = None  # when the graph missed the call being run (charged)

    def __call__(self, args):
        kind = self.kinds[self.step]
        start = _clock()
        if kind == "graph":
            result = self.graph_call(args)
            elapsed = _clock() - start
            if result is MISS:  # not this graph's call, or a failed run: the full path decides,
                self.open = start  # and its time counts as this block's (`charged`)
                return MISS
        else:
            try:
                result = self.jf._plain(args)
            finally:
                elapsed = _clock() - start
                self.jf._eager_counted(elapsed)
        self._add(kind, elapsed)
        return result

    def charged(self, path, *args):
        """The call a graph block's graph missed, run by `path` (the JitFunction's full path: the
        signature's other graphs, a fallback to eager, a new graph), timed from the miss's start:
        a graph whose asserts fail on many calls (a split branch whose outcomes mix) costs its
        failed runs and the eager calls after them, so eager wins the trial when that is slower.
        Profiling and generating a graph there (a new tree shape) is a one-off cost: left out."""
        start, self.open = self.open, None
        times = self.jf.times
        before = times["warmup_s"] + times["generate_s"]
        try:
            return path(*args)
        finally:
            if self.step < len(self.kinds) and self.kinds[self.step] == "graph":  # (not chosen meanwhile)
                once = times["warmup_s"] + times["generate_s"] - before
                self._add("graph", _clock() - start - once)

    def _add(self, kind, elapsed):
        self.acc += elapsed
        self.n += 1
        if self.n == self.block:
            self.means[kind].append(self.acc / self.n)
            self.acc, self.n = 0.0, 0
            self.step += 1
            mean = self.g.time_s / max(self.g.runs, 1)
            if self.step == len(self.kinds) or (self.step == 1 and self.means["eager"][0] > EARLY * mean):
                self.jf._chosen(self.g, self)


# A chosen-eager graph's `fast`: the function itself, timed and counted in the JitFunction's
# cells (as fused.py counts graph calls); after `_left` calls the next one starts a new trial;
# one call in GUARD_EVERY is first offered to the graph's guards (an int: rejected).
_ROUTE = """
def _outer():
    _calls = _secs = _left = None
    def route(args):
        nonlocal _calls, _secs, _left
        _left -= 1
        if _left < 0:
            return RECHECK(args)
        if not _left & GUARD_MASK and GUARD(args).__class__ is int:
            return MISS
        t0 = _pc()
        try:
            return FN(*args)
        finally:
            _secs += _pc() - t0
            _calls += 1
    return route
"""
_ROUTE_CODE = None


def _route(fn, guard, counts, calls, recheck):
    global _ROUTE_CODE
    if _ROUTE_CODE is None:
        env: dict = {}
        exec(compile(_ROUTE, "<janus_like eager route>", "exec"), env)
        _ROUTE_CODE = env["_outer"]().__code__
    cells = {"_calls": counts.calls, "_secs": counts.seconds, "_left": types.CellType(calls)}
    env = {"FN": fn, "GUARD": guard, "GUARD_MASK": GUARD_EVERY - 1, "MISS": MISS, "RECHECK": recheck,
           "_pc": _clock}
    return types.FunctionType(_ROUTE_CODE, env, "route", None, tuple(cells[n] for n in _ROUTE_CODE.co_freevars))


class ChoiceMixin:
    """The JitFunction's side: starting trials, choosing, routing."""

    def _maybe_trial(self, g):
        """After graph g ran a call on the full path: start its trial when one is due (never
        during one or while its calls are routed eagerly: the cell holds infinity then)."""
        t = g.trial
        if t is None or g.runs < t.cell_contents or g.tier.pending:
            return
        self._begin_trial(g)

    def _begin_trial(self, g):
        choice = g.choice
        if choice is None:
            choice = g.choice = Choice(g.fast)
        g.trial.cell_contents = float("inf")  # the fused function runs every call during the trial
        choice.trials += 1
        mean = g.time_s / max(g.runs, 1)
        block = max(1, min(BLOCK_MAX, int(BLOCK_S / mean) if mean > 0 else BLOCK_MAX))
        graph_call = choice.plain if choice.plain is not None else functools.partial(self._run_tried, g)
        g.fast = Trial(self, g, graph_call, block)

    def _recheck(self, g, args):
        """A route's calls are used up: measure again, from this call on."""
        self._begin_trial(g)
        return g.fast(args)

    def _chosen(self, g, trial):
        choice = g.choice
        eager, graph = min(trial.means["eager"]), min(trial.means["graph"], default=float("inf"))
        choice.eager = bool(trial.means["graph"]) and eager <= GAIN * graph  # (not after an early stop)
        interval = choice.interval
        choice.interval = min(2 * interval, RECHECK_MAX)
        rounds = len(trial.means["eager"])
        if trial.means["graph"]:
            of_graph = f"{graph * 1e6:.2f} µs"
        else:  # stopped after the first eager block
            of_graph = f"{g.time_s / max(g.runs, 1) * 1e6:.2f} µs (its mean so far)"
        measured = (f"eager {eager * 1e6:.2f} µs a call, the graph {of_graph}; best of {rounds} "
                    f"block{'s' if rounds > 1 else ''} of {trial.block} call{'s' if trial.block > 1 else ''}")
        if choice.eager:
            g.fast = _route(self.__wrapped__, g.guard, self._eager_fast, interval, functools.partial(self._recheck, g))
            choice.note = f"runs eagerly by measurement ({measured}); measured again after {interval} calls"
        else:
            g.fast = choice.plain
            g.trial.cell_contents = g.runs + interval
            choice.note = f"runs as a graph by measurement ({measured}); measured again after {interval} runs"
        self._log("choice", f"graph {g.graph.name}: {choice.note}")

    def _eager_counted(self, seconds):
        c = self._eager_fast
        c.calls.cell_contents += 1
        c.seconds.cell_contents += seconds
