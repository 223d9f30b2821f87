"""Report data + spans -> trace.json in the Chrome trace-event format (opens in Perfetto and
chrome://tracing).

One process (the script), one track per Python thread. Each call of a jitted function is a
complete event ("ph": "X") named after the function and coloured by its mode (warm-up,
generate, graph, eager, fallback); JIT events (assumption failed, regeneration) are instant
events ("ph": "i") on the thread that made the first call.
"""
from __future__ import annotations

import json

_COLORS = {"warmup": "thread_state_iowait", "generate": "terrible", "graph": "good", "eager": "generic_work",
           "fallback": "bad"}


def trace_events(data: dict, spans: list) -> dict:
    pid = 1
    tids: dict = {}

    def tid_of(ident):
        if ident not in tids:
            tids[ident] = len(tids) + 1
        return tids[ident]

    events = []
    main_tid = tid_of(spans[0][4]) if spans else 1
    script = data["script"]
    events.append(dict(name=f"script {script['path']}", cat="script", ph="X", ts=0.0,
                       dur=round(script["wall_s"] * 1e6, 3), pid=pid, tid=main_tid,
                       args=dict(argv=script["argv"], jit=script["jit"])))
    for name, start, end, kind, ident in spans:
        events.append(dict(name=f"{name} [{kind}]", cat=kind, ph="X", ts=round(start * 1e6, 3),
                           dur=round(max(end - start, 0.0) * 1e6, 3), pid=pid, tid=tid_of(ident),
                           cname=_COLORS.get(kind), args=dict(function=name, mode=kind)))
    for e in data["events"]:
        if e["topic"] == "fallback":
            continue  # every fallback also has a more specific event (assumptions, fallbacks)
        events.append(dict(name=f"{e['function']}: {e['topic']}", cat=e["topic"], ph="i", s="t",
                           ts=round(e["t_s"] * 1e6, 3), pid=pid, tid=main_tid, args=dict(text=e["text"])))
    events.append(dict(name="process_name", ph="M", pid=pid, tid=main_tid,
                       args=dict(name=f"janus-like run {script['path']}")))
    if not tids:
        tids[None] = 1
    for i, (ident, tid) in enumerate(tids.items()):
        label = "main thread" if i == 0 else f"thread {ident}"
        events.append(dict(name="thread_name", ph="M", pid=pid, tid=tid, args=dict(name=label)))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": dict(generator=data["generator"], schema_version=data["schema_version"])}


def write_trace(path: str, data: dict, spans: list) -> None:
    with open(path, "w") as f:
        json.dump(trace_events(data, spans), f)
