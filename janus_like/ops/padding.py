"""NumPy calls of hand-written layers: `np.pad(x, pad_width)` with zeros (mode "constant",
NumPy's default) or another number (`constant_values=-1`, a padding token), the border a
convolution adds before taking its windows (its gradient is the padded array's gradient with
the border cut off), `np.add.at` (below), and the rearrangements
of data augmentation, `np.roll` (a new array; its gradient rolled back) and `np.flip` (a view,
as in NumPy: the graph generator treats a write through it as it does any opaque view's)."""
from __future__ import annotations

from . import api as F
from .indexing import build_index
from .registry import register


def _pad_vjp(g, out, x, pad_width, constant_values=0):
    return (F.getitem(g, tuple(slice(before, before + n) for (before, _), n in zip(pad_width, x.shape))),)


register("pad", lambda xp, x, pad_width, constant_values=0: xp.pad(x, pad_width, constant_values=constant_values),
         vjp=_pad_vjp,
         doc="a constant around x (zeros, np.pad's default): pad_width is ((before, after), ...) per axis, as "
             "NumPy's np.pad normalizes it; constant_values a number")


# `np.add.at(table, ids, rows)`: the unbuffered scatter-add of NumPy code that accumulates an
# embedding's gradient by hand. As an op on a copy of the table, computed by np.add.at itself
# (a repeated index adds in eager's order: the same bits); the generator writes the result back
# into the table like any in-place write.
def _add_at(xp, x, v, *operands, index):
    y = x.copy(order="K")  # (x's layout kept, as eager's write in place keeps it)
    xp.add.at(y, build_index(index, operands), v)
    return y


def _add_at_vjp(g, out, x, v, *operands, index):
    picked = F.getitem_raw(g, operands, index)
    return (g, F.sum_to(picked, v)) + (None,) * len(operands)


register("add_at", _add_at, vjp=_add_at_vjp,
         doc="x with v added at an index, repeated positions once per occurrence (NumPy's np.add.at)")


def _roll_vjp(g, out, x, shift, axis):
    back = tuple(-k for k in shift) if isinstance(shift, tuple) else -shift
    return (F.roll(g, back, axis),)


register("roll", lambda xp, x, shift, axis: xp.roll(x, shift, axis), vjp=_roll_vjp,
         doc="x's elements shifted along axis (all of them, flattened, for axis None), wrapping around")
def _tile_vjp(g, out, x, reps):
    """The sum over the copies: g as (r0, s0, r1, s1, ...) summed over the r axes (x and reps
    aligned on the right, as NumPy pads the shorter with ones)."""
    n = max(len(reps), x.ndim)
    shape = (1,) * (n - x.ndim) + tuple(x.shape)
    reps = (1,) * (n - len(reps)) + tuple(reps)
    split = F.reshape(g, tuple(d for r, s in zip(reps, shape) for d in (r, s)))
    return (F.reshape(F.sum(split, tuple(range(0, 2 * n, 2))), x.shape),)


register("tile", lambda xp, x, reps: xp.tile(x, reps), vjp=_tile_vjp, doc="np.tile: x repeated reps times per axis")
register("flip", lambda xp, x, axis: xp.flip(x, axis), vjp=lambda g, out, x, axis: (F.flip(g, axis),),
         doc="x with the order of its elements along axis (every axis for None) reversed: a view")
