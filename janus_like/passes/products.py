"""Small matrix products through `np.dot` (reassociating pipeline only).

For operands of rank 1 or 2, `np.dot` and `np.matmul` compute the same product with the same
result shape and type. On small operands `np.dot` is the cheaper call, because matmul is a
generalized ufunc: it parses its arguments, selects a loop and checks for broadcasting on every
call, where dot goes straight to BLAS. Measured with NumPy 2.4 on this project's machine:

    (1, 32) @ (32, 32)     matmul 2.07 µs   dot 0.77 µs     (tiny_mlp's layers, batch 1)
    (4,) @ (4, 64)         matmul 1.92 µs   dot 1.22 µs     (an RL policy's first layer)
    (32, 32) @ (32, 32)    matmul 3.96 µs   dot 3.16 µs
    (64, 784) @ (784, 256) level within noise (0.97-1.09 either way on larger products)

So only products of at most SMALL_MACS multiply-adds (at the sizes the graph was generated
for) are rewritten: above that the call overhead does not show.

On contiguous operands (C or Fortran order, so transposes too) both call the same BLAS routine
with the same arguments: the results were bit-identical in every case tried (26,136 products,
every dimension from 1 to 257, float32 and float64, vectors, transposes, A·Aᵀ). A strided view
(a slice with a step, a column block) is copied by dot before BLAS, where matmul hands its
strides to BLAS or uses its own loop; the last bits then may differ. That is why the rewrite
runs only with `reassociate=True` (the default), whose contract is "eager's values up to
floating-point rounding". A floating-point error is still reported: as a warning "overflow
encountered in dot" where eager says "in matmul", or, under `np.errstate(all="raise")`, as
the exception that makes the call fall back to eager (which then raises eager's own). Products
recorded inside an `np.errstate` block are left alone.
"""
from __future__ import annotations

import numpy as np

from .. import ir

SMALL_MACS = 1 << 16
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _rank12_float(x):
    return (isinstance(x, ir.Node) and x.aval is not None and 1 <= len(x.aval[0]) <= 2
            and np.dtype(x.aval[1]) in _FLOATS)


def _macs(a, b) -> int:
    (sa, _), (sb, _) = a.aval, b.aval
    rows = sa[0] if len(sa) == 2 else 1
    cols = sb[1] if len(sb) == 2 else 1
    return int(rows) * int(sa[-1]) * int(cols)


def small_products(graph: ir.Graph) -> ir.Graph:
    """matmul nodes of small rank-1/2 float operands of one dtype become dot nodes."""
    for n in graph.all_nodes():
        if n.op != "matmul" or len(n.inputs) != 2 or n.errstate is not None:
            continue
        a, b = n.inputs
        if not (_rank12_float(a) and _rank12_float(b)) or np.dtype(a.aval[1]) != np.dtype(b.aval[1]):
            continue
        if any(not isinstance(d, (int, np.integer)) for d in a.aval[0] + b.aval[0]):
            continue
        if _macs(a, b) <= SMALL_MACS:
            n.op = "dot"
    return graph
