"""Recursion regions: a self-recursive function over a tree of Python objects as one graph node.

Inlining (calls.py) specializes a graph to one tree shape, which pays when shapes repeat. When
they do not (a treebank whose sentences all parse differently) the function is told to stage
its recursive callees as regions (`Generator.regions`): `encode(tree.root)` becomes one
`recursion` node whose forward walks whatever tree it is given at run time. The walk is the
function's own host code kept as Python (attribute reads, `if node.is_leaf`, the recursive
calls); every array operation is resolved now, by running it on abstract values through a
scratch GraphBuilder (the same path a graph takes, so the same ops and parameters as eager),
and emitted as NumPy code (region_code.py). ops/recursion.py runs it and its backward pass.

Converted: a function of one positional argument (the node), or a method of an object the graph
reads as a constant (`self.encode(node)`, its recursive calls `self.encode(...)`), whose body is
assignments (to names or tuples of names), `if` on host values, returns of an array or a tuple
of arrays, recursive calls on host values, and calls of helper functions or methods of the same
object whose bodies are assignments and one return (inlined into the region). Arrays are read
from closures, globals or the object's attributes. Array values may be computed in an `if`
branch only when that branch returns. Anything else is Unsupported here, and the call is
inlined as before.
"""

from __future__ import annotations

import ast

import numpy as np

from .. import backend, ir
from ..ops import api as F
from ..ops.registry import REGISTRY
from ..source import local_names
from .region_code import Translator
from .support import _as_kind
from .values import ObjRef, Sym, Unsupported


def self_recursive(func, fn_ast, args=()) -> bool:
    """Whether the function calls itself: by name (a closure cell or a global holding it), or, a
    method, through its first parameter (`self.encode(...)`, `args[0]` the object it is bound to)."""
    return recursion_kind(func, fn_ast, args) is not None


def recursion_kind(func, fn_ast, args=()):
    """"function", "method" (see self_recursive) or None."""
    name = fn_ast.name
    calls = [n.func for n in ast.walk(fn_ast) if isinstance(n, ast.Call)]
    if any(isinstance(f, ast.Name) and f.id == name for f in calls):
        code = func.__code__
        if name in code.co_freevars:
            try:
                if func.__closure__[code.co_freevars.index(name)].cell_contents is func:
                    return "function"
            except ValueError:
                pass
        elif func.__globals__.get(name) is func:
            return "function"
    params = fn_ast.args.posonlyargs + fn_ast.args.args
    if params and args and isinstance(args[0], ObjRef) and any(
            isinstance(f, ast.Attribute) and f.attr == name and isinstance(f.value, ast.Name)
            and f.value.id == params[0].arg for f in calls):
        obj = args[0].obj
        if name in getattr(obj, "__dict__", {}):
            return None
        for klass in type(obj).__mro__:
            if name in klass.__dict__:
                return "method" if klass.__dict__[name] is func else None
    return None


class RecursionMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def recursion_region(self, func, fn_ast, frame, args, kwargs, kind):
        """The region node for `func(root)` or a method's `obj.func(root)` (`kind`, as
        recursion_kind says; `frame`: the scope inlining would read its free names from), or
        Unsupported (the caller inlines instead)."""
        method = kind == "method"
        if kwargs or len(args) != 1 + method or not all(isinstance(a, ObjRef) for a in args):
            raise Unsupported("unsupported-call", "a recursion region takes one input object", self.site)
        if self.builder.block is not self.builder.graph.nodes:
            raise Unsupported("unsupported-call", "a recursion region inside a conditional or loop node", self.site)
        region, captured = Translator(func, fn_ast, self.free_values(fn_ast, frame), self.site,
                                      self.builder.reassociate, obj=args[0] if method else None, gen=self).translate()
        self.try_region(region, args[-1].obj, captured)
        root = Sym(self.input_node(args[-1].slot, np.empty((), object)), "array")
        out = Sym(self.builder.emit(REGISTRY["recursion"], (root, *captured), {"region": region},
                                    aval=region.aval).node, "tensor")
        if region.elems is None:
            return Sym(out.node, region.kind)
        items, lo = [], 0
        for (shape, _), kind in zip(region.elems, region.kind):
            hi = lo + int(np.prod(shape, dtype=np.int64))
            item = F.getitem(out, slice(lo, hi))
            if shape != (hi - lo,):
                item = F.reshape(item, shape)
            items.append(_as_kind(item, kind))
            lo = hi
        return tuple(items)

    def free_values(self, fn_ast, frame):
        """The values of a function's free names, read as inlining reads them (and guarded)."""
        return {name: self.load_name(name, frame) for name in sorted(_free_names(fn_ast))}

    def region_helper(self, func):
        """(AST, free values) of a helper function a region inlines."""
        fn_ast, frame = self.function_frame(func)
        return fn_ast, self.free_values(fn_ast, frame)

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
    """The names a function reads from outside (not its locals, not its comprehensions' variables)."""
    own = set(local_names(fn_ast))
    for n in ast.walk(fn_ast):
        if isinstance(n, ast.comprehension):
            own.update(x.id for x in ast.walk(n.target) if isinstance(x, ast.Name))
    return {n.id for n in ast.walk(fn_ast) if isinstance(n, ast.Name) and n.id not in own}
