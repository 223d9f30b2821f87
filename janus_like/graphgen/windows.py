"""Slices of arrays whose bounds the graph computes: a replay buffer written at its write index
(`data[i:i + n] = batch`, `i` a counter kept in the state), a window read behind it
(`data[i - n:i]`), a sequence cut into chunks (`x[:, t:t + k]`).

The bounds change every call, so they cannot be constants of the graph, but the window's length
(`n`, `k`) is one: it is read off the bounds themselves, one being the other plus or minus a
constant. The window is then the integer-array index `start + arange(n)` along its axis, which
picks the same elements in the same order as the slice wherever the slice lies inside the
axis. An assert node checks that it does (`0 <= start` and `start + n <= size`) on every call;
a call where it does not (a slice NumPy would clip or count from the end) falls back to eager,
and after repeated failures the site stays eager.

Eager's slice is a view and the graph's window a copy: a write through the window (`w =
data[i:i + n]; w += 1`) is refused, and the window goes stale when its array is written
(statements.refresh_views), as reshaped views do. `data[i:i + n] += x` is read, computed and
written back through the index (statements.stmt_AugAssign)."""
from __future__ import annotations

import functools
import operator

import numpy as np

from .. import ir
from ..jit.assumptions import Assumption
from ..ops import api as F
from .support import _as_kind
from .values import OPAQUE, Sym, Unsupported

WINDOW = object()  # the second item of an OPAQUE view that is such a window (a copy in the graph)


class DynamicSlice:
    """`lo:hi:step` with a bound the graph computes, as `expr_Slice` gives it."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step


def has_dynamic_slice(index) -> bool:
    return any(type(i) is DynamicSlice for i in (index if type(index) is tuple else (index,)))


def refuse(gen):
    raise Unsupported("data-dependent-python", "slice bounds computed in the graph", gen.site)


def read_window(gen, x, index):
    """`x[lo:hi]` with bounds the graph computes: x at the window's index, a copy where eager's
    slice is a view (so an OPAQUE view, refused where that shows), C-ordered where NumPy lays out
    `x[:, idx]` in F order (a sum over it would round apart from eager's over the slice)."""
    if not (isinstance(x, Sym) and x.kind == "array"):
        refuse(gen)
    window = window_index(gen, x, index)
    out = _as_kind(F.getitem(x, window), "array")
    if x.ndim > 1 and not isinstance(window[0] if type(window) is tuple else window, (Sym, np.ndarray)):
        out = gen._contiguous(out, None)
    out.view = (OPAQUE, WINDOW)
    gen.builder.alias(x, out)
    return out


def window_index(gen, x, index):
    """`index` (with one DynamicSlice) as an index of array graph value `x` that picks the same
    elements, plus the assert node that keeps it so. Other items may be plain slices and an
    Ellipsis only: with integers or arrays beside it, NumPy's rules would place the window's axis
    elsewhere than the slice's."""
    items = index if type(index) is tuple else (index,)
    if any(not isinstance(i, (slice, DynamicSlice)) and i is not Ellipsis for i in items) \
            or sum(type(i) is DynamicSlice for i in items) != 1 or sum(i is Ellipsis for i in items) > 1 \
            or len(items) - (Ellipsis in items) > x.ndim:
        refuse(gen)
    at = next(k for k, i in enumerate(items) if type(i) is DynamicSlice)
    axis = at if Ellipsis not in items[:at] else x.ndim - (len(items) - at)
    s = items[at]
    key = ("window", gen.site)
    if s.step not in (None, 1) or key in gen.relaxed:
        refuse(gen)
    start, length = _start_and_length(s.start, s.stop)
    if start is None:
        refuse(gen)
    size = x.shape[axis]
    b = gen.builder
    checked = (start.node, length, size, id(b.block))  # one assert a block (a branch's covers only that branch)
    if checked not in b.windows_checked:
        b.windows_checked.add(checked)
        inside = b.py_op(_inside(length, size), start, sample=True)
        b.assert_(inside, True, Assumption("shape", gen.site, f"[start:start + {length}] within {size}",
                                           path="slice", relax=key))
    positions = np.arange(length, dtype=np.int64)
    window = positions if isinstance(start, int) else b.constant(positions, "array") + start
    return items[:at] + (window,) + items[at + 1:]


def arange(gen, args, kwargs):
    """`np.arange(n)` of a Python int the graph computes (a node of a graph for any size; otherwise
    n's value, under a guard) and `np.arange(t, t + T)` (T a constant: start plus a constant
    arange, the length read off the bounds as a window's); None for other calls."""
    from ..ops.registry import P, bind

    if len(args) == 1 and not kwargs and isinstance(args[0], Sym) and args[0].kind == "py":
        if gen.builder.polymorphic:
            return _as_kind(bind(P.arange, args[0]), "array")
        n = gen.concrete_sizes(args[0])  # (a graph of fixed sizes: its length must be one too)
        if isinstance(n, Sym):
            raise Unsupported("shape-dependent", "np.arange() of a length the graph computes (the array's "
                                                 "shape would be its value)", gen.site)
        return gen.lift(np.arange(n))
    ints = all(type(a) is int or isinstance(a, Sym) and a.kind == "py" and a.dtype.kind == "i" for a in args)
    if kwargs or not ints or len(args) not in (2, 3) or len(args) == 3 and not (type(args[2]) is int and args[2] == 1):
        return None
    start, length = _start_and_length(args[0], args[1])
    key = ("arange", gen.site)
    if start is None or key in gen.relaxed:
        raise Unsupported("shape-dependent", "np.arange(start, stop) with a length the graph computes (the "
                                             "array's shape would be its value)", gen.site)
    if not isinstance(start, int):  # (NumPy's arange of ints near or past int64's range is float64)
        inside = gen.builder.py_op(_inside_range(length), start, sample=True)
        gen.builder.assert_(inside, True, Assumption("value", gen.site, f"[start, start + {length}) within "
                                                     "+-2**62", path="arange", relax=key))
    return _as_kind(gen.builder.constant(np.arange(length), "array") + start, "array")


def _start_and_length(start, stop):
    """(start, n) where stop is start + n, n a constant int (both read as one run-time value
    times a constant plus a constant: `i:i + n`, `i - n:i`, `t + 1:t + 3`, `k * b:(k + 1) * b`
    with `b` a constant), or (None, None)."""
    if start is None or stop is None:
        return None, None
    (lo_root, lo_scale, lo), (hi_root, hi_scale, hi) = _linear(start), _linear(stop)
    if lo_root is None or not _same_value(lo_root, hi_root) or lo_scale != hi_scale or hi < lo:
        return None, None
    return start, hi - lo


def _same_value(a, b) -> bool:
    """Whether nodes a and b compute one value: the same node, or the same Python arithmetic on
    the same operands (`x[j % 8:j % 8 + 3]` computes `j % 8` twice)."""
    if a is b:
        return True
    if not (isinstance(a, ir.Node) and isinstance(b, ir.Node)) or a.op != ir.PY_OP or b.op != ir.PY_OP \
            or a.params.get("fn") is not b.params.get("fn") or len(a.inputs) != len(b.inputs):
        return False
    return all(_same_value(x, y) if isinstance(x, ir.Node) else type(x) is type(y) and x == y
               for x, y in zip(a.inputs, b.inputs))


def _linear(v):
    """v as (node, a, c): a times the value of `node` (a run-time Python int) plus c, with a and c
    constant ints; (None, 0, v) for a constant, (None, 0, None) when v is not of that form."""
    if type(v) is int:
        return None, 0, v
    if not isinstance(v, Sym):
        return None, 0, None
    node = v.node
    if node.op == ir.PY_OP and len(node.inputs) == 2:
        fn, (a, b) = node.params["fn"], node.inputs
        sides = [(_linear(Sym(x, "py")) if isinstance(x, ir.Node) else (None, 0, x if type(x) is int else None))
                 for x in (a, b)]
        (ra, sa, ca), (rb, sb, cb) = sides
        if ca is not None and cb is not None:
            if fn in (operator.add, operator.sub) and (ra is None or rb is None or _same_value(ra, rb)):
                sign = 1 if fn is operator.add else -1
                return (ra if ra is not None else rb), sa + sign * sb, ca + sign * cb
            if fn is operator.mul and (ra is None) != (rb is None):
                k = ca if ra is None else cb  # the constant factor
                return (rb, k * sb, k * cb) if ra is None else (ra, k * sa, k * ca)
    return node, 1, 0


@functools.lru_cache(maxsize=None)
def _inside_range(length):
    def check(start):
        return -2 ** 62 <= start and start + length <= 2 ** 62
    check.__name__ = f"arange_of_{length}_within_int64"
    return check


@functools.lru_cache(maxsize=None)
def _inside(length, size):  # (one function per window shape: the same window's asserts are one node)
    def check(start):
        return 0 <= start and start + length <= size
    check.__name__ = f"window_of_{length}_within_{size}"
    return check
