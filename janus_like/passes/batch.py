"""Automatic batching: independent matrix products that share an operand become one.

An LSTM language model computes `h_t @ W_out` at every time step, and its backward pass
`dlogits_t @ W_outᵀ`; none of those products depends on another, so k products of (n, d)·(d, m)
are one product of (k·n, d)·(d, m), followed by row slices (views). Column-vector code
(`np.dot(W, h_t)`, as in NumPy tutorials) shares the left operand and is batched by columns;
products of vectors `h_t @ W` (batch size 1) are stacked into one product whose rows they are. Nobody has to rewrite the
model to batch over time. Independence is decided on the dataflow graph (dependency
bitsets in one pass); the nodes are then re-ordered topologically (`order.py`), keeping the original order as far
as possible and never reordering effects (asserts, RNG draws). A bigger matrix product may round
differently in BLAS than the pieces, so this pass runs only with `reassociate=True`.
"""
from __future__ import annotations

from .. import ir
from .dce import effect_ops
from .order import _NESTED, _Node
from .order import refs as _refs
from .order import stable_topological_order


MIN_MACS = 16384  # multiply-accumulates per product below which batching does not pay (measured)
# Products sharing their left operand are batched by columns (`np.dot(W, h_t)` of column
# vectors) only when every part has at most MAX_COLUMNS columns: the results are column slices,
# not contiguous, and every op reading one pays for that. An attention step's q, k and v
# projections (x @ wq, x @ wk, x @ wv: three (64, 64) weights concatenated every call, 96 KB)
# and their weight gradients (xᵀ @ dq, ...: column slices read by the Adam updates) ran 13%
# slower batched; the LSTM step's wide column batches were worth 0.5% (measured in one process,
# alternating).
MAX_COLUMNS = 16


def _macs(n):
    a, cols = n.inputs[0].aval[0], n.inputs[1].aval[0][1]
    rows, inner = (1, a[0]) if len(a) == 1 else a
    return rows * inner * cols


def _stack_vectors(batch, mapping, position):
    """k products `v_i @ W` of vectors (batch size 1, as in a character RNN) -> one
    `stack(v) @ W`; product i is row i of it. Returns the new nodes with their positions (after
    the last vector); the rows of the product are a block family for row-block lifting."""
    parts = [m.inputs[0] for m in batch]
    shared, site, dt = batch[0].inputs[1], batch[0].site, parts[0].aval[1]
    d, cols = parts[0].aval[0][0], shared.aval[0][1]
    after = max(position[p.id] for p in parts if p.id in position)
    rows = [ir.Node("expand_dims", (p,), {"axis": 0}, ((1, d), dt), site) for p in parts]
    cat = ir.Node("concatenate", tuple(rows), {"axis": 0}, ((len(parts), d), dt), site)
    mm = ir.Node("matmul", (cat, shared), {}, ((len(parts), cols), batch[0].aval[1]), site)
    out = [(after, r) for r in rows] + [(after, cat), (after, mm)]
    for k, m in enumerate(batch):
        piece = ir.Node("getitem", (mm,), {"index": ((k,), True)}, m.aval, m.site)
        out.append((after, piece))
        mapping[m.id] = piece
    return out


def _reach_bits(nodes, member_ids):
    """For every node, the set (as an int bitset) of candidate products it depends on, through
    data and through the order of effects; one pass in program (topological) order. Two products
    are independent when neither's bit is in the other's set (a bit is set for the product
    itself only in its *consumers*, so a node's own bit does not count)."""
    bits = {mid: 1 << k for k, mid in enumerate(sorted(member_ids))}
    reached: dict = {}
    below: dict = {}  # node id -> bits of candidate products at or above it
    last_effect = None
    plain_effects = effect_ops()
    get = below.get
    for n in nodes:
        r = 0
        nested = n.op in _NESTED
        for i in (_refs(n) if nested else n.inputs):
            if i.__class__ is _Node:
                r |= get(i.id, 0)
        if nested or n.op in plain_effects:
            if last_effect is not None:
                r |= below.get(last_effect, 0)
            last_effect = n.id
        reached[n.id] = r
        below[n.id] = r | bits.get(n.id, 0)
    return bits, reached


def _reader_order(graph):
    """A sort key for a batch: a product's place in a row concatenation that reads it. Folded
    scatter-adds (fold.py) concatenate the per-step products in time order while the backward
    pass made them last step first; batched in the concatenation's order, the slices of the big
    product are read back in order, so the concatenation of them is the product itself
    (stacks.py), and its left operand is the stack that the folded weight gradients already
    concatenate (CSE keeps one). Any order batches the same products: this only picks one."""
    place: dict = {}
    for n in graph.all_nodes():
        if n.op == "concatenate" and n.params.get("axis", 0) == 0:
            for k, i in enumerate(n.inputs):
                if i.__class__ is _Node:
                    place.setdefault(i.id, (0, n.id, k))
    return lambda m: place.get(m.id, (1, 0, 0))


def batch_matmuls(graph: ir.Graph, min_group: int = 2) -> ir.Graph:
    nodes = graph.nodes
    groups: dict = {}
    for n in nodes:
        if n.op not in ("matmul", "dot") or len(n.inputs) != 2:
            continue
        a, b = n.inputs
        if isinstance(a, ir.Node) and isinstance(b, ir.Node) and a.aval and b.aval \
                and len(a.aval[0]) == 2 and len(b.aval[0]) == 2:
            groups.setdefault(("right", b.id, a.aval[1], b.aval[1]), []).append(n)  # x_t @ W
            groups.setdefault(("left", a.id, a.aval[1], b.aval[1]), []).append(n)  # W @ x_t
        elif isinstance(a, ir.Node) and isinstance(b, ir.Node) and a.aval and b.aval and n.op == "matmul" \
                and len(a.aval[0]) == 1 and len(b.aval[0]) == 2 and not graph.polymorphic:
            groups.setdefault(("vector", b.id, a.aval[1], b.aval[1]), []).append(n)  # h_t @ W, h_t a vector
    claimed: set = set()
    groups = {k: v for k, v in groups.items() if len(v) >= min_group}
    if not groups:
        return graph
    reach = _reach_bits(nodes, {m.id for members in groups.values() for m in members})
    position = {n.id: i for i, n in enumerate(nodes)}
    reader_key = _reader_order(graph)
    mapping, extra = {}, []
    for (side, *_), members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        members = [m for m in members if m.id not in claimed]
        if len(members) < min_group:
            continue
        bits, reached = reach
        batches: list = []
        for m in members:
            for batch in batches:
                if all(not (reached[m.id] & bits[o.id]) and not (reached[o.id] & bits[m.id]) for o in batch):
                    batch.append(m)
                    break
            else:
                batches.append([m])
        for batch in batches:
            if side == "vector":
                if len(batch) >= min_group and len(batch) * _macs(batch[0]) >= MIN_MACS:
                    claimed.update(m.id for m in batch)
                    extra += _stack_vectors(batch, mapping, position)
                continue
            if len(batch) < min_group or _macs(batch[0]) < MIN_MACS:
                continue  # tiny products: a concatenation and k slices cost more than k calls
            if side == "left" and any(m.inputs[1].aval[0][1] > MAX_COLUMNS for m in batch):
                continue  # wide parts concatenated by columns: see MAX_COLUMNS
            claimed.update(m.id for m in batch)
            axis = 0 if side == "right" else 1
            if axis == 0:
                batch = sorted(batch, key=reader_key)  # stable: graph order for products no concatenation reads
            parts = [m.inputs[0 if side == "right" else 1] for m in batch]
            shared = batch[0].inputs[1 if side == "right" else 0]
            total = sum(p.aval[0][axis] for p in parts)
            site = batch[0].site
            shape = (total, parts[0].aval[0][1]) if axis == 0 else (parts[0].aval[0][0], total)
            cat = ir.Node("concatenate", tuple(parts), {"axis": axis}, (shape, parts[0].aval[1]), site)
            operands = (cat, shared) if side == "right" else (shared, cat)
            out_shape = (total, shared.aval[0][1]) if axis == 0 else (shared.aval[0][0], total)
            mm = ir.Node("matmul", operands, {}, (out_shape, batch[0].aval[1]), site)
            after = max(position[p.id] for p in parts if p.id in position)
            extra += [(after, cat), (after, mm)]
            start = 0
            for m, p in zip(batch, parts):
                stop = start + p.aval[0][axis]
                cut = ("s", start, stop, None)
                index = ((cut,), True) if axis == 0 else ((("s", None, None, None), cut), False)
                piece = ir.Node("getitem", (mm,), {"index": index}, m.aval, m.site)
                extra.append((after, piece))
                mapping[m.id] = piece
                start = stop
    if not mapping:
        return graph
    from .simplify import substitute

    order_key = {n.id: (position[n.id], 0) for n in nodes}
    for k, (after, node) in enumerate(extra):
        order_key[node.id] = (after, 1 + k)
    everything = [n for n in nodes if n.id not in mapping] + [node for _, node in extra]
    substitute(graph, mapping)
    graph.nodes[:] = stable_topological_order(everything, order_key.__getitem__)
    return graph
