"""Constant folding (exact): values every call computes the same way are computed once, when
the graph is optimized.

A backward pass starts from constants: the seed `ones_like(loss)`, its negation, the
cross-entropy's `-1/N` spread over the batch. With static shapes these are the same array on
every call, yet the plan rebuilt them op by op (three small ops per call on a batch-1 MLP).

Folded: a registry op that is not stateful and has no floating-point error settings, when
- it is elementwise (or a broadcast), or a reshape, and every operand is a constant or a
  Python number, or
- it is `ones_like` / `zeros_like` of a fully known shape (the operand's values do not matter;
  in a graph for unknown dimensions only rank 0 counts as known) and a surely C-ordered operand
  (`executor.plan_helpers.c_ordered`: NumPy lays the result out as the operand),
evaluated with the op's own kernel, so the value is the one the plan or the interpreter would
compute. Only values nobody can write to or hand out are folded: not graph outputs, and only
when every user computes a new value from it (elementwise ops, products, scatters), never a
view of it.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..quiet import strict
from ..executor.plan_helpers import c_ordered
from ..ops.registry import REGISTRY
from .dce import dce

_BROADCASTS = {"broadcast_like", "broadcast_to"}
_SHAPE_ONLY = {"ones_like", "zeros_like"}
_CONSUMERS = {"matmul", "dot", "getitem_grad", "index_update", "sum", "mean", "max", "min", "concatenate"}
_RESHAPES = {"reshape", "expand_dims", "squeeze"}  # of a constant: the same values, another shape


def _consumer(n):
    op = REGISTRY.get(n.op)
    return op is not None and (op.elementwise or n.op in _CONSUMERS)


def fold_scalar_constants(graph: ir.Graph) -> ir.Graph:
    """fold_constants without making arrays out of broadcasts (`broadcast_like`, `ones_like` of
    a shape with an axis): the row-block passes need `broadcast_like(-1/T, x_k)` to stay the
    same op on every block, where a folded (1,) constant per block would stop the lifting. With
    reassociation this runs first and `fold_constants` after those passes."""
    return fold_constants(graph, arrays=False)


def fold_constants(graph: ir.Graph, arrays: bool = True) -> ir.Graph:
    # a dead user (the identity `sum_to`s that `simplify` bypassed, still in the list) would
    # count as someone holding a view and block the fold: the seed chain of every backward pass
    dce(graph)
    # A fold can make its users foldable (ones_like -> neg -> broadcast); they come later in the
    # (topological) node list, so one sweep sees them with the fold done. Whether a node folds
    # depends on its operands and on its users' ops, and a fold turns a user into a constant
    # only after the node itself was looked at.
    fold_nodes(graph, graph.nodes, arrays)  # top level: a branch's nodes may not run
    return graph


def fold_nodes(graph: ir.Graph, nodes, arrays: bool = True) -> None:
    """Fold those of `nodes` (in their order) that fold_constants would fold."""
    users: dict = {}
    for n in graph.all_nodes():
        for i in n.inputs:
            if isinstance(i, ir.Node):
                users.setdefault(i.id, []).append(n)
    outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    for n in nodes:
        if n.op != ir.CONST and n.id not in outputs:
            _fold(n, users.get(n.id, ()), graph.polymorphic, arrays)


def _fold(n, users, polymorphic, arrays=True) -> bool:
    op = REGISTRY.get(n.op)
    if op is None or op.stateful or n.errstate is not None or n.aval is None or not users:
        return False
    if not all(_consumer(u) or u.op in _BROADCASTS for u in users):
        return False  # someone would hold a view of the constant
    # a rank-0 shape is () for every size of an unknown dimension (the guards fix ranks)
    static = all(type(d) is int for d in n.aval[0]) and (not polymorphic or n.aval[0] == ())
    first = n.inputs[0] if n.inputs else None
    if n.op in _SHAPE_ONLY or n.op in _BROADCASTS:
        if not static or (not arrays and n.aval[0] != ()) or (n.op in _BROADCASTS and not (isinstance(first, ir.Node) and first.op == ir.CONST)):
            return False
        if n.op in _SHAPE_ONLY and not c_ordered(first):
            return False  # (np.zeros_like of a Fortran-ordered x is Fortran-ordered: a later sum adds in that order)
        args = [_value(i, shape_only=k > 0 or n.op in _SHAPE_ONLY) for k, i in enumerate(n.inputs)]
    elif (op.elementwise or n.op in _RESHAPES) and all(i.op == ir.CONST for i in n.inputs if isinstance(i, ir.Node)):
        args = [_value(i) for i in n.inputs]
    else:
        return False
    if any(a is None for a in args):
        return False
    try:
        with strict():  # what warns or raises at run time stays at run time
            value = op.impl(np, *args, **n.params)
    except Exception:
        return False
    if not isinstance(value, (np.ndarray, np.generic)) or np.shape(value) != tuple(n.aval[0]) \
            or np.dtype(value.dtype) != np.dtype(n.aval[1]):
        return False
    if n.op in _RESHAPES:  # a view of the operand's constant: a value of its own
        value = value.copy()
    n.op, n.inputs, n.params = ir.CONST, (), {"value": value}
    return True


def _value(i, shape_only=False):
    """An operand's value: a constant's, a Python number, or (when only the shape matters) zeros
    of a node's static shape; None when not known."""
    if not isinstance(i, ir.Node):
        return i
    if i.op == ir.CONST:
        return i.params["value"]
    if shape_only and i.aval is not None and all(type(d) is int for d in i.aval[0]):
        return np.zeros(i.aval[0], i.aval[1])
    return None
