"""Fold accumulations of per-step products into one big op (reassociates floating-point sums).

Backward passes through loops accumulate, for a weight used at every time step,
`dW = h_1ᵀ·g_1 + h_2ᵀ·g_2 + ... + h_Tᵀ·g_T`: T small matmuls and T-1 full-size adds. A careful
person writes one matmul instead, `[h_1 … h_T]ᵀ·[g_1; …; g_T]`. This pass does that rewrite for
add-trees whose leaves are single-use 2-D matmuls sharing the output shape, and likewise merges
scatter-adds into the same table (embedding gradients) into one scatter. The result differs from
eager only by the order of floating-point additions, so it runs only with `reassociate=True`.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .simplify import substitute


def _uses(graph):
    count = {}
    for n in graph.all_nodes():
        for i in n.inputs:
            if isinstance(i, ir.Node):
                count[i.id] = count.get(i.id, 0) + 1
        if n.op == ir.COND:
            for o in n.params["then_outs"] + n.params["else_outs"]:
                if isinstance(o, ir.Node):
                    count[o.id] = count.get(o.id, 0) + 1
    for o in graph.outputs:
        if isinstance(o, ir.Node):
            count[o.id] = count.get(o.id, 0) + 2  # never fold away an output
    return count


def _leaves(n, uses, inner):
    out = []
    for i in n.inputs:
        if isinstance(i, ir.Node) and i.op == "add" and uses.get(i.id, 0) == 1 and i.aval == n.aval:
            inner.append(i)
            out += _leaves(i, uses, inner)
        else:
            out.append(i)
    return out


def _is_matmul2d(x, uses, aval):
    if not (isinstance(x, ir.Node) and x.op == "matmul" and uses.get(x.id, 0) == 1):
        return False
    a, b = x.inputs
    return (isinstance(a, ir.Node) and isinstance(b, ir.Node) and len(a.aval[0]) == 2 and len(b.aval[0]) == 2
            and x.aval == aval)


def _is_scatter_rows(x, uses):
    if not (isinstance(x, ir.Node) and x.op == "getitem_grad" and uses.get(x.id, 0) == 1):
        return False
    return x.params["index"] == ((("slot", 0),), True) and len(x.inputs) == 3 and \
        isinstance(x.inputs[2], ir.Node) and len(x.inputs[2].aval[0]) in (0, 1)


def _size(node):
    return int(np.prod(node.aval[0], dtype=np.int64))


def _worth_folding(mms, total):
    """Folding copies every operand once (the concatenations) and saves len(mms)-1 full-size
    additions: worth it for weight gradients (small operands, big sum), not for `x@Wx + h@Wh`
    in a forward pass (the weights are the big part)."""
    copied = sum(_size(m.inputs[0]) + _size(m.inputs[1]) for m in mms)
    return copied < _size(total) * (len(mms) - 1)


def _slice_axis(x, uses):
    """(axis, start, stop) when x is getitem_grad(g, like) of one basic slice along one axis."""
    if not (isinstance(x, ir.Node) and x.op == "getitem_grad" and len(x.inputs) == 2 and uses.get(x.id, 0) == 1):
        return None
    items, _single = x.params["index"]
    found = None
    for axis, item in enumerate(items):
        if not (type(item) is tuple and item[0] == "s" and item[3] in (None, 1)):
            return None
        if item[1:3] != (None, None):
            if found is not None:
                return None
            found = (axis, item[1] or 0, item[2])
    return found


def _tilings(leaves, uses):
    """Groups of slice-gradients that tile their target exactly (the backward of a split):
    their sum is the concatenation of the pieces."""
    by_like = {}
    for x in leaves:
        info = _slice_axis(x, uses)
        if info is not None and x.inputs[0].aval[1] == x.aval[1]:
            by_like.setdefault((x.inputs[1].id, info[0]), []).append((info, x))
    out = []
    for (_, axis), members in by_like.items():
        members.sort(key=lambda m: m[0][1])
        full = members[0][1].aval[0][axis]
        pos, ok = 0, len(members) >= 2
        for (ax, start, stop), _m in members:
            if start != pos or stop is None or stop > full:
                ok = False
                break
            pos = stop
        if ok and pos == full:
            out.append((axis, [m for _, m in members]))
    return out


def _node(op, inputs, params, aval, site):
    return ir.Node(op, tuple(inputs), params, aval, site)


def _program_order(graph):
    """A sort key for folded terms: the earliest position among a term's operands (looking
    through transposes). Backward passes accumulate in reverse time order; sorting by the
    forward values puts the concatenated pieces in time order, the order in which the forward
    pass already concatenated them (batched products), so CSE and row-block lifting can share
    those concatenations."""
    position = {n.id: i for i, n in enumerate(graph.nodes)}
    end = len(position)

    def key(term):
        around = []
        # a scatter's table is the same for every term: its row gradients and indices decide
        operands = term.inputs[::2] if term.op == "getitem_grad" else term.inputs
        for x in operands:
            if isinstance(x, ir.Node):
                around.append(x)
                if x.op in ("transpose", "reshape", "expand_dims") and isinstance(x.inputs[0], ir.Node):
                    around.append(x.inputs[0])
        return min((position.get(x.id, end) for x in around), default=end)

    return key


def fold_accumulations(graph: ir.Graph) -> ir.Graph:
    uses = _uses(graph)
    order = _program_order(graph)
    consumed: set = set()
    mapping = {}
    new_nodes = []  # (position node, nodes to insert before it)
    # Last node first: the root of an add-tree comes after its inner adds, and folding it
    # consumes them (front to back, each inner add of a T-term chain folded its own prefix
    # first: T(T-1)/2 concatenated terms, all dead once the root folded).
    for n in reversed(graph.nodes):
        if n.op != "add" or n.id in consumed or n.aval is None:
            continue
        inner: list = []
        leaves = _leaves(n, uses, inner)
        mms = sorted((x for x in leaves if _is_matmul2d(x, uses, n.aval)), key=order)
        scatters = sorted((x for x in leaves if _is_scatter_rows(x, uses)), key=order)
        groups = []
        if len(mms) >= 2 and _worth_folding(mms, n):
            groups.append(("matmul", mms))
        for group in _tilings(leaves, uses):
            groups.append(("tile", group))
        by_table = {}
        for s in scatters:
            by_table.setdefault(s.inputs[1].id, []).append(s)
        groups += [("scatter", g) for g in by_table.values() if len(g) >= 2
                   and len({(x.inputs[0].aval[1], x.inputs[2].aval[1]) for x in g}) == 1]
        if not groups:
            continue
        folded_ids = set()
        inserts = []
        terms = []
        for kind, members in groups:
            if kind != "tile":
                folded_ids |= {m.id for m in members}
            if kind == "tile":
                axis, members = members
                folded_ids |= {m.id for m in members}
                cat = _node("concatenate", [m.inputs[0] for m in members], {"axis": axis}, n.aval, n.site)
                inserts.append(cat)
                terms.append(cat)
                continue
            if kind == "matmul":
                a_parts = [m.inputs[0] for m in members]
                b_parts = [m.inputs[1] for m in members]
                k, dt_a = a_parts[0].aval[0][0], a_parts[0].aval[1]
                ma = sum(p.aval[0][1] for p in a_parts)
                cat_a = _node("concatenate", a_parts, {"axis": 1}, ((k, ma), dt_a), n.site)
                cat_b = _node("concatenate", b_parts, {"axis": 0}, ((ma, b_parts[0].aval[0][1]), b_parts[0].aval[1]), n.site)
                mm = _node("matmul", [cat_a, cat_b], {}, n.aval, n.site)
                inserts += [cat_a, cat_b, mm]
                terms.append(mm)
            else:
                gs, idx = [], []
                for m in members:  # a scalar row index (emb[word]) becomes a 1-row scatter
                    g, i = m.inputs[0], m.inputs[2]
                    if len(i.aval[0]) == 0:
                        g = _node("expand_dims", [g], {"axis": 0}, ((1,) + tuple(g.aval[0]), g.aval[1]), n.site)
                        i = _node("reshape", [i], {"shape": (1,)}, ((1,), i.aval[1]), n.site)
                        inserts += [g, i]
                    gs.append(g)
                    idx.append(i)
                table = members[0].inputs[1]
                rows = sum(g.aval[0][0] for g in gs)
                cat_g = _node("concatenate", gs, {"axis": 0}, ((rows,) + tuple(gs[0].aval[0][1:]), gs[0].aval[1]), n.site)
                cat_i = _node("concatenate", idx, {"axis": 0}, ((rows,), idx[0].aval[1]), n.site)
                sc = _node("getitem_grad", [cat_g, table, cat_i], dict(members[0].params), members[0].aval, n.site)
                inserts += [cat_g, cat_i, sc]
                terms.append(sc)
        terms += [x for x in leaves if not (isinstance(x, ir.Node) and x.id in folded_ids)]
        total = terms[0]
        for t in terms[1:]:
            total = _node("add", [total, t], {}, n.aval, n.site)
            inserts.append(total)
        if total.aval is None or np.dtype(total.aval[1]) != np.dtype(n.aval[1]):
            continue
        consumed |= {i.id for i in inner}
        mapping[n.id] = total
        new_nodes.append((n, inserts))
    if not mapping:
        return graph
    position = {id(n): ins for n, ins in new_nodes}
    rebuilt = []
    for n in graph.nodes:
        ins = position.get(id(n))
        if ins:
            rebuilt.extend(ins)
        rebuilt.append(n)
    graph.nodes[:] = rebuilt
    substitute(graph, mapping)
    return graph
