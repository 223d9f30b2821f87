"""What the JIT tells its user: counters, logs and readable accounts of its graphs, assumptions, fallbacks."""
from __future__ import annotations

import sys
import time

from .assumptions import Fallback
from .switches import log_topics as _log_topics


def describe(jf) -> str:
    """The text of `JitFunction.explain()`."""
    name = getattr(jf.__wrapped__, "__qualname__", "fn")
    s = jf.stats()
    lines = [f"janus_like.jit({name}): {s['calls']} calls — {s['warmup_calls']} warm-up, "
             f"{s['graph_calls']} as graph, {s['eager_calls']} eager, {s['fallbacks']} fallbacks; "
             f"{s['graphs_generated']} graphs generated, {s['regenerations']} regenerations"]
    for i, g in enumerate(jf.graphs()):
        asserts = g.graph.asserts
        lines.append(f"  graph {i}: {g.graph.size()} nodes ({len(asserts)} asserts), ran {g.runs} times")
        if g.choice is not None and g.choice.note:
            lines.append(f"    {g.choice.note}")
        if g.tier.note and not g.tier.pending:
            lines.append(f"    {g.tier.note}")
        devices = getattr(g, "devices", None)
        if devices:
            on_gpu = sum(1 for d in devices.values() if d == "gpu")
            transfers = sum(1 for n in g.graph.all_nodes() if n.op == "to_device")
            how = (f"the GPU plan, {g.plan.fused} elementwise chains fused into one kernel each" if g.plan is not None
                   else "the reference interpreter")
            lines.append(f"    devices: {on_gpu} nodes on the GPU, {transfers} transfers "
                         f"(run with CuPy kernels by {how})")
        updates = [n for n in g.graph.nodes if n.id in g.graph.inplace]
        if updates and g.plan is not None:
            names = ", ".join(f"{g.gen.slots[n.inputs[0].params['slot']].parent.text} {n.inputs[0].aval[0]}"
                              for n in updates)
            lines.append(f"    updates written into the weight's own array when only the executor sees it: {names}")
        donated = getattr(g.plan, "donated", ())
        if donated:
            by_id = {n.id: n for n in g.graph.nodes}
            names = ", ".join(f"{g.gen.slots[by_id[i].params['slot']].parent.text} {by_id[i].aval[0]}" for i in donated)
            lines.append(f"    state arrays overwritten by their last reader when only the executor sees them: {names}")
        for region in dict.fromkeys(n.params["region"] for n in g.graph.all_nodes() if n.op == "recursion"):
            lines.append(f"    {region.describe()}")
        for miss in getattr(g.gen, "region_misses", ()):
            lines.append(f"    {miss}: inlined for this tree's shape instead")
        for a in g.assumptions[:40]:
            lines.append(f"    assume {a.describe()}" + (f"  [failed {a.failures}x]" if a.failures else ""))
        if len(g.assumptions) > 40:
            lines.append(f"    ... {len(g.assumptions) - 40} more assumptions")
    if jf._static_values:
        lines.append(f"  ints kept as values, one graph per value (an axis, a size, an index or a depth): "
                     f"{', '.join(sorted(jf._static_values))}")
    if jf._never_static:
        lines.append(f"  ints no longer kept as values (a new value every call): {', '.join(sorted(jf._never_static))}")
    if jf.region_misses:
        lines.append("  no recursion region (new tree shapes run eagerly): " + "; ".join(jf.region_misses))
    for e in jf._entries.values():
        if e.eager_reason is not None:
            kept = f"; its {len(e.graphs)} graphs still run the calls they accept" if e.graphs else ""
            lines.append(f"  eager for a signature (no new graphs{kept}): {e.eager_reason.describe()}")
    fbs = jf.fallbacks()
    if fbs:
        lines.append("  fallbacks:")
        for fb in fbs:
            lines.append(f"    {fb.count}x {fb.describe()}")
    return "\n".join(lines)


def explain(fn) -> str:
    """Readable account of what the JIT did with `fn`: graphs, assumptions, fallbacks."""
    if not getattr(type(fn), "_janus_jit", False):
        return f"{getattr(fn, '__qualname__', fn)!s} is not jitted"
    return fn.explain()


EVENTS_KEPT = 5000  # events a JitFunction keeps (JitFunction.events); reports show the first 2,000


class ReportingMixin:
    """What a JitFunction tells its user: counters, cached graphs, fallbacks, logs, explain()."""

    def _note(self, fb: Fallback):
        key = (fb.reason, fb.site, fb.detail)
        old = self._fallbacks.get(key)
        if old is not None:
            old.count += 1
        else:
            self._fallbacks[key] = fb
            self._log("fallbacks", fb.describe())
        self._event("fallback", fb.reason)

    def _event(self, topic, text):
        """Keep an event for reports: the first EVENTS_KEPT of them (generation, the first
        fallbacks: what a report shows); later ones are counted. A stream of one-off tree shapes
        makes an event on every call, which a list kept whole would hold for the whole run."""
        if len(self.events) < EVENTS_KEPT:
            self.events.append((time.perf_counter(), topic, text))
        else:
            self.events_dropped += 1

    def _log(self, topic, text):
        """An event, printed to stderr when JANUS_LIKE_LOGS names its topic. `text` may be a
        function giving it, called only when the event is kept or printed."""
        topics = _log_topics()
        shown = topic in topics or "all" in topics
        if callable(text) and (shown or len(self.events) < EVENTS_KEPT):
            text = text()
        self._event(topic, text)
        if shown:
            print(f"[janus_like:{topic}] {text}", file=sys.stderr)

    def stats(self) -> dict:
        """Counters: calls, warmup_calls, eager_calls, graph_calls, fallbacks, graphs_generated,
        regenerations, guard/assert failures, native_graphs (run as one native function),
        fused_graphs (plans with fused elementwise loops), eager_by_choice (graphs whose calls
        run eagerly because eager measured faster: choice.py), plus times in each mode (seconds)."""
        out = dict(self.counters)
        out["graphs_cached"] = self._total_graphs()
        graphs = self.graphs()
        out["native_graphs"] = sum(1 for g in graphs if g.tier.run is not None)
        out["fused_graphs"] = sum(1 for g in graphs if g.tier.plan is not None and g.tier.run is None)
        out["native_compile_s"] = round(sum(g.tier.compile_s for g in graphs), 6)
        out["eager_by_choice"] = sum(1 for g in graphs if g.choice is not None and g.choice.eager)
        out.update({k: round(v, 6) for k, v in self.times.items()})
        return out

    def graphs(self):
        return [g for e in self._entries.values() for g in e.graphs]

    def fallbacks(self):
        return list(self._fallbacks.values())

    def explain(self) -> str:
        return describe(self)
