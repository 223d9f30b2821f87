"""Row-block lifting: the same row-wise op applied to every row block of one array becomes one op.

After automatic batching, an LSTM language model's logits for all time steps are one (T·B, V)
product, cut into T row blocks `Y[0:B], Y[B:2B], ...`; the model then runs the same
softmax-cross-entropy chain (bias add, max, subtract, exp, sum, log, gather, and the backward
ops) on each block, T small calls per op. When an op is row-wise (row i of its result depends
only on row i of its blocked operands) and is applied to every block with the same parameters
and the same other operands, one call on the whole array computes all blocks:

    c_k = op(Y[a_k:b_k], W)   for k = 0..K-1     ->     Z = op(Y, W);  c_k = Z[a_k:b_k]

The new slices form a family of their own, so whole chains lift step by step, and a
concatenation of all blocks in order becomes the array itself. An add-tree of `sum_to` over all
blocks (a bias gradient accumulated over time steps) becomes one `sum_to`. Row-wise ops: the
elementwise ops, reductions and `sum_to` that keep axis 0, basic indexing that keeps axis 0,
the row gather `x[arange(n), idx]` and its gradient, and `x @ W`. Lifted products and
reductions may round differently from the pieces, so this pass runs with `reassociate=True`.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ops.registry import REGISTRY
from .batch import _dependency_graph, _refs
from .dce import dce
from .fold import _leaves, _uses
from .simplify import substitute

_REDUCTIONS = {"sum", "mean", "max", "min"}
_FULL = ("s", None, None, None)


def _shape(x):
    if not isinstance(x, ir.Node) or x.aval is None:
        return None
    shape = x.aval[0]
    return tuple(shape) if all(type(d) is int for d in shape) else None


def _row_cut(n):
    """(start, stop) when n is `base[a:b]` (a basic slice of axis 0 only), else None."""
    if n.op != "getitem" or len(n.inputs) != 1 or _shape(n.inputs[0]) is None or _shape(n) is None:
        return None
    items, single = n.params["index"]
    if not items or type(items[0]) is not tuple or items[0][0] != "s" or items[0][3] not in (None, 1):
        return None
    if any(i != _FULL for i in items[1:]):
        return None
    base = _shape(n.inputs[0])
    if not base:
        return None
    start, stop, _ = slice(items[0][1], items[0][2]).indices(base[0])
    return (start, stop) if stop > start else None


class _Families:
    """Arrays whose row blocks are all in use: base node -> boundaries and the block nodes."""

    def __init__(self):
        self.member = {}  # node id -> (base id, k)
        self.bounds = {}  # base id -> ((a_0, b_0), ...)
        self.blocks = {}  # base id -> [node, ...] in block order
        self.base = {}  # base id -> base node

    def add(self, base, cuts):
        """cuts: {(a, b): node}; registered when the blocks tile the base's rows in order."""
        order = sorted(cuts)
        if len(order) < 2 or order[0][0] != 0 or order[-1][1] != _shape(base)[0]:
            return False
        if any(x[1] != y[0] for x, y in zip(order, order[1:])):
            return False
        self.bounds[base.id] = tuple(order)
        self.blocks[base.id] = [cuts[c] for c in order]
        self.base[base.id] = base
        for k, c in enumerate(order):
            self.member[cuts[c].id] = (base.id, k)
        return True


def _find_families(nodes) -> _Families:
    cuts: dict = {}
    for n in nodes:
        cut = _row_cut(n)
        if cut is not None:
            cuts.setdefault(n.inputs[0].id, (n.inputs[0], {}))[1].setdefault(cut, n)
    fam = _Families()
    for base, blocks in cuts.values():
        fam.add(base, blocks)
    return fam


def _key(v):
    try:
        hash(v)
        return v
    except TypeError:
        return ("unhashable", id(v))


def _is_arange(x, length):
    if not (isinstance(x, ir.Node) and x.op == ir.CONST):
        return False
    v = np.asarray(x.params["value"])
    return v.ndim == 1 and np.issubdtype(v.dtype, np.integer) and len(v) == length and \
        bool(np.array_equal(v, np.arange(length)))


def _is_gather(n):
    """`x[c, idx]` with a 2-slot template (the row gather of cross-entropy)."""
    return n.params.get("index") == ((("slot", 0), ("slot", 1)), False)


def _describe(n, fam, rows):
    """(grouping key, block index) for a consumer n of some block, or None when n is not
    row-wise in that block. The key holds everything that must agree across the blocks: op,
    params, which operands are blocked or shared (and which shared value), result type."""
    out_shape = _shape(n)
    if out_shape is None or not out_shape or out_shape[0] != rows or n.op in ir.STRUCTURAL:
        return None
    op = REGISTRY.get(n.op)
    if op is None or op.stateful:
        return None
    gather = n.op in ("getitem", "getitem_grad") and _is_gather(n)
    first_index = 1 if n.op == "getitem" else 2  # where a gather's index operands start
    desc, k_seen = [], set()
    for j, x in enumerate(n.inputs):
        if isinstance(x, ir.Node) and x.id in fam.member:
            base, k = fam.member[x.id]
            k_seen.add(k)
            if _shape(x)[0] != rows:
                return None
            desc.append(("m", fam.bounds[base]))
        elif gather and j == first_index and _is_arange(x, rows):
            desc.append(("arange",))
        elif gather and j == first_index + 1 and _shape(x) == (rows,) and np.issubdtype(x.aval[1], np.integer):
            desc.append(("cat",))
        else:
            shape = () if not isinstance(x, ir.Node) else _shape(x)
            if shape is None:
                return None
            desc.append(("s", x.id if isinstance(x, ir.Node) else ("py", _key(x))))
    if len(k_seen) != 1 or not _rowwise(n, desc, out_shape):
        return None
    params = tuple(sorted((p, _key(v)) for p, v in n.params.items()))
    return (n.op, params, tuple(desc), n.aval[1], out_shape[1:], _errstate_key(n)), k_seen.pop()


def _broadcasts_by_row(n, desc, out_shape) -> bool:
    """Elementwise semantics: blocked operands have the result's rank (their axis 0 is the
    result's axis 0); shared operands broadcast along the rows (lower rank, or one row)."""
    for d, x in zip(desc, n.inputs):
        shape = _shape(x) if isinstance(x, ir.Node) else ()
        if d[0] == "m" and len(shape) != len(out_shape):
            return False
        if d[0] == "s" and len(shape) == len(out_shape) and shape[0] != 1:
            return False  # a full-height operand that is not blocked would have to be repeated
    return True


def _errstate_key(n):
    return None if n.errstate is None else tuple(sorted(n.errstate.items()))


def _rowwise(n, desc, out_shape) -> bool:
    op, p = n.op, n.params
    kinds = [d[0] for d in desc]
    if REGISTRY[op].elementwise:
        return _broadcasts_by_row(n, desc, out_shape)
    if op in _REDUCTIONS:
        axis = p.get("axis")
        if axis is None or kinds != ["m"]:
            return False
        nd = len(_shape(n.inputs[0]))
        return 0 not in {a % nd for a in (axis if isinstance(axis, tuple) else (axis,))}
    if op == "sum_to":
        return kinds == ["m", "m"] and len(_shape(n.inputs[0])) == len(out_shape)
    if op == "broadcast_like":
        return kinds[1] == "m" and _broadcasts_by_row(n, desc[:1], out_shape)
    if op == "matmul":
        return kinds == ["m", "s"] and len(out_shape) == 2 and len(_shape(n.inputs[0])) == 2 \
            and len(_shape(n.inputs[1]) or ()) == 2
    if op in ("getitem", "getitem_grad"):
        if _is_gather(n):
            return kinds == (["m", "arange", "cat"] if op == "getitem" else ["m", "m", "arange", "cat"]) \
                and len(_shape(n.inputs[-3])) == 2
        items, single = p["index"]
        basic = not any(type(i) is tuple and i[0] == "slot" for i in items)
        return basic and not single and bool(items) and items[0] == _FULL and \
            kinds == (["m"] if op == "getitem" else ["m", "m"])
    return False


def _lift(group, fam):
    """The lifted node and its new block slices for consumers `group` (block order)."""
    first = group[0]
    bounds = None
    inputs, extra = [], []
    for j, x in enumerate(first.inputs):
        if isinstance(x, ir.Node) and x.id in fam.member:
            base_id, _ = fam.member[x.id]
            bounds = fam.bounds[base_id]
            inputs.append(fam.base[base_id])
        elif isinstance(x, ir.Node) and x.op == ir.CONST and _is_gather(first) and _is_arange(x, _shape(x)[0]) \
                and j == (1 if first.op == "getitem" else 2):
            total = sum(_shape(c.inputs[j])[0] for c in group)
            value = np.arange(total, dtype=np.asarray(x.params["value"]).dtype)
            node = ir.Node(ir.CONST, (), {"value": value}, ((total,), value.dtype), first.site)
            extra.append(node)
            inputs.append(node)
        elif _is_gather(first) and j == (2 if first.op == "getitem" else 3):
            parts = tuple(c.inputs[j] for c in group)
            total = sum(_shape(p)[0] for p in parts)
            node = ir.Node("concatenate", parts, {"axis": 0}, ((total,), x.aval[1]), first.site)
            extra.append(node)
            inputs.append(node)
        else:
            inputs.append(x)
    total = bounds[-1][1]
    shape = (total,) + tuple(_shape(first)[1:])
    lifted = ir.Node(first.op, tuple(inputs), dict(first.params), (shape, first.aval[1]), first.site,
                     errstate=first.errstate)
    slices = []
    for (a, b), c in zip(bounds, group):
        index = ((("s", a, b, None),), True)
        slices.append(ir.Node("getitem", (lifted,), {"index": index}, c.aval, c.site))
    return extra + [lifted], slices


def lift_row_blocks(graph: ir.Graph) -> ir.Graph:
    if graph.polymorphic:  # block boundaries would be those of one size only
        return graph
    for _ in range(8):
        changed = _lift_all(graph)
        changed = _permuted_products(graph) or changed
        if not changed:
            break
        dce(graph)  # the replaced block ops and stale cuts must not be found again
    _whole_concatenations(graph)
    _sum_over_blocks(graph)
    return graph


class _Rewrite:
    """Insertions and replacements on the top-level node list, applied at the end. Positions are
    tuples: a node inserted after anchor position p gets p + (seq,), which sorts after p and
    before p's successor."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.key = {n.id: (i,) for i, n in enumerate(nodes)}
        self.users: dict = {}
        for n in nodes:
            for r in _refs(n):
                self.users.setdefault(r.id, []).append(n)
        self.added: list = []
        self.removed: set = set()
        self.mapping: dict = {}
        self.seq = 0

    def insert_after(self, anchor_key, new):
        for m in new:
            self.seq += 1
            self.key[m.id] = anchor_key + (self.seq,)
            self.added.append(m)
            for r in _refs(m):
                self.users.setdefault(r.id, []).append(m)

    def replace(self, old, new):
        """Uses of `old` now read `new` (a node placed after all of old's operands)."""
        self.mapping[old.id] = new
        self.removed.add(old.id)
        for u in self.users.get(old.id, ()):
            if any(i is old for i in u.inputs):
                u.inputs = tuple(new if i is old else i for i in u.inputs)
            self.users.setdefault(new.id, []).append(u)

    def finish(self, graph):
        if not self.mapping:
            return False
        everything = [n for n in self.nodes if n.id not in self.removed] + \
            [n for n in self.added if n.id not in self.removed]
        everything.sort(key=lambda n: self.key[n.id])
        graph.nodes[:] = everything
        substitute(graph, self.mapping)  # uses inside conditionals/loops, and graph outputs
        # a lifted op goes after its last operand; when that is after a use of a replaced node
        # (an index operand defined late), re-order topologically
        key = self.key
        if any(key[r.id] >= key[n.id] for n in everything for r in _refs(n) if r.id in key):
            _reorder(graph)
        return True


def _lift_all(graph) -> bool:
    """Lift every complete group of block consumers; the slices of a lifted op form a new family
    whose consumers are examined next (a worklist), so whole chains lift in one call."""
    fam = _find_families(graph.nodes)
    if not fam.member:
        return False
    rw = _Rewrite(graph.nodes)
    work = list(fam.blocks)
    while work:
        base_id = work.pop()
        groups: dict = {}
        for member in fam.blocks[base_id]:
            for n in rw.users.get(member.id, ()):
                if n.id in rw.removed or n.id not in rw.key:
                    continue
                first = next(x for x in n.inputs if isinstance(x, ir.Node) and x.id in fam.member) \
                    if any(isinstance(x, ir.Node) and x.id in fam.member for x in n.inputs) else None
                if first is None:
                    continue
                owner, k = fam.member[first.id]
                a, b = fam.bounds[owner][k]
                d = _describe(n, fam, b - a)
                if d is not None:
                    groups.setdefault((d[0], owner), {}).setdefault(d[1], n)
        for (_, owner), by_k in groups.items():
            bounds = fam.bounds[owner]
            if len(by_k) != len(bounds) or any(c.id in rw.removed for c in by_k.values()):
                continue
            group = [by_k[k] for k in range(len(bounds))]
            if not _aligned(group, fam):
                continue
            new, slices = _lift(group, fam)
            operands = [i for m in new for i in m.inputs if isinstance(i, ir.Node) and i.id in rw.key]
            rw.insert_after(max(rw.key[i.id] for i in operands), new + slices)
            for c, piece in zip(group, slices):
                rw.replace(c, piece)
            lifted = new[-1]
            fam.add(lifted, {bounds[k]: piece for k, piece in enumerate(slices)})
            work.append(lifted.id)
    return rw.finish(graph)


def _reorder(graph):
    """A topological order as close as possible to the current one; effects keep their order."""
    import networkx as nx

    order = {n.id: i for i, n in enumerate(graph.nodes)}
    by_id = {n.id: n for n in graph.nodes}
    dep = _dependency_graph(graph.nodes)
    graph.nodes[:] = [by_id[i] for i in nx.lexicographical_topological_sort(dep, key=order.__getitem__)]


def _aligned(group, fam) -> bool:
    """Every blocked operand of consumer k is block k of a family with the same boundaries, and
    shared operands are the same value for every k."""
    for k, c in enumerate(group):
        for j, x in enumerate(c.inputs):
            y = group[0].inputs[j]
            if isinstance(x, ir.Node) and x.id in fam.member:
                if fam.member[x.id][1] != k or not (isinstance(y, ir.Node) and y.id in fam.member
                                                    and fam.member[y.id][0] == fam.member[x.id][0]):
                    return False
    return True


def _permuted_products(graph) -> bool:
    """matmul(concatenate(all blocks of Z in another order), W), used only through row cuts that
    match the pieces -> matmul(Z, W) cut at Z's boundaries. (Batching concatenated a backward
    pass's per-step operands in reverse time order before they were lifted.)"""
    fam = _find_families(graph.nodes)
    if not any(n.op == "matmul" and isinstance(n.inputs[0], ir.Node) and n.inputs[0].op == "concatenate"
               and all(isinstance(x, ir.Node) and x.id in fam.member for x in n.inputs[0].inputs)
               for n in graph.nodes):
        return False
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
    return bool(mapping)


def _whole_concatenations(graph):
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
        if [k for _, k in ids] == list(range(len(fam.bounds[base_id]))) and \
                fam.base[base_id].aval == n.aval:
            mapping[n.id] = fam.base[base_id]
    if mapping:
        substitute(graph, mapping)


def _sum_over_blocks(graph):
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
