"""Index expressions as hashable templates plus array operands.

`x[i, 1:3, idx]` becomes the template `(('slot', 0), ('s', 1, 3, None), ('slot', 1))` and the
operands `[i_array, idx_array]`: the template is an op parameter (hashable, printable, usable
as a CSE key) while arrays used as indices flow through the graph like any other value.
Python ints and slices stay in the template; ints coming from graph values are slots.
"""
from __future__ import annotations

import functools

import numpy as np

_SLOT = "slot"
_SLICE = "s"


def split_index(index, is_array):
    """(template, operands). `is_array(v)` says whether v must travel as an operand."""
    items = index if isinstance(index, tuple) else (index,)
    template, operands = [], []
    for item in items:
        if isinstance(item, slice):
            template.append((_SLICE, item.start, item.stop, item.step))
        elif item is None or item is Ellipsis or (isinstance(item, (int, np.integer)) and not isinstance(item, bool)):
            template.append(int(item) if isinstance(item, np.integer) else item)
        elif is_array(item):
            template.append((_SLOT, len(operands)))
            operands.append(item)
        elif isinstance(item, (list, range, bool, np.bool_)) or type(item) is tuple and not any(map(is_array, item)):
            # as NumPy converts them (a tuple inside the index tuple: `W[tuple(zip(*pairs))]`)
            template.append((_SLOT, len(operands)))
            arr = np.asarray(item)
            operands.append(arr.astype(np.intp) if arr.size == 0 and arr.dtype.kind == "f" else arr)  # `h[[]]`
        else:
            np.zeros(1)[item]  # (NumPy's own error for a float or a string: IndexError, as eager raises)
            raise TypeError(f"unsupported index component {item!r} of type {type(item).__name__}")
    return (tuple(template), not isinstance(index, tuple)), operands


def build_index(template, operands):
    """Inverse of split_index: the concrete index to apply to an array."""
    items, single = template
    out = []
    for item in items:
        if type(item) is tuple:
            if item[0] == _SLOT:
                out.append(operands[item[1]])
            else:
                out.append(slice(item[1], item[2], item[3]))
        else:
            out.append(item)
    return out[0] if single else tuple(out)


def index_source(template, operand, const=repr) -> str:
    """Python source of the index (what goes inside the brackets), for generated code:
    `operand(k)` gives the code of array operand k, `const(v)` the code of a constant."""
    items, single = template
    parts = []
    for item in items:
        if type(item) is tuple:
            if item[0] == _SLOT:
                parts.append(operand(item[1]))
            else:
                a, b, c = ("" if x is None else const(x) for x in item[1:])
                parts.append(f"{a}:{b}" + (f":{c}" if c else ""))
        elif item is None:
            parts.append("None")
        elif item is Ellipsis:
            parts.append("...")
        else:
            parts.append(const(item))
    if single:
        return parts[0]
    return ", ".join(parts) + ("," if len(parts) == 1 else "")


def is_basic(template) -> bool:
    """True when no array operands are involved (no repeated positions possible)."""
    return not any(type(i) is tuple and i[0] == _SLOT for i in template[0])


def format_index(template) -> str:
    """The index as printed in the IR: array operands as $k, no trailing comma."""
    items, single = template
    src = index_source(template, lambda k: f"${k}", str)
    return f"[{src[:-1] if not single and len(items) == 1 else src}]"


# Up to this many added elements, one np.add.at over the flattened rows beats the rounds below
# (measured on float32: 25 x 100 floats into (60, 100) 14 against 38-46 us; 320 x 64 into (1000,
# 64) 65 against 104 us; 400 x 256 with 40 repeats per row 264 against 608 us); the rounds win from
# about 2,000 long rows with few repeats (2,000 x 128: 525 against 717 us).
DISTINCT_MAX_INDICES = 128  # above this repeats are likely (an LSTM's batch of words) and the check costs
FLAT_MAX_ELEMENTS = 131072
FLAT_MIN_ELEMENTS = 1024  # below this the range check and flat index cost what the fast loop saves
ROUNDS_MIN_ELEMENTS = 4096  # below this the rounds' setup costs more than it saves


def distinct_rows(idx, n) -> bool:
    """Whether the 1-D integer array idx names at most DISTINCT_MAX_INDICES distinct rows, all in
    [0, n) (a negative index is refused: -1 and n - 1 name one row). Checked on the indices as
    Python ints: ~0.3 us for ten."""
    if idx.size > DISTINCT_MAX_INDICES:
        return False
    rows = idx.tolist()
    return bool(rows) and len(set(rows)) == len(rows) and 0 <= min(rows) and max(rows) < n


def scatter_add(out, idx, g):
    """`np.add.at(out, idx, g)`: g's rows added into out at idx, repeated indices accumulating in
    order, with the same bits. For one 1-D integer index on axis 0, three faster forms:
    - up to DISTINCT_MAX_INDICES indices that are distinct rows in [0, n) (a tree's leaves, one
      example's label): a fancy-index `+=`, which adds each row once, as add.at does. The check
      (a set of the indices as Python ints) costs ~0.3 us for ten; add.at walking ten 64-wide
      rows costs ~11 us, the `+=` ~1.5. Negative indices take the other forms: -1 and n - 1 name
      one row, and `+=` would keep only one of their additions;
    - from FLAT_MIN_ELEMENTS to FLAT_MAX_ELEMENTS added elements into a C-contiguous `out`, one
      add.at over the flat arrays (row r, column j is element r * width + j; a negative row -r
      lands on -r * width + j, the same element counted from the end). NumPy's 1-D add.at has a
      fast loop; the (n, width) form walks rows generically, about 2x slower;
    - above that, rounds: round k adds every index's k-th occurrence with one vectorized `+=`
      (indices are distinct within a round), 3.5-4.5x faster than add.at on an LSTM's embedding.
    Both add each element's contributions in occurrence order, as add.at does. Anything else
    (other index kinds, smaller scatters, an index out of range, which add.at reports, CuPy
    arrays) is add.at."""
    if (type(idx) is np.ndarray and type(out) is np.ndarray and idx.ndim == 1 and idx.dtype.kind in "iu"
            and out.ndim >= 1 and idx.size and getattr(g, "dtype", None) == out.dtype
            and np.shape(g) == idx.shape + out.shape[1:]):
        n = out.shape[0]
        if distinct_rows(idx, n):
            out[idx] += g  # one addition per element, out's value first: add.at's bits
            return out
        width = out.size // max(n, 1)
        added = idx.size * width
        if added >= FLAT_MIN_ELEMENTS:
            lo, hi = int(idx.min()), int(idx.max())
            if -n <= lo and hi < n:  # out of range: add.at reports it (and no flat index can overflow)
                if added <= FLAT_MAX_ELEMENTS and out.flags.c_contiguous:
                    flat = idx.astype(np.intp, copy=False)
                    if width != 1:
                        flat = flat[:, None] * width + _columns(width)
                    np.add.at(out.reshape(-1), flat.reshape(-1), np.ravel(g))
                    return out
                if added >= ROUNDS_MIN_ELEMENTS:
                    return _scatter_rounds(out, idx, g, n, lo)
    np.add.at(out, idx, g)
    return out


@functools.lru_cache(maxsize=64)
def _columns(width):
    cols = np.arange(width)
    cols.flags.writeable = False  # shared by every call
    return cols


def _scatter_rounds(out, idx, g, n, lo):
    if lo < 0:  # -1 and n-1 are the same row: one key per row
        idx = np.where(idx < 0, idx.astype(np.intp) + n, idx)  # (in intp: int8 ids of a 200-row table)
    order = np.argsort(idx, kind="stable")
    keys = idx[order]
    first = np.empty(keys.size, bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    positions = np.arange(keys.size)
    rank = positions - np.maximum.accumulate(np.where(first, positions, 0))
    for k in range(int(rank.max()) + 1):
        rows = order[rank == k]  # in occurrence order within each index: stable sort
        out[idx[rows]] += g[rows]
    return out


def rows_by_product(shape, idx, g):
    """zeros(shape) with g's rows added at the 1-D integer index idx, as a one-hot product:
    `onehot(idx).T @ g`, where onehot is (len(idx), shape[0]). Duplicate rows are summed by the
    BLAS in its own order (a reassociation of `np.add.at`'s sums; `passes/onehot.py` asks for it
    only in reassociating mode, for small tables). A non-finite g (0 * inf would reach rows
    the index does not hit) or an index out of range takes `scatter_add`, which reports the
    error as `np.add.at` does. On char_rnn's (60, 100) table and 25 ids: 21 against 45-54 us."""
    if np.isfinite(g).all():
        onehot = np.zeros((shape[0], idx.size), g.dtype)
        try:
            onehot[idx, np.arange(idx.size)] = 1
        except IndexError:
            pass
        else:
            return (onehot @ g.reshape(idx.size, -1)).reshape(shape)
    out = np.zeros(shape, g.dtype)
    return scatter_add(out, idx, g)
