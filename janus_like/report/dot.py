"""IR graph -> Graphviz DOT text (and SVG through the `dot` binary, only when it is installed).

Nodes are labelled like the IR printout (`%7 matmul : float64[64,1]`); asserts are red
diamonds, inputs green, constants grey; a `cond` node's branches are drawn as clusters.
"""
from __future__ import annotations

import shutil
import subprocess

from .. import ir

MAX_NODES = 2000  # bigger graphs are drawn truncated (the printout has everything)


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(n) -> str:
    if n.op == ir.ASSERT:
        a = n.params.get("assumption")
        return f"assert %{n.id}\n{a.kind} {a.site}" if a else f"assert %{n.id}"
    if n.op == ir.INPUT:
        return f"%{n.id} input {n.params.get('name', '')}\n{ir.fmt_aval(n.aval)}"
    if n.op == ir.CONST:
        return f"%{n.id} const {ir._fmt_value(n.params.get('value'))[:30]}"
    return f"%{n.id} {n.op}\n{ir.fmt_aval(n.aval)}"


_STYLE = {ir.ASSERT: 'shape=diamond color="#c0392b" fontcolor="#c0392b"',
          ir.INPUT: 'shape=box style=filled fillcolor="#d5f5e3"',
          ir.CONST: 'shape=box style=filled fillcolor="#eeeeee" fontsize=9',
          ir.COND: 'shape=hexagon style=filled fillcolor="#fdebd0"'}


def graph_to_dot(graph, title: str = "") -> str:
    lines = [f"digraph {_q(graph.name)} {{", '  rankdir=TB; node [shape=box fontname="monospace" fontsize=10];',
             f"  label={_q(title or graph.name)}; labelloc=t;"]
    count = [0]
    outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}

    def emit(nodes, indent):
        for n in nodes:
            count[0] += 1
            if count[0] > MAX_NODES:
                return
            style = _STYLE.get(n.op, "")
            if n.id in outputs:
                style += " penwidth=2"
            if n.site:
                style += f" tooltip={_q(n.site)}"
            lines.append(f"{indent}n{n.id} [label={_q(_label(n))} {style}];")
            for i in n.inputs:
                if isinstance(i, ir.Node):
                    lines.append(f"{indent}n{i.id} -> n{n.id};")
            if n.op == ir.COND:
                for branch in ("then", "else"):
                    lines.append(f"{indent}subgraph cluster_{n.id}_{branch} {{ label={_q(branch)}; style=dashed;")
                    emit(n.params[f"{branch}_nodes"], indent + "  ")
                    lines.append(f"{indent}}}")
                    for o in n.params[f"{branch}_outs"]:
                        if isinstance(o, ir.Node):
                            lines.append(f"{indent}n{o.id} -> n{n.id} [style=dotted];")

    emit(graph.nodes, "  ")
    if count[0] > MAX_NODES:
        lines.append(f"  truncated [label={_q(f'... {graph.size() - MAX_NODES} more nodes')} shape=plaintext];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_available() -> bool:
    return shutil.which("dot") is not None


def render_svg(dot_path: str, svg_path: str, timeout: float = 30.0) -> bool:
    """Run Graphviz; False (and no file) when it is missing or fails."""
    exe = shutil.which("dot")
    if exe is None:
        return False
    try:
        subprocess.run([exe, "-Tsvg", dot_path, "-o", svg_path], check=True, timeout=timeout,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return True
    except (OSError, subprocess.SubprocessError):
        return False
