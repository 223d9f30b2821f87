"""Plan expressions for graphs of unknown dimensions (`ir.Graph.polymorphic`): the ops the
emitter inlines for static shapes (executor/codegen.py), decided from ranks, with sizes read
from the operands at run time."""
from __future__ import annotations

import numpy as np

from .. import ir
from .plan_helpers import _mean_axes


def inline(em, n, x) -> str | None:
    """The plan expression for node n (operand x) in a graph whose sizes are known only at run
    time, or None: what emitter `em` inlines for known shapes (`inline_shaped`), decided from
    the ranks, which the guards fix, with sizes read from the operands when the plan runs."""
    if n.aval is None or x.aval is None:
        return None
    a = em.arg(x)
    op = n.op
    if op == "dim_of":  # a size the guards left open: read from the operand
        return f"{a}.shape[{n.params['axis']}]"
    if op == "reduced_count":
        sizes = " * ".join(f"{a}.shape[{i}]" for i in n.params["axes"]) or "1"
        return f"max({sizes}, 1)"
    if op == "arange":
        return f"np.arange({a})"
    if not ir.numpy_typed(x):
        return None
    if op in ("ones_like", "zeros_like") and n.aval[0] == () and n.params.get("dtype") is None:
        return f"np.{op[:-5]}((), {em.const(np.dtype(n.aval[1]))})"  # a scalar's shape is known
    if op == "sum_to" and isinstance(n.inputs[1], ir.Node) and n.inputs[1].aval is not None:
        like = n.inputs[1]
        lead = len(x.aval[0]) - len(like.aval[0])
        expr = f"np.add.reduce({a}, SUM_TO_AXES({a}.shape, {em.arg(like)}.shape), None, None, True)"
        return em._sum_to_tail(expr, lead, f"{em.arg(like)}.shape", x, like)
    if op == "mean" and np.dtype(x.aval[1]) in (np.dtype(np.float32), np.dtype(np.float64)) and x.aval[0]:
        # as for known shapes (inline_shaped), with the count read at run time
        axis, axes, nd = _mean_axes(n, x)
        count = f"{a}.size" if len(axes) == nd else " * ".join(f"{a}.shape[{i}]" for i in axes)
        keep = bool(n.params.get("keepdims", False))
        return (f"MEAN({a}, np.add.reduce({a}, axis={em.const(axis)}, keepdims={keep!r}), {count}, "
                f"{em.const(axis)}, {keep!r})")
    if op == "expand_dims":  # None at each new axis of the result, a slice elsewhere
        axis, rank = n.params["axis"], len(n.aval[0])
        new = {i % rank for i in (axis if isinstance(axis, (tuple, list)) else (axis,))}
        last = max(new)
        return f"{a}[{', '.join('None' if i in new else ':' for i in range(last + 1))}]"
    like = n.inputs[1] if len(n.inputs) > 1 else None
    if n.op in ("reshape_like", "broadcast_like") and ir.numpy_typed(like):
        if n.op == "reshape_like":
            return f"{a}.reshape({em.arg(like)}.shape)"
        if x.aval[0] == () and int(np.prod(n.aval[0])) <= 4096:  # as for known shapes (small at generation)
            return f"np.full({em.arg(like)}.shape, {a}, {em.const(np.dtype(x.aval[1]))})"
        if em._copy_ok(n, x):
            return f"BCAST({a}, {em.arg(like)}.shape)"
        return f"np.broadcast_to({a}, {em.arg(like)}.shape)"
    return None
