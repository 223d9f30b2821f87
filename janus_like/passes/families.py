"""Families of row blocks: the pieces of one array that a graph uses, for row-block lifting.

A family is every row block `base[a_k:b_k]` of an array, tiling its rows in order (the row
slices that batching leaves behind), or every single row `base[k]` (squeezed: the rows of a
batched product of vectors). Input: the top-level nodes of a graph; output: which node is which
piece of which array.
"""
from __future__ import annotations

from .. import ir

_FULL = ("s", None, None, None)


def _shape(x):
    if not isinstance(x, ir.Node) or x.aval is None:
        return None
    shape = x.aval[0]
    return tuple(shape) if all(type(d) is int for d in shape) else None


def _row_cut(n):
    """(start, stop, squeezed) when n is `base[a:b]` (a basic slice of axis 0 only; squeezed
    False) or `base[k]` (one row, axis 0 dropped; squeezed True, stop = k + 1), else None."""
    if n.op != "getitem" or len(n.inputs) != 1 or _shape(n.inputs[0]) is None or _shape(n) is None:
        return None
    items, single = n.params["index"]
    base = _shape(n.inputs[0])
    if not items or not base or any(i != _FULL for i in items[1:]):
        return None
    first = items[0]
    if type(first) is int:
        k = first + base[0] if first < 0 else first
        return (k, k + 1, True) if 0 <= k < base[0] else None
    if type(first) is not tuple or first[0] != "s" or first[3] not in (None, 1):
        return None
    start, stop, _ = slice(first[1], first[2]).indices(base[0])
    return (start, stop, False) if stop > start else None


class _Families:
    """Arrays whose row blocks are all in use. A family is keyed by (base id, squeezed): the
    blocks `base[a:b]` tiling the rows in order, or (squeezed) every row `base[k]`."""

    def __init__(self):
        self.member = {}  # node id -> (family, k)
        self.bounds = {}  # family -> ((a_0, b_0), ...)
        self.blocks = {}  # family -> [node, ...] in block order
        self.base = {}  # family -> base node

    def add(self, base, cuts, squeezed=False):
        """cuts: {(a, b): node}; registered when the blocks tile the base's rows in order."""
        order = sorted(cuts)
        if len(order) < 2 or order[0][0] != 0 or order[-1][1] != _shape(base)[0]:
            return None
        if any(x[1] != y[0] for x, y in zip(order, order[1:])):
            return None
        fid = (base.id, squeezed)
        self.bounds[fid] = tuple(order)
        self.blocks[fid] = [cuts[c] for c in order]
        self.base[fid] = base
        for k, c in enumerate(order):
            self.member[cuts[c].id] = (fid, k)
        return fid


def _find_families(nodes) -> _Families:
    cuts: dict = {}
    for n in nodes:
        if n.op != "getitem":  # the cheap test first: most nodes are not cuts
            continue
        cut = _row_cut(n)
        if cut is not None:
            key = (n.inputs[0].id, cut[2])
            cuts.setdefault(key, (n.inputs[0], cut[2], {}))[2].setdefault(cut[:2], n)
    fam = _Families()
    for base, squeezed, blocks in cuts.values():
        fam.add(base, blocks, squeezed)
    return fam
