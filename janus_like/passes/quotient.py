"""Adam's bias corrections taken out of its quotient (reassociating only).

Adam's update, as `optim.Adam` and hand-written steps spell it,

    var - lr * (m / c1) / (sqrt(v / c2) + eps)          c1 = 1 - beta1**t, c2 = 1 - beta2**t

makes seven passes over each weight-sized array after the moments: two divisions by the
corrections, the root, the epsilon, the quotient, the learning rate and the subtraction. With
k = sqrt(c2) it equals

    var - (m * (lr * k / c1)) / (sqrt(v) + eps * k)

where the scalars are computed once and each array sees five passes: on the MLP trained with
Adam, 2 of its 14 passes a weight. The values differ from eager's by rounding only (the
corrections are applied to a scalar, not to each element), which is why the rewrite runs only
with `reassociate=True`.

`sqrt(v / c2) = sqrt(v) / sqrt(c2)` needs c2 > 0 (for Adam, beta2 < 1 and t >= 1): the graph
asserts it, a call where it fails runs eagerly, and after `regen_after` such calls the
signature's graphs are generated without this rewrite (`optimize(..., relaxed)`).

c2 must be a one-element value of the arrays' dtype (a Python number's square root would be a
float64); c1, lr and eps may also be Python numbers. So every scalar keeps the dtype, and the
arrays' results keep theirs. Every intermediate array must have no other user, the update's
shape and the update's block.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .chains import _blocks, _users

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _scalar(x, dtype, weak=True) -> bool:
    """x is a one-element node of `dtype`, or (`weak`) a Python number or a node holding one:
    products with it keep `dtype`."""
    if isinstance(x, ir.Node):
        if x.aval is None or tuple(x.aval[0]) != ():
            return False
        if ir.numpy_typed(x):
            return np.dtype(x.aval[1]) == dtype
        return weak and np.dtype(x.aval[1]).kind in "iuf"
    return weak and isinstance(x, (int, float)) and not isinstance(x, bool)


def _array(x, dtype) -> bool:
    return isinstance(x, ir.Node) and x.aval is not None and tuple(x.aval[0]) != () and np.dtype(x.aval[1]) == dtype


def _only(x, op, uses, ids):
    """x is an `op` node of the block with this one use (None otherwise)."""
    if isinstance(x, ir.Node) and x.op == op and uses.get(x.id, 0) == 1 and x.id in ids and x.errstate is None:
        return x
    return None


def _split(n, dtype, test):
    """(scalar, other) of a two-input node with one scalar operand, or None."""
    if len(n.inputs) != 2:
        return None
    a, b = n.inputs
    if _scalar(a, dtype) and test(b):
        return a, b
    if _scalar(b, dtype) and test(a):
        return b, a
    return None


def _match(n, uses, ids):
    """The pieces (lr, m, c1, v, c2, eps) of `lr * (m / c1) / (sqrt(v / c2) + eps)` rooted at
    the multiply n, or None."""
    if n.op != "mul" or n.errstate is not None or n.aval is None or np.dtype(n.aval[1]) not in _FLOATS:
        return None
    dtype = np.dtype(n.aval[1])
    found = _split(n, dtype, lambda x: _only(x, "div", uses, ids) is not None)
    if found is None:
        return None
    lr, q = found
    num, den = q.inputs
    num, den = _only(num, "div", uses, ids), _only(den, "add", uses, ids)
    if num is None or den is None or not (_array(num.inputs[0], dtype) and _scalar(num.inputs[1], dtype)):
        return None
    m, c1 = num.inputs
    found = _split(den, dtype, lambda x: _only(x, "sqrt", uses, ids) is not None)
    if found is None:
        return None
    eps, root = found
    inner = _only(root.inputs[0], "div", uses, ids)
    if inner is None or not (_array(inner.inputs[0], dtype) and _scalar(inner.inputs[1], dtype, weak=False)):
        return None
    v, c2 = inner.inputs
    shapes = {tuple(x.aval[0]) for x in (n, q, num, den, root, inner, m, v)}
    return (lr, m, c1, v, c2, eps) if len(shapes) == 1 else None


def _rewrite(block, uses):
    from ..jit.assumptions import Assumption

    ids = {n.id for n in block}
    shared = {}  # (c2, lr, c1, eps) -> the scalars already made: one assert and one root a step, not one a weight
    i = 0
    while i < len(block):
        n = block[i]
        found = _match(n, uses, ids)
        i += 1
        if found is None:
            continue
        lr, m, c1, v, c2, eps = found
        dtype, shape = np.dtype(n.aval[1]), tuple(n.aval[0])
        one, full = ((), dtype), (shape, dtype)

        def node(op, inputs, aval):
            return ir.Node(op, tuple(inputs), {}, aval, n.site)

        key = tuple(x.id if isinstance(x, ir.Node) else (type(x), repr(x)) for x in (c2, lr, c1, eps))
        new = []
        if key not in shared:
            positive = node("gt", (c2, 0), ((), np.dtype(bool)))
            check = ir.Node(ir.ASSERT, (positive,), {"expect": True, "assumption": Assumption(
                "sign", n.site, "> 0", path="Adam's second-moment correction (1 - beta2**t), reassociated",
                relax=("quotient",))}, None, n.site)  # failing repeatedly: the signature's graphs go without
            k = node("sqrt", (c2,), one)
            scale = node("div", (node("mul", (lr, k), one), c1), one)
            new = [positive, check, k, scale.inputs[0], scale, node("mul", (eps, k), one)]
            shared[key] = (scale, new[-1])
        scale, eps_k = shared[key]
        root = node("sqrt", (v,), full)
        den = node("add", (root, eps_k), full)
        num = node("mul", (m, scale), full)
        new += [root, den, num]
        block[i - 1:i - 1] = new
        i += len(new)
        n.op, n.inputs, n.params = "div", (num, den), {}


def fold_adam_quotient(graph: ir.Graph) -> ir.Graph:
    """Rewrite `lr * (m / c1) / (sqrt(v / c2) + eps)` as `(m * (lr * sqrt(c2) / c1)) / (sqrt(v) +
    eps * sqrt(c2))` under an assert that c2 > 0; the old intermediates are left to DCE."""
    uses = _users(graph)
    for block in _blocks(graph):
        _rewrite(block, uses)
    return graph
