"""A scalar times a matrix product scales the product's smaller operand (reassociating only).

SGD's update multiplies every weight gradient by the learning rate, and a weight gradient is a
product `xᵀ·g` that is usually much larger than one of its operands: the MLP's first layer has
`x` of 64×784 and `g` of 64×256, and the gradient is 784×256. `lr * (xᵀ·g)` reads and writes
the 200,704-element gradient once more; `xᵀ·(lr * g)` scales 16,384 elements instead. The
rewrite

    c * matmul(A, B)   ->   matmul(A, c * B)      (or matmul(c * A, B) when A is smaller)

applies where the product has no other use, lives in the same block as the multiply, and has
at least MIN_SAVED elements more than the scaled operand. The values differ from eager's by
rounding only (c is applied before the sums, not after), which is why it runs only with
`reassociate=True`.

The scalar is a Python number (weak: the product's dtype stays) or a 0-d node of the product's
own dtype, so that the scaled operand keeps its dtype; booleans and complex numbers are left.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ir
from .chains import _blocks, _users
from .families import _shape

_PRODUCTS = ("matmul", "dot")
# Elements the rewrite must save: below this the scaled operand's new buffer and the lost
# in-place multiply cost what the smaller pass saves (tiny MLP's 32 x 32 weight gradients: level)
MIN_SAVED = 4096
_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _size(x) -> int | None:
    shape = _shape(x)
    return None if shape is None else math.prod(shape)


def _scalar_of(c, dtype) -> bool:
    """c can scale an operand of `dtype` without changing the dtype."""
    if isinstance(c, ir.Node):
        if c.aval is None or tuple(c.aval[0]) != ():
            return False
        if ir.numpy_typed(c):
            return np.dtype(c.aval[1]) == dtype
        return np.dtype(c.aval[1]).kind in "iuf"  # a Python int or float (weak)
    return isinstance(c, (int, float)) and not isinstance(c, bool)


def _product(x, uses, block_ids):
    if not (isinstance(x, ir.Node) and x.op in _PRODUCTS and len(x.inputs) == 2 and x.errstate is None):
        return False
    if uses.get(x.id, 0) != 1 or x.id not in block_ids or x.aval is None:
        return False
    a, b = x.inputs
    return all(isinstance(o, ir.Node) and o.aval is not None and 1 <= len(o.aval[0]) <= 2 for o in (a, b))


def _rewrite(block: list, uses: dict) -> None:
    ids = {n.id for n in block}
    i = 0
    while i < len(block):
        n = block[i]
        i += 1
        if n.op != "mul" or len(n.inputs) != 2 or n.errstate is not None or n.aval is None:
            continue
        k = 0 if _product(n.inputs[0], uses, ids) else 1 if _product(n.inputs[1], uses, ids) else None
        if k is None:
            continue
        m, c = n.inputs[k], n.inputs[1 - k]
        a, b = m.inputs
        dtype = np.dtype(m.aval[1])
        if dtype not in _FLOATS or np.dtype(n.aval[1]) != dtype or tuple(n.aval[0]) != tuple(m.aval[0]):
            continue
        if np.dtype(a.aval[1]) != dtype or np.dtype(b.aval[1]) != dtype or not _scalar_of(c, dtype):
            continue
        sizes = [_size(a), _size(b), _size(m)]
        if None in sizes:
            continue
        j = 0 if sizes[0] < sizes[1] else 1
        if sizes[2] - sizes[j] < MIN_SAVED:
            continue
        operand = (a, b)[j]
        scaled = ir.Node("mul", (c, operand) if k == 1 else (operand, c), {}, operand.aval, n.site)
        block.insert(i - 1, scaled)
        i += 1
        n.op, n.params = m.op, dict(m.params)
        n.inputs = (scaled, b) if j == 0 else (a, scaled)


def scale_smaller_operand(graph: ir.Graph) -> ir.Graph:
    """Rewrite `c * (A @ B)` as `A @ (c * B)` (or `(c * A) @ B`) where that scales fewer
    elements; the product left without users is removed by DCE."""
    uses = _users(graph)
    for block in _blocks(graph):
        _rewrite(block, uses)
    return graph
