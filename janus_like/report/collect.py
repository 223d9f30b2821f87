"""Run record -> report data: one JSON-ready dict (the content of report.json).

Input: a `janus_like.wrapper.Run`. Output: a dict following `schema.json` (`SCHEMA_VERSION`).
Every writer (JSON, HTML, Chrome trace, terminal summary) reads this dict, except the trace,
which also needs the raw per-call spans (`spans(run)`).
"""
from __future__ import annotations

import datetime
import linecache
import os

SCHEMA_VERSION = 1
EVENT_CAP = 2000  # events kept in report.json (all are counted)
ASSUMPTION_CAP = 200  # per graph


def _round(x, n=6):
    return None if x is None else round(float(x), n)


class _Sources:
    """'file.py:42' (what assumptions and fallbacks carry) -> that line of source text."""

    def __init__(self, files):
        self.by_base = {}
        for f in files:
            self.by_base.setdefault(os.path.basename(f), f)

    def line(self, site: str):
        base, _, line = (site or "").rpartition(":")
        path = self.by_base.get(base)
        if path is None or not line.isdigit():
            return None
        text = linecache.getline(path, int(line)).strip()
        return text or None


def _counters(jf):
    s = jf.stats()
    keys = ("calls", "warmup_calls", "graph_calls", "eager_calls", "fallbacks", "graphs_generated", "regenerations",
            "guard_failures", "assert_failures", "graphs_cached")
    return {k: int(s.get(k, 0)) for k in keys}


def _function(jf, hot, sources, demoted_reason, origin, rt_t0):
    from ..jit.assumptions import REASONS

    fn = jf.__wrapped__
    code = fn.__code__
    counters = _counters(jf)
    jit_times = {k: _round(v) for k, v in jf.times.items()}
    if hot is not None:
        wall = {k: _round(v) for k, v in hot.totals.items()}
        wall_calls = dict(hot.counts)
    else:  # a JitFunction the script made itself: only the JIT's own clocks
        wall = {"warmup": jit_times.get("warmup_s", 0.0), "generate": jit_times.get("generate_s", 0.0),
                "graph": jit_times.get("graph_s", 0.0), "eager": jit_times.get("eager_s", 0.0), "fallback": 0.0}
        wall_calls = {"warmup": counters["warmup_calls"], "generate": counters["graphs_generated"],
                      "graph": counters["graph_calls"], "eager": counters["eager_calls"], "fallback": 0}

    def mean_ms(kind):
        n = wall_calls.get(kind, 0)
        return _round(wall[kind] / n * 1e3, 4) if n and wall.get(kind) is not None else None

    per_call = {k: mean_ms(k) for k in ("warmup", "graph", "eager", "fallback")}
    eager_like = [per_call[k] for k in ("eager", "fallback") if per_call[k] is not None]

    def ratio(a, b):
        return _round(a / b, 3) if a is not None and b else None

    graphs = []
    for i, g in enumerate(jf.graphs()):
        assumptions = [dict(kind=a.kind, site=a.site, path=a.path, expected=repr(a.expected)[:200],
                            failures=int(a.failures), text=a.describe(), source=sources.line(a.site))
                       for a in g.assumptions[:ASSUMPTION_CAP]]
        graphs.append(dict(index=i, name=g.graph.name, nodes=g.graph.size(), asserts=len(g.graph.asserts),
                           runs=int(g.runs), time_s=_round(getattr(g, "time_s", 0.0)),
                           assumptions_total=len(g.assumptions), assumptions=assumptions, dot=None, svg=None,
                           choice=g.choice.note if g.choice is not None else None))
    fallbacks = []
    for fb in jf.fallbacks():
        r = REASONS.get(fb.reason)
        fallbacks.append(dict(reason=fb.reason, detail=fb.detail, site=fb.site, count=int(fb.count),
                              explanation=r.explanation if r else None, hint=r.hint if r else None,
                              source=sources.line(fb.site)))
    return dict(
        name=fn.__qualname__, module=fn.__module__, file=code.co_filename, line=code.co_firstlineno,
        origin=origin, status="demoted" if demoted_reason else "jitted", demoted_reason=demoted_reason,
        warmup=int(jf.warmup), counters=counters, jit_times_s=jit_times, wall_s=wall, wall_calls=wall_calls,
        per_call_ms=per_call, speedup_vs_warmup=ratio(per_call["warmup"], per_call["graph"]),
        speedup_vs_eager=ratio(min(eager_like) if eager_like else None, per_call["graph"]),
        graphs=graphs, fallbacks=fallbacks,
        first_event_s=_round(jf.events[0][0] - rt_t0) if jf.events else None,
    )


def collect(run) -> dict:
    """The report data of one wrapped run (see schema.json)."""
    from .. import __version__

    rt = run.runtime
    hots = run.functions()
    users = run.user_jits()
    files = set([os.path.abspath(run.path)])
    if rt is not None:
        files.update(rt.sources)
    for jf in [h.jf for h in hots] + users:
        files.add(jf.__wrapped__.__code__.co_filename)
    sources = _Sources(sorted(files))
    functions, events = [], []
    entries = [(h.jf, h, rt.demoted.get(h.index), "wrapper") for h in hots] + [(j, None, None, "script") for j in users]
    n_events = 0
    for jf, hot, demoted, origin in entries:
        functions.append(_function(jf, hot, sources, demoted, origin, run.t_start))
        n_events += getattr(jf, "events_dropped", 0)
        for t, topic, text in jf.events:
            n_events += 1
            if len(events) < EVENT_CAP:
                events.append(dict(t_s=_round(t - run.t_start), function=jf.__wrapped__.__qualname__, topic=topic,
                                   text=str(text)[:500]))
    events.sort(key=lambda e: e["t_s"])
    demoted_only = []
    if rt is not None:
        jitted = {h.index for h in hots}
        for index, reason in sorted(rt.demoted.items()):
            if index not in jitted:
                s = rt.sites[index]
                demoted_only.append(dict(name=s.qualname, module=s.module, file=s.filename, line=s.lineno, reason=reason))
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": f"janus_like {__version__}",
        "script": dict(path=str(run.path), argv=list(run.argv), jit=bool(run.jit), options=run.options,
                       started_at=datetime.datetime.fromtimestamp(run.started_at).isoformat(timespec="seconds"),
                       wall_s=_round(run.wall_s), exit_status=run.exit_status if run.exit_status != "exception" else None,
                       error=run.error, functions_seen=len(rt.sites) if rt is not None else 0),
        "functions": functions,
        "not_jitted": demoted_only,
        "events": events,
        "events_total": n_events,
        "files": {"html": "report.html", "trace": "trace.json"},
    }


def spans(run):
    """[(function name, start_s, end_s, kind, thread id)] relative to the run's start."""
    out = []
    for h in run.functions():
        name = h.site.qualname
        out.extend((name, s - run.t_start, e - run.t_start, kind, tid) for s, e, kind, tid in h.spans)
    out.sort(key=lambda s: s[1])
    return out
