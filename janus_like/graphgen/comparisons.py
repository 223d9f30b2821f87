"""Comparisons and truth values the generator evaluates: `is`, `in` and `==`/`<` of Python
values and input objects (guarded by identity where the outcome depends on which object it is),
a user class's own comparison methods, `__bool__` and `__len__` run inlined on the objects' state
at that point, and the truth of an input container or object."""
from __future__ import annotations

import ast
import collections
import functools
import operator
import types

import numpy as np

from .. import ir
from ..ops import api as F
from .attributes import _library_owned, user_method
from .containers import refuse_own_reads
from .support import _CMPOPS, _MISSING, _any_objref, _as_kind, _dict_key, _identity
from .values import ObjRef, Sym, Unsupported, complex_operand, numpy_scalar

_CMP_DUNDERS = {ast.Eq: ("__eq__", "__eq__"), ast.NotEq: ("__ne__", "__ne__"), ast.Lt: ("__lt__", "__gt__"),
                ast.LtE: ("__le__", "__ge__"), ast.Gt: ("__gt__", "__lt__"), ast.GtE: ("__ge__", "__le__")}


_CONSTANTS = frozenset({int, float, bool, str, type(None)})  # the items `_member_of` compares a number with


@functools.lru_cache(maxsize=256)
def _member_of(items):
    def member(v):
        return v in items
    member.__name__ = f"in_{len(items)}_items"
    return member


# ops whose results are another value's object on some runs only (a branch's or a loop's outputs)
_EITHER = frozenset({ir.TUPLE_GET, ir.LOOP_VAR, ir.COND, ir.LOOP, "recursion"})


def _objects(node):
    """The objects node's value may be when the graph runs (an input by its slot, else a node's
    own new object); None where a branch or a loop decides."""
    if node.op in _EITHER:
        return None
    if node.op == ir.INPUT:
        return frozenset({("input", node.params["slot"])})
    if node.op in ir.MAY_BE_OPERAND and node.inputs and isinstance(node.inputs[0], ir.Node):
        inner = _objects(node.inputs[0])
        return None if inner is None else inner | {node.id}
    return frozenset({node.id})


class ComparisonsMixin:
    def compare(self, op, left, right):
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = self.singleton_identity(left, right, isinstance(op, ast.Is))
            if same is not None:
                return same
            if all(isinstance(v, Sym) and v.kind == "py" or type(v) in (int, float, complex) for v in (left, right)):
                raise Unsupported("data-dependent-python", "`is` of Python numbers (eager's answer depends on which "
                                                           "objects hold them, not on their values)", self.site)
            self.pin_compared(left, right)
            if isinstance(left, Sym) and isinstance(right, Sym) and left is not right:
                same = self.same_array(left, right)
            else:
                same = _identity(left) is _identity(right)
            return same if isinstance(op, ast.Is) else not same
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(left, Sym) and left.kind == "py" and isinstance(right, ObjRef) \
                    and type(right.obj) in (list, tuple):  # its items, each guarded as the profile saw it
                self.flush_appends(right.obj)
                shadow = self.shadows.get(id(right.obj))
                right = list(shadow) if shadow is not None else list(self.materialize(right, self.site))
            if isinstance(right, ObjRef):
                key = _dict_key(left)
                self.flush_appends(right.obj)
                shadow = self.shadows.get(id(right.obj))
                if shadow is not None:
                    found = key in shadow
                else:
                    refuse_own_reads(right.obj, self.site)
                    found = key in right.obj
                    self.prog.check_contains(right.slot, key, found, self.site)
            elif isinstance(right, Sym) and right.kind in ("array", "tensor") \
                    and (isinstance(left, (int, float, bool)) or isinstance(left, Sym) and left.kind == "py"):
                # `label in top_k`: NumPy's containment, (array == value).any(), as a Python bool
                found = self.builder.to_py(F.any(operator.eq(_as_kind(right, "array"), left)), bool)
                return found if isinstance(op, ast.In) else self.builder.py_op(operator.not_, found, sample=True)
            elif isinstance(right, Sym) or isinstance(left, Sym) and not isinstance(right, (list, tuple, set, dict)):
                raise Unsupported("data-dependent-python", "`in` test on a graph value", self.site)
            elif isinstance(right, (list, tuple)) and (isinstance(left, ObjRef) or _any_objref(right)):
                if any(isinstance(v, ObjRef) and user_method(type(v.obj), "__eq__") for v in (left, *right)):
                    raise Unsupported("data-dependent-python", "`in` of objects with their own __eq__", self.site)
                for item in right:  # input objects: compared as objects, each identity guarded
                    self.pin_compared(left, item)
                found = _identity(left) in [_identity(item) for item in right]
            elif isinstance(left, Sym) and left.kind == "py" and all(
                    type(v) in _CONSTANTS or isinstance(v, (np.integer, np.floating)) for v in right):
                # `epoch in milestones` of a counter the graph reads: Python's own `in`, when the graph runs
                found = self.builder.py_op(_member_of(tuple(right)), left, sample=True)
                return found if isinstance(op, ast.In) else self.builder.py_op(operator.not_, found, sample=True)
            else:
                found = _dict_key(left) in right
            return found if isinstance(op, ast.In) else not found
        if isinstance(left, ObjRef) or isinstance(right, ObjRef):
            out = self.user_comparison(op, left, right)
            if out is not _MISSING:
                return out
            self.pin_compared(left, right)
            l, r = _identity(left), _identity(right)
            return _CMPOPS[type(op)](l, r)
        return self.lift(_CMPOPS[type(op)](left, complex_operand(left, right)))

    def same_array(self, left, right) -> bool:
        """`a is x` of two graph values: whether they are one object when the graph runs, where the
        graph knows it. A value that may be another's own array (`np.ascontiguousarray(x)`,
        `x.real`, a branch's or a loop's result that is x on some runs) keeps the step eager."""
        a, b = _objects(left.node), _objects(right.node)
        if a is not None and b is not None and (not a & b or a == b and len(a) == 1):
            return a == b
        raise Unsupported("data-dependent-python", "`is` of two arrays that are one object on some runs only "
                                                   "(a branch's or a loop's result, np.asarray of an array)", self.site)

    def singleton_identity(self, left, right, is_):
        """`flag is True` where the graph computes `flag` (`bool(x[0] > 0)`, `np.all(m)`, a NumPy
        bool scalar against `np.True_`): which singleton it is when the graph runs, so the value
        decides (as a Python bool). None: the objects decide (a graph value is never None)."""
        sym, other = (left, right) if isinstance(left, Sym) else (right, left)
        if not isinstance(sym, Sym) or isinstance(other, Sym) and other.kind != sym.kind or sym.kind == "tensor":
            return None
        if sym.dtype != np.bool_ or sym.ndim != 0:
            return None
        if sym.kind == "py" and (other is True or other is False or isinstance(other, Sym)):
            return self.builder.py_op(operator.is_ if is_ else operator.is_not, sym, other)
        if sym.kind == "array" and numpy_scalar(sym) and (other is np.True_ or other is np.False_
                                                          or isinstance(other, Sym) and numpy_scalar(other)):
            return self.builder.to_py((F.eq if is_ else F.ne)(sym, other), bool)
        return None

    def user_comparison(self, op, left, right):
        """`a == b`, `a < b`... where a user class defines the comparison: its method inlined, on
        the objects' state now (`__eq__` comparing fields); _MISSING when no user method applies."""
        name, reflected = _CMP_DUNDERS[type(op)]
        for obj, other, dunder in ((left, right, name), (right, left, reflected)):
            if not isinstance(obj, ObjRef):
                continue
            method, negate = user_method(type(obj.obj), dunder), False
            if method is None and dunder == "__ne__":
                method, negate = user_method(type(obj.obj), "__eq__"), True  # object's __ne__: not __eq__
            if method is None:
                continue
            self.class_member(type(obj.obj), method.__name__)
            out = self.inline(method, [obj, other], {})
            python_bool = isinstance(out, bool) or isinstance(out, Sym) and out.kind == "py"
            if out is NotImplemented or negate and not python_bool:
                raise Unsupported("data-dependent-python", f"{type(obj.obj).__name__}.{method.__name__} giving "
                                                           f"{type(out).__name__}", self.site)
            if negate:
                return self.builder.py_op(operator.not_, out, sample=True) if isinstance(out, Sym) else not out
            return out
        return _MISSING

    def pin_compared(self, left, right):
        """An input object compared with an object of its own type (`mode is Mode.TRAIN`, two
        enum members, `a == b`): the outcome depends on which object it is, and only its type
        is guarded, so its identity is guarded too. (Compared with None or another type, the
        guarded type decides the outcome: `cache is None` keeps no identity guard.)"""
        objs = [v for v in (left, right) if isinstance(v, ObjRef)]
        if not objs:
            return
        a, b = (_identity(v) for v in (left, right))
        if type(a) is type(b):
            for v in objs:
                self.prog.check_identity(v.slot, self.site)

    def truth(self, v):
        if isinstance(v, Sym):
            raise Unsupported("data-dependent-python", "truth value of a graph value", self.site)
        if isinstance(v, ObjRef):
            if isinstance(v.obj, (list, tuple, dict)) or type(v.obj) is collections.deque:  # (as written here)
                return len(self.materialize(v, self.site)) > 0
            kind = type(v.obj)
            method = getattr(kind, "__bool__", None)
            if method is None and isinstance(getattr(kind, "__len__", None), types.FunctionType):
                return self.container_len(v) > 0  # a user class's own __len__, inlined
            if isinstance(method, types.FunctionType) and not _library_owned(kind):
                self.class_member(kind, "__bool__")
                out = self.inline(method, [v], {})  # a user class's own __bool__, on the object's state now
                if type(out) is not bool:
                    raise Unsupported("data-dependent-python", f"{kind.__name__}.__bool__ of graph values", self.site)
                return out
            out = bool(v.obj)  # a plain object is true: its type is guarded
            if method is not None or getattr(kind, "__len__", None) is not None:  # a library object's own
                self.prog.check_result(v.slot, "bool({v})", out, self.site)  # truth (a deque that fills)
            return out
        return bool(v)
