"""Fold a running sum over the rows of one array into one cumulative sum (exact).

Imperative code accumulates per-step values one at a time:

    loss = 0.0
    for t in range(steps):
        loss = loss + F.cross_entropy(logits[t:t + 1], target[t:t + 1])

After row-block lifting, every step's term is a row of one array (`-X[t]`, or the mean of the
one-element block `X[t:t + 1]`), but the graph still adds them one node at a time: four nodes
per step. A chain `((c0 + t1) + t2) + ... + tn` whose terms are rows X[k1], ..., X[kn] of the
same array (each optionally negated) becomes

    S = concatenate([c0], X[k1..kn])      (a slice when the k are consecutive)
    result = cumsum(S, axis=0)[-1]

`cumsum` adds strictly left to right, in the same dtype, so every partial sum is the one eager
code computed: bit for bit the same result. The mean (or sum) of a one-element block is that
element plus 0.0 (what NumPy's reduction gives for -0.0), so such terms fold too. Partial sums
used anywhere else keep the chain as it is.

The rows may also be per-step vectors that a folded weight gradient stacked into one array
(`concatenate([dz_T.reshape(1, H), ..., dz_1.reshape(1, H)])` for W_hh's single matmul): the
bias gradient's running sum `dz_T + dz_{T-1} + ...` then reads that array's rows, and when the
chain starts from a row of it as well, `cumsum(X[k0:kn])[-1]` is the whole sum.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .order import refs

MIN_TERMS = 3


def _blocks(graph):
    """The graph's node lists: the top level and every conditional's and loop's blocks."""
    blocks = [graph.nodes]
    for n in graph.all_nodes():
        blocks += [n.params[k] for k in ir.BLOCKS if k in n.params]
    return blocks


def _users(graph):
    count: dict = {}
    for n in graph.all_nodes():
        for r in refs(n):
            count[r.id] = count.get(r.id, 0) + 1
    for o in graph.outputs:
        if isinstance(o, ir.Node):
            count[o.id] = count.get(o.id, 0) + 2  # an output is never folded away
    return count


def _index_of(n, kind):
    """k when getitem node n reads X[k] ("int") or X[k:k+1] ("block"), else None."""
    if n.op != "getitem" or len(n.inputs) != 1:
        return None
    (items, single) = n.params["index"]
    if not single or len(items) != 1:
        return None
    item = items[0]
    if kind == "int":
        return item if type(item) is int and item >= 0 else None
    if type(item) is tuple and item[0] == "s" and type(item[1]) is int and item[1] >= 0 \
            and item[2] == item[1] + 1 and item[3] in (None, 1):
        return item[1]
    return None


def _reshaped(p, part_shape, shape, dtype):
    """u when p is u (of `shape` and `dtype`) reshaped to `part_shape` (a reshape or
    expand_dims node), else None."""
    u = p.inputs[0] if isinstance(p, ir.Node) and p.op in ("reshape", "expand_dims") and p.inputs else None
    if isinstance(u, ir.Node) and u.aval is not None and p.aval is not None and tuple(p.aval[0]) == part_shape \
            and tuple(u.aval[0]) == shape and np.dtype(u.aval[1]) == np.dtype(dtype):
        return u
    return None


def _stacked_rows(graph) -> dict:
    """node id -> [(X, k), ...] for values that are row k of a concatenation X along axis 0 (as
    a one-row reshape or expand_dims: per-step vectors that folded weight gradients stacked)."""
    rows: dict = {}
    for x in graph.nodes:
        if x.op != "concatenate" or x.params.get("axis", 0) != 0 or x.aval is None or not x.inputs:
            continue
        row = tuple(x.aval[0][1:])
        parts = [p for p in x.inputs if isinstance(p, ir.Node) and p.aval is not None
                 and tuple(p.aval[0]) == (1,) + row]
        if len(parts) != len(x.inputs):
            continue
        for k, p in enumerate(parts):
            u = _reshaped(p, (1,) + row, row, x.aval[1])
            if u is not None:
                rows.setdefault(u.id, []).append((x, k))
    return rows


def _terms(t, stacked):
    """Every (X, k, negated, plus_zero) by which t is a row of some X."""
    found = [(x, k, False, False) for x, k in stacked.get(t.id, ())]
    own = _term(t)
    return found + [own] if own is not None else found


def _term(t):
    """(X, k, negated, plus_zero) when t is a row of X, else None."""
    neg = t.op == "neg" and isinstance(t.inputs[0], ir.Node)
    if neg:
        t = t.inputs[0]
    if t.op in ("mean", "sum") and t.params.get("axis") is None and not t.params.get("keepdims") \
            and t.params.get("dtype") is None and isinstance(t.inputs[0], ir.Node):
        b = t.inputs[0]
        k = _index_of(b, "block")
        x = b.inputs[0] if k is not None else None
        if x is not None and x.aval is not None and len(x.aval[0]) == 1:
            return x, k, neg, True
        return None
    k = _index_of(t, "int")
    if k is None:
        return None
    return t.inputs[0], k, neg, False


def _is_float(node):
    return isinstance(node, ir.Node) and node.aval is not None and np.dtype(node.aval[1]).kind == "f"


def _chain(end, users, stacked):
    """(c0, terms, adds) of the add chain ending at `end`: c0 is the initial value (a node or a
    Python number), terms the rows added one by one (first to last), all rows of one X, adds
    the chain's add nodes; None when end does not end a chain of at least MIN_TERMS rows."""
    options: dict = {}  # X id -> terms so far, for every X that all terms so far are rows of
    adds, cur = [], end
    while True:
        plain = cur.op == "add" and cur.errstate is None and len(cur.inputs) == 2 and isinstance(cur.inputs[1], ir.Node)
        found = _terms(cur.inputs[1], stacked) if plain else []
        if adds:  # later terms: rows of an X that every earlier term is a row of, the same way
            found = [t for t in found if t[0].id in options and t[2:] == options[t[0].id][0][2:]]
        if not found:
            c0 = cur  # the chain starts after this node: its value is the initial one
            break
        options = {t[0].id: options.get(t[0].id, []) + [t] for t in found}
        adds.append(cur)
        left = cur.inputs[0]
        if isinstance(left, ir.Node) and left.op == "add" and users.get(left.id, 0) == 1:
            cur = left
            continue
        c0 = left
        break
    if len(adds) < MIN_TERMS:
        return None
    # prefer an X whose rows include the initial value (the whole sum then reads X only)
    first = {x.id for x, _ in stacked.get(c0.id, ())} if isinstance(c0, ir.Node) else set()
    terms = max(options.values(), key=lambda ts: ts[0][0].id in first)
    return c0, terms[::-1], adds


def _fits(c0, x, end, adds):
    """The fold is the same arithmetic: every partial sum has the row's shape and x's dtype, and
    c0 becomes one leading row of that dtype."""
    if not _is_float(x) or not _is_float(end):
        return False
    dtype, row = np.dtype(x.aval[1]), tuple(x.aval[0][1:])
    for a in adds:
        if a.aval is None or tuple(a.aval[0]) != row or np.dtype(a.aval[1]) != dtype:
            return False
    if isinstance(c0, ir.Node):
        return ir.numpy_typed(c0) and tuple(c0.aval[0]) == row and np.dtype(c0.aval[1]) == dtype
    return type(c0) in (int, float) and row == ()  # a Python number: weakly typed, becomes x's dtype


def _gather(x, ks, site):
    """x[k1, ..., kn] along axis 0: a slice view when the k are consecutive, else a gather."""
    n, row, dtype = len(ks), tuple(x.aval[0][1:]), x.aval[1]
    aval = ((n,) + row, dtype)
    if ks == list(range(ks[0], ks[0] + n)):
        item = ("s", ks[0], ks[0] + n, None)
    elif ks == list(range(ks[0], ks[0] - n, -1)):
        item = ("s", ks[0], ks[-1] - 1 if ks[-1] > 0 else None, -1)
    else:
        idx = ir.Node(ir.CONST, (), {"value": np.array(ks, np.int64)}, ((n,), np.dtype(np.int64)), site)
        return [idx, ir.Node("getitem", (x, idx), {"index": ((("slot", 0),), True)}, aval, site)]
    return [ir.Node("getitem", (x,), {"index": ((item,), True)}, aval, site)]


def fold_row_chains(graph: ir.Graph) -> ir.Graph:
    if graph.polymorphic:  # avals hold one size only; row counts must be what they say
        return graph
    users = _users(graph)
    stacked = _stacked_rows(graph)
    done: set = set()
    for end in reversed(list(graph.nodes)):
        if end.id in done or end.op != "add":
            continue
        found = _chain(end, users, stacked)
        if found is None:
            continue
        c0, terms, adds = found
        x, neg, plus_zero = terms[0][0], terms[0][2], terms[0][3]
        if not _fits(c0, x, end, adds):
            continue
        ks = [t[1] for t in terms]
        k0 = [k for y, k in stacked.get(c0.id, ()) if y is x] if isinstance(c0, ir.Node) else []
        first_row = bool(k0) and not (neg or plus_zero)
        if first_row:  # the initial value is a row of X too: the running sum reads X's rows only
            ks.insert(0, k0[0])
        pos = graph.nodes.index(end)
        after = graph.nodes.index(x) + 1 if x in graph.nodes else 0
        if after > pos:  # X is built later (a stacked weight gradient): end moves after it
            if any(end in refs(u) for u in graph.nodes[pos + 1:after]):
                continue
            graph.nodes.remove(end)
            pos = after - 1
            graph.nodes.insert(pos, end)
        done.update(a.id for a in adds)
        site, dtype, row = end.site, np.dtype(x.aval[1]), tuple(x.aval[0][1:])
        new = _gather(x, ks, site)
        if first_row:
            acc = ir.Node("cumsum", (new[-1],), {"axis": 0}, new[-1].aval, site)
            graph.nodes[pos:pos] = new + [acc]
            end.op, end.inputs, end.params = "getitem", (acc,), {"index": ((-1,), True)}
            continue
        g = new[-1]
        if plus_zero:  # NumPy's sum of one element is the element plus 0.0 (-0.0 becomes 0.0)
            g = ir.Node("add", (g, 0.0), {}, g.aval, site)
            new.append(g)
        if neg:
            g = ir.Node("neg", (g,), {}, g.aval, site)
            new.append(g)
        if isinstance(c0, ir.Node):
            first = ir.Node("expand_dims", (c0,), {"axis": 0}, (((1,) + row), dtype), site)
        else:
            first = ir.Node(ir.CONST, (), {"value": np.array([c0], dtype)}, ((1,), dtype), site)
        s = ir.Node("concatenate", (first, g), {"axis": 0}, (((len(terms) + 1,) + row), dtype), site)
        acc = ir.Node("cumsum", (s,), {"axis": 0}, s.aval, site)
        new += [first, s, acc]
        graph.nodes[pos:pos] = new
        end.op, end.inputs, end.params = "getitem", (acc,), {"index": ((-1,), True)}  # users keep reading end
    return graph
