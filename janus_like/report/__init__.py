"""report: what the JIT did in a run, as files and text.

Input: a `janus_like.wrapper.Run` (from `run_path` / `janus-like run`). Output, in one
directory:

    report.json   the data (versioned: "schema_version"; documented by schema.json)
    report.html   one self-contained page: per-function tables, assumptions, fallbacks, timeline
    trace.json    Chrome trace events, one track per thread (open in https://ui.perfetto.dev)
    graphs/*.dot  one drawing per cached graph (+ .svg when Graphviz `dot` is installed)

`janus-like report DIR` prints `summary_text(load(DIR))`.
"""
from __future__ import annotations

import json
import os
import re

from .collect import SCHEMA_VERSION, collect, spans
from .dot import dot_available, graph_to_dot, render_svg
from .html import render_html
from .summary import summary_text
from .trace import trace_events, write_trace
from .validate import load_schema, validate


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80]


def write_graphs(run, data: dict, directory: str) -> None:
    """DOT (and SVG when possible) per cached graph; fills in each graph's "dot"/"svg"."""
    jfs = [h.jf for h in run.functions()] + run.user_jits()
    svg = dot_available()
    for number, (jf, f) in enumerate(zip(jfs, data["functions"])):
        for g, entry in zip(jf.graphs(), f["graphs"]):
            rel = os.path.join("graphs", f"{number}_{_slug(f['name'])}_{entry['index']}.dot")
            path = os.path.join(directory, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as out:
                out.write(graph_to_dot(g.graph, f"{f['name']} graph {entry['index']} ({entry['nodes']} nodes)"))
            entry["dot"] = rel
            if svg and entry["nodes"] <= 1500 and render_svg(path, path[:-4] + ".svg"):
                entry["svg"] = rel[:-4] + ".svg"


def write_report(run, directory: str) -> dict:
    """Write every report file for `run` into `directory` (created); returns the data."""
    os.makedirs(directory, exist_ok=True)
    data = collect(run)
    write_graphs(run, data, directory)
    run_spans = spans(run)
    with open(os.path.join(directory, "report.json"), "w") as f:
        json.dump(data, f, indent=1)
    with open(os.path.join(directory, "report.html"), "w") as f:
        f.write(render_html(data, run_spans))
    write_trace(os.path.join(directory, "trace.json"), data, run_spans)
    return data


def load(directory: str) -> dict:
    """report.json of a report directory (or the file itself)."""
    path = directory if directory.endswith(".json") else os.path.join(directory, "report.json")
    with open(path) as f:
        return json.load(f)


__all__ = ["SCHEMA_VERSION", "collect", "write_report", "load", "summary_text", "render_html", "trace_events",
           "graph_to_dot", "validate", "load_schema"]
