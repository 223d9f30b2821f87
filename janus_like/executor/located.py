"""Generated code that reports the user's file and lines.

A plan runs the user's NumPy calls from its own frame, so a warning NumPy raises there (`invalid
value encountered in log`) named the plan (`<janus_like plan step>:4`) where eager names the
user's line: a filter by module or line (`filterwarnings("error", module="train")`) did not match,
and a `"default"` filter showed the warning again when the call then fell back to eager. Here the
plan's code is compiled with the user's file name and, statement by statement, the line of the
node it computes (`ir.Node.site`); its globals carry the user module's `__name__` and share its
`__warningregistry__`. A line from another file (an inlined callee elsewhere) reports the nearest
earlier line of the user's file. Nothing is added to the code that runs.
"""
from __future__ import annotations

import os
import types


def mark(sites: dict, lines: list, start: int, site) -> None:
    """Lines `start..` of `lines` (appended for one node) come from `site` ("file.py:12"):
    recorded in `sites` (line index -> site) unless an inner node already recorded theirs."""
    if site:
        for i in range(start, len(lines)):
            sites.setdefault(i, site)


def origin_of(fn):
    """(the file, the module globals, the `def` line) of the function a graph is made from, or None."""
    code, glb = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if code is None or not isinstance(glb, dict) or code.co_filename.startswith("<"):
        return None
    return code.co_filename, glb, code.co_firstlineno


def user_lines(line_sites, origin) -> list | None:
    """For each entry of `line_sites` (a site or None, one per source line) the user's line
    number it reports, or None where no line of `origin`'s file is known yet."""
    if origin is None:
        return None
    base = os.path.basename(origin[0]) + ":"
    out, last = [], None
    for site in line_sites:
        if site and site.startswith(base) and site[len(base):].isdigit():
            last = int(site[len(base):])
        out.append(last)
    return out


def compile_at(src: str, line_sites, origin, name: str, env: dict):
    """`src` compiled: with `origin` (`origin_of`) and `line_sites` (one site or None per line of
    `src`), reporting the user's file and lines, and `env` (the code's globals) given the module's
    `__name__` and warning registry; else under `name`."""
    code = compile(src, name, "exec")
    numbers = user_lines(line_sites, origin)
    if not numbers or all(n is None for n in numbers):
        return code
    filename, glb, first = origin
    env["__name__"] = glb.get("__name__", "<string>")
    env["__warningregistry__"] = glb.setdefault("__warningregistry__", {})
    return _relined(code, numbers, filename, first)


def _relined(code, numbers, filename, first):
    """`code` (and the code objects it holds) reporting `filename`, line `numbers[k - 1]` where
    it reported line k (`first` where that is None): its line table written again in the
    interpreter's format (CPython's Objects/locations.md, 3.11 on; no columns: a "no column" entry
    per run of at most 8 code units, its line as a signed varint delta). Compiling the source from
    an AST with these numbers cost 3.8 times the compile (the LSTM step's plan: 51 against 13 ms);
    this costs a pass over the table."""
    consts = tuple(_relined(c, numbers, filename, first) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    runs = []  # [line, code units], consecutive ranges of one line merged
    for start, end, line in code.co_lines():
        new = None if line is None else (numbers[line - 1] if 0 < line <= len(numbers) else None) or first
        if runs and runs[-1][0] == new:
            runs[-1][1] += (end - start) // 2
        else:
            runs.append([new, (end - start) // 2])
    table, prev = bytearray(), first
    for new, units in runs:
        if new is not None:
            delta, prev = new - prev, new
        while units > 0:
            n = min(units, 8)
            units -= n
            if new is None:
                table.append(0x80 | (15 << 3) | (n - 1))  # no location
                continue
            table.append(0x80 | (13 << 3) | (n - 1))  # a line, no columns
            v = delta << 1 if delta >= 0 else (-delta << 1) | 1
            delta = 0  # (the next entries of the run: the same line)
            while v >= 64:
                table.append(0x40 | (v & 63))
                v >>= 6
            table.append(v)
    return code.replace(co_filename=filename, co_firstlineno=first, co_linetable=bytes(table), co_consts=consts)


def sites_of_text(lines: list, sites: dict, offset: int = 0) -> list:
    """One site or None per source line of `"\\n".join(lines)` (a line may hold newlines),
    `offset` lines of header first."""
    out = [None] * offset
    for i, line in enumerate(lines):
        out += [sites.get(i)] * (line.count("\n") + 1)
    return out
