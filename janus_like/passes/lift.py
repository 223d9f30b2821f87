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
blocks (a bias gradient accumulated over time steps) becomes one `sum_to` (these rules on whole
families are in `whole_blocks.py`). Row-wise ops: the
elementwise ops, reductions and `sum_to` that keep axis 0, basic indexing that keeps axis 0,
the row gather `x[arange(n), idx]` and its gradient, and `x @ W`. Lifted products and
reductions may round differently from the pieces, so this pass runs with `reassociate=True`.

Batch-1 models (a character RNN) have rows instead of blocks: batching stacks their vector
products, and the product's rows `Y[k]` form a *squeezed* family, lifted through elementwise ops
and `row @ W`; a row reshaped to (1, n) for the loss is the block `Y[k:k+1]`, and lifting goes
on over blocks (`families.py` finds both kinds).
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ops.registry import REGISTRY
from .order import refs as _refs
from .order import stable_topological_order
from .dce import dce
from .cse import exact
from .families import _FULL, _find_families, _shape
from .simplify import substitute
from .whole_blocks import permuted_products, sum_over_blocks, whole_concatenations

_REDUCTIONS = {"sum", "mean", "max", "min"}


def _key(v):
    try:
        return exact(v)  # (`0` and `0.0`, `0.0` and `-0.0` compute differently)
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
    if out_shape is None or n.op in ir.STRUCTURAL:
        return None
    op = REGISTRY.get(n.op)
    if op is None or op.stateful:
        return None
    first = next(x for x in n.inputs if isinstance(x, ir.Node) and x.id in fam.member)
    if fam.member[first.id][0][1]:  # rows of a squeezed family: the op must keep the row's shape
        return _describe_squeezed(n, fam, out_shape)
    if not out_shape or out_shape[0] != rows:
        return None
    gather = n.op in ("getitem", "getitem_grad") and _is_gather(n)
    first_index = 1 if n.op == "getitem" else 2  # where a gather's index operands start
    desc, k_seen = [], set()
    for j, x in enumerate(n.inputs):
        if isinstance(x, ir.Node) and x.id in fam.member:
            base, k = fam.member[x.id]
            k_seen.add(k)
            if base[1] or _shape(x)[0] != rows:
                return None  # a squeezed row does not line up with a block's rows
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


def _describe_squeezed(n, fam, out_shape):
    """Consumers of single rows `base[k]`: elementwise ops whose result has the row's shape
    (shared operands broadcast over the rows when stacked), `row @ W`, and basic slices of the
    row (`row[a:b]`, a gate's columns), which lift to the view `base[:, a:b]`."""
    if n.op == "getitem" and len(n.inputs) == 1:
        fid, k = fam.member[n.inputs[0].id]
        items, _ = n.params["index"]
        if not fid[1] or not items or len(items) > len(_shape(n.inputs[0])) \
                or not all(type(i) is tuple and i[0] == "s" for i in items):
            return None
        return (n.op, _key(n.params["index"]), (("m", fam.bounds[fid], True),), n.aval[1], out_shape,
                _errstate_key(n), "row slice"), k
    desc, k_seen = [], set()
    for x in n.inputs:
        if isinstance(x, ir.Node) and x.id in fam.member:
            fid, k = fam.member[x.id]
            if not fid[1] or _shape(x) != out_shape:
                return None
            k_seen.add(k)
            desc.append(("m", fam.bounds[fid], True))
        else:
            shape = () if not isinstance(x, ir.Node) else _shape(x)
            if shape is None:
                return None
            desc.append(("s", x.id if isinstance(x, ir.Node) else ("py", _key(x))))
    kinds = [d[0] for d in desc]
    if len(k_seen) != 1:
        return None
    if REGISTRY[n.op].elementwise:
        ok = all(len(_shape(x) if isinstance(x, ir.Node) else ()) <= len(out_shape) for x in n.inputs)
    else:
        ok = n.op == "matmul" and kinds == ["m", "s"] and len(out_shape) == 1 and len(_shape(n.inputs[1])) == 2
    if not ok:
        return None
    params = tuple(sorted((p, _key(v)) for p, v in n.params.items()))
    return (n.op, params, tuple(desc), n.aval[1], out_shape, _errstate_key(n), "row"), k_seen.pop()


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
            fid, _ = fam.member[x.id]
            bounds = fam.bounds[fid]
            inputs.append(fam.base[fid])
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
    squeezed = fid[1]
    shape = (total,) + tuple(_shape(first)[0 if squeezed else 1:])
    params = dict(first.params)
    if squeezed and first.op == "getitem":  # row[a:b] of every row: base[:, a:b]
        params["index"] = ((_FULL,) + tuple(params["index"][0]), False)
    lifted = ir.Node(first.op, tuple(inputs), params, (shape, first.aval[1]), first.site, errstate=first.errstate)
    slices = []
    for (a, b), c in zip(bounds, group):
        index = ((a,), True) if squeezed else ((("s", a, b, None),), True)
        slices.append(ir.Node("getitem", (lifted,), {"index": index}, c.aval, c.site))
    return extra + [lifted], slices, squeezed


def lift_row_blocks(graph: ir.Graph) -> ir.Graph:
    if graph.polymorphic:  # block boundaries would be those of one size only
        return graph
    # lifting makes the families whose permuted products become cuts of one product, and those
    # cuts are a family whose consumers may lift in turn; each step runs only when the other changed
    # something (the replaced block ops and stale cuts are dropped before families are found again)
    lifted = _lift_all(graph)
    for _ in range(8):
        if lifted:
            dce(graph)
        products = permuted_products(graph)
        if not products:
            break
        dce(graph)
        lifted = _lift_all(graph, products)
        if not lifted:
            break
    whole_concatenations(graph)
    sum_over_blocks(graph)
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


def _lift_all(graph, bases=None) -> bool:
    """Lift every complete group of block consumers; the slices of a lifted op form a new family
    whose consumers are examined next (a worklist), so whole chains lift in one call. `bases`:
    node ids; only the families of those arrays start the worklist (the others were examined by
    an earlier call and have not changed since)."""
    fam = _find_families(graph.nodes)
    if not fam.member:
        return False
    rw = _Rewrite(graph.nodes)
    work = [fid for fid in fam.blocks if bases is None or fid[0] in bases]
    while work:
        fid_now = work.pop()
        if fid_now is None:
            continue
        groups: dict = {}
        for member in fam.blocks[fid_now]:
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
            new, slices, squeezed = _lift(group, fam)
            operands = [i for m in new for i in m.inputs if isinstance(i, ir.Node) and i.id in rw.key]
            rw.insert_after(max(rw.key[i.id] for i in operands), new + slices)
            for c, piece in zip(group, slices):
                rw.replace(c, piece)
            lifted = new[-1]
            work.append(fam.add(lifted, {bounds[k]: piece for k, piece in enumerate(slices)}, squeezed))
        converted = _convert_views(fid_now, fam, rw)
        if converted is not None:
            work.append(converted)
    return rw.finish(graph)


def _convert_views(fid, fam, rw):
    """Rows reshaped to one-row blocks (`base[k]` -> (1, n)) are `base[k:k+1]`, and one-row
    blocks reshaped to rows are `base[k]`: the same views, but now a family of the other kind
    (a batch-1 model's logits are rows of the batched product, its loss works on (1, n))."""
    base, squeezed, bounds = fam.base[fid], fid[1], fam.bounds[fid]
    if not squeezed and any(b - a != 1 for a, b in bounds):
        return None
    row_shape = _shape(base)[1:]
    want = (1,) + row_shape if squeezed else row_shape
    found = {}
    for k, member in enumerate(fam.blocks[fid]):
        for u in rw.users.get(member.id, ()):
            if u.id in rw.removed or u.id not in rw.key or u.op not in ("reshape", "reshape_like", "expand_dims",
                                                                        "squeeze"):
                continue
            if u.inputs[0] is member and _shape(u) == want:
                found.setdefault(k, u)
    if len(found) != len(bounds):
        return None
    pieces = {}
    for k, u in found.items():
        a, b = bounds[k]
        index = ((("s", a, b, None),), True) if squeezed else ((a,), True)
        piece = ir.Node("getitem", (base,), {"index": index}, u.aval, u.site)
        rw.insert_after(rw.key[base.id], [piece])
        rw.replace(u, piece)
        pieces[(a, b)] = piece
    return fam.add(base, pieces, not squeezed)


def _reorder(graph):
    """A topological order as close as possible to the current one; effects keep their order."""
    order = {n.id: i for i, n in enumerate(graph.nodes)}
    graph.nodes[:] = stable_topological_order(graph.nodes, order.__getitem__)


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
