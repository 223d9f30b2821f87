"""Running a recursion region in its batched form (graphgen/region_batch.py generates it).

`walk` walks the tree with the region's host code alone, which appends one record per call:
(return site, height, children's record indices..., host numbers...), each part padded with
zeros to the widest site's, and groups the calls by (height, site), lowest height first. Every
group's calls get consecutive positions, so a group's results are one slice of a per-item buffer
and its children are rows gathered from buffers the lower groups filled. The root is the one
call of greatest height: the last position. `forward` turns the records into one integer matrix
in position order (a site reads its group's hosts and children's positions as blocks of it).
`backward` runs the groups in reverse, reading each group's cotangents from a slice of a
per-item buffer of zeros (the root's row set to the graph's cotangent) and writing its
children's rows.
"""
from __future__ import annotations

from itertools import chain

import numpy as np


class Batched:
    def __init__(self, make_walk, sites, items, calls, hosts):
        self.make_walk = make_walk  # (records) -> walk(root)
        self.sites = sites  # per return site: (forward, backward)
        self.items = tuple(items)  # (shape, dtype) of each item a call returns
        self.calls = calls  # per return site: how many recursive calls it records
        self.hosts = hosts  # per return site: how many host numbers
        self.first_host = 2 + max(calls)  # a record's column of its first host number
        self.width = self.first_host + max(hosts)  # of a record

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
        total, width, c = len(records), self.width, self.first_host
        order = sorted(groups)
        at = [i for key in order for i in groups[key]]  # record index at each position
        table = np.fromiter(chain.from_iterable(map(records.__getitem__, at)), np.int64, total * width)
        table = table.reshape(total, width)
        children = np.argsort(np.array(at, np.intp))[table[:, 2:c]]  # positions of the children
        outs = [np.empty((total, *shape), dtype) for shape, dtype in self.items]
        saved = []
        start = 0
        for height, k in order:
            stop = start + len(groups[height, k])
            dest = [out[start:stop] for out in outs]  # the group's rows of each item
            rec, values = self.sites[k][0](stop - start, table[start:stop, c:c + self.hosts[k]],
                                           children[start:stop, :self.calls[k]], outs, dest, arrays)
            for d, value in zip(dest, values):
                if value is not d:  # (a site's last ufunc writes its rows itself)
                    d[...] = value
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
