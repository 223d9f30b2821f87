"""Expressions: names (guarded globals and closures), attributes and items of input objects,
operators, comparisons and f-strings (comprehensions: comprehensions.py).
"""
from __future__ import annotations

import ast
import builtins
import collections
import functools
import operator
import re
import sys
import types

import numpy as np

from ..ops import api as F
from ..source import function_ast, lambda_as_def, local_names, site_key
from ..tensor import Tensor
from .attributes import data_descriptor, library_module
from .tape import SymbolicTape
from .numpy_calls import ArrayMethod
from .py_numbers import number_attribute, number_chain
from .values import DeferredStr, LocalFunction, ObjRef, SuperRef, Sym, Unsupported, VarRef, generic_operator
from .containers import builtin_member, plain_concat
from .windows import DynamicSlice, has_dynamic_slice, read_window
from .support import (ContainerMethod, OneBranch, _BINOPS, _MISSING, _UNARY, _any_abstract,
                      _any_objref, _as_kind, _dict_key, _is_basic_index, _is_element_index, _str_parts, _truth_value,
                      _unwrap_obj, _may_raise, _pure, plain_lookup, python_index, scalar_binop,
                      users_jit_attribute)


class ExpressionsMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def expr_Constant(self, node, frame):
        v = node.value
        if type(v) is str and _NAME_CHARS.fullmatch(v):
            # the compiler interns such constants: the graph's `{"loss": ...}` shares eager's key
            # object (a pickled history, memoized by identity, is the same bytes)
            return sys.intern(v)
        return v

    def expr_Name(self, node, frame):
        return self.load_name(node.id, frame, node)

    def expr_Attribute(self, node, frame):
        obj = self.eval(node.value, frame)
        return self.getattr(obj, node.attr, site_key(frame.filename, node))

    def expr_Subscript(self, node, frame):
        obj = self.eval(node.value, frame)
        index = self.eval(node.slice, frame)
        return self.getitem(obj, index, site_key(frame.filename, node))

    def expr_Slice(self, node, frame):
        parts = [None if p is None else self.eval(p, frame) for p in (node.lower, node.upper, node.step)]
        if _any_abstract(parts):  # (an array's window: windows.py; anything else refuses it)
            return DynamicSlice(*parts)
        return slice(*parts)

    def expr_Tuple(self, node, frame):
        return tuple(self.eval_elts(node.elts, frame))

    def expr_List(self, node, frame):
        return list(self.eval_elts(node.elts, frame))

    def expr_Set(self, node, frame):
        return {_dict_key(e) for e in self.eval_elts(node.elts, frame)}  # hashed as dict keys are

    def expr_Dict(self, node, frame):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:  # `{**st["m"]}`: an input mapping's items as the function reads them
                items = self.eval(v, frame)
                out.update(self.materialize(items, self.site) if isinstance(items, ObjRef) else items)
            else:
                out[_dict_key(self.eval(k, frame))] = self.eval(v, frame)
        return out

    def expr_BinOp(self, node, frame):
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        return self.binop(_BINOPS[type(node.op)], left, right)

    def expr_UnaryOp(self, node, frame):
        v = self.eval(node.operand, frame)
        if isinstance(node.op, ast.Not):
            if isinstance(v, Sym):  # a Python bool held in the graph (`if not np.isnan(loss):`)
                if v.size != 1:
                    raise Unsupported("data-dependent-python", "`not` of an array with more than one element",
                                      self.site)
                return self.builder.py_op(operator.not_, v if v.kind == "py" else _truth_value(v))
            return not self.truth(v)
        return _UNARY[type(node.op)](v)

    def expr_BoolOp(self, node, frame):
        """`a and b`, `a or b`: operand by operand, as eager. A graph-valued operand's truth is
        speculated, or, once the warm-up saw both outcomes (or the speculation kept failing),
        the rest is a conditional node: `a and b` is `b if a else a`, `a or b` is `a if a else b`
        (control.if_expression)."""
        is_and = isinstance(node.op, ast.And)
        value = None
        key = site_key(frame.filename, node)
        last = len(node.values) - 1
        for i, v_node in enumerate(node.values):
            value = self.eval(v_node, frame)
            if i == last:  # its truth is not taken: it is the value
                return value
            if isinstance(value, Sym) and key not in self.split and self.branch_is_relaxed(key):
                held = f"_janus_like_boolop_{len(frame.locals)}_{node.col_offset}"
                frame.locals[held] = value
                rest = node.values[i + 1:]
                rest = rest[0] if len(rest) == 1 else ast.copy_location(ast.BoolOp(op=node.op, values=rest), node)
                name = ast.copy_location(ast.Name(held, ast.Load()), node)
                try:
                    return self.if_expression(node, value, frame, *((rest, name) if is_and else (name, rest)))
                finally:
                    frame.locals.pop(held, None)
            if isinstance(value, Sym):  # (split: one graph per outcome, as an `if` statement's)
                t = self.speculate_split(value, node, frame, key) if key in self.split else \
                    self.speculate(value, node, frame, "branch")
            else:
                t = self.truth(value)
            if is_and and not t:
                return value
            if not is_and and t:
                return value
        return value

    def eval_test(self, node, frame):
        """A condition where only its truth matters (the test of an `if` or a `while`). `a and b`
        / `a or b` with a graph-valued operand is one truth value of all its operands when the
        operands after the first are pure (names, attributes, constants, indexing, arithmetic,
        comparisons), so evaluating them where eager would have stopped changes nothing: the
        `if` or the loop then speculates on, or branches on, the whole condition. (Operand by
        operand, `while loss > tol and k < n` asserted each operand's outcome, and the last
        trip's broke that assertion on every call.)"""
        if isinstance(node, ast.Compare) and len(node.ops) > 1 and all(_pure(c) for c in node.comparators):
            return self.chain_truth(node, frame)
        if not (isinstance(node, ast.BoolOp) and all(_pure(v) and not _may_raise(v) for v in node.values[1:])):
            return self.eval(node, frame)
        try:
            return self.whole_truth(node, frame)
        except Exception:  # an operand eager might not reach fails here: operand by operand, as eager
            return self.eval(node, frame)

    def whole_truth(self, node, frame):
        is_and = isinstance(node.op, ast.And)
        combine = F.logical_and if is_and else F.logical_or
        truth = None  # the graph-valued operands' truth so far
        for v_node in node.values:
            value = self.eval_test(v_node, frame)
            if isinstance(value, Sym):
                t = self.one_truth(value)
                truth = t if truth is None else combine(truth, t)
            elif self.truth(value) != is_and:  # decides the whole condition: False for `and`, True for `or`
                return not is_and
        return truth if truth is not None else is_and

    def expr_Compare(self, node, frame):
        left = self.eval(node.left, frame)
        result = True
        for i, (op, comp) in enumerate(zip(node.ops, node.comparators)):
            right = self.eval(comp, frame)
            r = self.compare(op, left, right)
            if len(node.ops) == 1:
                return r
            if isinstance(r, Sym):  # `lo < v < hi`: the rest is evaluated where eager may stop, so it must be pure
                if not all(_pure(c) for c in node.comparators[i + 1:]):
                    raise Unsupported("data-dependent-python", "chained comparison of graph values", self.site)
                values = [left, right] + [self.eval(c, frame) for c in node.comparators[i + 1:]]
                comps = [r] + [self.compare(o, a, b) for o, a, b in zip(node.ops[i + 1:], values[1:], values[2:])]
                if all(isinstance(c, Sym) and c.kind == "array" and c.ndim == 0 for c in comps):
                    # NumPy's: np.bool_ results, the first false one or the last (`-10.0 < loss < 10.0`)
                    return functools.reduce(F.logical_and, comps)
                return number_chain(self.builder, node.ops[i:], values, self.site)
            if not r:
                return False
            left = right
        return result

    def chain_truth(self, node, frame):
        """The truth of `lo <= v < hi` as a test: each comparison's, and-ed (the operands are pure:
        evaluating all of them changes nothing; a comparison of constants decides or drops out)."""
        values = [self.eval(node.left, frame)] + [self.eval(c, frame) for c in node.comparators]
        truth = True
        for op, a, b in zip(node.ops, values, values[1:]):
            r = self.compare(op, a, b)
            if not isinstance(r, Sym):
                if not self.truth(r):
                    return False
                continue
            t = self.one_truth(r)
            truth = t if truth is True else F.logical_and(truth, t)
        return truth

    def expr_IfExp(self, node, frame):
        test = self.eval(node.test, frame)
        if isinstance(test, Sym):
            return self.if_expression(node, test, frame)
        return self.eval(node.body if self.truth(test) else node.orelse, frame)

    def expr_Call(self, node, frame):
        if node.args and isinstance(node.args[0], ast.Call):  # `list(gen(...))` (generators.py)
            result = self.collected_call(node, frame)
            if result is not _MISSING:
                return result
        func = self.eval(node.func, frame)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.iterate(self.eval(a.value, frame)))
            else:
                args.append(self.eval(a, frame))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                extra = self.eval(kw.value, frame)
                kwargs.update(self.materialize_dict(extra))
            else:
                kwargs[kw.arg] = self.eval(kw.value, frame)
        loop = self.consuming_loop(node) if self.armed_loops else None
        if loop is not None:  # `for ... in gen(...)`: the generator's body runs, with the loop's at each yield
            result = self.inline_generator(loop, func, args, kwargs)
        else:
            result = self.call(func, args, kwargs, node)
        self.set_site(node, frame)
        return result

    def expr_NamedExpr(self, node, frame):
        if self.comprehensions:  # it binds in the function's scope, not the comprehension's
            raise Unsupported("unsupported-syntax", "`:=` inside a comprehension", self.site)
        value = self.eval(node.value, frame)
        self.assign(node.target, value, frame)
        return value

    def expr_JoinedStr(self, node, frame):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(v.value)
            else:
                parts.extend(self.expr_FormattedValue(v, frame).parts)
        if all(isinstance(p, str) for p in parts):
            return "".join(parts)
        return DeferredStr(parts)

    def expr_FormattedValue(self, node, frame):
        value = self.eval(node.value, frame)
        spec = "" if node.format_spec is None else self.eval(node.format_spec, frame)
        if isinstance(spec, DeferredStr):
            raise Unsupported("data-dependent-python", "format spec computed in the graph", self.site)
        return DeferredStr(self.formatted_parts(value, {-1: "", 115: "s", 114: "r", 97: "a"}[node.conversion], spec))

    def expr_Lambda(self, node, frame):
        if self.comprehensions:  # its free names would be the comprehension's, gone after it
            raise Unsupported("unsupported-syntax", "lambda inside a comprehension", self.site)
        return self.local_function(lambda_as_def(node), frame)

    def local_function(self, fn_ast, frame):
        """A `def` or `lambda` in jitted code: its defaults are evaluated now, as Python does."""
        a = fn_ast.args
        defaults = tuple(self.eval(d, frame) for d in a.defaults)
        kwdefaults = {k.arg: self.eval(d, frame) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
        names = {n.id for n in ast.walk(fn_ast) if isinstance(n, ast.Name)}
        scope = frame
        while scope is not None:  # (a lambda made in a comprehension's scope reads the function's names too)
            scope.closure_names.update(names)
            scope = scope.enclosing
        return LocalFunction(fn_ast, frame, defaults, kwdefaults)

    def enclosing_name(self, name, frame):
        """A local function's free name, read from the frames enclosing it at the time of the
        call (late binding), or _MISSING when it is a global or builtin."""
        if name in self.names_of(frame):
            raise Unsupported("user-error", f"local variable {name!r} referenced before assignment", self.site)
        enc = frame.enclosing
        while enc is not None:
            if name in enc.global_names:
                return _MISSING
            if name in enc.locals:
                return enc.locals[name]
            if name in self.names_of(enc):
                raise Unsupported("user-error", f"free variable {name!r} referenced before assignment in "
                                                "enclosing scope", self.site)
            enc = enc.enclosing
        return _MISSING

    @staticmethod
    def names_of(frame):
        if frame.local_names is None:
            frame.local_names = local_names(function_ast(frame.func))
        return frame.local_names

    def eval(self, node, frame):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise Unsupported("unsupported-syntax", f"`{type(node).__name__}` expression", self.site)
        return method(node, frame)

    def load_name(self, name, frame, node=None):
        if name in frame.locals and name not in frame.global_names:
            value = frame.locals[name]
        elif frame.enclosing is not None and name not in frame.global_names:
            value = self.enclosing_name(name, frame)
        else:
            value = _MISSING
        if value is not _MISSING:
            if type(value) is OneBranch:
                raise value.unsupported(self.site)
            return value
        key = site_key(frame.filename, node) if node is not None else None
        if name in frame.cells:
            return self.read_cell(frame.cells[name], name, key)
        g = frame.globals
        if name in g or (id(g), name) in self.global_overlay:
            return self.read_global(g, name, key)
        if hasattr(builtins, name):  # still a builtin while a user's module defines no such global
            if not library_module(g.get("__name__", "")):
                slot, _ = self.prog.root_const(g, f"{g.get('__name__', '?')}.__dict__")
                self.prog.check_builtin(slot, name, self.site)
            return getattr(builtins, name)
        raise Unsupported("user-error", f"name {name!r} is not defined", self.site)

    def read_cell(self, cell, name, key=None):
        over = self.cell_overlay.get(id(cell), _MISSING)
        if over is not _MISSING:
            return over
        try:
            value = cell.cell_contents
        except ValueError:
            raise Unsupported("unsupported-syntax", f"free variable {name!r} is not bound yet", self.site) from None
        slot, _ = self.prog.root_cell(cell, name, value)
        return self.classify(slot, self.site, key)

    def read_global(self, g, name, key=None):
        over = self.global_overlay.get((id(g), name), _MISSING)
        if over is not _MISSING:
            return over
        if name not in g:
            raise Unsupported("user-error", f"name {name!r} is not defined", self.site)
        value, module = g[name], g.get("__name__", "?")
        if isinstance(value, types.ModuleType) and library_module(module):
            return value  # (janus_like's, NumPy's own code: not guarded)
        slot, _ = self.prog.root_global(g, name, value, module)
        if isinstance(value, types.ModuleType):  # (`np`, a config module `C` a user's script may rebind)
            self.prog.check_identity(slot, self.site)
            return value
        return self.classify(slot, self.site, key)

    def read_state(self, kind, target, name):
        """The current value of a piece of state `statements.state_write` writes."""
        if kind == "setattr":
            return self.getattr(target, name)
        if kind == "global":
            return self.read_global(target, name)
        return self.read_cell(target, name)

    def getattr(self, obj, name, key=None):
        if isinstance(obj, ObjRef):
            over = self.overlay.get((id(obj.obj), name), _MISSING)
            if over is not _MISSING:
                return over
            target = obj.obj
            fields = getattr(type(target), "_fields", None) if isinstance(target, tuple) else None
            if fields is not None and name in fields:  # a namedtuple's field: its item
                return self.getitem(obj, fields.index(name), key)
            if isinstance(target, (list, dict, tuple, collections.deque)):
                kind = builtin_member(target, name)
                if kind == "method" or (fields is not None and name in ("_replace", "_asdict")):
                    return ContainerMethod(obj, name)
                if kind == "data":  # `q.maxlen`: read, its value guarded, as an attribute's
                    slot, _ = self.prog.attr(obj.slot, name, getattr(target, name))
                    return self.classify(slot, self.site, key)
                # else a subclass's own: its attributes, properties and methods (an `append` it overrides)
            self.plain_lookup(type(target), name)
            inst = getattr(target, "__dict__", {})
            if name in inst and not data_descriptor(type(target), name):  # (a property wins over the __dict__)
                slot, _ = self.prog.attr(obj.slot, name, inst[name])
                return self.classify(slot, self.site, key)
            return self.class_attribute(obj, name, key, type(target).__mro__)
        if isinstance(obj, SuperRef) and id(obj.obj) in self.new_objects:
            return self.made_attribute(obj.obj, name, key, obj.cls)
        if isinstance(obj, SuperRef):  # the classes after obj.cls in the object's MRO
            mro = type(obj.obj.obj).__mro__
            return self.class_attribute(obj.obj, name, key, mro[mro.index(obj.cls) + 1:])
        if isinstance(obj, types.ModuleType):
            return self.shared_attribute(obj, name, getattr(obj, name), key)
        return self.value_attribute(obj, name, key)

    def value_attribute(self, obj, name, key):
        """An attribute of a graph value, a Variable or a plain Python object."""
        if isinstance(obj, VarRef) and name in ("trainable", "name"):
            slot, _ = self.prog.attr(self.prog.slots[obj.slot], name, getattr(obj.var, name))
            return self.classify(slot, self.site, key)
        if isinstance(obj, Sym) and name == "shape" and self.builder.polymorphic:  # sizes read at run time
            fixed = self.builder.fixed
            return tuple(int(d) if fixed(obj, k) else self.builder.dim(obj, k) for k, d in enumerate(obj.shape))
        if isinstance(obj, Sym) and name in ("size", "__len__") and self.builder.polymorphic \
                and not self.builder.fixed(obj):
            raise Unsupported("shape-dependent", f"the function reads `.{name}` of an array whose size "
                                                 "is not fixed", self.site)
        if isinstance(obj, Sym) and obj.kind == "array" and name in ("nbytes", "itemsize", "mT", "real", "imag"):
            return self.array_attribute(obj, name)
        if isinstance(obj, Sym) and not (hasattr(np.ndarray, name) and hasattr(Tensor, name)):
            self.builder.escape(obj, f"read as .{name}")  # x.numpy(), x.base: one type's own
            if obj.kind == "array" and hasattr(Tensor, name):  # as eager: x.numpy() of an ndarray
                raise AttributeError(f"'numpy.ndarray' object has no attribute {name!r}")
        if isinstance(obj, Sym) and obj.kind == "array" and name in ArrayMethod.NAMES:
            return ArrayMethod(obj, name)  # x.fill(v), x.sort(): a write into x when called; x.view()
        if isinstance(obj, Sym) and name in Sym.__slots__:  # the generator's own (`x.view()` is not Sym.view)
            if obj.kind == "array" and hasattr(np.ndarray, name):
                raise Unsupported("unsupported-call", f"ndarray.{name} has no graph op", self.site)
            raise Unsupported("user-error", f"an array or Tensor has no attribute {name!r}", self.site)
        if isinstance(obj, Sym) and obj.kind == "py" and not hasattr(obj.py_type, name):
            raise AttributeError(f"{obj.py_type.__name__!r} object has no attribute {name!r}")  # (`.dtype`)
        if isinstance(obj, Sym) and obj.kind == "py" and not hasattr(obj, name):  # (i.bit_length(), s.hex())
            return number_attribute(self.builder, obj, name, self.site)  # (`.real`, `.imag`)
        if isinstance(obj, Sym) and obj.kind == "array" and not hasattr(obj, name):
            if not hasattr(np.ndarray, name):  # eager raises AttributeError (x.ptp() in NumPy 2)
                raise Unsupported("user-error", f"'numpy.ndarray' object has no attribute {name!r}", self.site)
            raise Unsupported("unsupported-call", f"ndarray.{name} has no graph op", self.site)
        if isinstance(obj, (Sym, SymbolicTape)):
            return getattr(obj, name)
        if isinstance(obj, DeferredStr):
            raise Unsupported("data-dependent-python", "string methods on a formatted graph value", self.site)
        if isinstance(obj, (type, types.FunctionType)) or users_jit_attribute(obj, name):  # `Registry.table`,
            return self.shared_attribute(obj, name, getattr(obj, name), key)  # `fn.cache`, a jitted `train.lr`
        return self.made_attribute(obj, name, key) if id(obj) in self.new_objects else getattr(obj, name)

    def array_attribute(self, x, name):
        """`x.nbytes`, `x.itemsize` of a graph array (Python ints of its fixed shape and dtype);
        `x.mT`, its last two axes swapped (a view, as `x.swapaxes(-1, -2)`)."""
        if name in ("real", "imag"):  # a view of x (NumPy's, made when the graph runs)
            return self.array_view(name, x, (), {})
        if name == "mT":
            if x.ndim < 2:  # eager's error
                raise Unsupported("user-error", f"matrix transpose with ndim < 2 (a {x.ndim}-d array)", self.site)
            return x.swapaxes(-1, -2)
        if name == "nbytes" and self.builder.polymorphic and not self.builder.fixed(x):
            raise Unsupported("shape-dependent", "the function reads `.nbytes` of an array whose size is not fixed",
                              self.site)
        return x.dtype.itemsize * (int(x.size) if name == "nbytes" else 1)

    def getitem(self, obj, index, ast_key=None):
        if has_dynamic_slice(index):
            return read_window(self, obj, index)
        if isinstance(obj, Sym):
            index = self.guarded_index(index)
            out = F.getitem(obj, _unwrap_obj(index))
            if obj.kind == "array":
                out = _as_kind(out, "array")
                if _is_basic_index(index) and not _is_element_index(index, obj.ndim):  # (an element: a copy)
                    out.view = (obj, _unwrap_obj(index))
                    self.builder.alias(obj, out)
            return out
        if isinstance(obj, (ObjRef, list, tuple, dict)) and not isinstance(getattr(obj, "obj", None), np.ndarray):
            index = python_index(self.builder, index)
        if isinstance(index, Sym) and index.kind == "py" and plain_lookup(obj):
            return self.table_lookup(obj, index)
        if isinstance(obj, ObjRef):
            return self.container_item(obj, index, ast_key)
        if isinstance(index, Sym) and isinstance(obj, (list, tuple, dict)):
            raise Unsupported("data-dependent-python", "indexing a Python container with a graph value", self.site)
        if isinstance(obj, dict):
            return obj[_dict_key(index)]
        return obj[index]

    def eval_elts(self, elts, frame):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self.iterate(self.eval(e.value, frame)))
            else:
                out.append(self.eval(e, frame))
        return out

    def binop(self, op, left, right):
        if op is operator.mod and isinstance(left, str) and isinstance(right, ObjRef) and type(right.obj) is tuple:
            right = tuple(self.materialize(right, self.site))  # (`"%s-%s" % st["pair"]`: its items, as eager's)
        if isinstance(left, (ObjRef, SymbolicTape)) or isinstance(right, (ObjRef, SymbolicTape)):
            if plain_concat(left, right, op):  # (lists' and tuples' `+`, dicts' `|`)
                return op(self.materialize(left, self.site), self.materialize(right, self.site)
                          if isinstance(right, ObjRef) else right)
            raise Unsupported("unsupported-syntax", f"operator {op.__name__} on Python objects", self.site)
        if isinstance(left, DeferredStr) or isinstance(right, DeferredStr):
            if op is not operator.add:  # (`f"{x}" * 3`: the text is needed now)
                raise Unsupported("data-dependent-python", f"{op.__name__} of text from graph values", self.site)
            return DeferredStr(_str_parts(left) + _str_parts(right))
        if op is operator.mod and isinstance(left, str) and (_any_abstract(right) or _any_objref(right) or any(
                isinstance(v, DeferredStr) for v in (right if isinstance(right, tuple) else (right,)))):
            return self.percent_format(left, right)
        if isinstance(left, np.generic) or isinstance(right, np.generic):
            out = generic_operator(op, left, right)  # (a constant's scalar math with a graph value)
            return self.lift(scalar_binop(op, left, right, self.site) if out is None else out)
        return self.lift(op(left, right))

# string constants the compiler interns (all characters those of names)
_NAME_CHARS = re.compile(r"[A-Za-z0-9_]*")
