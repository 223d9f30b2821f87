"""Recursion regions: a self-recursive function over a tree of Python objects as one graph node.

Inlining (calls.py) specializes a graph to one tree shape, which pays when shapes repeat. When
they do not (a treebank whose sentences all parse differently) the function is told to stage
its recursive callees as regions (`Generator.regions`): `encode(tree.root)` becomes one
`recursion` node whose forward walks whatever tree it is given at run time. The walk is the
function's own host code kept as Python (attribute reads, `if node.is_leaf`, the recursive
calls); every array operation is resolved now, by running it on abstract values through a
scratch GraphBuilder (the same path a graph takes, so the same ops and parameters as eager),
and emitted as NumPy code (region_code.py). ops/recursion.py runs it and its backward pass.

Converted: a function of one positional argument (the node) whose body is assignments,
`if` on host values, `return <array>` and recursive calls on host values, reading arrays from
its closure or globals. Array values may be computed in an `if` branch only when that branch
returns. Anything else is Unsupported here, and the call is inlined as before.
"""

from __future__ import annotations

import ast

import numpy as np

from .. import backend, ir
from ..ops.registry import REGISTRY
from ..source import local_names
from .region_code import Translator
from .values import ObjRef, Sym, Unsupported


def self_recursive(func, fn_ast) -> bool:
    """Whether the function calls itself by name (a closure cell or a global holding it)."""
    name = fn_ast.name
    if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
               for n in ast.walk(fn_ast)):
        return False
    code = func.__code__
    if name in code.co_freevars:
        cell = func.__closure__[code.co_freevars.index(name)]
        try:
            return cell.cell_contents is func
        except ValueError:
            return False
    return func.__globals__.get(name) is func


class RecursionMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def recursion_region(self, func, fn_ast, frame, args, kwargs):
        """The region node for `func(root)` (`frame`: the scope inlining would read its free
        names from), or Unsupported (the caller inlines instead)."""
        if kwargs or len(args) != 1 or not isinstance(args[0], ObjRef):
            raise Unsupported("unsupported-call", "a recursion region takes one input object", self.site)
        if self.builder.block is not self.builder.graph.nodes:
            raise Unsupported("unsupported-call", "a recursion region inside a conditional or loop node", self.site)
        free = {}
        for name in sorted(_free_names(fn_ast)):
            free[name] = self.load_name(name, frame)
        region, captured = Translator(func, fn_ast, free, self.site, self.builder.reassociate).translate()
        self.try_region(region, args[0].obj, captured)
        root = Sym(self.input_node(args[0].slot, np.empty((), object)), "array")
        out = self.builder.emit(REGISTRY["recursion"], (root, *captured), {"region": region}, aval=region.aval)
        return Sym(out.node, region.kind)

    def try_region(self, region, root, captured):
        """Run the region once on the generating call's tree (its arrays as they are now): a
        region whose first run would fail its own checks (a leaf holding an array, not an int)
        is not staged."""
        arrays = []
        for sym in captured:
            if sym.node.op != ir.INPUT:
                raise Unsupported("unsupported-call", f"recursion region {region.name}: a captured array "
                                                      "computed by the graph", self.site)
            array = self.prog.slots[sym.node.params["slot"]].value
            if backend.device_of(array) == "gpu":  # the region's code is NumPy code
                raise Unsupported("device-mismatch", f"recursion region {region.name} on GPU arrays", self.site)
            arrays.append(array)
        try:
            region.forward(root, tuple(arrays))
        except Exception as exc:  # eager decides what this call does; the region is not made
            raise Unsupported("unsupported-call", f"recursion region {region.name}: a trial run on this "
                                                  f"tree failed ({type(exc).__name__}: {exc})", self.site) from None
        region.forget()


def _free_names(fn_ast):
    own = local_names(fn_ast)
    return {n.id for n in ast.walk(fn_ast) if isinstance(n, ast.Name) and n.id not in own}
