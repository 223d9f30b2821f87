"""The graph generator proper: a partial evaluator over the function's AST.

It walks the source (not a trace) with abstract values: Python values known at generation time
stay Python values (guarded by the input program), arrays become graph nodes, and every
speculation — a branch outcome, a trip count, a scalar's value, a callee's identity — becomes a
guard or an assert node. User functions and methods are inlined (recursion included, guarded by
the structure it walks); writes to state are logged for the all-or-nothing commit.

Anything it cannot convert raises `Unsupported` with a named reason and the source line; the
JIT then keeps that signature eager.
"""
from __future__ import annotations

import ast
import builtins
import logging
import math
import operator
import os
import types

import numpy as np

from .. import ir
from ..ops import api as F
from ..ops.registry import set_builder
from ..source import NoSource, function_ast, has_yield, site_key
from ..tensor import Tensor, Variable
from ..jit.assumptions import Assumption
from .builder import OPAQUE, GraphBuilder, SymbolicTape
from .inputs import InputProgram, relax_text
from .values import BoundMethod, DeferredStr, ObjRef, Sym, Unsupported, VarRef, VarSnapshot

MAX_DEPTH = 400
MAX_UNROLL = 20000

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.MatMult: operator.matmul, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}

# builtins evaluated at generation time on concrete values (pure, deterministic)
_PURE_BUILTINS = {id, vars, abs, all, any, bool, callable, chr, dict, divmod, enumerate, filter, float, frozenset,
                  getattr, hasattr, hash, int, isinstance, issubclass, iter, len, list, map, max, min,
                  next, ord, pow, range, repr, reversed, round, set, slice, sorted, str, sum, tuple, type,
                  zip, format}
_LIBRARY_PREFIXES = ("numpy", "math", "builtins", "janus_like.ops", "janus_like.tensor", "janus_like.autodiff",
                     "janus_like.backend", "operator", "functools", "itertools", "collections", "typing")
_INLINE_LIBRARY = ("janus_like.nn", "janus_like.optim")
_LOG_FUNCTIONS = {"debug", "info", "warning", "error", "critical", "log", "exception"}
_VIEW_OPS = {"transpose", "reshape", "expand_dims", "squeeze", "broadcast_to", "reshape_like", "broadcast_like"}


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class Frame:
    __slots__ = ("func", "locals", "globals", "cells", "filename", "global_names")

    def __init__(self, func, globals_, filename):
        self.func = func
        self.locals = {}
        self.globals = globals_
        self.cells = {}
        self.filename = filename
        self.global_names = set()


class ErrState:
    """np.errstate(...) inside a jitted function: its settings travel with the nodes."""

    __slots__ = ("settings",)

    def __init__(self, settings):
        self.settings = settings


class ContainerMethod:
    __slots__ = ("ref", "name")

    def __init__(self, ref, name):
        self.ref, self.name = ref, name


class GeneratedGraph:
    """What the generator hands the executor: the IR plus how to feed it and commit its effects."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class Generator:
    def __init__(self, fn, name, profile=None, relaxed=frozenset(), max_unroll=MAX_UNROLL, unknown_dims=None):
        self.fn = fn
        self.unknown_dims = unknown_dims or {}  # argument index -> axes of unknown size
        self.name = name
        self.profile = profile
        self.relaxed = relaxed
        self.max_unroll = max_unroll
        self.builder = GraphBuilder(name)
        self.prog = InputProgram()
        self.memo: dict = {}  # id(object) -> (abstract value, slot)
        self.slot_values: dict = {}  # slot index -> abstract value
        self.overlay: dict = {}  # (id(obj), attr) -> value written by the function
        self.shadows: dict = {}  # id(container) -> list/dict of abstract values (after a mutation)
        self.global_overlay: dict = {}
        self.writes: list = []  # commit log, program order
        self.effects: list = []  # deferred print/logging calls
        self.mutable_slots: list = []
        self.input_nodes: list = []
        self.depth = 0
        self.unrolled = 0
        self.pure_depth = 0  # >0 while building a cond branch: no writes allowed
        self.branch_frames: list = []  # frames whose own `return` would leave a cond/loop block
        self.site = ""
        self._unknown = ()

    # ================================================================== entry
    def generate(self, args):
        old = set_builder(self.builder)
        self.builder.polymorphic = bool(self.unknown_dims)
        try:
            arg_values = []
            for i, a in enumerate(args):
                slot, _ = self.prog.root_arg(i, a)
                self._unknown = self.unknown_dims.get(i, ())
                arg_values.append(self.classify(slot, f"argument {i}", ("arg", i)))
                self._unknown = ()
            result = self.call(self.fn, arg_values, {})
        finally:
            set_builder(old)
        return self.finish(result)

    # ================================================================== inputs
    def classify(self, slot, site, ast_key=None):
        """Abstract value of a freshly read slot; adds its guards."""
        if slot.index in self.slot_values:
            return self.slot_values[slot.index]
        v = slot.value
        prog = self.prog
        mutable = isinstance(v, (Tensor, np.ndarray, list, dict)) or not _is_immutable(v)
        if mutable and not isinstance(v, (types.FunctionType, types.ModuleType, type, types.BuiltinFunctionType)):
            hit = self.memo.get(id(v))
            if hit is not None and hit[1].value is v:
                prog.check_alias(slot, hit[1], site)
                self.slot_values[slot.index] = hit[0]
                return hit[0]
        if isinstance(v, Tensor):
            prog.check_type(slot, site)
            data, _ = prog.data(slot)
            prog.check_array(data, site, self._unknown)
            node = self.input_node(data, v._data)
            out = VarRef(node, slot.index, v) if isinstance(v, Variable) else Sym(node, "tensor", origin=slot.index)
            self.mutable_slots.append(slot)
        elif type(v) is np.ndarray:
            prog.check_type(slot, site)
            prog.check_array(slot, site, self._unknown)
            out = Sym(self.input_node(slot, v), "array", origin=slot.index)
            self.mutable_slots.append(slot)
        elif v is None or type(v) in (bool, str, bytes, complex) or (type(v) in (int, float) and not self._dynamic(slot, ast_key)):
            prog.check_value(slot, site)
            out = v
        elif type(v) in (int, float):
            prog.check_type(slot, site)
            out = Sym(self.input_node(slot, np.asarray(v)), "py")
        elif isinstance(v, np.generic):
            if self._dynamic(slot, ast_key):
                prog.check_type(slot, site)
                out = Sym(self.input_node(slot, np.asarray(v)), "array")
            else:
                prog.check_value(slot, site)
                out = v
        elif isinstance(v, (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type, np.ufunc,
                            types.MethodType, np.dtype)) or _is_jit(v):
            prog.check_identity(slot, site)
            out = v
        else:
            prog.check_type(slot, site)
            out = ObjRef(v, slot, slot.text)
        if mutable:
            self.memo[id(v)] = (out, slot)
        self.slot_values[slot.index] = out
        return out

    def pinned(self, obj):
        """A concrete object reached through a guarded constant (a bound method's `self`)."""
        slot, _ = self.prog.root_const(obj, f"<{type(obj).__name__} object>")
        return self.classify(slot, self.site)

    def _dynamic(self, slot, ast_key):
        if ("value", relax_text(slot)) in self.relaxed:
            return True
        return self.profile is not None and ast_key is not None and self.profile.varies(ast_key)

    def input_node(self, slot, array):
        arr = np.asarray(array)
        node = ir.Node(ir.INPUT, (), {"slot": slot.index, "name": slot.text}, (tuple(arr.shape), arr.dtype))
        self.input_nodes.append(node)
        return node

    # ================================================================== calls
    def call(self, func, args, kwargs, node=None):
        if _is_jit(func):
            inner = func.__wrapped__
            if getattr(func, "__self__", None) is not None:
                args = [self.pinned(func.__self__)] + list(args)
            func = inner
        if isinstance(func, types.MethodType) and isinstance(func.__func__, types.FunctionType) \
                and not isinstance(func.__self__, (Sym, SymbolicTape, type, types.ModuleType)):
            return self.inline(func.__func__, [self.pinned(func.__self__)] + list(args), kwargs)
        if isinstance(func, BoundMethod):
            owner = func.self_value
            if isinstance(owner, ObjRef) and isinstance(owner.obj, (logging.Logger, logging.LoggerAdapter)):
                self.prog.check_identity(owner.slot, self.site)  # log through the same logger
                return self.defer(types.MethodType(func.func, owner.obj), args, kwargs)
            return self.inline(func.func, [func.self_value] + list(args), kwargs)
        if isinstance(func, ContainerMethod):
            return self.container_method(func, args, kwargs)
        if isinstance(func, ObjRef):
            call = getattr(type(func.obj), "__call__", None)
            if isinstance(call, types.FunctionType):
                return self.inline(call, [func] + list(args), kwargs)
            raise Unsupported("unsupported-call", f"calling a {type(func.obj).__name__} object", self.site)
        if isinstance(func, SymbolicTape) or isinstance(func, Sym):
            raise Unsupported("unsupported-call", "calling a non-callable graph value", self.site)
        if func is np.errstate:  # `with np.errstate(...)`: recorded on the nodes built inside
            return ErrState(dict(kwargs))
        if func is print or (isinstance(func, types.FunctionType) and func.__module__ == "logging"
                             and func.__name__ in _LOG_FUNCTIONS):
            return self.defer(func, args, kwargs)
        if isinstance(func, types.MethodType) and isinstance(func.__self__, (Sym, SymbolicTape)):
            # tape.gradient(loss, params) with `params` an input list: hand over its elements
            args = [self.containers_to_python(a) for a in args]
            kwargs = {k: self.containers_to_python(v) for k, v in kwargs.items()}
            return func(*args, **kwargs)
        if isinstance(func, types.MethodType) and func.__self__ is getattr(np.random, "mtrand", None)._rand:
            return self.global_random(func.__name__, args, kwargs)
        module = getattr(func, "__module__", None) or ""
        if module.startswith("numpy.random") or (isinstance(func, types.BuiltinMethodType)
                                                 and type(getattr(func, "__self__", None)).__name__ == "RandomState"):
            if getattr(func, "__self__", None) is np.random.mtrand._rand or module == "numpy.random":
                return self.global_random(func.__name__, args, kwargs)
            raise Unsupported("unsupported-call", f"random generator method {func.__name__}", self.site)
        if func is SymbolicTape or _is_tape_class(func):
            tape = SymbolicTape(self.builder, kwargs.get("persistent", args[0] if args else False),
                                kwargs.get("watch_accessed_variables", True))
            return tape
        if func in (Tensor, Variable) or func is _tensor_fn():
            if _any_abstract((args, kwargs)):
                if func is Variable:
                    raise Unsupported("object-construction", "creating a Variable inside the function", self.site)
                src = args[0]
                if not isinstance(src, Sym) or len(args) > 1 or kwargs:
                    raise Unsupported("unsupported-call", "tensor() of a structure of graph values", self.site)
                return _as_kind(F.reshape_like(Sym(src.node, "array"), Sym(src.node, "array")), "tensor") \
                    if src.kind == "array" else Sym(src.node, "tensor")
            return self.lift(func(*args, **kwargs))
        if isinstance(func, types.FunctionType):
            if module.startswith(_LIBRARY_PREFIXES) and not module.startswith(_INLINE_LIBRARY):
                return self.call_library(func, args, kwargs)
            return self.inline(func, list(args), kwargs)
        if isinstance(func, np.ufunc) or (module.startswith("numpy") and callable(func)):
            return self.call_numpy(func, args, kwargs)
        if func in _PURE_BUILTINS or (isinstance(func, types.BuiltinFunctionType) and module == "math"):
            return self.call_builtin(func, args, kwargs)
        if isinstance(func, types.BuiltinMethodType) and not isinstance(func.__self__, types.ModuleType):
            owner = func.__self__
            if isinstance(owner, (list, dict, set, str, tuple)) and not _any_objref((args, kwargs)):
                return func(*args, **kwargs)  # a local container's method
        if isinstance(func, type):
            if issubclass(func, BaseException):
                return func(*args, **kwargs)
            if func.__module__.startswith(("janus_like.nn", "janus_like.optim")) or func.__module__ not in ("builtins",):
                raise Unsupported("object-construction", f"creating a {func.__name__} inside the function", self.site)
        raise Unsupported("unsupported-call", f"call to {getattr(func, '__qualname__', repr(func))}", self.site)

    def call_library(self, func, args, kwargs):
        """janus_like's functional API and other pure library code: call it with abstract values."""
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, ObjRef):  # the library sees the object itself (e.g. a Generator): pin it
                self.prog.check_identity(a.slot, self.site)
        args = [_unwrap_obj(a) for a in args]
        kwargs = {k: _unwrap_obj(v) for k, v in kwargs.items()}
        if not _any_abstract((args, kwargs)):
            return self.lift(func(*args, **kwargs))
        out = func(*args, **kwargs)
        if func.__module__.startswith("janus_like.ops"):
            out = _as_tensor_kind(out)
        return out

    def call_numpy(self, func, args, kwargs):
        from ..tensor import _FUNCTIONS, _REDUCERS, _UFUNCS

        out_target = kwargs.pop("out", None)
        if isinstance(out_target, tuple):
            out_target = out_target[0]
        if not _any_abstract((args, kwargs)) and out_target is None:
            if func in (np.asarray, np.array) or getattr(func, "__name__", "") in ("seterr", "errstate"):
                pass
            return self.lift(func(*args, **kwargs))
        if func is np.arange and len(args) == 1 and not kwargs and isinstance(args[0], Sym) and args[0].kind == "py":
            from ..ops.registry import P, bind

            return _as_kind(bind(P.arange, args[0]), "array")
        if func in (np.asarray, np.asanyarray) and len(args) == 1 and isinstance(args[0], Sym) and not kwargs:
            return args[0] if args[0].kind != "tensor" else Sym(args[0].node, "array")
        if func is np.array and isinstance(args[0], Sym):
            return _as_array_kind(F.reshape_like(args[0], args[0]))
        if func is np.copyto:
            dst, src = args[0], args[1]
            self.write_box(dst, self.inplace_value(dst, src))
            return None
        if isinstance(func, np.ufunc):
            impl = _UFUNCS.get(func)
            if impl is None or kwargs:
                raise Unsupported("unsupported-call", f"numpy.{func.__name__} with {sorted(kwargs)} has no graph op", self.site)
            result = impl(*args)
        elif func is np.clip and out_target is None and "out" in kwargs:
            result = _FUNCTIONS[func](*args, **kwargs)
        else:
            impl = _FUNCTIONS.get(func)
            if impl is None:
                name = getattr(func, "__name__", repr(func))
                raise Unsupported("unsupported-call", f"numpy.{name} has no graph op", self.site)
            result = impl(*args, **kwargs)
        if out_target is not None:
            self.write_box(out_target, self.inplace_value(out_target, result))
            return out_target
        return result

    def call_builtin(self, func, args, kwargs):
        if func in (float, int, bool) and args and isinstance(args[0], Sym):
            v = args[0]
            if v.size != 1:
                raise Unsupported("data-dependent-python", f"{func.__name__}() of an array", self.site)
            if func is bool:
                raise Unsupported("data-dependent-python", "bool() of a graph value", self.site)
            return self.builder.to_py(v, func)
        if func is id and len(args) == 1:
            return id(_identity(args[0]))  # identities are fixed by the type/alias guards
        if func is vars and len(args) == 1 and isinstance(args[0], ObjRef):
            return self.attributes(args[0])
        if func is len and args and isinstance(args[0], Sym) and self.builder.polymorphic:
            return self.builder.dim(args[0], 0)
        if func is len and args and isinstance(args[0], ObjRef):
            return len(self.materialize(args[0], self.site))
        if func is isinstance and args and isinstance(args[0], (ObjRef, Sym)):
            return isinstance(_concrete_type_probe(args[0]), args[1])
        if func is type and len(args) == 1 and isinstance(args[0], (ObjRef, Sym)):
            return type(_concrete_type_probe(args[0]))
        if func in (getattr, hasattr) and args and isinstance(args[0], (ObjRef, Sym, VarRef)):
            if func is hasattr:
                try:
                    self.getattr(args[0], args[1])
                    return True
                except AttributeError:
                    return False
            return self.getattr(args[0], args[1]) if len(args) == 2 else self.getattr_default(args[0], args[1], args[2])
        args = [self.materialize(a, self.site) if isinstance(a, ObjRef) and isinstance(a.obj, (list, tuple, dict)) else a
                for a in args]
        if func is sum and args and _any_abstract(args[0]):
            total = args[1] if len(args) > 1 else 0
            for x in args[0]:
                total = total + x
            return total
        if func in (max, min) and _any_abstract(args):
            raise Unsupported("data-dependent-python", f"{func.__name__}() over graph values", self.site)
        if func is str and args and isinstance(args[0], Sym):
            return DeferredStr([(args[0], "s", "")])
        return self.lift(func(*args, **kwargs))

    def getattr_default(self, obj, name, default):
        try:
            return self.getattr(obj, name)
        except AttributeError:
            return default

    def global_random(self, method, args, kwargs):
        if _any_abstract((args, kwargs)):
            raise Unsupported("unsupported-call", f"numpy.random.{method} with graph-valued arguments", self.site)
        probe = np.random.RandomState()
        probe.set_state(np.random.get_state())
        sample = np.asarray(getattr(probe, method)(*args, **kwargs))
        out = self.builder.random(method, tuple(args), dict(kwargs), (sample.shape, sample.dtype))
        if sample.shape == () and not isinstance(getattr(probe, method)(*args, **kwargs), np.ndarray):
            out.kind = "py" if method in ("rand", "randn", "random", "random_sample", "uniform", "normal",
                                          "randint", "choice") and not args else out.kind
        return out

    def defer(self, fn, args, kwargs):
        if self.pure_depth:
            raise Unsupported("unsupported-syntax", "print inside a data-dependent branch", self.site)
        snap = self.snapshot_for_effect
        self.effects.append((fn, [snap(a) for a in args], {k: snap(v) for k, v in kwargs.items()}, self.site))
        return None

    def snapshot_for_effect(self, v):
        """What a deferred print/log call must see: state as it is *now*, not after the commit."""
        if isinstance(v, VarRef):
            return VarSnapshot(Sym(v.node, "tensor"), v.var)
        if isinstance(v, Sym) and v.origin is not None:  # the live buffer is written at commit
            return _as_kind(Sym(v.node, "array").copy(), v.kind)
        if isinstance(v, ObjRef) and isinstance(v.obj, (list, tuple, dict)):
            items = self.materialize(v, self.site)
            if isinstance(items, dict):
                return {k: self.snapshot_for_effect(x) for k, x in items.items()}
            return type(items)(self.snapshot_for_effect(x) for x in items)
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(self.snapshot_for_effect(x) for x in v)
        if isinstance(v, dict):
            return {k: self.snapshot_for_effect(x) for k, x in v.items()}
        return v

    # ================================================================== inlining
    def inline(self, func, args, kwargs):
        try:
            fn_ast = function_ast(func)
        except NoSource as exc:
            raise Unsupported("no-source", f"{func.__qualname__}: {exc}", self.site) from None
        if has_yield(fn_ast):
            raise Unsupported("generator", f"{func.__qualname__} is a generator", self.site)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unsupported("recursion-limit", f"inlining deeper than {MAX_DEPTH} calls", self.site)
        frame = Frame(func, func.__globals__, func.__code__.co_filename)
        if func.__closure__:
            for name, cell in zip(func.__code__.co_freevars, func.__closure__):
                frame.cells[name] = cell
        self.bind_args(frame, fn_ast, func, args, kwargs)
        saved_site = self.site
        try:
            self.exec_block(fn_ast.body, frame)
            result = None
        except _Return as ret:
            result = ret.value
        finally:
            self.depth -= 1
            self.site = saved_site
            self.builder.site = saved_site
        return result

    def bind_args(self, frame, fn_ast, func, args, kwargs):
        a = fn_ast.args
        if a.posonlyargs or a.kwonlyargs and any(d is None for d in a.kw_defaults) and False:
            pass
        params = [p.arg for p in a.posonlyargs + a.args]
        defaults = func.__defaults__ or ()
        bound = {}
        for name, value in zip(params, args):
            bound[name] = value
        extra = list(args[len(params):])
        if extra:
            if not a.vararg:
                raise Unsupported("user-error", f"{func.__qualname__}() got too many positional arguments", self.site)
            bound[a.vararg.arg] = tuple(extra)
        elif a.vararg:
            bound[a.vararg.arg] = ()
        kw_left = dict(kwargs)
        for name in params + [k.arg for k in a.kwonlyargs]:
            if name in kw_left:
                bound[name] = kw_left.pop(name)
        if kw_left:
            if not a.kwarg:
                raise Unsupported("user-error", f"unexpected keyword arguments {sorted(kw_left)}", self.site)
            bound[a.kwarg.arg] = kw_left
        elif a.kwarg:
            bound[a.kwarg.arg] = {}
        for name, default in zip(params[len(params) - len(defaults):], defaults):
            bound.setdefault(name, default)
        kwd = func.__kwdefaults__ or {}
        for k in a.kwonlyargs:
            if k.arg not in bound:
                if k.arg not in kwd:
                    raise Unsupported("user-error", f"missing keyword argument {k.arg}", self.site)
                bound[k.arg] = kwd[k.arg]
        for name in params:
            if name not in bound:
                raise Unsupported("user-error", f"{func.__qualname__}() missing argument {name!r}", self.site)
        frame.locals.update(bound)

    # ================================================================== statements
    def exec_block(self, stmts, frame):
        for stmt in stmts:
            self.exec_stmt(stmt, frame)

    def set_site(self, node, frame):
        self.site = f"{os.path.basename(frame.filename)}:{node.lineno}"
        self.builder.site = self.site

    def exec_stmt(self, node, frame):
        self.set_site(node, frame)
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            reason = "try" if isinstance(node, (ast.Try, ast.TryStar)) else "unsupported-syntax"
            raise Unsupported(reason, f"`{type(node).__name__}` statement", self.site)
        method(node, frame)

    def stmt_Expr(self, node, frame):
        self.eval(node.value, frame)

    def stmt_Pass(self, node, frame):
        pass

    def stmt_Return(self, node, frame):
        if self.pure_depth and frame in self.branch_frames:
            raise Unsupported("unsupported-syntax", "return inside a data-dependent branch", self.site)
        raise _Return(None if node.value is None else self.eval(node.value, frame))

    def stmt_Break(self, node, frame):
        raise _Break()

    def stmt_Continue(self, node, frame):
        raise _Continue()

    def stmt_Global(self, node, frame):
        frame.global_names.update(node.names)

    def stmt_Nonlocal(self, node, frame):
        raise Unsupported("unsupported-syntax", "nonlocal", self.site)

    def stmt_Assign(self, node, frame):
        value = self.eval(node.value, frame)
        for target in node.targets:
            self.assign(target, value, frame)

    def stmt_AnnAssign(self, node, frame):
        if node.value is not None:
            self.assign(node.target, self.eval(node.value, frame), frame)

    def stmt_AugAssign(self, node, frame):
        op = _BINOPS[type(node.op)]
        target = node.target
        rhs = self.eval(node.value, frame)
        if isinstance(target, ast.Name):
            cur = self.load_name(target.id, frame, target)
            self.store_name(target.id, self.augment(cur, op, rhs), frame)
        elif isinstance(target, ast.Attribute):
            obj = self.eval(target.value, frame)
            cur = self.getattr(obj, target.attr)
            new = self.augment(cur, op, rhs)
            if new is not cur:
                self.setattr(obj, target.attr, new)
        elif isinstance(target, ast.Subscript):
            obj = self.eval(target.value, frame)
            index = self.eval(target.slice, frame)
            cur = self.getitem(obj, index)
            was_view = isinstance(cur, Sym) and cur.view is not None and cur.view[0] is obj
            new = self.augment(cur, op, rhs)
            if not (was_view and new is cur):  # a view's in-place write already updated obj
                self.setitem(obj, index, new)
        else:
            raise Unsupported("unsupported-syntax", "augmented assignment target", self.site)

    def augment(self, cur, op, rhs):
        """`cur op= rhs` with Python's in-place protocol: arrays and tensors mutate in place."""
        if isinstance(cur, VarRef):
            if op is operator.add:
                return cur.assign_add(rhs)
            if op is operator.sub:
                return cur.assign_sub(rhs)
            return cur.assign(op(Sym(cur.node, "array"), rhs))
        if isinstance(cur, Sym) and cur.kind in ("array", "tensor"):
            new = op(cur, rhs)
            if cur.kind == "array":
                self.write_box(cur, self.inplace_value(cur, new))
            else:
                self.write_box(cur, new)
            return cur
        if isinstance(cur, list) and op is operator.add:
            cur.extend(self.materialize(rhs, self.site) if isinstance(rhs, ObjRef) else rhs)
            return cur
        if isinstance(cur, ObjRef) and isinstance(cur.obj, list) and op is operator.add:
            self.container_method(ContainerMethod(cur, "extend"), [rhs], {})
            return cur
        return op(cur, rhs)

    def inplace_value(self, target, value):
        """The value an in-place NumPy write leaves in `target`: cast to its dtype, its shape."""
        if not isinstance(target, Sym):
            raise Unsupported("unsupported-syntax", "in-place write into a non-array", self.site)
        if not isinstance(value, Sym):
            value = F.broadcast_to(self.builder.constant(np.asarray(value)), target.shape)
        if value.shape != target.shape:
            try:
                ok = np.broadcast_shapes(value.shape, target.shape) == target.shape
            except ValueError:
                ok = False
            if not ok:
                raise Unsupported("op-error", f"cannot write shape {value.shape} into {target.shape}", self.site)
            value = F.broadcast_to(value, target.shape)
        if value.dtype != target.dtype:
            if not np.can_cast(value.dtype, target.dtype, casting="same_kind"):
                raise Unsupported("op-error", f"cannot cast {value.dtype} to {target.dtype} in place", self.site)
            value = F.cast(value, target.dtype)
        return value

    def write_box(self, box, new):
        """Point a mutable value (and what it is a view of) at a new node."""
        if not isinstance(box, Sym):
            raise Unsupported("unsupported-syntax", "in-place write into a non-array value", self.site)
        if isinstance(box, VarRef):
            box.assign(new)
            self.note_write(box)
            return
        if self.pure_depth:
            raise Unsupported("unsupported-syntax", "in-place write inside a data-dependent branch", self.site)
        if box.kind == "stale" or (box.view is not None and box.view[0] is OPAQUE):
            raise Unsupported("view-write", "in-place write through a reshaped or transposed view", self.site)
        box.node = new.node
        if box.view is not None:
            base, index = box.view
            self.write_box(base, _as_kind(F.index_update(base, index, Sym(new.node, base.kind)), base.kind))
        self.refresh_views(box)
        if box.origin is not None:
            box.dirty = True
            self.note_write(box)

    def refresh_views(self, base):
        for view in self.builder.views.get(id(base), []):
            if view.view[0] is OPAQUE:
                view.kind = "stale"
            else:
                view.node = F.getitem(Sym(base.node, "array"), view.view[1]).node

    def note_write(self, box):
        if self.pure_depth:
            raise Unsupported("unsupported-syntax", "state write inside a data-dependent branch", self.site)
        self.writes.append(("box", box))

    def stmt_If(self, node, frame):
        test = self.eval(node.test, frame)
        if isinstance(test, Sym):
            key = site_key(frame.filename, node)
            if self.branch_is_relaxed(key):
                return self.cond(node, test, frame)
            outcome = self.speculate(test, node, frame, "branch")
        else:
            outcome = self.truth(test)
        self.exec_block(node.body if outcome else node.orelse, frame)

    def branch_is_relaxed(self, key):
        if ("branch", key) in self.relaxed:
            return True
        if self.profile is None:
            return False
        seen = self.profile.branch(key)
        return seen[0] > 0 and seen[1] > 0

    def speculate(self, test, node, frame, kind):
        key = site_key(frame.filename, node)
        if test.size != 1:
            raise Unsupported("data-dependent-python", "truth value of an array with more than one element",
                              self.site)
        seen = self.profile.branch(key) if self.profile is not None else (0, 0)
        if seen == (0, 0):
            raise Unsupported("unprofiled-branch", "condition never evaluated during warm-up", self.site)
        expect = seen[0] > 0
        cond = _truth_value(test)
        self.builder.assert_(cond, expect, Assumption(kind, self.site, expect, relax=("branch", key)))
        return expect

    def cond(self, node, test, frame):
        """Both branches as a conditional node (after the profile saw both outcomes)."""
        if self.builder.tapes:
            raise Unsupported("data-dependent-python", "a branch on a graph value inside a GradientTape "
                                                       "whose outcome varies", self.site)
        assigned = sorted(_assigned_names(node.body) | _assigned_names(node.orelse))
        pred = _truth_value(test)
        results = []
        outer_block = self.builder.block
        saved_locals = dict(frame.locals)
        self.pure_depth += 1
        self.branch_frames.append(frame)
        try:
            for body in (node.body, node.orelse):
                block = []
                self.builder.block = block
                saved = dict(frame.locals)
                self.exec_block(body, frame)
                results.append((block, {n: frame.locals.get(n, _MISSING) for n in assigned}))
                frame.locals.clear()
                frame.locals.update(saved)
        finally:
            self.pure_depth -= 1
            self.branch_frames.pop()
            self.builder.block = outer_block
        self.set_site(node, frame)
        (then_block, then_vals), (else_block, else_vals) = results
        outs_then, outs_else, merged = [], [], []
        for name in assigned:
            a, b = then_vals[name], else_vals[name]
            if a is _MISSING or b is _MISSING:
                raise Unsupported("data-dependent-python", f"{name!r} is assigned in only one branch", self.site)
            if isinstance(a, Sym) or isinstance(b, Sym):
                a = a if isinstance(a, Sym) else self.builder.constant(np.asarray(a))
                b = b if isinstance(b, Sym) else self.builder.constant(np.asarray(b))
                if a.shape != b.shape or a.dtype != b.dtype or a.kind != b.kind:
                    raise Unsupported("data-dependent-python", f"{name!r} differs in shape/dtype between branches",
                                      self.site)
                outs_then.append(a.node)
                outs_else.append(b.node)
                merged.append((name, a))
            elif a is not b and a != b:
                raise Unsupported("data-dependent-python", f"{name!r} is a Python value that depends on the branch",
                                  self.site)
            else:
                frame.locals[name] = a
        cond_node = self.builder.add(ir.Node(ir.COND, (pred.node,), {
            "then_nodes": then_block, "else_nodes": else_block, "then_outs": outs_then, "else_outs": outs_else}))
        for i, (name, proto) in enumerate(merged):
            out = Sym(self.builder.add(ir.Node(ir.TUPLE_GET, (cond_node,), {"index": i}, proto.node.aval)), proto.kind)
            # which object the name refers to now depends on the branch: writing through it, or
            # writing what it might alias, cannot be modelled (see refresh_views)
            out.view = (OPAQUE, None)
            for pre in (then_vals[name], else_vals[name]):
                if isinstance(pre, Sym) and any(pre is old for old in saved_locals.values()):
                    self.builder.views.setdefault(id(pre), []).append(out)
            frame.locals[name] = out

    def stmt_While(self, node, frame):
        key = site_key(frame.filename, node)
        iterations = 0
        while True:
            self.set_site(node, frame)
            test = self.eval(node.test, frame)
            if isinstance(test, Sym):
                trips = self.profile.trips(key) if self.profile is not None else set()
                if (len(trips) > 1 or ("trip", key) in self.relaxed) and iterations == 0:
                    return self.loop(node, frame)
                if len(trips) != 1:
                    raise Unsupported("varying-trip-count" if trips else "unprofiled-branch",
                                      f"while loop on a graph value (trip counts seen: {sorted(trips)})", self.site)
                expected = next(iter(trips))
                go = iterations < expected
                cond = _truth_value(test)
                self.builder.assert_(cond, go, Assumption("trip_count", self.site, expected, relax=("trip", key)))
            else:
                go = self.truth(test)
            if not go:
                break
            iterations += 1
            self.count_unroll()
            try:
                self.exec_block(node.body, frame)
            except _Break:
                return
            except _Continue:
                continue
        self.exec_block(node.orelse, frame)

    def loop(self, node, frame, counter=None):
        """A loop whose trip count is a graph value: one loop node whose body is generated once,
        with the variables it reassigns carried from iteration to iteration. `node` is a `while`
        (its test is the condition) or, with `counter=(target, start, stop, step)`, a
        `for target in range(start, stop, step)` whose bounds are graph values."""
        kind = "while" if counter is None else "for"
        if self.builder.tapes:
            raise Unsupported("varying-trip-count", f"a {kind} loop with a graph-valued trip count inside a "
                                                    "GradientTape", self.site)
        if node.orelse:
            raise Unsupported("unsupported-syntax", f"{kind} ... else with a graph-valued trip count", self.site)
        target = counter[0] if counter is not None else None
        names = sorted(_assigned_names(node.body) - ({target} if target else set()))
        carried = []
        for name in names:
            v = frame.locals.get(name, _MISSING)
            if not isinstance(v, Sym) or isinstance(v, VarRef):
                raise Unsupported("varying-trip-count", f"loop variable {name!r} is not an array value before "
                                                        "the loop", self.site)
            carried.append((name, v))
        before = dict(frame.locals)
        placeholders = []
        for name, v in carried:
            ph = ir.Node(ir.LOOP_VAR, (), {"name": name}, v.node.aval, self.site)
            placeholders.append(ph)
            frame.locals[name] = Sym(ph, v.kind)
        if counter is not None:
            start = counter[1]
            count_ph = ir.Node(ir.LOOP_VAR, (), {"name": target}, ((), np.dtype(np.int64)), self.site)
            frame.locals[target] = Sym(count_ph, "py")
        outer = self.builder.block
        self.pure_depth += 1
        self.branch_frames.append(frame)
        try:
            cond_block, body_block = [], []
            self.builder.block = cond_block
            if counter is None:
                test = self.eval(node.test, frame)
                if not isinstance(test, Sym):
                    raise Unsupported("varying-trip-count", "loop condition is not a graph value inside the loop",
                                      self.site)
                pred = _truth_value(test)
            else:
                pred = self.builder.py_op(operator.lt, Sym(count_ph, "py"), counter[2])
            self.builder.block = body_block
            try:
                self.exec_block(node.body, frame)
            except (_Break, _Continue):
                raise Unsupported("unsupported-syntax", "break/continue in a loop on a graph value", self.site) from None
            if counter is not None:
                next_count = self.builder.py_op(operator.add, Sym(count_ph, "py"), counter[3])
        finally:
            self.pure_depth -= 1
            self.branch_frames.pop()
            self.builder.block = outer
        outs = []
        for (name, v), ph in zip(carried, placeholders):
            new = frame.locals[name]
            if not isinstance(new, Sym) or new.node.aval != ph.aval or new.kind != v.kind:
                raise Unsupported("varying-trip-count", f"{name!r} changes type, shape or dtype inside the loop",
                                  self.site)
            outs.append(new.node)
        self.set_site(node, frame)
        for name, value in before.items():
            if name not in dict(carried) and name != target and frame.locals.get(name, _MISSING) is not value:
                raise Unsupported("varying-trip-count", f"{name!r} is rebound inside the loop", self.site)
        inputs = [v.node for _, v in carried]
        if counter is not None:
            placeholders.append(count_ph)
            outs.append(next_count.node)
            inputs.append(start.node if isinstance(start, Sym) else start)
        loop = self.builder.add(ir.Node(ir.LOOP, tuple(inputs), {
            "placeholders": placeholders, "cond_nodes": cond_block, "cond": pred.node,
            "body_nodes": body_block, "body_outs": outs, "max_iter": self.max_unroll * 50}))
        for i, (name, v) in enumerate(carried):
            out = self.builder.add(ir.Node(ir.TUPLE_GET, (loop,), {"index": i}, v.node.aval))
            frame.locals[name] = Sym(out, v.kind)
        if counter is not None:  # the loop variable after the loop is not modelled
            stale = Sym(count_ph, "py")
            stale.kind = "stale"
            frame.locals[target] = stale

    def dynamic_range(self, node, frame):
        """(start, stop, step) when `node.iter` is range(...) with graph-valued bounds, else None."""
        call = node.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "range"
                and not call.keywords and 1 <= len(call.args) <= 3 and isinstance(node.target, ast.Name)):
            return None
        if self.load_name("range", frame, call.func) is not range:
            return None
        bounds = [self.eval(a, frame) for a in call.args]
        if not any(isinstance(b, Sym) for b in bounds):
            return bounds  # plain Python bounds: the caller unrolls
        if any(isinstance(b, Sym) and (b.kind != "py" or b.dtype.kind not in "iu") for b in bounds):
            raise Unsupported("data-dependent-python", "range() of a graph value that is not a Python int", self.site)
        start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (bounds + [1])[:3]
        if isinstance(step, Sym) or step <= 0:
            raise Unsupported("varying-trip-count", "range() with a graph-valued or non-positive step", self.site)
        return ("dynamic", start, stop, step)

    def stmt_For(self, node, frame):
        bounds = self.dynamic_range(node, frame)
        if bounds is not None and bounds[0] == "dynamic":  # a trip count known only at run time
            return self.loop(node, frame, counter=(node.target.id,) + tuple(bounds[1:]))
        iterable = range(*bounds) if bounds is not None else self.eval(node.iter, frame)
        if isinstance(iterable, ObjRef):  # elements the profiler saw vary become graph inputs
            items = list(self.materialize(iterable, self.site, site_key(frame.filename, node)))
        else:
            items = self.iterate(iterable)
        for item in items:
            self.count_unroll()
            self.assign(node.target, item, frame)
            try:
                self.exec_block(node.body, frame)
            except _Break:
                return
            except _Continue:
                continue
        self.exec_block(node.orelse, frame)

    def count_unroll(self):
        self.unrolled += 1
        if self.unrolled > self.max_unroll:
            raise Unsupported("recursion-limit", f"more than {self.max_unroll} unrolled iterations", self.site)

    def iterate(self, value):
        if isinstance(value, ObjRef):
            return list(self.materialize(value, self.site))
        if isinstance(value, Sym) and self.builder.polymorphic:
            raise Unsupported("shape-dependent", "iterating over an array whose size is not fixed", self.site)
        if isinstance(value, Sym):
            return list(value)
        if isinstance(value, SymbolicTape):
            raise Unsupported("unsupported-syntax", "iterating a tape", self.site)
        return list(value)

    def stmt_With(self, node, frame):
        entered = []
        for item in node.items:
            ctx = self.eval(item.context_expr, frame)
            if isinstance(ctx, SymbolicTape):
                self.builder.tapes.append(ctx)
                entered.append(ctx)
                value = ctx
            elif isinstance(ctx, ErrState):
                self.builder.errstate.append({**(self.builder.errstate[-1] if self.builder.errstate else {}),
                                              **ctx.settings})
                entered.append(ctx)
                value = ctx
            else:
                raise Unsupported("unsupported-syntax", f"with {type(ctx).__name__}", self.site)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, value, frame)
        try:
            self.exec_block(node.body, frame)
        finally:
            for item in entered:
                if isinstance(item, ErrState):
                    self.builder.errstate.pop()
                elif item in self.builder.tapes:
                    self.builder.tapes.remove(item)

    def stmt_Assert(self, node, frame):
        test = self.eval(node.test, frame)
        if isinstance(test, Sym):
            self.speculate(test, node, frame, "branch")
        elif not self.truth(test):
            raise Unsupported("user-error", "assert statement fails", self.site)

    def stmt_Raise(self, node, frame):
        raise Unsupported("user-error", "the function raises on these inputs", self.site)

    def stmt_Delete(self, node, frame):
        for t in node.targets:
            if isinstance(t, ast.Name) and t.id in frame.locals:
                del frame.locals[t.id]
            else:
                raise Unsupported("unsupported-syntax", "del of a non-local", self.site)

    # ================================================================== assignment
    def assign(self, target, value, frame):
        if isinstance(target, ast.Name):
            self.store_name(target.id, value, frame)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.iterate(value)
            starred = [i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)]
            if starred:
                s = starred[0]
                n_after = len(target.elts) - s - 1
                parts = items[:s] + [list(items[s:len(items) - n_after])] + items[len(items) - n_after:]
                for t, v in zip(target.elts, parts):
                    self.assign(t.value if isinstance(t, ast.Starred) else t, v, frame)
                return
            if len(items) != len(target.elts):
                raise Unsupported("user-error", f"cannot unpack {len(items)} values into {len(target.elts)}", self.site)
            for t, v in zip(target.elts, items):
                self.assign(t, v, frame)
        elif isinstance(target, ast.Attribute):
            self.setattr(self.eval(target.value, frame), target.attr, value)
        elif isinstance(target, ast.Subscript):
            self.setitem(self.eval(target.value, frame), self.eval(target.slice, frame), value)
        else:
            raise Unsupported("unsupported-syntax", f"assignment to {type(target).__name__}", self.site)

    def store_name(self, name, value, frame):
        if name in frame.global_names:
            if self.pure_depth:
                raise Unsupported("unsupported-syntax", "global write inside a data-dependent branch", self.site)
            self.global_overlay[(id(frame.globals), name)] = value
            self.writes.append(("global", frame.globals, name, value))
        else:
            frame.locals[name] = value

    def setattr(self, obj, name, value):
        if isinstance(obj, ObjRef):
            if self.pure_depth:
                raise Unsupported("unsupported-syntax", "attribute write inside a data-dependent branch", self.site)
            self.overlay[(id(obj.obj), name)] = value
            self.writes.append(("setattr", obj, name, value))
            return
        if isinstance(obj, (Sym, SymbolicTape)):
            raise Unsupported("unsupported-syntax", f"setting attribute {name!r} on an array", self.site)
        raise Unsupported("object-construction", f"setting attribute {name!r} on a {type(obj).__name__} "
                                                 "created inside the function", self.site)

    def setitem(self, obj, index, value):
        if isinstance(obj, Sym):
            if isinstance(obj, VarRef):
                new = F.index_update(Sym(obj.node, "array"), _unwrap_obj(index), _raw(value))
                obj.assign(new)
                self.note_write(obj)
                return
            if obj.kind == "array":
                v = value if isinstance(value, Sym) else value
                new = F.index_update(Sym(obj.node, "array"), _unwrap_obj(index), _cast_like(v, obj))
                self.write_box(obj, _as_kind(new, "array"))
            else:
                new = F.index_update(Sym(obj.node, "tensor"), _unwrap_obj(index), value)
                self.write_box(obj, new)
            return
        if isinstance(obj, ObjRef):
            if self.pure_depth:
                raise Unsupported("unsupported-syntax", "container write inside a data-dependent branch", self.site)
            shadow = self.shadow(obj)
            key = _dict_key(index)
            shadow[key] = value
            self.writes.append(("setitem", obj, key, value))
            return
        if isinstance(obj, (list, dict)):
            obj[_dict_key(index)] = value
            return
        raise Unsupported("unsupported-syntax", f"item assignment on {type(obj).__name__}", self.site)

    # ================================================================== expressions
    def eval(self, node, frame):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise Unsupported("unsupported-syntax", f"`{type(node).__name__}` expression", self.site)
        return method(node, frame)

    def expr_Constant(self, node, frame):
        return node.value

    def expr_Name(self, node, frame):
        return self.load_name(node.id, frame, node)

    def load_name(self, name, frame, node=None):
        if name in frame.locals and name not in frame.global_names:
            return frame.locals[name]
        key = site_key(frame.filename, node) if node is not None else None
        if name in frame.cells:
            cell = frame.cells[name]
            try:
                value = cell.cell_contents
            except ValueError:
                raise Unsupported("unsupported-syntax", f"free variable {name!r} is not bound yet", self.site) from None
            slot, _ = self.prog.root_cell(cell, name, value)
            return self.classify(slot, self.site, key)
        g = frame.globals
        over = self.global_overlay.get((id(g), name), _MISSING)
        if over is not _MISSING:
            return over
        if name in g:
            value = g[name]
            if isinstance(value, types.ModuleType):
                return value
            slot, _ = self.prog.root_global(g, name, value, g.get("__name__", "?"))
            return self.classify(slot, self.site, key)
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise Unsupported("user-error", f"name {name!r} is not defined", self.site)

    def expr_Attribute(self, node, frame):
        obj = self.eval(node.value, frame)
        return self.getattr(obj, node.attr, site_key(frame.filename, node))

    def getattr(self, obj, name, key=None):
        if isinstance(obj, ObjRef):
            over = self.overlay.get((id(obj.obj), name), _MISSING)
            if over is not _MISSING:
                return over
            target = obj.obj
            if isinstance(target, (list, dict, tuple)):
                return ContainerMethod(obj, name)
            inst = getattr(target, "__dict__", {})
            if name in inst:
                slot, _ = self.prog.attr(obj.slot, name, inst[name])
                return self.classify(slot, self.site, key)
            for klass in type(target).__mro__:
                if name in klass.__dict__:
                    attr = klass.__dict__[name]
                    break
            else:
                raise AttributeError(name)
            if isinstance(attr, types.FunctionType):
                return BoundMethod(attr, obj)
            if _is_jit(attr) and getattr(attr, "__self__", None) is None:  # @jit on a method
                return BoundMethod(attr.__wrapped__, obj)
            if isinstance(attr, property):
                return self.inline(attr.fget, [obj], {})
            if isinstance(attr, staticmethod):
                return attr.__func__
            if isinstance(attr, classmethod):
                return BoundMethod(attr.__func__, type(target))
            if type(attr).__name__ == "member_descriptor":
                slot, _ = self.prog.attr(obj.slot, name, getattr(target, name))
                return self.classify(slot, self.site, key)
            return attr  # a class-level constant (the object's type is guarded)
        if isinstance(obj, types.ModuleType):
            return getattr(obj, name)
        if isinstance(obj, VarRef) and name in ("trainable", "name"):
            slot, _ = self.prog.attr(self.prog.slots[obj.slot], name, getattr(obj.var, name))
            return self.classify(slot, self.site, key)
        if isinstance(obj, Sym) and name == "shape" and self.builder.polymorphic:
            return tuple(self.builder.dim(obj, k) for k in range(obj.ndim))  # sizes read at run time
        if isinstance(obj, Sym) and name in ("size", "__len__") and self.builder.polymorphic:
            raise Unsupported("shape-dependent", f"the function reads `.{name}` of an array whose size "
                                                 "is not fixed", self.site)
        if isinstance(obj, (Sym, SymbolicTape)):
            return getattr(obj, name)
        if isinstance(obj, DeferredStr):
            raise Unsupported("data-dependent-python", "string methods on a formatted graph value", self.site)
        return getattr(obj, name)

    def expr_Subscript(self, node, frame):
        obj = self.eval(node.value, frame)
        index = self.eval(node.slice, frame)
        return self.getitem(obj, index)

    def getitem(self, obj, index):
        if isinstance(obj, Sym):
            out = F.getitem(obj, _unwrap_obj(index))
            if obj.kind == "array":
                out = _as_kind(out, "array")
                if _is_basic_index(index):
                    out.view = (obj, _unwrap_obj(index))
                    self._register_view(obj, out)
            return out
        if isinstance(obj, ObjRef):
            key = _dict_key(index)
            shadow = self.shadows.get(id(obj.obj))
            if shadow is not None:
                return shadow[key]
            if isinstance(key, (Sym,)):
                raise Unsupported("data-dependent-python", "indexing a Python container with a graph value", self.site)
            if isinstance(key, slice):
                return self.materialize(obj, self.site)[key]
            try:
                value = obj.obj[key]
            except (KeyError, IndexError, TypeError) as exc:
                raise Unsupported("user-error", f"lookup fails: {exc!r}", self.site) from None
            if isinstance(obj.obj, (list, tuple)) and isinstance(key, int) and key < 0:
                key = len(obj.obj) + key
                self.prog.check_len(obj.slot, self.site)
            slot, _ = self.prog.item(obj.slot, key, value)
            return self.classify(slot, self.site)
        if isinstance(index, Sym) and isinstance(obj, (list, tuple, dict)):
            raise Unsupported("data-dependent-python", "indexing a Python container with a graph value", self.site)
        if isinstance(obj, dict):
            return obj[_dict_key(index)]
        return obj[index]

    def _register_view(self, base, view):
        self.builder.views.setdefault(id(base), []).append(view)

    def expr_Slice(self, node, frame):
        parts = [None if p is None else self.eval(p, frame) for p in (node.lower, node.upper, node.step)]
        if _any_abstract(parts):
            raise Unsupported("data-dependent-python", "slice bounds computed in the graph", self.site)
        return slice(*parts)

    def expr_Tuple(self, node, frame):
        return tuple(self.eval_elts(node.elts, frame))

    def expr_List(self, node, frame):
        return list(self.eval_elts(node.elts, frame))

    def expr_Set(self, node, frame):
        return set(self.eval_elts(node.elts, frame))

    def eval_elts(self, elts, frame):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self.iterate(self.eval(e.value, frame)))
            else:
                out.append(self.eval(e, frame))
        return out

    def expr_Dict(self, node, frame):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.eval(v, frame))
            else:
                out[_dict_key(self.eval(k, frame))] = self.eval(v, frame)
        return out

    def expr_BinOp(self, node, frame):
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        return self.binop(_BINOPS[type(node.op)], left, right)

    def binop(self, op, left, right):
        if isinstance(left, (ObjRef, SymbolicTape)) or isinstance(right, (ObjRef, SymbolicTape)):
            if op is operator.add and isinstance(left, ObjRef) and isinstance(right, (ObjRef, list, tuple)):
                return self.materialize(left, self.site) + (self.materialize(right, self.site)
                                                            if isinstance(right, ObjRef) else right)
            raise Unsupported("unsupported-syntax", f"operator {op.__name__} on Python objects", self.site)
        if isinstance(left, DeferredStr) or isinstance(right, DeferredStr):
            return DeferredStr(_str_parts(left) + _str_parts(right))
        if op is operator.mod and isinstance(left, str) and _any_abstract(right):
            raise Unsupported("data-dependent-python", "%-formatting of graph values", self.site)
        return self.lift(op(left, right))

    def expr_UnaryOp(self, node, frame):
        v = self.eval(node.operand, frame)
        if isinstance(node.op, ast.Not):
            if isinstance(v, Sym):
                raise Unsupported("data-dependent-python", "`not` of a graph value", self.site)
            return not self.truth(v)
        return _UNARY[type(node.op)](v)

    def expr_BoolOp(self, node, frame):
        is_and = isinstance(node.op, ast.And)
        value = None
        for v_node in node.values:
            value = self.eval(v_node, frame)
            t = self.speculate(value, node, frame, "branch") if isinstance(value, Sym) else self.truth(value)
            if is_and and not t:
                return value
            if not is_and and t:
                return value
        return value

    def expr_Compare(self, node, frame):
        left = self.eval(node.left, frame)
        result = True
        for op, comp in zip(node.ops, node.comparators):
            right = self.eval(comp, frame)
            r = self.compare(op, left, right)
            if len(node.ops) == 1:
                return r
            if isinstance(r, Sym):
                raise Unsupported("data-dependent-python", "chained comparison of graph values", self.site)
            if not r:
                return False
            left = right
        return result

    def compare(self, op, left, right):
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = _identity(left) is _identity(right)
            return same if isinstance(op, ast.Is) else not same
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(right, ObjRef):
                key = _dict_key(left)
                shadow = self.shadows.get(id(right.obj))
                if shadow is not None:
                    found = key in shadow
                else:
                    found = key in right.obj
                    self.prog.check_contains(right.slot, key, found, self.site)
            elif isinstance(right, Sym) or isinstance(left, Sym) and not isinstance(right, (list, tuple, set, dict)):
                raise Unsupported("data-dependent-python", "`in` test on a graph value", self.site)
            else:
                found = _dict_key(left) in right
            return found if isinstance(op, ast.In) else not found
        if isinstance(left, ObjRef) or isinstance(right, ObjRef):
            l, r = _identity(left), _identity(right)
            return _CMPOPS[type(op)](l, r)
        return self.lift(_CMPOPS[type(op)](left, right))

    def truth(self, v):
        if isinstance(v, Sym):
            raise Unsupported("data-dependent-python", "truth value of a graph value", self.site)
        if isinstance(v, ObjRef):
            if isinstance(v.obj, (list, tuple, dict)):
                return len(self.materialize(v, self.site)) > 0
            return bool(v.obj)  # object truthiness: the type is guarded
        return bool(v)

    def expr_IfExp(self, node, frame):
        test = self.eval(node.test, frame)
        t = self.speculate(test, node, frame, "branch") if isinstance(test, Sym) else self.truth(test)
        return self.eval(node.body if t else node.orelse, frame)

    def expr_Call(self, node, frame):
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
        result = self.call(func, args, kwargs, node)
        self.set_site(node, frame)
        return result

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
        conv = {-1: "", 115: "s", 114: "r", 97: "a"}[node.conversion]
        if isinstance(value, (Sym, ObjRef)):  # formatted later, with the value it has now
            return DeferredStr([(self.snapshot_for_effect(value), conv, spec)])
        text = {"": format, "s": lambda x, s: format(str(x), s), "r": lambda x, s: format(repr(x), s),
                "a": lambda x, s: format(ascii(x), s)}[conv](value, spec)
        return DeferredStr([text])

    def expr_ListComp(self, node, frame):
        return self.comprehension(node, frame, lambda: [], lambda acc, f: acc.append(self.eval(node.elt, f)))

    expr_GeneratorExp = expr_ListComp

    def expr_SetComp(self, node, frame):
        return self.comprehension(node, frame, set, lambda acc, f: acc.add(self.eval(node.elt, f)))

    def expr_DictComp(self, node, frame):
        def add(acc, f):
            acc[_dict_key(self.eval(node.key, f))] = self.eval(node.value, f)
        return self.comprehension(node, frame, dict, add)

    def comprehension(self, node, frame, make, add):
        acc = make()
        saved = dict(frame.locals)

        def loop(gens):
            if not gens:
                add(acc, frame)
                return
            gen = gens[0]
            for item in self.iterate(self.eval(gen.iter, frame)):
                self.count_unroll()
                self.assign(gen.target, item, frame)
                if all(self.truth(self.eval(c, frame)) for c in gen.ifs):
                    loop(gens[1:])
        try:
            loop(node.generators)
        finally:
            frame.locals.clear()
            frame.locals.update(saved)
        return acc

    def expr_Lambda(self, node, frame):
        raise Unsupported("unsupported-syntax", "lambda inside the function", self.site)

    # ================================================================== containers
    def materialize(self, ref, site, ast_key=None):
        """The elements of an input list/tuple/dict as abstract values (guards its length/keys)."""
        shadow = self.shadows.get(id(ref.obj))
        if shadow is not None:
            return shadow
        target = ref.obj
        if isinstance(target, dict):
            self.prog.check_keys(ref.slot, site)
            return {k: self.classify(self.prog.item(ref.slot, k, v)[0], site, ast_key) for k, v in target.items()}
        if isinstance(target, (list, tuple)):
            self.prog.check_len(ref.slot, site)
            items = [self.classify(self.prog.item(ref.slot, i, v)[0], site, ast_key) for i, v in enumerate(target)]
            return items if isinstance(target, list) else tuple(items)
        raise Unsupported("unsupported-syntax", f"iterating a {type(target).__name__}", site)

    def attributes(self, ref):
        """vars(obj) of an input object: every attribute, with a guard on the attribute names."""
        d = vars(ref.obj)
        slot, _ = self.prog._new(ref.slot, ("vars",), f"vars({ref.slot.text})", d, f"vars(s{ref.slot.index})")
        self.prog.check_keys(slot, self.site)
        out = {}
        for name in d:
            over = self.overlay.get((id(ref.obj), name), _MISSING)
            out[name] = over if over is not _MISSING else self.getattr(ref, name)
        return out

    def containers_to_python(self, v):
        if isinstance(v, ObjRef) and isinstance(v.obj, (list, tuple, dict)):
            v = self.materialize(v, self.site)
        if isinstance(v, dict):
            return {k: self.containers_to_python(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(self.containers_to_python(x) for x in v)
        return v

    def materialize_dict(self, v):
        if isinstance(v, ObjRef):
            return dict(self.materialize(v, self.site))
        return dict(v)

    def shadow(self, ref):
        s = self.shadows.get(id(ref.obj))
        if s is None:
            base = self.materialize(ref, self.site)
            s = dict(base) if isinstance(base, dict) else list(base)
            self.shadows[id(ref.obj)] = s
        return s

    def container_method(self, m, args, kwargs):
        ref, name = m.ref, m.name
        target = ref.obj
        if name in ("append", "extend", "insert", "pop", "clear", "update", "setdefault", "__setitem__"):
            if self.pure_depth:
                raise Unsupported("unsupported-syntax", "container write inside a data-dependent branch", self.site)
            shadow = self.shadow(ref)
            if name == "extend":
                args = [self.iterate(args[0])]
            result = getattr(shadow, name)(*args, **kwargs)
            self.writes.append(("call", ref, name, list(args), dict(kwargs)))
            return result
        view = self.materialize(ref, self.site)
        if isinstance(target, dict) and name in ("items", "keys", "values", "get", "copy"):
            return getattr(view, name)(*[_dict_key(a) for a in args])
        if name in ("index", "count", "copy"):
            return getattr(view, name)(*args)
        raise Unsupported("unsupported-call", f"{type(target).__name__}.{name} on an input container", self.site)

    # ================================================================== values
    def lift(self, value):
        """Concrete arrays made during generation become graph constants (so aliases share one box)."""
        if isinstance(value, Tensor):
            return self.builder.constant(value, "tensor")
        if type(value) is np.ndarray:
            return self.builder.constant(value, "array")
        return value

    # ================================================================== finish
    def finish(self, result):
        from .outputs import build_outputs

        graph = self.builder.graph
        graph.nodes[:0] = self.input_nodes + self.builder.prelude
        if any(w[0] == "box" for w in self.writes):  # aliasing only matters when something is written
            self.prog.check_distinct(self.mutable_slots, "inputs")
        guard, guard_src = self.prog.compile()
        outputs = build_outputs(self, result)
        graph.outputs = outputs.nodes
        graph.n_inputs = len(self.input_nodes)
        return GeneratedGraph(graph=graph, guard=guard, guard_src=guard_src, outputs=outputs,
                              assumptions=self.prog.assumptions + [n.params["assumption"] for n in graph.asserts],
                              uses_rng=self.builder.uses_rng, slots=self.prog.slots)


_MISSING = object()


def _truth_value(test):
    """bool(x) as a graph value (x != 0 unless it is already boolean)."""
    if test.dtype == np.bool_:
        return test
    return F.ne(Sym(test.node, "array"), 0)


def _assigned_names(stmts):
    names = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
    return names


def _is_immutable(v):
    return v is None or isinstance(v, (int, float, complex, str, bytes, bool, np.generic, tuple, frozenset,
                                       types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType))


def _is_jit(v):
    return getattr(type(v), "_janus_jit", False)


def _is_tape_class(v):
    from ..autodiff import GradientTape

    return v is GradientTape


def _tensor_fn():
    from ..tensor import tensor

    return tensor


def _any_abstract(x):
    if isinstance(x, (Sym, SymbolicTape)):
        return True
    if isinstance(x, (list, tuple, set)):
        return any(_any_abstract(i) for i in x)
    if isinstance(x, dict):
        return any(_any_abstract(v) for v in x.values())
    return False


def _any_objref(x):
    if isinstance(x, ObjRef):
        return True
    if isinstance(x, (list, tuple)):
        return any(_any_objref(i) for i in x)
    if isinstance(x, dict):
        return any(_any_objref(v) for v in x.values())
    return False


def _unwrap_obj(v):
    if isinstance(v, ObjRef):
        return v.obj
    if isinstance(v, tuple):
        return tuple(_unwrap_obj(i) for i in v)
    if isinstance(v, list):
        return [_unwrap_obj(i) for i in v]
    return v


def _unwrap_sym(v):
    return v


def _identity(v):
    if isinstance(v, ObjRef):
        return v.obj
    if isinstance(v, VarRef):
        return v.var
    return v


def _dict_key(k):
    if isinstance(k, VarRef):
        return k.var
    if isinstance(k, ObjRef):
        return k.obj
    if isinstance(k, Sym):
        raise Unsupported("data-dependent-python", "a graph value used as a dict key", "")
    return k


def _raw(v):
    return Sym(v.node, "array") if isinstance(v, Sym) else v


def _as_kind(v, kind):
    if isinstance(v, Sym) and v.kind != kind:
        return Sym(v.node, kind)
    return v


def _as_tensor_kind(out):
    if isinstance(out, Sym):
        return _as_kind(out, "tensor")
    if isinstance(out, (list, tuple)):
        return type(out)(_as_tensor_kind(o) for o in out)
    return out


def _as_array_kind(out):
    return _as_kind(out, "array")


def _cast_like(v, target):
    return v


def _is_basic_index(index):
    items = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, (int, np.integer, slice, type(None), type(Ellipsis))) and not isinstance(i, bool)
               for i in items)


def _concrete_type_probe(v):
    if isinstance(v, ObjRef):
        return v.obj
    if isinstance(v, VarRef):
        return v.var
    if isinstance(v, Sym):
        if v.kind == "tensor":
            return Tensor.__new__(Tensor)
        if v.kind == "py":
            return np.zeros((), v.dtype).item()
        return np.zeros(v.shape, v.dtype) if v.shape else np.zeros((), v.dtype)[()]
    return v


def _str_parts(v):
    if isinstance(v, DeferredStr):
        return list(v.parts)
    if isinstance(v, str):
        return [v]
    return [(v, "s", "")]


__all__ = ["Generator", "GeneratedGraph", "Unsupported", "math"]
