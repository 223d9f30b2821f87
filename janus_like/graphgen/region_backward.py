"""The backward half of a recursion region's code (region_code.py makes the forward): one
function per return site, generated from the ops' own gradient rules."""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ops.indexing import _SLOT
from ..ops.registry import REGISTRY, _builder
from .builder import GraphBuilder
from .region_calls import _var, first_axis_slice
from .values import Sym, Unsupported

_ROW = (((_SLOT, 0),), True)  # getitem's index template (ops/indexing.py) for `a[i]`, i a run-time int


class BackwardMixin:
    """Methods of region_code.Translator."""

    def backward(self, path):
        """Source of one return site's `back(rec, g, cot, acc, arrays)`: the ops' own gradient
        rules run on the scratch values, last op first (as a graph's tape does), emitted like
        the forward; what reaches a recursive call's result becomes its record's cotangent, what
        reaches a captured array goes to the accumulators (ops/recursion.py), in eager's order."""
        out = path.env["out"]
        needs = set()
        for n in path.nodes:
            tag = self.placeholders.get(n.id)
            if tag is not None:
                if tag[0] == "call":
                    needs.add(n.id)
            elif np.dtype(n.aval[1]).kind in "fc" and any(self._needs(x, needs) for x in n.inputs):
                needs.add(n.id)
        back = GraphBuilder("region backward")
        self.backs.append(back)
        avals = self.elems if self.elems is not None else (self.aval,)
        g_nodes = [ir.Node(ir.INPUT, (), {"slot": -1, "name": "g"}, aval) for aval in avals]
        grads = {}
        actions = []  # (what is done with the value: "cot" | "rows" | "xs" | "plain", its details, value)
        previous = _builder[0]
        _builder[0] = back
        try:
            for x, g_node in zip(out, g_nodes):
                gx = Sym(g_node, "tensor")
                grads[x.node.id] = gx if x.node.id not in grads else grads[x.node.id] + gx
            for n in reversed(path.nodes):
                gn = grads.get(n.id)
                if gn is None or n.id not in needs:
                    continue
                if n.id in self.placeholders:  # a recursive call's result (an item of it)
                    _, var, k, count = self.placeholders[n.id]
                    actions.append(("cot", (var, k, count), gn))
                    continue
                row = self._row_of(n)
                if row is not None:
                    actions.append(("rows", (row, n.inputs[1]), gn))
                    continue
                folded = self._folded(n)
                if folded is not None:
                    actions.append(("xs", (folded, n.inputs[0]), gn))
                ins = [Sym(x, "tensor") if isinstance(x, ir.Node) else x for x in n.inputs]
                in_grads = REGISTRY[n.op].vjp(gn, Sym(n, "tensor"), *ins, **n.params)
                for i, (x, gx) in enumerate(zip(n.inputs, in_grads)):
                    if gx is None or not self._needs(x, needs) or (folded is not None and i == 1):
                        continue
                    tag = self.placeholders.get(x.id)
                    if tag is not None and tag[0] == "array":
                        actions.append(("plain", tag[1], gx))
                    else:
                        grads[x.id] = gx if x.id not in grads else grads[x.id] + gx
        except Unsupported:
            raise
        except Exception as exc:
            raise Unsupported("op-error", f"recursion region {self.name}: a gradient rule ({exc})", self.site) from exc
        finally:
            _builder[0] = previous
        joined = self._joined_slices(back.graph.nodes) if self.reassociate else {}
        live = self._live([v for *_, v in actions], joined)
        self.back_parts.append((g_nodes, [n for n in back.graph.nodes if n.id in live], joined, actions))
        lines = ["def back(rec, g, cot, acc, arrays):", f"    _k, {', '.join(self.saved(path))} = rec"]
        if self.elems is None:
            lines.append(f"    {_var(g_nodes[0])} = g")
        for k, n in enumerate(g_nodes if self.elems is not None else ()):
            # an item no cotangent reached (the root's unused `c`): zeros, as adding nothing
            zeros = f"np.zeros({n.aval[0]!r}, {self.em.const(np.dtype(n.aval[1]))})"
            lines.append(f"    {_var(n)} = g[{k}]")
            lines.append(f"    if {_var(n)} is None: {_var(n)} = {zeros}")
        if self.captured:
            lines.append(f"    {', '.join(self.captured_names)}, = arrays")
        lines += ["    " + (self.line(n) if n.id not in joined else
                            f"{_var(n)} = np.concatenate(({''.join(_var(p) + ', ' for p in joined[n.id])}))")
                  for n in back.graph.nodes if n.id in live]
        lines += ["    " + self.action(kind, info, self.operand(v.node if isinstance(v, Sym) else v))
                  for kind, info, v in actions]
        return "\n".join(lines) + "\n"

    def action(self, kind, info, value):
        """The statement that hands a cotangent on (one call's record)."""
        if kind == "cot":
            var, k, count = info
            return f"cot[{var}] = {value}" if self.elems is None else f"SETCOT(cot, {var}, {k}, {count}, {value})"
        if kind == "rows":
            return f"acc.rows[{info[0]}].append({value}); acc.rows_at[{info[0]}].append({_var(info[1])})"
        if kind == "xs":
            return f"acc.xs[{info[0]}].append({_var(info[1])}); acc.gs[{info[0]}].append({value})"
        return f"acc.plain[{info}].append({value})"

    @staticmethod
    def _live(values, joined):
        """Ids of the nodes `values` need (the rules' unwanted cotangents are left out)."""
        live, todo = set(), [v.node for v in values if isinstance(v, Sym)]
        while todo:
            n = todo.pop()
            if n.id in live:
                continue
            live.add(n.id)
            todo.extend(x for x in joined.get(n.id, n.inputs) if isinstance(x, ir.Node))
        return live

    @staticmethod
    def _joined_slices(nodes):
        """{add node id: cotangents} for sums of slice gradients that tile one vector's first
        axis (a split's `i, f, o, u = F.split(z, 4)`): the sum is their concatenation, in slice
        order, one copy instead of a zero-filled array per slice and their sums. The same values
        but for the sign of a zero (0.0 + -0.0 is 0.0), so only where the graph may reassociate."""
        def pieces(n):
            if n.op == "getitem_grad" and len(n.inputs) == 2:
                g, x = n.inputs
                if isinstance(g, ir.Node) and g.aval[1] == x.aval[1] and len(g.aval[0]) >= 1 \
                        and g.aval[0][1:] == x.aval[0][1:]:
                    start = first_axis_slice(n.params.get("index"), x.aval[0][0])
                    if start is not None:
                        return [(start, start + g.aval[0][0], g, x)]  # its extent: the cotangent's length
                return None
            if n.op == "add" and not n.params and all(isinstance(x, ir.Node) for x in n.inputs):
                parts = [pieces(x) for x in n.inputs]
                return None if None in parts else parts[0] + parts[1]
            return None

        joined, inside = {}, set()
        for n in reversed(nodes):
            if n.op != "add" or n.id in inside:
                continue
            parts = pieces(n)
            if not parts or len({id(x) for *_, x in parts}) != 1 or n.aval != parts[0][3].aval:
                continue
            parts.sort(key=lambda p: p[0])
            if [p[0] for p in parts] != [0] + [p[1] for p in parts[:-1]] or parts[-1][1] != n.aval[0][0]:
                continue
            joined[n.id] = [p[2] for p in parts]
            todo = list(n.inputs)
            while todo:
                x = todo.pop()
                if x.op == "add":
                    inside.add(x.id)
                    todo.extend(x.inputs)
        return joined

    def _needs(self, x, needs):
        if not isinstance(x, ir.Node):
            return False
        tag = self.placeholders.get(x.id)
        if tag is not None and tag[0] == "array":
            return np.dtype(x.aval[1]).kind in "fc"
        return x.id in needs

    def _row_of(self, n):
        """j when n is `a_j[i]` (a row of captured array j by a run-time int), else None."""
        if n.op != "getitem" or n.params.get("index") != _ROW or len(n.inputs) != 2:
            return None
        tag = self.placeholders.get(getattr(n.inputs[0], "id", None))
        return tag[1] if tag is not None and tag[0] == "array" and len(n.inputs[0].aval[0]) >= 1 else None

    def _folded(self, n):
        """j when n is `x @ a_j` with x a vector and a_j a captured matrix, else None (always
        None unless the graph may reassociate: the per-call products are then summed as one)."""
        if not self.reassociate or n.op != "matmul" or n.params or len(n.inputs) != 2:
            return None
        x, a = n.inputs
        tag = self.placeholders.get(getattr(a, "id", None))
        if tag is None or tag[0] != "array" or not isinstance(x, ir.Node) or len(x.aval[0]) != 1 \
                or len(a.aval[0]) != 2 or np.dtype(x.aval[1]) != np.dtype(a.aval[1]):
            return None
        return tag[1]
