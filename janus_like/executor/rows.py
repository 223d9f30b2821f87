"""The plan's form for an SGD step on the rows of a table that a step gathered (an embedding).

Differentiating `table[ids]` gives `Z = getitem_grad(g, table, ids)`: zeros of the table's shape
with g's rows added at `ids`. Plain SGD then computes, over the whole table,

    table - c * Z              # zeros, scatter, multiply, subtract: four passes of (V, D)

The plan computes it as `sgd_rows` below: a copy of the table, and the arithmetic on the touched
rows only (a TreeRNN's (500, 64) embedding and its 10-22 leaves: 7 of the 8 plans ran 0.962 of
their time with this form, in one process). It is exact, with the same bits as the four passes:

- a row the ids miss is `w - c * 0.0`, which is `w` when c is a positive finite constant
  (`c * 0.0` is then `+0.0`, and `w - 0.0` is w for every w, -0.0 and NaN included); without c,
  `w - 0.0`;
- a touched row, when the ids are distinct rows in [0, V), gets one addition into zeros
  (`0.0 + g`, which turns -0.0 into 0.0, as the scatter does; or g itself where the graph
  proved the index unique and assigns), then the same multiply and subtract per element;
- repeated ids, negative ids (-1 and V - 1 are one row), more than DISTINCT_MAX_INDICES ids or
  an id out of range take the four passes, as before (an id out of range raises there).

A recursion region's gradient of an array its code only gathers rows of (`recursion_grad`, a
one-off tree's embedding: `Region.row_arrays`) takes the same form (`region_rows`): the region
hands the rows and their indices (`Region.sparse_grad`) instead of adding them into zeros.

The graph keeps its ops (the interpreter and the native tier run them as they are): only the
plan's source changes. The form replaces the scatter's line, so its operands are read where the
scatter read them (memory planning may reuse their buffers after that); the multiply's and the
subtraction's lines are skipped.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ir
from ..ops.indexing import distinct_rows, is_basic, scatter_add
from . import scalars
from .buffers import _known


def sgd_rows(w, idx, g, scale, scale_first, unique):
    """`w - scale * Z` (`w - Z` when scale is None; `Z * scale` when not scale_first), Z being
    zeros of w's shape with g's rows added at idx (assigned when `unique`)."""
    if type(idx) is np.ndarray and type(w) is np.ndarray and idx.ndim == 1 and distinct_rows(idx, w.shape[0]):
        out = w.copy(order="K")  # (laid out as the subtraction below lays out its result)
        z = g if unique else np.add(g, w.dtype.type(0))  # the scatter's 0.0 + g (assigned: g)
        if scale is not None:
            z = np.multiply(scale, z) if scale_first else np.multiply(z, scale)
        out[idx] = np.subtract(w[idx], z)
        return out
    z = np.zeros(w.shape, w.dtype)
    if unique:
        z[idx] = g
    else:
        scatter_add(z, idx, g)
    if scale is not None:  # in z's buffer where the product keeps z's dtype (the plan's case)
        out = z if np.result_type(scale, z) == z.dtype else None
        z = np.multiply(scale, z, out=out) if scale_first else np.multiply(z, scale, out=out)
    return np.subtract(w, z, out=z if np.result_type(w, z) == z.dtype else None)


def _positive(c) -> bool:
    """A constant whose product with 0.0 is +0.0: a positive finite real number."""
    if isinstance(c, ir.Node) and c.op != ir.CONST:
        return False
    v = c.params.get("value") if isinstance(c, ir.Node) else c  # a constant node, or a number in the inputs
    if np.ndim(v) != 0 or isinstance(v, (bool, np.bool_)) or not np.isrealobj(v):
        return False
    v = float(v)
    return math.isfinite(v) and v > 0


def sparse_updates(graph: ir.Graph, read: tuple[dict, set]) -> tuple[dict, set]:
    """({scatter id: (sub, table, index, g, scale or None, scale_first, unique)}, ids of the
    multiplies and subtractions the form replaces). `read`: `scalars.readers(graph)`."""
    users, outputs = read
    pos = {n.id: k for k, n in enumerate(graph.nodes)}
    found, skip = {}, set()

    def only_reader(x, reader) -> bool:
        return x.id not in outputs and [u.id for u in users.get(x.id, ())] == [reader.id]

    for s in graph.nodes:
        if s.op != "sub" or len(s.inputs) != 2 or s.params or s.errstate is not None or s.aval is None:
            continue
        w, m = s.inputs
        if not isinstance(m, ir.Node) or not ir.numpy_typed(w) or w.aval is None:
            continue
        scale, first, z = None, True, m
        if m.op == "mul" and len(m.inputs) == 2 and not m.params and m.errstate is None and only_reader(m, s):
            a, b = m.inputs
            scale, first, z = (a, True, b) if _positive(a) else (b, False, a) if _positive(b) else (None, True, None)
            if scale is None:
                continue
        if not isinstance(z, ir.Node) or z.errstate is not None or not only_reader(z, m if scale is not None else s) \
                or z.aval is None or np.dtype(w.aval[1]).kind != "f" \
                or tuple(s.aval[0]) != tuple(w.aval[0]) or tuple(z.aval[0]) != tuple(w.aval[0]) \
                or pos.get(w.id, -1) > pos[z.id]:  # the table is ready where the scatter runs
            continue
        if z.op == "recursion_grad" and z.params["index"] in z.params["region"].row_arrays \
                and _one_dtype(s, w, z, m):
            found[z.id] = (s, w, None, None, scale, first, False)  # a region's gathered rows (`region_rows`)
        elif z.op == "getitem_grad" and not z.params.get("dense") and len(z.inputs) == 3:
            g, idx = z.inputs[0], z.inputs[2]
            items, _ = z.params["index"]
            if (len(items) != 1 or type(items[0]) is not tuple or items[0][0] != "slot" or not isinstance(idx, ir.Node)
                    or idx.aval is None or len(idx.aval[0]) != 1 or np.dtype(idx.aval[1]).kind not in "iu"
                    or not isinstance(g, ir.Node) or g.aval is None or not _one_dtype(s, w, z, g, m)
                    or not ir.numpy_typed(g) or tuple(g.aval[0]) != tuple(idx.aval[0]) + tuple(w.aval[0])[1:]):
                continue
            found[z.id] = (s, w, idx, g, scale, first, bool(z.params.get("unique")))
        else:
            continue
        skip.update({s.id} | ({m.id} if scale is not None else set()))
    return found, skip


def _one_dtype(*xs) -> bool:
    """The nodes among xs (a constant scale is a number) have one dtype."""
    return len({np.dtype(x.aval[1]) for x in xs if isinstance(x, ir.Node) and x.aval is not None}) == 1


def region_rows(w, region, g, index, scale, scale_first):
    """`w - scale * G` for G a recursion region's gradient of captured array `index` (ops/
    recursion.py): `sgd_rows` when the run only gathered rows of it (a TreeRNN's embedding, one
    row per leaf), with the same bits as the region's zeros-and-scatter gradient; else G."""
    grad = region.sparse_grad(g, index)
    if type(grad) is not np.ndarray:
        return sgd_rows(w, grad.idx, grad.rows, scale, scale_first, False)
    if scale is not None:
        grad = np.multiply(scale, grad) if scale_first else np.multiply(grad, scale)
    return np.subtract(w, grad)


def code(em, z) -> str:
    """The plan's line for a scatter `sparse_updates` chose: the subtraction's value."""
    s, w, idx, g, scale, first, unique = em.rows[z.id]
    c = "None" if scale is None else em.arg(scale)
    if z.op == "recursion_grad":
        region = em.const(z.params["region"])
        return f"v{s.id} = REGION_ROWS({em.arg(w)}, {region}, {em.arg(z.inputs[0])}, {z.params['index']}, {c}, {first})"
    return f"v{s.id} = SGD_ROWS({em.arg(w)}, {em.arg(idx)}, {em.arg(g)}, {c}, {first}, {unique})"


def scatter_code(em, n) -> str:
    """The plan's line for a `getitem_grad` (g, x, *index operands): zeros of x's shape receiving
    g at the index, assigned when the index is unique, else added as add.at adds. The shape is a
    constant, or read at run time in a graph for unknown dimensions."""
    x, g = n.inputs[1], n.inputs[0]
    v = f"v{n.id}"
    shape = em.const(_known(x)) if em.static_shapes and _known(x) is not None else f"{em.arg(x)}.shape"
    dt = np.dtype(x.aval[1]) if np.issubdtype(np.dtype(x.aval[1]), np.inexact) else np.dtype(g.aval[1])
    idx = em.index_code(n.params["index"], n.inputs[2:])
    zeros = f"{v} = np.zeros({shape}, {em.const(dt)}); "
    one, g0 = scalars.index(em, x, n.params["index"], n.inputs[2:]), scalars.element(em, g)
    if one is not None and g0 is not None and not n.params.get("dense"):  # one position: no fancy index
        assign = "=" if n.params.get("unique") or is_basic(n.params["index"]) else "+="  # add.at: 0 + g
        return f"{zeros}{v}[{one}] {assign} {g0}"
    if n.params.get("dense"):
        return f"{v} = ROWS_BY_PRODUCT({shape}, {em.arg(n.inputs[2])}, {em.arg(g)})"
    if n.params.get("unique") or is_basic(n.params["index"]):
        return f"{zeros}{v}[{idx}] = {em.arg(g)}"
    if any(type(i) is tuple and i[0] == "s" for i in n.params["index"][0]):  # (`:` is no expression: the
        operands = "".join(f"{em.arg(o)}, " for o in n.inputs[2:])  # index built as a value, slices objects)
        return f"{zeros}SCATTER_ADD({v}, BUILD_INDEX({em.const(n.params['index'])}, ({operands})), {em.arg(g)})"
    return f"{zeros}SCATTER_ADD({v}, ({idx}), {em.arg(g)})"

