"""The batched form of a recursion region (ops/recursion_batch.py runs it): the calls of one
return site at one height of the tree run as one call of that site's code on stacked values.

A host walk (the region's host code alone: attribute reads, tests, the recursive calls) first
records, for every call, its return site, its height (one more than its highest child's; a leaf's
is 0), the host numbers its array code reads (`node.word`) and its children. The calls of one
(height, site) group are independent, so each array value of the site gains a leading axis, one
row per call: `x @ w` on a (64,) vector becomes one (n, 64) @ (64, 192) product, `emb[word]` one
gather, `z[0:64]` the slice `z[:, 0:64]`. The backward runs the groups in reverse, each
site's gradient code batched the same way; a weight gradient becomes one product of all the
calls' stacked vectors and cotangents (as the per-call form folds it).

Sums run in another order than eager's (over the calls of a group first), so a region is
batched only where the graph may reassociate; each op has a batching rule here, and a region
with an op that has none keeps the per-call form (region_code.py), as does one where a call's
result reaches its parent's return with no cotangent (the per-call form skips such a subtree's
gradient code; the batched form would run it on zeros).
"""
from __future__ import annotations

import re

import numpy as np

from .. import ir
from ..executor.codegen import _DIRECT, _REDUCE
from ..ops.indexing import index_source, is_basic
from ..ops.primitives import sum_to_axes
from ..ops.recursion_batch import Batched
from .region_backward import _ROW
from .region_calls import _var, first_axis_slice
from .values import Sym, Unsupported

_ELEMENTWISE = {op: f"np.{name}" for op, name in _DIRECT.items() if op not in ("matmul", "dot")}
_ELEMENTWISE["sigmoid"] = "SIGMOID"
# ops whose first input is the value, the second only gives a shape
_SHAPED_LIKE = ("broadcast_like", "reshape_like", "zeros_like", "ones_like", "getitem_grad", "sum_to")


def _record(line, widths):
    """The host walk's record of a call (ops/recursion_batch.py reads it): (return site, height,
    children's record indices, host numbers), each part padded with zeros to the widest site's."""
    pad, k, level, calls, hosts = line
    parts = [*calls, *["0"] * (widths[0] - len(calls)), *hosts, *["0"] * (widths[1] - len(hosts))]
    return pad + f"R.append(({k}, {level}, {''.join(p + ', ' for p in parts)}))"


_SAVED = "@SAVED@"  # where a site's record and its backward's unpacking list the values saved


def _pruned(site, back, saved, views):
    """The lines of a site and of its backward, without the views nothing reads (a joined gather's
    pieces, a cotangent's slices that one scatter replaced) and without the values the backward
    never reads in its record (the per-call form saves every value of the site)."""
    _drop_unread(back, views)
    body = "\n".join(back[2:])
    kept = "".join(s + ", " for s in saved if re.search(rf"\b{s}\b", body))
    site[-1] = site[-1].replace(_SAVED, kept)
    back[1] = back[1].replace(_SAVED, kept)
    _drop_unread(site, views)
    return site + back


def _drop_unread(lines, views):
    """Removes, in place, the lines assigning a view in `views` that no other line reads, and the
    unpacking of the calls' host numbers or positions (`H.T`, `C.T`) when no name it makes is read."""
    def assigned():
        found = {}
        for i, line in enumerate(lines):
            if (m := re.match(r"    (\w+) = ", line)) and m[1] in views:
                found[i] = [m[1]]
            elif m := re.fullmatch(r"    ((?:\w+, )+)= [HC]\.T", line):
                found[i] = m[1].split(", ")[:-1]
        return found

    while True:
        unread = [i for i, names in assigned().items()
                  if not any(re.search(rf"\b{name}\b", line) for name in names for j, line in enumerate(lines) if j != i)]
        if not unread:
            return
        for i in sorted(unread, reverse=True):
            del lines[i]


def _lead(shape):
    """The source of a batched shape: `n` calls, then `shape`."""
    return f"(n, {''.join(f'{d}, ' for d in shape)})"


def _columns(cols, width):
    """The calls' position block `C` (n, width), or the columns `cols` of it."""
    return "C" if cols == tuple(range(width)) else f"C[:, {cols!r}]"


class BatchMixin:
    """Methods of region_code.Translator."""

    def batched(self):
        """The batched form of the region (a Batched), or None, with the reason in `batch_reason`."""
        self.batch_reason = None
        if not self.reassociate:
            self.batch_reason = "the graph may not reassociate (batched sums run in another order)"
            return None
        try:
            sources = self.batch_sources()
        except Unsupported as exc:
            self.batch_reason = exc.detail
            return None
        env = self.env()
        exec(compile(sources, f"<janus_like region {self.name} batched>", "exec"), env)
        sites = [(env[f"site{k}"], env[f"back{k}"]) for k in range(len(self.paths))]
        items = self.elems if self.elems is not None else (self.aval,)
        self.batch_source = sources
        inputs = [self.site_inputs(p) for p in self.paths]
        return Batched(env["make_walk"], sites, items, [len(c) for _, c in inputs], [len(h) for h, _ in inputs])

    def batch_sources(self):
        captured = f"    {', '.join(self.captured_names)}, = arrays\n" if self.captured else ""
        inputs = [self.site_inputs(p) for p in self.paths]
        widths = max(len(c) for _, c in inputs), max(len(h) for h, _ in inputs)
        src = ["def make_walk(R):", f"    def walk(u_{self.param}):"]
        src += ["    " + (line if isinstance(line, str) else _record(line, widths)) for line in self.wlines]
        src += ["    return walk", ""]
        for k, (path, part) in enumerate(zip(self.paths, self.back_parts)):
            batched, self.views, self.ufuncs = set(), set(), set()
            site = self.batched_site(k, path, batched, captured)
            src += _pruned(site, self.batched_back(k, path, part, batched, captured), self.saved(path), self.views)
        return "\n".join(src) + "\n"

    def batched_site(self, k, path, batched, captured):
        hosts, calls = self.site_inputs(path)
        lines = [f"def site{k}(n, H, C, OUT, D, arrays):"]
        if captured:
            lines.append(captured.rstrip("\n"))
        if hosts:
            lines.append(f"    {''.join(h + ', ' for h in hosts)}= H.T")
        if calls:
            lines.append(f"    {''.join(c + ', ' for c in calls)}= C.T")
        joins, done = self.joined_gathers(path, calls), set()
        for n in path.nodes:
            tag = self.placeholders.get(n.id, ("",))
            if tag[0] == "host":
                batched.add(n.id)
            elif tag[0] == "call" and n.id in joins:  # one gather for the concatenation, views for each
                cat, i, cols = joins[n.id]
                if cat.id not in done:
                    done.add(cat.id)
                    batched.add(cat.id)
                    lines += [f"    J{cat.id} = OUT[{tag[2]}][{_columns(cols, len(calls))}]",
                              f"    {_var(cat)} = J{cat.id}.reshape({_lead(cat.aval[0])})"]
                batched.add(n.id)
                self.views.add(_var(n))
                lines.append(f"    {_var(n)} = J{cat.id}[:, {i}]")
            elif tag[0] == "call":
                batched.add(n.id)
                lines.append(f"    {_var(n)} = OUT[{tag[2]}][{tag[1]}]")
            elif tag[0] != "array" and n.id not in done:
                lines += ["    " + line for line in self.batched_lines(n, batched)]
        outs, written = [], set()
        for i, x in enumerate(path.env["out"]):
            v, shape = _var(x.node), tuple(x.node.aval[0])
            outs.append(v if x.node.id in batched else f"np.broadcast_to({v}, (n, *{shape!r}))")
            if v in self.ufuncs and v not in written:  # the ufunc writes the group's rows of item i itself
                written.add(v)
                at = next(j for j, line in enumerate(lines) if line.startswith(f"    {v} = np."))
                lines[at] = lines[at][:-1] + f", out=D[{i}])"
        lines.append(f"    return ({k}, C, {_SAVED}), ({''.join(o + ', ' for o in outs)})")
        return lines

    def joined_gathers(self, path, calls):
        """{call placeholder id: (concatenation, its position there, the calls' columns)} for each
        first-axis concatenation of one item of several recursive calls' results: one gather of
        rows `OUT[item][C]` (n, k, ...) is the concatenation reshaped, each piece a view of it."""
        joins = {}
        for n in path.nodes:
            if n.op != "concatenate" or set(n.params) - {"axis"} or n.params.get("axis", 0) % len(n.aval[0]):
                continue
            tags = [self.placeholders.get(x.id, ("",)) if isinstance(x, ir.Node) else ("",) for x in n.inputs]
            if len(tags) < 2 or any(t[0] != "call" for t in tags) or len({t[2] for t in tags}) != 1:
                continue
            cols = tuple(calls.index(t[1]) for t in tags)
            for i, x in enumerate(n.inputs):
                joins.setdefault(x.id, (n, i, cols))
        return joins

    def batched_back(self, k, path, part, batched, captured):
        g_nodes, nodes, joined, actions = part
        _, calls = self.site_inputs(path)
        reached = {info[0] for kind, info, _ in actions if kind == "cot"}
        if set(calls) - reached:
            raise self.unsupported("a recursive call whose result gets no cotangent (batched)")
        lines = [f"def back{k}(rec, G, COT, acc, arrays):", f"    _k, C, {_SAVED}= rec"]
        lines.append(f"    {''.join(_var(g) + ', ' for g in g_nodes)}= G")
        batched.update(g.id for g in g_nodes)
        if captured:
            lines.append(captured.rstrip("\n"))
        for n in nodes:
            if n.id in joined:  # the slices' cotangents side by side (BackwardMixin._joined_slices)
                parts = joined[n.id]
                if not all(p.id in batched for p in parts):
                    raise self.unsupported("a joined slice gradient of values that are not batched")
                batched.add(n.id)
                lines.append(f"    {_var(n)} = np.concatenate(({''.join(_var(p) + ', ' for p in parts)}), axis=1)")
            else:
                lines += ["    " + line for line in self.batched_lines(n, batched)]
        scattered = self.joined_scatters(actions, calls, batched)
        for item, (base, cols, shape) in scattered.items():
            lines.append(f"    COT[{item}][{_columns(cols, len(calls))}] = {_var(base)}.reshape({_lead(shape)})")
        if scattered:
            lines.insert(2, "    n = C.shape[0]")
        for kind, info, v in actions:
            node = v.node if isinstance(v, Sym) else None
            if node is None or node.id not in batched:
                raise self.unsupported("a cotangent that is the same for every call (batched)")
            value = _var(node)
            if kind == "cot" and info[1] in scattered:
                continue
            if kind == "cot":
                lines.append(f"    COT[{info[1]}][{info[0]}] = {value}")
            elif kind == "rows":
                lines.append(f"    acc.rows[{info[0]}].append({value}); acc.rows_at[{info[0]}].append({_var(info[1])})")
            elif kind == "xs":
                if info[1].id not in batched:
                    raise self.unsupported("a folded product of a vector that is the same for every call")
                lines.append(f"    acc.xs[{info[0]}].append({_var(info[1])}); acc.gs[{info[0]}].append({value})")
            else:
                lines.append(f"    acc.plain[{info}].append({value})")  # summed over all groups' rows at the end
        lines.append("")
        return lines

    def joined_scatters(self, actions, calls, batched):
        """{item: (value, the calls' columns, per-call shape (k, ...))} where the cotangents of one
        item for several calls are consecutive equal first-axis slices that tile one batched value
        (`dboth[:h]`, `dboth[h:]`): one scatter of that value's rows `COT[item][C] = value`."""
        by_item = {}
        for kind, info, v in actions:
            if kind == "cot":
                by_item.setdefault(info[1], []).append((info[0], v.node if isinstance(v, Sym) else None))
        found = {}
        for item, cots in by_item.items():
            pieces = []
            for var, node in cots:
                base = node.inputs[0] if node is not None and node.op == "getitem" and len(node.inputs) == 1 \
                    else None
                if base is None or base.id not in batched or node.aval[0][1:] != base.aval[0][1:]:
                    break
                start = first_axis_slice(node.params.get("index"), base.aval[0][0])
                if start is None:
                    break
                pieces.append((start, node.aval[0][0], base, calls.index(var)))
            else:
                pieces.sort(key=lambda p: p[0])
                length, base = pieces[0][1], pieces[0][2]
                if len(pieces) > 1 and all(p[2] is base and p[0] == i * length and p[1] == length
                                           for i, p in enumerate(pieces)) \
                        and length * len(pieces) == base.aval[0][0] and len({p[3] for p in pieces}) == len(pieces):
                    shape = (len(pieces), length, *base.aval[0][1:])
                    found[item] = (base, tuple(p[3] for p in pieces), shape)
        return found

    # ------------------------------------------------------------------ batching rules
    def batched_lines(self, n, batched):
        """Lines computing node n for all the calls of a group: the per-call line where no input
        differs between calls, else n's op with a leading axis on every value that does."""
        ins = [isinstance(x, ir.Node) and x.id in batched for x in n.inputs]
        if not any(ins) or n.op in _SHAPED_LIKE and not ins[0]:  # (a value broadcast like a batched one)
            return [self.line(n)]
        batched.add(n.id)
        v, op, rank = _var(n), n.op, len(n.aval[0])
        if op in _ELEMENTWISE and not n.params:
            args = [self.expanded(x, b, rank) for x, b in zip(n.inputs, ins)]
            if _ELEMENTWISE[op].startswith("np."):
                self.ufuncs.add(v)
            return [f"{v} = {_ELEMENTWISE[op]}({', '.join(args)})"]
        if op == "matmul" and not n.params:
            return [f"{v} = {self.batched_matmul(n, ins)}"]
        if op == "getitem":
            if ins[0] and len(n.inputs) == 1:
                self.views.add(v)  # a basic index of a batched value: a view
            return [f"{v} = {self.batched_getitem(n, ins)}"]
        if op == "getitem_grad" and len(n.inputs) == 2:
            g = _var(n.inputs[0])
            return [f"{v} = np.zeros(({g}.shape[0], *{tuple(n.aval[0])!r}), {self.em.const(np.dtype(n.aval[1]))})",
                    f"{v}[:, {self.plain_index(n.params['index'])}] = {g}"]
        if op == "concatenate" and all(ins) and set(n.params) <= {"axis"}:
            axis = n.params.get("axis", 0) % rank + 1
            return [f"{v} = np.concatenate(({''.join(_var(x) + ', ' for x in n.inputs)}), axis={axis})"]
        x = _var(n.inputs[0])
        if op == "transpose" and ins == [True] and set(n.params) <= {"axes"}:
            axes = n.params.get("axes")
            axes = range(rank - 1, -1, -1) if axes is None else [a % rank for a in axes]
            return [f"{v} = {x}.transpose({(0, *(a + 1 for a in axes))!r})"]
        if op == "expand_dims" and ins == [True] and set(n.params) == {"axis"}:
            axis = n.params["axis"]
            new = sorted(a % rank + 1 for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
            return [f"{v} = np.expand_dims({x}, {tuple(new)!r})"]
        if op in ("broadcast_to", "broadcast_like") and ins[0] and set(n.params) <= {"shape"}:
            return [f"{v} = np.broadcast_to({self.expanded(n.inputs[0], True, rank)}, ({x}.shape[0], "
                    f"*{tuple(n.aval[0])!r}))"]
        if op in ("reshape_like", "squeeze") and ins[0] and set(n.params) <= {"axis"}:
            return [f"{v} = {x}.reshape(({x}.shape[0], *{tuple(n.aval[0])!r}))"]
        if op == "reshape" and ins == [True] and set(n.params) == {"shape"}:
            return [f"{v} = {x}.reshape(({x}.shape[0], *{tuple(n.params['shape'])!r}))"]
        if op == "cast" and ins == [True] and set(n.params) == {"dtype"}:
            return [f"{v} = {x}.astype({self.em.const(np.dtype(n.params['dtype']))})"]
        if op in ("zeros_like", "ones_like") and ins[0] and not n.params:
            return [f"{v} = np.{op}({x})"]
        if op in (*_REDUCE, "mean") and ins == [True] and set(n.params) <= {"axis", "keepdims", "dtype"} \
                and n.params.get("dtype") is None:
            shape = n.inputs[0].aval[0]
            axis = n.params.get("axis")
            axes = range(len(shape)) if axis is None else \
                [a % len(shape) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
            keep = bool(n.params.get("keepdims", False))
            expr = f"np.{_REDUCE.get(op, 'add')}.reduce({x}, {tuple(a + 1 for a in axes)!r}, None, None, {keep!r})"
            if op == "mean":
                expr += f" / {max(int(np.prod([shape[a] for a in axes], dtype=np.int64)), 1)}"
            return [f"{v} = {expr}"]
        if op == "sum_to" and ins[0] and len(n.inputs) == 2 and isinstance(n.inputs[1], ir.Node):
            shape = tuple(n.inputs[1].aval[0])
            axes = sum_to_axes(tuple(n.inputs[0].aval[0]), shape)
            if not axes:
                return [f"{v} = {x}"]
            return [f"{v} = np.add.reduce({x}, {tuple(a + 1 for a in axes)!r}, None, None, True)"
                    f".reshape(({x}.shape[0], *{shape!r}))"]
        raise self.unsupported(f"the operation {op!r} on values that differ between calls (batched)")

    def expanded(self, x, is_batched, rank):
        """An operand of an element-wise op: a batched value of lower rank than the result gets
        the axes broadcasting would give it in each call, after its leading one."""
        if not isinstance(x, ir.Node):
            return self.em.const(x)
        if is_batched and len(x.aval[0]) < rank:
            return f"{_var(x)}[:, {'None, ' * (rank - len(x.aval[0]))}]"
        return _var(x)

    def batched_matmul(self, n, ins):
        (a, b), (ba, bb) = n.inputs, ins
        ra, rb = len(a.aval[0]) if isinstance(a, ir.Node) else np.ndim(a), len(b.aval[0]) if isinstance(b, ir.Node) \
            else np.ndim(b)
        x, y = self.operand(a), self.operand(b)
        if ba and not bb and rb == 2 and ra in (1, 2):
            return f"np.matmul({x}, {y})"
        if not ba and bb and ra == 2 and rb == 1:
            return f"np.matmul({y}, {x}.T)"
        if not ba and bb and ra == 2 and rb == 2 or ba and bb and ra == 2 and rb == 2:
            return f"np.matmul({x}, {y})"
        if ba and bb and ra == 1 and rb == 2:
            return f"np.matmul({x}[:, None, :], {y})[:, 0]"
        if ba and bb and ra == 2 and rb == 1:
            return f"np.matmul({x}, {y}[:, :, None])[:, :, 0]"
        raise self.unsupported(f"a matrix product of ranks {ra} and {rb} (batched)")

    def batched_getitem(self, n, ins):
        template = n.params["index"]
        base = _var(n.inputs[0])
        if ins[0] and len(n.inputs) == 1:
            return f"{base}[:, {self.plain_index(template)}]"
        if not ins[0] and len(n.inputs) == 2 and ins[1] and template == _ROW:
            return f"{base}[{_var(n.inputs[1])}]"  # one row per call: a gather
        raise self.unsupported("an index that differs between calls, other than a row by an int (batched)")

    def plain_index(self, template):
        if not is_basic(template):
            raise self.unsupported("an array index (batched)")
        return index_source(template, None, self.em.const)

