"""Report data -> a terminal summary (what `janus-like report DIR` prints).

    janus_like report: examples/char_rnn_numpy.py  (wall 3.41 s, JIT on)
    function        calls  warm  graph  eager  fallb  graphs  warm ms  graph ms  speedup
    lossFun          1499     3   1464     32     64      33   15.300     1.020   15.00x
    ...
"""
from __future__ import annotations


def _f(x, fmt):
    return "-" if x is None else format(x, fmt)


def summary_text(data: dict, width: int = 100) -> str:
    s = data["script"]
    lines = [f"janus_like report: {s['path']}  (wall {s['wall_s']:.2f} s, JIT {'on' if s['jit'] else 'off'}, "
             f"schema v{data['schema_version']})"]
    if s["error"]:
        lines.append(f"  the script raised {s['error']}")
    fns = data["functions"]
    if not fns:
        lines.append("  no function was jitted")
    else:
        name_w = min(max(len(f["name"]) for f in fns), 32)
        lines.append(f"{'function':<{name_w}}  {'calls':>6} {'warm':>5} {'graph':>6} {'eager':>6} {'fallb':>6} "
                     f"{'graphs':>6} {'warm ms':>9} {'graph ms':>9} {'speedup':>8}  status")
        for f in fns:
            c, p = f["counters"], f["per_call_ms"]
            speed = f["speedup_vs_warmup"]
            lines.append(f"{f['name'][:name_w]:<{name_w}}  {c['calls']:>6} {c['warmup_calls']:>5} {c['graph_calls']:>6} "
                         f"{c['eager_calls']:>6} {c['fallbacks']:>6} {c['graphs_generated']:>6} "
                         f"{_f(p['warmup'], '9.3f'):>9} {_f(p['graph'], '9.3f'):>9} "
                         f"{(_f(speed, '.2f') + 'x') if speed is not None else '-':>8}  {f['status']}")
        for f in fns:
            details = [f"    graph #{x['index']}: {x['nodes']} nodes, {x['assumptions_total']} assumptions, "
                       f"ran {x['runs']} times" + (f"; {x['choice']}" if x.get("choice") else "")
                       for x in f["graphs"][:4]]
            for fb in sorted(f["fallbacks"], key=lambda fb: -fb["count"])[:3]:
                text = f"    {fb['count']}x [{fb['reason']}] {fb['site'] or '-'}: {fb['detail']}"
                details.append(text if len(text) <= width else text[:width - 3] + "...")
            if f["demoted_reason"]:
                details.append(f"    given back to plain Python: {f['demoted_reason']}")
            if details:
                lines.append(f"  {f['name']}:")
                lines += details
    if data["not_jitted"]:
        names = ", ".join(f"{d['name']} ({d['reason']})" for d in data["not_jitted"][:8])
        lines.append(f"hot but left eager: {names}" + (" ..." if len(data["not_jitted"]) > 8 else ""))
    return "\n".join(lines)
