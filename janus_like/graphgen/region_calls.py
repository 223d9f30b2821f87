"""Calls in a recursion region's code (region_code.py): the recursive call, helper functions and
methods inlined into the region, library functions run on the scratch builder's values, and
comprehensions over lists of arrays unrolled."""
from __future__ import annotations

import ast
import types

import numpy as np

from .. import ir
from ..ops.indexing import _SLICE
from ..source import local_names
from ..tensor import _FUNCTIONS, _UFUNCS
from .values import Sym


class _Path:
    """The array operations on the way to one `return` (a copy is taken at each `if`)."""

    def __init__(self, nodes=(), env=None):
        self.nodes = list(nodes)
        self.env = dict(env or {})


class _Scope:
    """The names of the function being translated, or of a helper inlined into it: its locals,
    its free names' tags, the prefix its host locals get in the generated code, and the name of
    the parameter bound to the region's object (a method's `self`), if any."""

    def __init__(self, own, free, prefix, obj=None):
        self.own, self.free, self.prefix, self.obj = own, free, prefix, obj


# Tags of names (and of the object's attributes): ("host", generated name) | ("array", value: a
# Sym or a tuple of Syms) | ("const", value) | ("self",): the function itself | ("obj",): the
# region's object | ("method", function): a method of that object
MAX_HELPERS = 64  # helper calls inlined into one region


def _target_names(t):
    """The names an assignment target binds (a name, a tuple or list of names), or None."""
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)) and all(isinstance(x, ast.Name) for x in t.elts):
        return [x.id for x in t.elts]
    return None


def first_axis_slice(index, n):
    """The start of a getitem template (ops/indexing.py) that is one slice of the first axis
    `x[a:b]` (step 1) of an axis of length n, else None."""
    items = index[0] if index else ()
    if len(items) != 1 or type(items[0]) is not tuple or items[0][0] != _SLICE or items[0][3] not in (None, 1):
        return None
    lo = items[0][1] or 0
    return min(max(lo + n if lo < 0 else lo, 0), n)


class CallsMixin:
    """Methods of region_code.Translator."""

    def comprehension(self, e, path, depth):
        """`[f(x) for x in items]` over a list or tuple known now (of arrays, constants): unrolled."""
        (gen,) = e.generators if len(e.generators) == 1 else (None,)
        names = _target_names(gen.target) if gen is not None and not gen.ifs and not gen.is_async else None
        items = self.value(gen.iter, path, depth) if names is not None else None
        if not isinstance(items, (list, tuple)):
            raise self.unsupported("a comprehension other than one `for` over a list of arrays")
        saved = {name: path.env.get(name) for name in names}
        out = []
        try:
            for item in items:
                parts = [item] if isinstance(gen.target, ast.Name) else list(item)
                if len(parts) != len(names):
                    raise self.unsupported("a comprehension target of another length")
                for name, x in zip(names, parts):
                    path.env[name] = ("array", x) if isinstance(x, (Sym, list, tuple)) else ("const", x)
                out.append(self.value(e.elt, path, depth))
        finally:
            for name, tag in saved.items():
                if tag is None:
                    path.env.pop(name, None)
                else:
                    path.env[name] = tag
        return out

    def callee(self, f, path):
        """The tag of a called expression: the function itself, a method of the region's object,
        or a constant (`np.tanh`, a helper function)."""
        if isinstance(f, ast.Name) and self.name_tag(f.id, path)[0] == "self":
            return ("self",)
        if self.is_obj_attr(f, path):
            tag = self.obj_attr(f.attr)
            if tag[0] == "method":
                return ("self",) if tag[1] is self.func else tag
        return ("const", self.static(f, path))

    def call(self, e, path, depth):
        if any(isinstance(a, ast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            raise self.unsupported("* or ** in a call")
        tag = self.callee(e.func, path)
        if tag[0] == "self":
            return self.recursive_call(e, path, depth)
        func = tag[1]
        if tag[0] == "method":
            return self.inline_helper(func, e, path, depth, bound=True)
        if isinstance(func, types.FunctionType) and func not in _FUNCTIONS \
                and getattr(func, "__module__", "") != "janus_like.ops.api":
            return self.inline_helper(func, e, path, depth, bound=False)
        args = [self.value(a, path, depth) for a in e.args]
        kwargs = {k.arg: self.value(k.value, path, depth) for k in e.keywords}
        if any(isinstance(v, Sym) for v in kwargs.values()):
            raise self.unsupported("an array passed by keyword")
        if isinstance(func, np.ufunc):
            impl = _UFUNCS.get(func)
            if impl is None or kwargs:
                raise self.unsupported(f"numpy.{func.__name__} here")
            return impl(*args)
        if func in _FUNCTIONS:
            return _FUNCTIONS[func](*args, **kwargs)
        if getattr(func, "__module__", "") in ("janus_like.ops.api",) or getattr(func, "__self__", None) is not None \
                and isinstance(func.__self__, Sym):
            return func(*args, **kwargs)
        raise self.unsupported(f"a call of {getattr(func, '__qualname__', func)!r}")

    def recursive_call(self, e, path, depth):
        if len(e.args) != 1 or e.keywords or not self.is_host(e.args[0], path):
            raise self.unsupported("a recursive call that is not on one host value")
        if self.aval is None:
            raise self.unsupported("a recursive call before the base case's return")
        self.flush(path, depth)
        avals = self.elems if self.elems is not None else (self.aval,)
        kinds = self.kind if self.elems is not None else (self.kind,)
        nodes = [ir.Node(ir.INPUT, (), {"slot": -1, "name": "call"}, aval) for aval in avals]
        var = f"c{nodes[0].id}"
        for k, node in enumerate(nodes):
            self.placeholders[node.id] = ("call", var, k, len(nodes))
            path.nodes.append(node)
        names = "".join(f"{_var(n)}, " for n in nodes) if self.elems is not None else _var(nodes[0])
        arg = self.host(e.args[0], path)
        self.lines.append("    " * depth + f"({names}), {var} = fwd({arg})")
        self.wlines.append("    " * depth + f"{var} = walk({arg})")
        items = tuple(Sym(n, kind) for n, kind in zip(nodes, kinds))
        return items if self.elems is not None else items[0]

    def inline_helper(self, func, e, path, depth, bound):
        """A helper's body (assignments, one return) translated in place, its names its own."""
        self.helpers += 1
        if self.helpers > MAX_HELPERS or e.keywords:
            raise self.unsupported(f"a call of {func.__qualname__} (helpers take positional arguments; "
                                   f"at most {MAX_HELPERS} calls)")
        fn_ast, free = self.gen.region_helper(func)
        a = fn_ast.args
        params = [p.arg for p in a.args]
        if a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs or a.defaults \
                or len(params) != len(e.args) + bound:
            raise self.unsupported(f"a call of {func.__qualname__} with {len(e.args)} arguments")
        prefix = f"u{self.helpers}_"
        env = {}
        for name, arg in zip(params[bound:], e.args):  # evaluated in the caller's scope
            host = self.is_host(arg, path)
            if host and self.all_const(arg, path):
                env[name] = ("const", self.static(arg, path))
            elif host:
                self.flush(path, depth)
                self.both(depth, f"{prefix}{name} = {self.host(arg, path)}")
                env[name] = ("host", f"{prefix}{name}")
            else:
                env[name] = ("array", self.array(arg, path, depth))
        outer, sub = self.scope, _Path(env=env)
        sub.nodes = path.nodes  # one straight line of operations with the caller's
        self.scope = _Scope(local_names(fn_ast), self.free_tags(free), prefix, params[0] if bound else None)
        try:
            for st in fn_ast.body:
                if isinstance(st, ast.Pass) or isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                    continue  # a docstring
                if isinstance(st, ast.Assign) and len(st.targets) == 1:
                    self.assign(st.targets[0], st.value, sub, depth)
                elif isinstance(st, ast.Return) and st.value is not None and not self.is_host(st.value, sub):
                    return self.array(st.value, sub, depth)
                else:
                    break
            raise self.unsupported(f"helper {func.__qualname__}: only assignments and a return of arrays")
        finally:
            self.scope = outer

    def host_number(self, e, path, depth):
        """A host value used by an array operation: a run-time int, checked to be one."""
        self.flush(path, depth)
        node = ir.Node(ir.INPUT, (), {"slot": -1, "name": "host", "python": True}, ((), np.dtype(np.int64)))
        node.hint = None
        self.placeholders[node.id] = ("host",)
        path.nodes.append(node)
        self.both(depth, f"{_var(node)} = {self.host(e, path)}")
        self.both(depth, f"if {_var(node)}.__class__ is not int: raise Mismatch('an int at line {e.lineno}')")
        return Sym(node, "py")

    def static(self, e, path):
        """The value of an expression of constants alone (`np.tanh`, `SCALE * 2`), evaluated now
        (the generator guards every constant it read), or Unsupported."""
        if not self.all_const(e, path):
            raise self.unsupported(f"a call of `{ast.unparse(e)}`, not a function fixed at generation")
        return eval(self.host(e, path), dict(self.em.globals))  # noqa: S307 (our own unparsed AST of constants)


def _var(node):
    return f"v{node.id}"
