"""Common-subexpression elimination: one node per distinct (op, inputs, params).

Only pure registry ops are merged (never asserts, RNG draws, inputs or structural nodes), and
only when their params are hashable; small array constants are merged when their bytes, dtype
and shape are equal (not returned ones). Backward passes create many duplicates — every time step
re-derives `transpose(W)` — and later passes (batching) need them to be one node.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from ..ops.registry import REGISTRY
from .simplify import _resolve, substitute


# made to be written into, or a new object each call (`x.view()`, a copy of x or x itself): not merged
_FRESH = {"copy", "copy_keep", "zeros_like", "ones_like", "full_like", "view", "ascontiguousarray"}
_CONST_MAX = 4096  # elements: equal constants up to this size are compared by their bytes


def _const_key(n):
    """Equal small array constants are one: constant folding gives every time step its own
    copy of the backward seed's `-1/T`, and row-block lifting needs them to be one operand."""
    v = n.params.get("value")
    if type(v) is not np.ndarray and not isinstance(v, np.generic):
        return None
    v = np.asarray(v)
    if v.size > _CONST_MAX or v.dtype.hasobject:
        return None
    return (ir.CONST, v.dtype.str, v.shape, v.tobytes())


def exact(v):
    """`v` as a key that tells apart values Python calls equal but that compute differently: `0`,
    `0.0`, `True` and `np.float32(0)` (the result's dtype), `0.0` and `-0.0` (the sign of what
    they make: `1 / (x * -0.0)`); tuples item by item. Unhashable values raise TypeError."""
    if type(v) is tuple:
        return ("tuple",) + tuple(exact(x) for x in v)
    hash(v)
    if isinstance(v, (float, np.floating, complex, np.complexfloating)):
        return (type(v).__name__, repr(v))
    return (type(v).__name__, v)


def value_key(n):
    """A key equal for nodes that compute the same values (None: a node of its own: a draw, a
    fresh copy, unhashable parameters); graphgen/masks.py gives such masks one stand-in count."""
    if n.op == ir.CONST:
        return _const_key(n)
    op = REGISTRY.get(n.op)
    if op is None or op.stateful or n.op in _FRESH:
        return None
    try:
        params = tuple(sorted((k, exact(v)) for k, v in n.params.items()))
        inputs = tuple(("n", i.id) if isinstance(i, ir.Node) else ("v", exact(i)) for i in n.inputs)
    except TypeError:
        return None
    # (an op under another `np.errstate` warns or raises otherwise: `np.log(x)` under
    # `divide="ignore"` is not the plain `np.log(x)` after it)
    errstate = tuple(sorted(n.errstate.items())) if n.errstate else None
    return (n.op, inputs, params, errstate)


def cse(graph: ir.Graph) -> ir.Graph:
    original = [(n, n.inputs) for n in graph.nodes]
    apart: set = set()
    while True:
        mapping, kept = _merge(graph, apart)
        shared = _shared_operands(original, mapping)
        if not shared:
            break
        apart |= shared
        for n, inputs in original:  # (again from the start, keeping those apart)
            n.inputs = inputs
    if mapping:
        graph.nodes[:] = kept
        substitute(graph, mapping)
    return graph


def _merge(graph, apart):
    """One pass: the mapping of merged node ids to the node each is merged into, and the nodes
    kept (their inputs resolved). Nodes in `apart` are never merged into another."""
    seen: dict = {}
    mapping: dict = {}
    outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}  # each returned constant its own
    kept = []
    for n in graph.nodes:  # top level only: a branch's nodes may not run
        n.inputs = tuple(_resolve(i, mapping) for i in n.inputs)
        key = value_key(n) if n.op != ir.CONST or n.id not in outputs else None
        if key is not None:
            first = seen.get(key)
            if first is not None and n.id not in apart:
                mapping[n.id] = first
                continue
            seen.setdefault(key, n)
        kept.append(n)
    return mapping, kept


# ops whose value may be a view of their first operand's memory (for `_shared_operands`)
_VIEWS = frozenset(("transpose", "getitem", "reshape"))


def _shared_operands(original, mapping) -> set:
    """The nodes to keep apart so that no product gets one array as both of its operands where
    the program gave it two: `(x + 0.0) @ (x + 0.0).T` merged would be `a @ a.T`, which NumPy
    computes by another BLAS routine (syrk: it rounds otherwise than eager's gemm)."""
    inputs = {n.id: ins for n, ins in original}

    def base(v):  # (through views, in the program as written)
        while isinstance(v, ir.Node) and v.op in _VIEWS and inputs.get(v.id, v.inputs):
            v = inputs.get(v.id, v.inputs)[0]
        return v

    shared = set()
    for n, ins in original:
        if n.op in _PRODUCTS:
            bases = [base(v) for v in ins if isinstance(v, ir.Node)]
            for k, b in enumerate(bases):
                for a in bases[:k]:
                    if a is not b and _resolve(a, mapping) is _resolve(b, mapping):
                        shared.add(b.id if b.id in mapping else a.id)
    return shared


# ops that may compute otherwise when given one array twice (BLAS's syrk for `a @ a.T`; NumPy's
# own functions called by a library node, `np.inner(a, a)`)
_PRODUCTS = frozenset(("matmul", "dot", "tensordot", "einsum", "numpy_call"))
