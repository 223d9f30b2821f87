"""Rules on whole families of row blocks, for `lift_row_blocks` (lift.py).

Input: a graph whose row blocks `Z[a_k:b_k]` (families.py) tile an array Z. Three rewrites use a
family as a whole rather than block by block: a product of all blocks concatenated in another
order becomes the product of Z re-cut; a concatenation of all blocks in order becomes Z itself;
an add-tree of `sum_to` over every block becomes one `sum_to` of Z. The first returns its new
products: their cuts are a family, and lifting goes on from there.
"""
from __future__ import annotations

from .. import ir
from .families import _find_families, _row_cut, _shape
from .fold import _leaves, _uses
from .order import refs as _refs
from .simplify import substitute


def permuted_products(graph) -> set:
    """matmul(concatenate(all blocks of Z in another order), W), used only through row cuts that
    match the pieces -> matmul(Z, W) cut at Z's boundaries. (Batching concatenated a backward
    pass's per-step operands in reverse time order before they were lifted.) Returns the ids of
    the new products."""
    fam = _find_families(graph.nodes)
    if not any(n.op == "matmul" and isinstance(n.inputs[0], ir.Node) and n.inputs[0].op == "concatenate"
               and all(isinstance(x, ir.Node) and x.id in fam.member for x in n.inputs[0].inputs)
               for n in graph.nodes):
        return set()
    users: dict = {}
    for n in graph.all_nodes():
        for r in _refs(n):
            users.setdefault(r.id, []).append(n)
    outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    mapping = {}
    for at, n in enumerate(list(graph.nodes)):
        if n.op != "matmul" or _shape(n) is None or len(_shape(n)) != 2 or n.id in outputs:
            continue
        cat, w = n.inputs
        if not (isinstance(cat, ir.Node) and cat.op == "concatenate" and cat.params.get("axis", 0) == 0):
            continue
        owners = [fam.member.get(x.id) if isinstance(x, ir.Node) else None for x in cat.inputs]
        if None in owners or len({b for b, _ in owners}) != 1:
            continue
        base_id = owners[0][0]
        if base_id[1]:
            continue  # rows of a squeezed family are not concatenated along axis 0
        order = [k for _, k in owners]
        bounds = fam.bounds[base_id]
        if sorted(order) != list(range(len(bounds))) or order == sorted(order):
            continue  # not all blocks, or already in order (the whole-concatenation rule)
        offsets, start = {}, 0
        for k in order:
            a, b = bounds[k]
            offsets[(start, start + b - a)] = k
            start += b - a
        cuts = [(u, _row_cut(u)) for u in users.get(n.id, [])]
        cuts = [(u, c[:2] if c is not None and not c[2] else None) for u, c in cuts]
        if not cuts or any(c is None or c not in offsets or u.inputs[0] is not n for u, c in cuts):
            continue
        product = ir.Node("matmul", (fam.base[base_id], w), {}, n.aval, n.site, errstate=n.errstate)
        new = [product]
        for u, c in cuts:
            a, b = bounds[offsets[c]]
            piece = ir.Node("getitem", (product,), {"index": ((("s", a, b, None),), True)}, u.aval, u.site)
            new.append(piece)
            mapping[u.id] = piece
        at = graph.nodes.index(n)
        graph.nodes[at + 1:at + 1] = new
    if mapping:
        substitute(graph, mapping)
    return {m.inputs[0].id for m in mapping.values()}


def whole_concatenations(graph):
    """concatenate(Z[a_0:b_0], ..., Z[a_K:b_K], axis=0) over all blocks in order -> Z."""
    fam = _find_families(graph.nodes)
    mapping = {}
    for n in graph.nodes:
        if n.op != "concatenate" or n.params.get("axis", 0) != 0 or not n.inputs:
            continue
        ids = [fam.member.get(x.id) if isinstance(x, ir.Node) else None for x in n.inputs]
        if None in ids or len({b for b, _ in ids}) != 1:
            continue
        base_id = ids[0][0]
        if not base_id[1] and [k for _, k in ids] == list(range(len(fam.bounds[base_id]))) and \
                fam.base[base_id].aval == n.aval:
            mapping[n.id] = fam.base[base_id]
    if mapping:
        substitute(graph, mapping)


def sum_over_blocks(graph):
    """An add-tree with `sum_to(Z[block_k], like)` among its leaves for every block of Z (each
    once, same result type) -> one `sum_to(Z, like)` plus the other leaves. Likewise for the
    parts of one axis-0 concatenation C: sum_to(part_k) for every part -> sum_to(C). (Per-step
    bias gradients summed over time become one reduction.)"""
    fam = _find_families(graph.nodes)
    parts_of: dict = {}  # node id -> [(concatenation, k)]
    for n in graph.nodes:
        if n.op == "concatenate" and n.params.get("axis", 0) == 0 and len(n.inputs) >= 2 and _shape(n):
            for k, x in enumerate(n.inputs):
                if isinstance(x, ir.Node):
                    parts_of.setdefault(x.id, []).append((n, k))
    uses = _uses(graph)
    mapping, done = {}, set()
    for n in reversed(graph.nodes):
        if n.op != "add" or n.id in done or n.aval is None:
            continue
        inner: list = []
        leaves = _leaves(n, uses, inner)
        candidates: dict = {}  # whole array -> {k: leaf}
        for x in leaves:
            if not (isinstance(x, ir.Node) and x.op == "sum_to" and uses.get(x.id, 0) == 1 and x.aval == n.aval
                    and isinstance(x.inputs[0], ir.Node)):
                continue
            g = x.inputs[0]
            owners = [(fam.base[fam.member[g.id][0]], fam.member[g.id][1], len(fam.bounds[fam.member[g.id][0]]))] \
                if g.id in fam.member else []
            owners += [(c, k, len(c.inputs)) for c, k in parts_of.get(g.id, [])]
            for whole, k, count in owners:
                if len(_shape(whole)) == len(_shape(g)):
                    candidates.setdefault((whole.id, count), (whole, {}))[1].setdefault(k, x)
        at = graph.nodes.index(n)
        for (_, count), (whole, by_k) in sorted(candidates.items(), key=lambda kv: -kv[0][1]):
            if len(by_k) != count or whole not in graph.nodes[:at]:
                continue  # not every part, or a concatenation made later than the sum
            folded = {x.id for x in by_k.values()}
            first = by_k[0]
            total = ir.Node("sum_to", (whole, first.inputs[1]), dict(first.params), n.aval, n.site)
            new = [total]
            for x in leaves:
                if not (isinstance(x, ir.Node) and x.id in folded):
                    total = ir.Node("add", (total, x), {}, n.aval, n.site)
                    new.append(total)
            graph.nodes[at:at] = new
            mapping[n.id] = total
            done.update(i.id for i in inner)
            break
    if mapping:
        substitute(graph, mapping)
