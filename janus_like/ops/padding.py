"""Two NumPy calls of hand-written layers: `np.pad(x, pad_width)` with zeros (mode "constant",
NumPy's default), the border a convolution adds before taking its windows (its gradient is the
padded array's gradient with the border cut off), and `np.add.at` (below)."""
from __future__ import annotations

from . import api as F
from .indexing import build_index
from .registry import register


def _pad_vjp(g, out, x, pad_width):
    return (F.getitem(g, tuple(slice(before, before + n) for (before, _), n in zip(pad_width, x.shape))),)


register("pad", lambda xp, x, pad_width: xp.pad(x, pad_width), vjp=_pad_vjp,
         doc="zeros around x: pad_width is ((before, after), ...) per axis, as NumPy's np.pad normalizes it")


# `np.add.at(table, ids, rows)`: the unbuffered scatter-add of NumPy code that accumulates an
# embedding's gradient by hand. As an op on a copy of the table, computed by np.add.at itself
# (a repeated index adds in eager's order: the same bits); the generator writes the result back
# into the table like any in-place write.
def _add_at(xp, x, v, *operands, index):
    y = x.copy()
    xp.add.at(y, build_index(index, operands), v)
    return y


def _add_at_vjp(g, out, x, v, *operands, index):
    picked = F.getitem_raw(g, operands, index)
    return (g, F.sum_to(picked, v)) + (None,) * len(operands)


register("add_at", _add_at, vjp=_add_at_vjp,
         doc="x with v added at an index, repeated positions once per occurrence (NumPy's np.add.at)")
