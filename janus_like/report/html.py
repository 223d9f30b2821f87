"""Report data + spans -> report.html: one self-contained page (inline CSS and SVG, no script,
no network).

Sections: the run; one card per jitted function (calls by mode, time in each mode, speedup,
graphs with their sizes and assumptions, fallbacks with reasons and hints, each with its source
line); functions left eager; a timeline of every call drawn as SVG rectangles per function.
"""
from __future__ import annotations

import html

COLORS = {"warmup": "#f5b041", "generate": "#8e44ad", "graph": "#27ae60", "eager": "#5d6d7e", "fallback": "#e74c3c"}
_CSS = """
body{font:14px/1.45 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1150px;color:#222}
h1{font-size:22px;margin-bottom:4px} h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
h3{font-size:16px;margin:0 0 6px} .muted{color:#777} code,pre{font-family:Menlo,Consolas,monospace;font-size:12px}
table{border-collapse:collapse;margin:6px 0 12px} td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f7} td.num{text-align:right;font-variant-numeric:tabular-nums}
.card{border:1px solid #ccc;border-radius:6px;padding:12px 16px;margin:14px 0}
.badge{display:inline-block;border-radius:3px;padding:0 6px;color:#fff;font-size:12px}
.jitted{background:#27ae60} .demoted{background:#7f8c8d} .bad{color:#c0392b}
details{margin:4px 0} summary{cursor:pointer}
"""


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


def _ms(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def _s(x) -> str:
    return "–" if x is None else f"{x:.4f}"


def _function_card(f: dict) -> str:
    c = f["counters"]
    status = f"<span class='badge {f['status']}'>{_e(f['status'])}</span>"
    out = [f"<div class='card' id='fn-{_e(f['name'])}'><h3><code>{_e(f['name'])}</code> {status}</h3>",
           f"<div class='muted'>{_e(f['file'])}:{f['line']} — origin: {_e(f['origin'])}, warm-up {f['warmup']} calls</div>"]
    if f["demoted_reason"]:
        out.append(f"<p>Given back to plain Python: {_e(f['demoted_reason'])}</p>")
    speed = f["speedup_vs_warmup"]
    out.append("<table><tr><th>calls</th><th>warm-up</th><th>graph</th><th>eager</th><th>fallbacks</th>"
               "<th>graphs generated</th><th>regenerations</th><th>guard failures</th><th>assert failures</th></tr>"
               f"<tr><td class=num>{c['calls']}</td><td class=num>{c['warmup_calls']}</td><td class=num>{c['graph_calls']}</td>"
               f"<td class=num>{c['eager_calls']}</td><td class=num>{c['fallbacks']}</td><td class=num>{c['graphs_generated']}</td>"
               f"<td class=num>{c['regenerations']}</td><td class=num>{c['guard_failures']}</td>"
               f"<td class=num>{c['assert_failures']}</td></tr></table>")
    rows = "".join(f"<tr><td><span class='badge' style='background:{COLORS[k]}'>{k}</span></td>"
                   f"<td class=num>{f['wall_calls'][k]}</td><td class=num>{_s(f['wall_s'][k])}</td>"
                   f"<td class=num>{_ms(f['per_call_ms'].get(k))}</td></tr>" for k in COLORS)
    out.append(f"<table><tr><th>mode</th><th>calls</th><th>total s</th><th>ms / call</th></tr>{rows}</table>")
    if speed is not None:
        cls = "" if speed >= 1 else " class=bad"
        out.append(f"<p{cls}>Graph call vs warm-up (eager, profiled) call: <b>{speed:.2f}×</b>"
                   + (f"; vs plain eager call: <b>{f['speedup_vs_eager']:.2f}×</b>" if f["speedup_vs_eager"] else "")
                   + "</p>")
    if f["graphs"]:
        out.append("<table><tr><th>graph</th><th>nodes</th><th>asserts</th><th>assumptions</th><th>runs</th><th>drawing</th></tr>")
        for g in f["graphs"]:
            links = " ".join(f"<a href='{_e(g[k])}'>{k}</a>" for k in ("dot", "svg") if g[k])
            out.append(f"<tr><td>{g['index']}</td><td class=num>{g['nodes']}</td><td class=num>{g['asserts']}</td>"
                       f"<td class=num>{g['assumptions_total']}</td><td class=num>{g['runs']}</td><td>{links}</td></tr>")
        out.append("</table>")
        for g in f["graphs"]:
            failed = sum(1 for a in g["assumptions"] if a["failures"])
            out.append(f"<details><summary>graph {g['index']}: {g['assumptions_total']} assumptions"
                       f"{f', {failed} failed at least once' if failed else ''}</summary><table>"
                       "<tr><th>kind</th><th>what</th><th>expected</th><th>site</th><th>source</th><th>failures</th></tr>")
            for a in g["assumptions"]:
                cls = " class=bad" if a["failures"] else ""
                out.append(f"<tr{cls}><td>{_e(a['kind'])}</td><td><code>{_e(a['path'])}</code></td>"
                           f"<td><code>{_e(a['expected'])}</code></td><td>{_e(a['site'])}</td>"
                           f"<td><code>{_e(a['source'])}</code></td><td class=num>{a['failures']}</td></tr>")
            if g["assumptions_total"] > len(g["assumptions"]):
                out.append(f"<tr><td colspan=6>… {g['assumptions_total'] - len(g['assumptions'])} more</td></tr>")
            out.append("</table></details>")
    if f["fallbacks"]:
        out.append("<table><tr><th>count</th><th>reason</th><th>where</th><th>detail</th><th>hint</th></tr>")
        for fb in f["fallbacks"]:
            src = f"<br><code>{_e(fb['source'])}</code>" if fb["source"] else ""
            expl = f"<br><span class=muted>{_e(fb['explanation'])}</span>" if fb["explanation"] else ""
            out.append(f"<tr><td class=num>{fb['count']}</td><td><b>{_e(fb['reason'])}</b>{expl}</td>"
                       f"<td>{_e(fb['site'])}{src}</td><td>{_e(fb['detail'])}</td><td>{_e(fb['hint'])}</td></tr>")
        out.append("</table>")
    out.append("</div>")
    return "\n".join(out)


def timeline_svg(data: dict, spans: list, width: int = 1100) -> str:
    """One row per function; each call a rectangle coloured by mode. Adjacent calls of the same
    mode closer than a pixel are merged, so a long run stays a small drawing."""
    names = [f["name"] for f in data["functions"] if f["origin"] == "wrapper"]
    total = max(data["script"]["wall_s"] or 0.0, max((s[2] for s in spans), default=0.0), 1e-6)
    label_w, row_h, top = 190, 22, 24
    plot_w = width - label_w - 10
    scale = plot_w / total
    height = top + row_h * max(len(names), 1) + 40
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' font-family='sans-serif' "
             f"font-size='11'><rect width='100%' height='100%' fill='#fff'/>"]
    for i in range(6):  # time axis
        t = total * i / 5
        x = label_w + t * scale
        parts.append(f"<line x1='{x:.1f}' y1='{top - 4}' x2='{x:.1f}' y2='{height - 36}' stroke='#eee'/>"
                     f"<text x='{x:.1f}' y='{top - 8}' text-anchor='middle' fill='#777'>{t:.2f}s</text>")
    rows = {n: i for i, n in enumerate(names)}
    merged: dict = {}
    for name, start, end, kind, _ in spans:
        row = rows.get(name)
        if row is None:
            continue
        last = merged.get(name)
        x0, x1 = start * scale, end * scale
        if last and last[-1][2] == kind and x0 - last[-1][1] < 1.0:
            last[-1][1], last[-1][3] = max(last[-1][1], x1), last[-1][3] + 1
        else:
            merged.setdefault(name, []).append([x0, x1, kind, 1])
    for name, row in rows.items():
        y = top + row * row_h
        parts.append(f"<text x='4' y='{y + 15}'>{_e(name[:28])}</text>")
        for x0, x1, kind, n in merged.get(name, []):
            parts.append(f"<rect x='{label_w + x0:.2f}' y='{y + 3}' width='{max(x1 - x0, 0.6):.2f}' height='{row_h - 6}' "
                         f"fill='{COLORS[kind]}'><title>{_e(name)}: {n} {kind} call(s)</title></rect>")
    for e in data["events"]:
        if e["topic"] in ("assumptions", "regen") and e["function"] in rows:
            x = label_w + e["t_s"] * scale
            y = top + rows[e["function"]] * row_h
            parts.append(f"<line x1='{x:.2f}' y1='{y + 1}' x2='{x:.2f}' y2='{y + row_h - 1}' stroke='#c0392b' "
                         f"stroke-width='1'><title>{_e(e['text'])}</title></line>")
    ly = height - 16
    for i, (kind, color) in enumerate(COLORS.items()):
        parts.append(f"<rect x='{label_w + i * 110}' y='{ly - 10}' width='12' height='12' fill='{color}'/>"
                     f"<text x='{label_w + i * 110 + 16}' y='{ly}'>{kind}</text>")
    parts.append(f"<line x1='{label_w + 5 * 110}' y1='{ly - 10}' x2='{label_w + 5 * 110}' y2='{ly + 2}' stroke='#c0392b'/>"
                 f"<text x='{label_w + 5 * 110 + 6}' y='{ly}'>assumption failed / regenerated</text></svg>")
    return "".join(parts)


def render_html(data: dict, spans: list) -> str:
    s = data["script"]
    fns = data["functions"]
    graph_calls = sum(f["counters"]["graph_calls"] for f in fns)
    calls = sum(f["counters"]["calls"] for f in fns)
    out = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
           f"<title>janus_like report — {_e(s['path'])}</title><style>{_CSS}</style></head><body>",
           f"<h1>janus_like report: <code>{_e(s['path'])}</code></h1>",
           f"<div class='muted'>{_e(data['generator'])}, report schema v{data['schema_version']}, started {_e(s['started_at'])}</div>",
           "<table>",
           f"<tr><th>arguments</th><td><code>{_e(' '.join(s['argv']))}</code></td></tr>",
           f"<tr><th>JIT</th><td>{'on' if s['jit'] else 'off (--no-jit)'}; options <code>{_e(s['options'])}</code></td></tr>",
           f"<tr><th>wall time</th><td>{s['wall_s']:.3f} s</td></tr>",
           f"<tr><th>functions</th><td>{s['functions_seen']} watched, {len(fns)} jitted, {len(data['not_jitted'])} hot but left eager</td></tr>",
           f"<tr><th>calls of jitted functions</th><td>{calls}, of which {graph_calls} ran as graphs</td></tr>"]
    if s["error"]:
        out.append(f"<tr><th>error</th><td class=bad>{_e(s['error'])}</td></tr>")
    if s["exit_status"] is not None:
        out.append(f"<tr><th>exit status</th><td>{_e(s['exit_status'])}</td></tr>")
    out.append("</table>")
    if any(f["origin"] == "wrapper" for f in fns):
        out.append("<h2>Timeline</h2>")
        out.append(timeline_svg(data, spans))
        out.append("<p class=muted>Per-call spans are also in <a href='trace.json'>trace.json</a> (open it in Perfetto).</p>")
    out.append("<h2>Jitted functions</h2>")
    if not fns:
        out.append("<p>No function became hot enough to jit.</p>")
    out += [_function_card(f) for f in fns]
    if data["not_jitted"]:
        out.append("<h2>Hot functions left eager</h2><table><tr><th>function</th><th>where</th><th>why</th></tr>")
        for d in data["not_jitted"]:
            out.append(f"<tr><td><code>{_e(d['name'])}</code></td><td>{_e(d['file'])}:{d['line']}</td><td>{_e(d['reason'])}</td></tr>")
        out.append("</table>")
    if data["events"]:
        out.append(f"<h2>Events</h2><details><summary>{data['events_total']} JIT events"
                   f"{' (first ' + str(len(data['events'])) + ')' if data['events_total'] > len(data['events']) else ''}"
                   "</summary><table><tr><th>t (s)</th><th>function</th><th>topic</th><th>text</th></tr>")
        for e in data["events"]:
            if e["topic"] != "fallback":
                out.append(f"<tr><td class=num>{e['t_s']:.4f}</td><td>{_e(e['function'])}</td><td>{_e(e['topic'])}</td>"
                           f"<td>{_e(e['text'])}</td></tr>")
        out.append("</table></details>")
    out.append("</body></html>\n")
    return "\n".join(out)
