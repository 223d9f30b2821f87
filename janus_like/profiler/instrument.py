"""AST instrumentation: a copy of the function whose interesting sites report to a Profile.

    if cond:            ->  if __jlp.b(KEY, cond):
    while cond:         ->  __jlp.enter(KEY) ... while __jlp.w(KEY, cond):
    for x in xs:        ->  for x in __jlp.it(KEY, xs):
    obj.attr, x[i] (load) -> __jlp.v(KEY, obj.attr), __jlp.v(KEY, x[i])
    global_name (load)  ->  __jlp.v(KEY, global_name)
    f(args)             ->  __jlp.c(KEY, f)(args)      # callees are profiled too (min/max: the argument given)

The copy is compiled with the original globals and closure cells, so it reads and writes the
same state as the original; only observation is added.
"""
from __future__ import annotations

import ast
import copy
import functools
import types
import weakref

import numpy as np

from ..quiet import quiet
from ..source import function_ast, in_packages, nested_super
from .profile import member_key, picked_position

_SKIP_MODULES = ("numpy", "janus_like.ops", "janus_like.tensor", "janus_like.autodiff", "janus_like.backend",
                 "janus_like.jit", "janus_like.profiler", "janus_like.graphgen", "janus_like.executor",
                 "builtins", "math")
_cache: dict = {}  # id(code) -> (weakref to code, instrumented code or False)


class Hooks:
    """The `__jlp` object the instrumented code calls."""

    __slots__ = ("profile", "_open_loops")

    def __init__(self, profile):
        self.profile = profile
        self._open_loops = {}

    def b(self, key, value):
        outcome = bool(value)
        self.profile.record_branch(key, outcome)
        return outcome

    def bv(self, key, value):
        self.profile.record_branch(key, bool(value))
        return value

    def enter(self, key):
        self._open_loops[key] = 0

    def w(self, key, value):
        outcome = bool(value)
        if outcome:
            self._open_loops[key] = self._open_loops.get(key, 0) + 1
        else:
            self.profile.record_trips(key, self._open_loops.pop(key, 0))
        self.profile.record_branch(key, outcome)
        return outcome

    def it(self, key, iterable):
        n = 0
        record = self.profile.record_value
        try:
            for item in iterable:
                n += 1
                record(key, item)  # element values: the generator relaxes sites whose values vary
                yield item
        finally:
            self.profile.record_trips(key, n)

    def v(self, key, value):
        self.profile.record_value(key, value)
        return value

    def a(self, key, obj, name):
        """`obj.name`: a property of a user class is read through its getter's profiled copy (a
        learning-rate schedule's `lr` reads a step counter and branches on it: both profiled)."""
        getter = _property_getter(type(obj), name)
        value = getattr(obj, name) if getter is None else profiled_callable(getter, self)(obj)
        self.profile.record_value(key, value)
        if getter is None and name in getattr(obj, "__dict__", ()):  # (by object too: one site, many layers)
            self.profile.record_member(member_key(obj, ("attr", name)), value)
        return value

    def p(self, obj, name, item):
        """Whether reading `obj[name]` (`item`) or `obj.name` runs no code of the user's (an
        augmented assignment's target is read once more, ahead of it, for the profile only): a
        dict or list without its own item methods (of a dict with `__missing__`, a key it holds),
        an ndarray; an attribute in the object's `__dict__` or a plain class value (no property or
        other descriptor, no `__getattr__`/`__getattribute__` of its own)."""
        cls = type(obj)
        if isinstance(obj, types.ModuleType):  # (a module's own `__getattr__` runs for a name it lacks)
            return not item and name in obj.__dict__
        if item:
            if cls is np.ndarray:
                return True
            if not isinstance(obj, (dict, list)) or cls.__getitem__ not in (dict.__getitem__, list.__getitem__):
                return False
            # a defaultdict's or Counter's key it holds: read without `__missing__`
            return not hasattr(cls, "__missing__") or cls.__contains__ is dict.__contains__ and name in obj
        if cls.__getattribute__ not in _GENERIC_GETATTRIBUTE and not isinstance(obj, (type, types.ModuleType)):
            return False
        found = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
        if hasattr(type(found), "__get__") and not isinstance(found, (types.FunctionType, type)):
            return False
        return name in getattr(obj, "__dict__", ()) or found is not None

    def s(self, key, container, index):
        value = container[index]
        self.profile.record_value(key, value)
        if isinstance(container, (dict, list)) and type(index) in (int, str):
            self.profile.record_value(member_key(container, ("item", index)), value)
        return value

    @staticmethod
    def own(names):
        """`locals()` / `vars()` of the instrumented copy, without the copy's own `__jlp` (the
        frame's dict itself, as eager returns it)."""
        names.pop("__jlp", None)
        return names

    def c(self, key, fn):
        self.profile.record_callee(key, fn)
        if fn is min or fn is max:
            return _picking(fn, key, self.profile)
        if fn is np.bincount:
            return _bins(fn, key, self.profile)
        if type(fn) is _BUILTIN_METHOD and type(fn.__self__) is dict and fn.__name__ in _KEYED_READS:
            return _reading_item(fn, self.profile)
        if fn is getattr:
            return self.getattr
        return profiled_callable(fn, self)

    def getattr(self, obj, name, *default):
        """`getattr(obj, name[, default])`: the value found is recorded by object and name."""
        value = getattr(obj, name, *default)
        if type(name) is str and name in getattr(obj, "__dict__", ()):
            self.profile.record_value(member_key(obj, ("attr", name)), value)
        return value


@functools.lru_cache(maxsize=1024)
def _property_getter(cls, name):
    """The getter of the user property `cls.name` (None: another attribute, or a class that
    finds its attributes in its own way)."""
    if getattr(cls, "__getattribute__", None) is not object.__getattribute__ or hasattr(cls, "__getattr__"):
        return None
    for klass in cls.__mro__:
        if name in klass.__dict__:
            attr = klass.__dict__[name]
            getter = attr.fget if type(attr) is property else None
            return getter if isinstance(getter, types.FunctionType) and not _skip(getter) else None
    return None


_BUILTIN_METHOD = type({}.get)
_KEYED_READS = frozenset(("get", "pop", "setdefault"))

# `__getattribute__`s that find attributes as object's does (SimpleNamespace's is its own slot wrapper)
_GENERIC_GETATTRIBUTE = frozenset({object.__getattribute__, types.SimpleNamespace.__getattribute__})


def _reading_item(method, profile):
    """`d.get(k, 0.0)`, `d.pop(k, None)`, `d.setdefault(k, 0)`: the item the call finds is
    recorded by container and key, as `d[k]` is (so a changing one is read as an input)."""
    def call(*args, **kwargs):
        d = method.__self__
        if args and type(args[0]) in (int, str) and args[0] in d:
            profile.record_value(member_key(d, ("item", args[0])), d[args[0]])
        return method(*args, **kwargs)
    return call


def _bins(fn, key, profile):
    """np.bincount recording how many bins it gave (the largest value + 1 without `minlength`):
    the generator speculates on a count that did not change (graphgen/masks.bincount)."""
    def call(*args, **kwargs):
        result = fn(*args, **kwargs)
        profile.record_value(("bins", key), len(result))
        return result
    return call


def _picking(fn, key, profile):
    """min/max recording which argument they gave (the first one that is the result): the
    generator speculates on it where the arguments mix Python numbers and graph values."""
    def call(*args, **kwargs):
        result = fn(*args, **kwargs)
        items = args[0] if len(args) == 1 else args
        if not set(kwargs) - {"key", "default"} and isinstance(items, (list, tuple, dict, range)):
            # (a dict's keys and a range's numbers in the order the generator lists them)
            position = items.index(result) if type(items) is range and result in items \
                else picked_position(list(items) if type(items) is dict else items, result)
            if position is not None:  # (None: the default)
                profile.record_pick(key, position)
        return result
    return call


def profiled_callable(fn, hooks):
    """The instrumented version of a user function or method (the original when not possible)."""
    if isinstance(fn, types.FunctionType):
        if _skip(fn):
            return fn
        return instrumented(fn, hooks) or fn
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        inner = instrumented(fn.__func__, hooks) if not _skip(fn.__func__) else None
        return types.MethodType(inner, fn.__self__) if inner is not None else fn
    if getattr(type(fn), "_janus_jit", False):  # a jitted callee: profile its source too
        inner = instrumented(fn.__wrapped__, hooks)
        if inner is None:
            return fn
        owner = getattr(fn, "__self__", None)
        return types.MethodType(inner, owner) if owner is not None else inner
    call = getattr(type(fn), "__call__", None)
    if isinstance(call, types.FunctionType) and not _skip(call) and not isinstance(fn, type):
        inner = instrumented(call, hooks)
        if inner is not None:
            return types.MethodType(inner, fn)
    return fn


def _skip(fn) -> bool:
    return in_packages(getattr(fn, "__module__", None) or "", _SKIP_MODULES)


def instrumented(fn, hooks):
    """Compile (once per function) an instrumented copy bound to `hooks`; None if impossible."""
    # keyed by identity: equal code objects from two files must not share instrumentation
    hit = _cache.get(id(fn.__code__))
    entry = hit[1] if hit is not None and hit[0]() is fn.__code__ else None
    if entry is None:
        try:
            entry = _compile(fn)
        except Exception:  # NoSource, or a copy that cannot be built: profile without it
            entry = False
        _cache[id(fn.__code__)] = (weakref.ref(fn.__code__), entry)
    if entry is False:
        return None
    code = entry
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(types.CellType(hooks) if name == "__jlp" else cells[name] for name in code.co_freevars)
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__["__wrapped_original__"] = fn
    return new


def _compile(fn):
    fn_ast = function_ast(fn)
    if nested_super(fn_ast):  # the copy has no class cell to give such a super(): left as it is
        raise ValueError("super() in a nested scope")
    fn_ast = copy.deepcopy(fn_ast)
    fn_ast.decorator_list = []
    fn_ast.name = "__jl_inner"  # so a recursive reference to the original name stays a global
    # Defaults and annotations are evaluated when the factory runs the `def`, where the names
    # they read (`lambda z, i=i: ...` in a comprehension, an enclosing local) do not exist: the
    # copy gets the original's evaluated defaults instead, and needs no annotations.
    a = fn_ast.args
    a.defaults, a.kw_defaults = [], [None] * len(a.kwonlyargs)
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
        if arg is not None:
            arg.annotation = None
    fn_ast.returns = None
    filename = fn.__code__.co_filename
    local_names = _local_names(fn_ast)
    _Instrument(filename, local_names).visit(fn_ast)
    freevars = list(fn.__code__.co_freevars)
    factory = ast.FunctionDef(
        name="__jl_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg("__jlp")] + [ast.arg(n) for n in freevars],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fn_ast, ast.Return(ast.Name(fn_ast.name, ast.Load()))], decorator_list=[], returns=None)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    with quiet():  # (`x is 3`: the user's module warned once already, when it was compiled)
        code = compile(module, filename, "exec")
    ns: dict = {}
    exec(code, fn.__globals__, ns)
    inner = ns["__jl_factory"](*([None] * (1 + len(freevars))))
    return inner.__code__.replace(co_name=fn.__code__.co_name, co_qualname=fn.__code__.co_qualname)


def _as_list(visited):
    return visited if isinstance(visited, list) else [] if visited is None else [visited]


def _local_names(fn_ast):
    names = {a.arg for a in fn_ast.args.posonlyargs + fn_ast.args.args + fn_ast.args.kwonlyargs}
    if fn_ast.args.vararg:
        names.add(fn_ast.args.vararg.arg)
    if fn_ast.args.kwarg:
        names.add(fn_ast.args.kwarg.arg)
    declared_global = set()
    for node in ast.walk(fn_ast):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared_global.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not fn_ast:
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names - declared_global


def _plain_target(node) -> bool:
    """Whether reading `node` (an assignment target) calls nothing but attribute and item
    lookups of names and constants."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _plain_target(node.value)
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, (ast.Constant, ast.Name)) and _plain_target(node.value)
    return False


class _Instrument(ast.NodeTransformer):
    def __init__(self, filename, local_names):
        self.filename = filename
        self.locals = local_names
        self.first_arg = None

    def key(self, node):
        return ast.Constant((self.filename, node.lineno, node.col_offset))

    def hook(self, name, node, value):
        return ast.Call(ast.Attribute(ast.Name("__jlp", ast.Load()), name, ast.Load()),
                        [self.key(node), value], [])

    def visit_FunctionDef(self, node):
        if self.first_arg is None and node.args.args:
            self.first_arg = node.args.args[0].arg
        self.generic_visit(node)
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        node.test = self.hook("b", node, node.test)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        node.test = self.hook("b", node, node.test)
        return node

    def visit_Assert(self, node):
        self.generic_visit(node)
        node.test = self.hook("b", node, node.test)
        return node

    def visit_BoolOp(self, node):  # the operands whose truth Python takes: all but the last
        self.generic_visit(node)
        node.values = [self.hook("bv", node, v) for v in node.values[:-1]] + node.values[-1:]
        return node

    def visit_While(self, node):
        self.generic_visit(node)
        key = self.key(node)
        node.test = ast.Call(ast.Attribute(ast.Name("__jlp", ast.Load()), "w", ast.Load()), [key, node.test], [])
        enter = ast.Expr(ast.Call(ast.Attribute(ast.Name("__jlp", ast.Load()), "enter", ast.Load()),
                                  [self.key(node)], []))
        return [ast.copy_location(enter, node), node]

    def visit_For(self, node):
        self.generic_visit(node)
        node.iter = self.hook("it", node, node.iter)
        return node

    def visit_Try(self, node):  # the `try` counts its entries, each handler the times it caught something
        self.generic_visit(node)
        node.body.insert(0, ast.copy_location(ast.Expr(self.hook("b", node, ast.Constant(True))), node))
        for handler in node.handlers:
            handler.body.insert(0, ast.copy_location(ast.Expr(self.hook("b", handler, ast.Constant(True))), handler))
        return node

    def visit_match_case(self, node):
        """A `match` case: its guard and body as any code; its pattern as written (a pattern's
        values may only be literals and attribute lookups, not the hooks' calls)."""
        if node.guard is not None:
            node.guard = self.visit(node.guard)
        node.body = [out for stmt in node.body for out in _as_list(self.visit(stmt))]
        return node

    def visit_AugAssign(self, node):
        """`t.step += 1`, `stats["n"] += 1`: the value the target holds before is read (the
        generator speculates on it as on any read), in a statement of its own before the
        assignment where reading the target again does nothing else (names, attributes, items
        of constant or named keys); an error there is left for the assignment to raise."""
        target = copy.deepcopy(node.target)
        self.generic_visit(node)
        if not _plain_target(target) or isinstance(target, ast.Name) and target.id in self.locals:
            return node
        for part in ast.walk(target):
            if hasattr(part, "ctx"):
                part.ctx = ast.Load()
        checks = []  # each link of the target read only where reading it runs nothing of the user's
        link = target
        while not isinstance(link, ast.Name):
            key = ast.Constant(link.attr) if isinstance(link, ast.Attribute) else link.slice
            checks.insert(0, ast.Call(ast.Attribute(ast.Name("__jlp", ast.Load()), "p", ast.Load()),
                                      [copy.deepcopy(link.value), key, ast.Constant(isinstance(link, ast.Subscript))],
                                      []))
            link = link.value
        value = self.read_item(target) if isinstance(target, ast.Subscript) else self.hook("v", target, target)
        read = ast.If(ast.BoolOp(ast.And(), checks) if len(checks) > 1 else checks[0], [ast.Expr(value)], []) \
            if checks else ast.Expr(value)
        read = ast.Try(body=[read], handlers=[ast.ExceptHandler(ast.Name("Exception", ast.Load()), None,
                                                                [ast.Pass()])], orelse=[], finalbody=[])
        ast.fix_missing_locations(ast.copy_location(read, node))
        return [read, node]

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        if node.attr.startswith("__") and not node.attr.endswith("__"):  # (a private name: mangled by the compiler)
            return ast.copy_location(self.hook("v", node, node), node)
        read = ast.Call(ast.Attribute(ast.Name("__jlp", ast.Load()), "a", ast.Load()),
                        [self.key(node), node.value, ast.Constant(node.attr)], [])
        return ast.copy_location(read, node)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):  # items read from input containers (inputs[t])
            return ast.copy_location(self.read_item(node), node)
        return node

    def read_item(self, node):
        """`d[k]` as `__jlp.s(key, d, k)` (the hook indexes): the item is recorded by the
        container and key too. A slice or tuple index: the value only."""
        if isinstance(node.slice, (ast.Slice, ast.Tuple)):
            return self.hook("v", node, node)
        return ast.Call(ast.Attribute(ast.Name("__jlp", ast.Load()), "s", ast.Load()),
                        [self.key(node), node.value, node.slice], [])

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id not in self.locals and node.id != "__jlp":
            return ast.copy_location(self.hook("v", node, node), node)
        return node

    def visit_Call(self, node):
        func = node.func
        is_super = isinstance(func, ast.Name) and func.id == "super" and not node.args
        self.generic_visit(node)
        if is_super and self.first_arg:
            node.args = [ast.Name("__class__", ast.Load()), ast.Name(self.first_arg, ast.Load())]
            return node
        node.func = self.hook("c", node, node.func)
        if isinstance(func, ast.Name) and func.id in ("locals", "vars") and func.id not in self.locals \
                and not node.args and not node.keywords:
            return ast.Call(ast.Attribute(ast.Name("__jlp", ast.Load()), "own", ast.Load()), [node], [])
        return node
