"""Compiled helpers that generated native graphs call (imported only when Numba is installed):
what Numba's NumPy subset lacks, as plain loops. Cached on disk by Numba like the graphs."""
from __future__ import annotations

import numba
import numpy as np

_nj = numba.njit(cache=True, boundscheck=True, error_model="numpy", nogil=True)


@_nj
def red_rows(x, kind):
    """Reduce each row of the contiguous (rows, n) array x: kind 0 sum, 1 max, 2 min
    (NaN propagates, as in NumPy)."""
    out = np.empty(x.shape[0], x.dtype)
    for r in range(x.shape[0]):
        acc = x[r, 0]
        for k in range(1, x.shape[1]):
            v = x[r, k]
            if kind == 0:
                acc += v
            elif kind == 1:
                if v > acc or np.isnan(v):
                    acc = v
            elif v < acc or np.isnan(v):
                acc = v
        out[r] = acc
    return out


@_nj
def take2(x, i, j):
    """x[i, j] for 1-D index arrays i, j of one length."""
    out = np.empty(i.shape[0], x.dtype)
    for k in range(i.shape[0]):
        out[k] = x[i[k], j[k]]
    return out


@_nj
def scatter2(out, i, j, g):
    """np.add.at(out, (i, j), g) for 1-D i, j; returns out."""
    for k in range(i.shape[0]):
        out[i[k], j[k]] += g[k]
    return out


@_nj
def scatter_rows(out, idx, g):
    """np.add.at(out, idx, g) for 1-D idx over the first axis; returns out."""
    for k in range(idx.shape[0]):
        out[idx[k]] += g[k]
    return out


@_nj
def cumsum_rows(x):
    """Running sums down the first axis of the contiguous (rows, n) array x, in order."""
    out = np.empty_like(x)
    for k in range(x.shape[1]):
        out[0, k] = x[0, k]
    for r in range(1, x.shape[0]):
        for k in range(x.shape[1]):
            out[r, k] = out[r - 1, k] + x[r, k]
    return out
