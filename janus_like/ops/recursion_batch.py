"""Running a recursion region in its batched form (graphgen/region_batch.py generates it).

`forward` walks the tree with the region's host code alone, which appends one record per call:
(return site, height, host numbers..., children's record indices...). Calls are grouped by
(height, site), lowest height first; every group's calls get consecutive positions, so a group's
results are one slice of a per-item buffer and its children are rows gathered from buffers the
lower groups filled. The root is the one call of greatest height: the last position.
`backward` runs the groups in reverse, reading each group's cotangents from a slice of a
per-item buffer of zeros (the root's row set to the graph's cotangent) and writing its
children's rows.
"""
from __future__ import annotations

import numpy as np


class Batched:
    def __init__(self, make_walk, sites, items, calls):
        self.make_walk = make_walk  # (records) -> walk(root)
        self.sites = sites  # per return site: (forward, backward)
        self.items = tuple(items)  # (shape, dtype) of each item a call returns
        self.calls = calls  # per return site: how many recursive calls it records

    def walk(self, root):
        """The calls the region makes on this tree: (records, {(height, site): record indices})."""
        records = []
        self.make_walk(records)(root)
        groups = {}
        for i, rec in enumerate(records):
            groups.setdefault((rec[1], rec[0]), []).append(i)
        return records, groups

    def forward(self, walked, arrays):
        """(the root's items, what `backward` needs), from what `walk` found."""
        records, groups = walked
        total = len(records)
        position = [0] * total
        order = sorted(groups)
        p = 0
        for key in order:
            for i in groups[key]:
                position[i] = p
                p += 1
        outs = [np.empty((total, *shape), dtype) for shape, dtype in self.items]
        saved = []
        start = 0
        for height, k in order:
            members = groups[height, k]
            stop = start + len(members)
            rows = [records[i] for i in members]
            width = len(rows[0])
            hosts = width - 2 - self.calls[k]
            host = [np.array([r[j] for r in rows], np.int64) for j in range(2, 2 + hosts)]
            calls = [np.array([position[r[j]] for r in rows], np.intp) for j in range(2 + hosts, width)]
            rec, values = self.sites[k][0](len(members), host, calls, outs, arrays)
            for out, value in zip(outs, values):
                out[start:stop] = value
            saved.append((k, start, stop, rec))
            start = stop
        return [out[total - 1] for out in outs], (saved, outs)

    def backward(self, state, g_items, acc, arrays):
        saved, outs = state
        cots = [np.zeros_like(out) for out in outs]
        for cot, g in zip(cots, g_items):
            cot[-1] = g
        for k, start, stop, rec in reversed(saved):
            self.sites[k][1](rec, [cot[start:stop] for cot in cots], cots, acc, arrays)
