"""The code of a recursion region (recursion.py stages it): the function's AST translated to a
forward function of Python host code and op expressions, and one backward function per return
site, both run by ops/recursion.py.

Host code (attribute reads, tests, the recursive calls) is kept as written, its names renamed;
each array expression is run on abstract values through a scratch GraphBuilder, so it becomes
the ops a graph would hold, and each op is emitted as the executor plan's NumPy expression
(executor/codegen.py) or a call of its kernel. A return site's backward applies the ops' own
gradient rules, last first, through another scratch builder, and is emitted the same way.
"""
from __future__ import annotations

import ast
import copy
import functools
import operator
import re

import numpy as np

from .. import ir
from ..executor.codegen import _DIRECT, _Emitter
from ..ops.recursion import Mismatch, Region, set_cotangent
from ..ops.registry import REGISTRY, _builder
from ..source import local_names
from ..tensor import Tensor, Variable
from .builder import GraphBuilder
from .region_backward import BackwardMixin
from .region_batch import BatchMixin
from .region_calls import CallsMixin, _Path, _Scope, _target_names, _var, first_axis_slice
from .values import BoundMethod, ObjRef, Sym, Unsupported

_HOST_CALLS = (len, isinstance)  # builtins a host expression may call
_JOINABLE = ("sigmoid", "tanh", "exp", "neg", "relu")  # element-wise ops of one operand (joined_gates)


class Translator(CallsMixin, BackwardMixin, BatchMixin):
    def __init__(self, func, fn_ast, free, site, reassociate=False, obj=None, gen=None):
        self.func, self.fn_ast, self.site = func, fn_ast, site
        self.reassociate = reassociate  # the weight gradients may be folded into one product
        self.name = func.__qualname__
        self.obj, self.gen = obj, gen  # a method's object (an ObjRef), the generator resolving its attributes
        a = fn_ast.args
        if a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs or a.defaults or len(a.args) != 1 + (obj is not None):
            raise self.unsupported("a recursive function of exactly one argument")
        self.param = a.args[-1].arg
        self.mini = GraphBuilder("region")
        self.lines: list[str] = []
        self.wlines: list = []  # the host walk of the batched form (region_batch.py): host code alone
        self.em = _Emitter()  # the plan's expressions, and the constants of all generated code
        self.em.globals["Mismatch"] = Mismatch
        self.em.globals["SETCOT"] = set_cotangent
        self.captured: list = []  # the graph values of the captured arrays, in argument order
        self.captured_names: list[str] = []  # their placeholders' names in the generated code
        self.placeholders: dict[int, tuple] = {}  # node id -> ("array", j) | ("call", var, item, n) | ("host",)
        self.attrs: dict[str, tuple] = {}  # the object's attributes read so far -> tags
        self.helpers = 0
        self.scope = _Scope(local_names(fn_ast), self.free_tags(free), "u_", a.args[0].arg if obj is not None else None)
        self.backs: list[GraphBuilder] = []
        self.back_parts: list[tuple] = []  # per return site: what its backward computes (region_batch.py)
        self.aval = None  # what every call returns: (shape, dtype), or a tuple of them (`elems`)
        self.kind = None  # "tensor" | "array", or a tuple of kinds
        self.elems = None
        self.paths: list[_Path] = []
        self.emitted = 0

    def free_tags(self, free):
        tags = {}
        for name, value in free.items():
            if value is self.func:
                tags[name] = ("self",)
            elif isinstance(value, Sym) and value.kind == "py":
                raise self.unsupported(f"the free name {name!r} (a Python number the graph reads at run time)")
            elif isinstance(value, Sym):  # a Variable or array read from a cell or global
                tags[name] = ("array", self._capture(value))
            elif isinstance(value, (ObjRef, Tensor, Variable)):
                raise self.unsupported(f"the free name {name!r} (an input object)")
            else:
                tags[name] = ("const", value)
        return tags

    def obj_attr(self, name):
        """The tag of `self.<name>` (the region's object, read through the generator: guarded)."""
        tag = self.attrs.get(name)
        if tag is None:
            value = self.gen.getattr(self.obj, name)
            if isinstance(value, BoundMethod) and value.self_value is self.obj:
                tag = ("method", value.func)
            elif isinstance(value, Sym) and value.kind != "py":
                tag = ("array", self._capture(value))
            elif isinstance(value, (Sym, ObjRef, BoundMethod, Tensor, Variable)):
                raise self.unsupported(f"the attribute self.{name} (not an array or a constant)")
            else:
                tag = ("const", value)
            self.attrs[name] = tag
        return tag

    def unsupported(self, what):
        return Unsupported("unsupported-syntax", f"recursion region {self.name}: {what}", self.site)

    def _capture(self, sym):
        j = len(self.captured)
        self.captured.append(sym)
        node = ir.Node(ir.INPUT, (), {"slot": -1, "name": f"a{j}"}, sym.node.aval)
        self.placeholders[node.id] = ("array", j)
        self.captured_names.append(_var(node))
        return Sym(node, sym.kind if sym.kind in ("tensor", "array") else "tensor")

    # ------------------------------------------------------------------ translate
    def translate(self):
        path = _Path(env={self.param: ("host", f"u_{self.param}")})
        if not self.block(self.fn_ast.body, path, 1):
            raise self.unsupported("a path that does not return an array")
        back_src = [self.backward(p) for p in self.paths]
        unpack = f"    {', '.join(self.captured_names)}, = arrays\n" if self.captured else ""
        src = f"def make(arrays, R):\n{unpack}    def fwd(u_{self.param}):\n"
        src += "\n".join("    " + line for line in self.lines) + "\n    return fwd\n"
        env = self.env()
        exec(compile(src, f"<janus_like region {self.name}>", "exec"), env)
        backwards = []
        for k, text in enumerate(back_src):
            benv = self.env()
            exec(compile(text, f"<janus_like region {self.name} backward {k}>", "exec"), benv)
            backwards.append(benv["back"])
        floats = frozenset(j for j, s in enumerate(self.captured) if np.dtype(s.node.aval[1]).kind == "f")
        region = Region(self.name, self.site, env["make"], backwards, self.aval, self.kind, floats, self.elems)
        region.source = src + "".join(back_src)
        region.batched = self.batched()
        region.batch_reason = self.batch_reason
        if region.batched is not None:
            region.batch_source = self.batch_source
        return region, self.captured

    def block(self, stmts, path, depth) -> bool:
        """Emit `stmts`; True when every way through them returns."""
        for st in stmts:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                continue  # a docstring
            if isinstance(st, ast.Pass):
                continue
            if isinstance(st, ast.Return):
                self.ret(st, path, depth)
                return True
            if isinstance(st, ast.Assign) and len(st.targets) == 1:
                self.assign(st.targets[0], st.value, path, depth)
                continue
            if isinstance(st, ast.If):
                if self.stmt_if(st, path, depth):
                    return True
                continue
            raise self.unsupported(f"a `{type(st).__name__}` statement (line {getattr(st, 'lineno', '?')})")
        return False

    def stmt_if(self, st, path, depth) -> bool:
        self.flush(path, depth)
        self.both(depth, f"if {self.host(st.test, path)}:")
        ends = []
        for i, body in enumerate((st.body, st.orelse)):
            if i == 1:
                self.both(depth, "else:")
            branch = _Path(path.nodes, path.env)
            returns = self.block(body, branch, depth + 1)
            if not returns:
                self.flush(branch, depth + 1)
                if len(branch.nodes) != len(path.nodes) or any(
                        _tag(branch.env.get(k)) == "array" and branch.env.get(k)[1] is not _sym(path.env.get(k))
                        for k in branch.env):
                    raise self.unsupported("an array computed in an `if` branch that does not return")
                for k, v in branch.env.items():  # host names bound in the branch stay host names
                    path.env.setdefault(k, v)
            self.both(depth + 1, "pass")
            ends.append(returns)
        return all(ends)

    def assign(self, target, value, path, depth):
        names = _target_names(target)
        if names is None:
            raise self.unsupported(f"an assignment to `{ast.unparse(target)}`")
        if self.is_host(value, path):
            self.flush(path, depth)
            line = self.host(value, path)
            for name in names:
                path.env[name] = ("host", f"{self.scope.prefix}{name}")
            self.both(depth, f"{self.host(target, path)} = {line}")
            return
        out = self.array(value, path, depth)
        if isinstance(target, ast.Name):
            path.env[target.id] = ("array", out)
            return
        if not isinstance(out, (tuple, list)) or len(out) != len(names):
            raise self.unsupported(f"unpacking `{ast.unparse(value)}` into {len(names)} names")
        for name, item in zip(names, out):
            path.env[name] = ("array", item)

    def ret(self, st, path, depth):
        if st.value is None or self.is_host(st.value, path):
            raise self.unsupported("a return of something other than an array")
        out = self.array(st.value, path, depth)
        items = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if not items or not all(isinstance(x, Sym) and x.kind != "py" for x in items):
            raise self.unsupported("a return of something other than an array or a tuple of arrays")
        self.flush(path, depth)
        avals = tuple((tuple(x.node.aval[0]), np.dtype(x.node.aval[1])) for x in items)
        kinds = tuple(x.kind for x in items)
        many = isinstance(out, (tuple, list))
        if many and (len({a[1] for a in avals}) != 1 or set(kinds) != {"tensor"}):
            raise self.unsupported("a tuple return of arrays of different dtypes, or of NumPy arrays")
        aval, kind = (avals, kinds) if many else (avals[0], kinds[0])
        if self.aval is None:
            self.aval, self.kind, self.elems = aval, kind, (avals if many else None)
        elif aval != self.aval or kind != self.kind:
            raise self.unsupported(f"returns of different shapes or kinds ({aval} and {self.aval})")
        for x in items:
            if self.placeholders.get(x.node.id, ("",))[0] == "array" or x.node not in path.nodes:
                raise self.unsupported("a return of a captured array itself")
        k = len(self.paths)
        self.paths.append(_Path(path.nodes, {"out": items}))
        pad = "    " * depth
        self.lines.append(pad + f"R.append(({k}, {', '.join(self.saved(path))}))")
        value = "".join(f"{_var(x.node)}, " for x in items) if many else _var(items[0].node)
        self.lines.append(pad + f"return ({value}), len(R) - 1")
        hosts, calls = self.site_inputs(path)
        level = "0" if not calls else f"max({', '.join(f'R[{c}][1]' for c in calls)}, 0) + 1"
        self.wlines.append((pad, k, level, calls, hosts))  # the record, padded once all sites are known
        self.wlines.append(pad + "return len(R) - 1")

    def both(self, depth, text):
        """A line of host code: in the forward and in the host walk."""
        self.lines.append("    " * depth + text)
        self.wlines.append("    " * depth + text)

    def site_inputs(self, path):
        """(host numbers, recursive calls) a return site's array code reads: their names."""
        hosts, calls = [], []
        for n in path.nodes:
            tag = self.placeholders.get(n.id, ("",))
            if tag[0] == "host":
                hosts.append(_var(n))
            elif tag[0] == "call" and tag[1] not in calls:
                calls.append(tag[1])
        return hosts, calls

    def saved(self, path):
        names = []
        for n in path.nodes:
            names.append(_var(n))
            tag = self.placeholders.get(n.id, ("",))
            if tag[0] == "call" and tag[1] not in names:
                names.append(tag[1])
        return names

    # ------------------------------------------------------------------ host expressions
    def is_host(self, e, path) -> bool:
        for n in self.walk(e, path):
            if isinstance(n, ast.Name):
                tag = self.name_tag(n.id, path)
                if tag[0] in ("array", "self", "obj", "method"):
                    return False
                if tag[0] == "const" and isinstance(tag[1], (np.ndarray, np.generic)):
                    return False
            elif isinstance(n, ast.Call):
                f = n.func
                if not (isinstance(f, ast.Name) and self.name_tag(f.id, path)[0] == "const"
                        and any(self.name_tag(f.id, path)[1] is h for h in _HOST_CALLS)):
                    return False
            elif isinstance(n, (ast.ListComp, ast.GeneratorExp)):
                return False  # over arrays: unrolled by `value`
            elif isinstance(n, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.SetComp,
                                ast.DictComp)):
                raise self.unsupported(f"a `{type(n).__name__}` expression")
        return True

    def walk(self, e, path):
        """The nodes of `e`, with `self.<attr>` (the region's object) given as a Name node
        standing for the attribute (tagged by `name_tag` as `obj_attr` says)."""
        todo = [e]
        while todo:
            n = todo.pop()
            if self.is_obj_attr(n, path):
                yield ast.Name(f"self.{n.attr}", ast.Load())
                continue
            yield n
            todo.extend(ast.iter_child_nodes(n))

    def is_obj_attr(self, n, path):
        return isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id not in path.env \
            and n.value.id == self.scope.obj

    def name_tag(self, name, path):
        if name in path.env:
            return path.env[name]
        if name.startswith("self.") and self.scope.obj is not None:
            return self.obj_attr(name[5:])
        if name == self.scope.obj:
            return ("obj",)
        if name in self.scope.own:
            raise self.unsupported(f"{name!r} read where it may be unbound")
        if name not in self.scope.free:
            raise self.unsupported(f"the name {name!r}")
        return self.scope.free[name]

    def all_const(self, e, path):
        return all(self.name_tag(n.id, path)[0] == "const" for n in self.walk(e, path) if isinstance(n, ast.Name))

    def host(self, e, path) -> str:
        """Python source for a host expression: local names renamed, free names and the object's
        attributes constants."""
        me = self

        class Rename(ast.NodeTransformer):
            def visit_Attribute(self, n):
                if me.is_obj_attr(n, path):
                    tag = me.obj_attr(n.attr)
                    if tag[0] != "const":
                        raise me.unsupported(f"self.{n.attr} in host code")
                    return ast.copy_location(ast.Name(me.em.const(tag[1]), ast.Load()), n)
                return self.generic_visit(n)

            def visit_Name(self, n):
                tag = me.name_tag(n.id, path)
                if tag[0] == "const":
                    return ast.copy_location(ast.Name(me.em.const(tag[1]), ast.Load()), n)
                if tag[0] != "host":
                    raise me.unsupported(f"{n.id!r} in host code")
                return ast.copy_location(ast.Name(tag[1], ast.Load()), n)

        return ast.unparse(Rename().visit(copy.deepcopy(e)))

    # ------------------------------------------------------------------ array expressions
    def array(self, e, path, depth):
        previous = _builder[0]
        _builder[0] = self.mini
        try:
            return self.value(e, path, depth)
        except Unsupported:
            raise
        except Exception as exc:  # the op's own error on these shapes: eager would raise it too
            raise Unsupported("op-error", f"recursion region {self.name}: {exc}", self.site) from exc
        finally:
            _builder[0] = previous

    def value(self, e, path, depth):
        if self.is_host(e, path):
            if self.all_const(e, path):
                return self.static(e, path)
            return self.host_number(e, path, depth)
        if self.is_obj_attr(e, path):
            tag = self.obj_attr(e.attr)
            if tag[0] in ("array", "const"):
                return tag[1]
            raise self.unsupported(f"self.{e.attr} used as a value")
        if isinstance(e, ast.Name):
            tag = self.name_tag(e.id, path)
            if tag[0] == "array":
                return tag[1]
            if tag[0] == "const":
                return tag[1]
            raise self.unsupported(f"{e.id!r} used as a value")
        if isinstance(e, ast.Attribute):
            return getattr(self.value(e.value, path, depth), e.attr)
        if isinstance(e, ast.BinOp):
            return _BINOPS[type(e.op)](self.value(e.left, path, depth), self.value(e.right, path, depth))
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return -self.value(e.operand, path, depth)
        if isinstance(e, (ast.List, ast.Tuple)):
            items = [self.value(x, path, depth) for x in e.elts]
            return items if isinstance(e, ast.List) else tuple(items)
        if isinstance(e, ast.Subscript):
            base = self.value(e.value, path, depth)
            return base[self.index(e.slice, path, depth)]
        if isinstance(e, ast.Call):
            return self.call(e, path, depth)
        if isinstance(e, (ast.ListComp, ast.GeneratorExp)):
            return self.comprehension(e, path, depth)
        raise self.unsupported(f"a `{type(e).__name__}` expression")

    def index(self, e, path, depth):
        if isinstance(e, ast.Slice):
            parts = [None if p is None else self.value(p, path, depth) for p in (e.lower, e.upper, e.step)]
            if any(isinstance(p, Sym) for p in parts):
                raise self.unsupported("a slice with run-time bounds")
            return slice(*parts)
        if isinstance(e, ast.Tuple):
            return tuple(self.index(x, path, depth) for x in e.elts)
        return self.value(e, path, depth)

    def flush(self, path, depth):
        """Forward lines for the scratch builder's new op nodes (in the order they were made)."""
        nodes = self.mini.graph.nodes
        pad = "    " * depth
        joined = self.joined_gates(nodes[self.emitted:]) if self.reassociate else {}
        for n in nodes[self.emitted:]:
            self.lines.append(pad + (joined[n.id] if n.id in joined else self.line(n)))
            path.nodes.append(n)
        self.emitted = len(nodes)

    def joined_gates(self, nodes):
        """{node id: line} for one op applied to adjacent slices of one vector (a split's gates:
        `F.sigmoid(i), F.sigmoid(f), F.sigmoid(o)`): the op runs once on their union, each
        node's value a view of the result. The same element-wise values from fewer calls; only
        where the graph may reassociate, as the other regrouping."""
        groups = {}
        for n in nodes:
            x = n.inputs[0] if n.op in _JOINABLE and len(n.inputs) == 1 and not n.params else None
            if not (isinstance(x, ir.Node) and x.op == "getitem" and len(x.inputs) == 1
                    and isinstance(x.inputs[0], ir.Node) and len(x.inputs[0].aval[0]) == 1):
                continue
            base = x.inputs[0]
            lo = first_axis_slice(x.params.get("index"), base.aval[0][0])
            if lo is not None:
                groups.setdefault((n.op, base.id), []).append((lo, lo + x.aval[0][0], n, base))
        out = {}
        for (op, _), members in groups.items():
            members.sort(key=lambda m: m[0])
            runs, run = [], [members[0]]
            for m in members[1:]:
                if m[0] == run[-1][1]:
                    run.append(m)
                else:
                    runs.append(run)
                    run = [m]
            runs.append(run)
            for run in (r for r in runs if len(r) > 1):
                lo, hi, base = run[0][0], run[-1][1], run[0][3]
                first = min((m[2] for m in run), key=nodes.index)
                t = f"t{first.id}"
                expr = self.line(first).split(" = ", 1)[1]  # the op on its slice, then on the union
                if re.fullmatch(rf"[\w.]+\({_var(first.inputs[0])}\)", expr) is None:
                    continue  # not a plain call of its operand (shapes written into it)
                expr = expr.replace(f"({_var(first.inputs[0])})", f"({_var(base)}[{lo}:{hi}])")
                for a, b, n, _ in run:
                    out[n.id] = f"{_var(n)} = {t}[{a - lo}:{b - lo}]"
                out[first.id] = f"{t} = {expr}; {out[first.id]}"
        return out

    def line(self, n):
        """`v<id> = <expression>` for op node n: the executor plan's NumPy expression where it has
        one, else a call of the op's kernel."""
        if n.op in ir.STRUCTURAL or n.op not in REGISTRY:
            raise self.unsupported(f"the operation {n.op!r}")
        expr = self.em.inline(n)
        if expr is None and n.op in _DIRECT and not n.params:
            expr = f"np.{_DIRECT[n.op]}({self.em.ufunc_args(n)})"
        if expr is None:
            kernel = REGISTRY[n.op].kernel
            fn = functools.partial(kernel, **n.params) if n.params else kernel
            expr = f"{self.em.const(fn)}({', '.join(self.em.arg(x) for x in n.inputs)})"
        return f"{_var(n)} = {expr}"

    def operand(self, x):
        return _var(x) if isinstance(x, ir.Node) else self.em.const(x)

    def env(self):
        """Globals of the generated functions: the emitter's constants, the scratch graphs' constants."""
        env = dict(self.em.globals)
        for b in (self.mini, *self.backs):
            env.update((_var(c), c.params["value"]) for c in b.prelude if c.op == ir.CONST)
        return env

def _tag(v):
    return v[0] if v else None


def _sym(v):
    return v[1] if v and v[0] == "array" else None


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.MatMult: operator.matmul, ast.Pow: operator.pow}

__all__ = ["Translator"]
