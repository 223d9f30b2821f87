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

import numpy as np

from .. import ir
from ..executor.codegen import _DIRECT, _Emitter
from ..ops.indexing import _SLOT
from ..ops.recursion import Mismatch, Region
from ..ops.registry import REGISTRY, _builder
from ..source import local_names
from ..tensor import _FUNCTIONS, _UFUNCS, Tensor, Variable
from .builder import GraphBuilder
from .values import ObjRef, Sym, Unsupported

_HOST_CALLS = (len, isinstance)  # builtins a host expression may call
_ROW = (((_SLOT, 0),), True)  # getitem's index template (ops/indexing.py) for `a[i]`, i a run-time int


class _Path:
    """The array operations on the way to one `return` (a copy is taken at each `if`)."""

    def __init__(self, nodes=(), env=None):
        self.nodes = list(nodes)
        self.env = dict(env or {})


class Translator:
    def __init__(self, func, fn_ast, free, site, reassociate=False):
        self.func, self.fn_ast, self.site = func, fn_ast, site
        self.reassociate = reassociate  # the weight gradients may be folded into one product
        self.name = func.__qualname__
        a = fn_ast.args
        if a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs or a.defaults or len(a.args) != 1:
            raise self.unsupported("a recursive function of exactly one argument")
        self.param = a.args[0].arg
        self.mini = GraphBuilder("region")
        self.lines: list[str] = []
        self.own = local_names(fn_ast)
        self.em = _Emitter()  # the plan's expressions, and the constants of all generated code
        self.em.globals["Mismatch"] = Mismatch
        self.captured: list = []  # the graph values of the captured arrays, in argument order
        self.captured_names: list[str] = []  # their placeholders' names in the generated code
        self.placeholders: dict[int, tuple] = {}  # placeholder node id -> ("array", j) | ("call",) | ("host",)
        self.free = {}
        for name, value in free.items():
            if value is func:
                self.free[name] = ("self",)
            elif isinstance(value, Sym) and value.kind == "py":
                raise self.unsupported(f"the free name {name!r} (a Python number the graph reads at run time)")
            elif isinstance(value, Sym):  # a Variable or array read from a cell or global
                self.free[name] = ("array", self._capture(value))
            elif isinstance(value, (ObjRef, Tensor, Variable)):
                raise self.unsupported(f"the free name {name!r} (an input object)")
            else:
                self.free[name] = ("const", value)
        self.backs: list[GraphBuilder] = []
        self.aval = None
        self.kind = None
        self.paths: list[_Path] = []
        self.emitted = 0

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
        path = _Path()
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
        region = Region(self.name, self.site, env["make"], backwards, self.aval, self.kind, floats)
        region.source = src + "".join(back_src)
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
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                self.assign(st.targets[0].id, st.value, path, depth)
                continue
            if isinstance(st, ast.If):
                if self.stmt_if(st, path, depth):
                    return True
                continue
            raise self.unsupported(f"a `{type(st).__name__}` statement (line {getattr(st, 'lineno', '?')})")
        return False

    def stmt_if(self, st, path, depth) -> bool:
        self.flush(path, depth)
        self.lines.append("    " * depth + f"if {self.host(st.test, path)}:")
        ends = []
        for i, body in enumerate((st.body, st.orelse)):
            if i == 1:
                self.lines.append("    " * depth + "else:")
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
            self.lines.append("    " * (depth + 1) + "pass")
            ends.append(returns)
        return all(ends)

    def assign(self, name, value, path, depth):
        if self.is_host(value, path):
            self.flush(path, depth)
            self.lines.append("    " * depth + f"u_{name} = {self.host(value, path)}")
            path.env[name] = ("host",)
        else:
            path.env[name] = ("array", self.array(value, path, depth))

    def ret(self, st, path, depth):
        if st.value is None or self.is_host(st.value, path):
            raise self.unsupported("a return of something other than an array")
        out = self.array(st.value, path, depth)
        if not isinstance(out, Sym):
            raise self.unsupported("a return of something other than an array")
        self.flush(path, depth)
        aval = (tuple(out.node.aval[0]), np.dtype(out.node.aval[1]))
        if self.aval is None:
            self.aval, self.kind = aval, out.kind
        elif aval != self.aval or out.kind != self.kind:
            raise self.unsupported(f"returns of different shapes or kinds ({aval} and {self.aval})")
        k = len(self.paths)
        self.paths.append(_Path(path.nodes, {"out": out}))
        saved = self.saved(path)
        pad = "    " * depth
        if self.placeholders.get(out.node.id, ("",))[0] == "array" or out.node not in path.nodes:
            raise self.unsupported("a return of a captured array itself")
        self.lines.append(pad + f"R.append(({k}, {', '.join(saved)}))")
        self.lines.append(pad + f"return {_var(out.node)}, len(R) - 1")

    def saved(self, path):
        names = []
        for n in path.nodes:
            names.append(_var(n))
            if self.placeholders.get(n.id, ("",))[0] == "call":
                names.append(f"c{n.id}")
        return names

    # ------------------------------------------------------------------ host expressions
    def is_host(self, e, path) -> bool:
        for n in ast.walk(e):
            if isinstance(n, ast.Name):
                tag = self.name_tag(n.id, path)
                if tag[0] in ("array", "self"):
                    return False
                if tag[0] == "const" and isinstance(tag[1], (np.ndarray, np.generic)):
                    return False
            elif isinstance(n, ast.Call):
                f = n.func
                if not (isinstance(f, ast.Name) and self.name_tag(f.id, path)[0] == "const"
                        and any(self.name_tag(f.id, path)[1] is h for h in _HOST_CALLS)):
                    return False
            elif isinstance(n, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.ListComp,
                                ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                raise self.unsupported(f"a `{type(n).__name__}` expression")
        return True

    def name_tag(self, name, path):
        if name == self.param:
            return ("host",)
        if name in path.env:
            return path.env[name]
        if name in self.own:
            raise self.unsupported(f"{name!r} read where it may be unbound")
        return self.free[name]

    def host(self, e, path) -> str:
        """Python source for a host expression: local names renamed, free names constants."""
        me = self

        class Rename(ast.NodeTransformer):
            def visit_Name(self, n):
                tag = me.name_tag(n.id, path)
                if tag[0] == "const":
                    return ast.copy_location(ast.Name(me.em.const(tag[1]), ast.Load()), n)
                return ast.copy_location(ast.Name(f"u_{n.id}", ast.Load()), n)

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
            if all(self.name_tag(n.id, path)[0] == "const" for n in ast.walk(e) if isinstance(n, ast.Name)):
                return self.static(e, path)
            return self.host_number(e, path, depth)
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

    def call(self, e, path, depth):
        if isinstance(e.func, ast.Name) and self.name_tag(e.func.id, path)[0] == "self":
            if len(e.args) != 1 or e.keywords or not self.is_host(e.args[0], path):
                raise self.unsupported("a recursive call that is not on one host value")
            if self.aval is None:
                raise self.unsupported("a recursive call before the base case's return")
            self.flush(path, depth)
            node = ir.Node(ir.INPUT, (), {"slot": -1, "name": "call"}, self.aval)
            self.placeholders[node.id] = ("call",)
            path.nodes.append(node)
            self.lines.append("    " * depth + f"{_var(node)}, c{node.id} = fwd({self.host(e.args[0], path)})")
            return Sym(node, self.kind)
        func = self.static(e.func, path)
        args = [self.value(a, path, depth) for a in e.args]
        if any(isinstance(a, ast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            raise self.unsupported("* or ** in a call")
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

    def host_number(self, e, path, depth):
        """A host value used by an array operation: a run-time int, checked to be one."""
        self.flush(path, depth)
        node = ir.Node(ir.INPUT, (), {"slot": -1, "name": "host", "python": True}, ((), np.dtype(np.int64)))
        node.hint = None
        self.placeholders[node.id] = ("host",)
        path.nodes.append(node)
        pad = "    " * depth
        self.lines.append(pad + f"{_var(node)} = {self.host(e, path)}")
        self.lines.append(pad + f"if {_var(node)}.__class__ is not int: raise Mismatch('an int at line {e.lineno}')")
        return Sym(node, "py")

    def static(self, e, path):
        """The value of an expression of constants alone (`np.tanh`, `SCALE * 2`), evaluated now
        (the generator guards every constant it read), or Unsupported."""
        if not all(self.name_tag(n.id, path)[0] == "const" for n in ast.walk(e) if isinstance(n, ast.Name)):
            raise self.unsupported(f"a call of `{ast.unparse(e)}`, not a function fixed at generation")
        return eval(self.host(e, path), dict(self.em.globals))  # noqa: S307 (our own unparsed AST of constants)

    def flush(self, path, depth):
        """Forward lines for the scratch builder's new op nodes (in the order they were made)."""
        nodes = self.mini.graph.nodes
        pad = "    " * depth
        for n in nodes[self.emitted:]:
            self.lines.append(pad + self.line(n))
            path.nodes.append(n)
        self.emitted = len(nodes)

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

    # ------------------------------------------------------------------ backward
    def backward(self, path):
        """Source of one return site's `back(rec, g, cot, acc, arrays)`: the ops' own gradient
        rules run on the scratch values, last op first (as a graph's tape does), emitted like
        the forward; what reaches a recursive call's result becomes its record's cotangent, what
        reaches a captured array goes to the accumulators (ops/recursion.py), in eager's order."""
        out = path.env["out"]
        needs = set()
        for n in path.nodes:
            tag = self.placeholders.get(n.id)
            if tag is not None:
                if tag[0] == "call":
                    needs.add(n.id)
            elif np.dtype(n.aval[1]).kind in "fc" and any(self._needs(x, needs) for x in n.inputs):
                needs.add(n.id)
        back = GraphBuilder("region backward")
        self.backs.append(back)
        g_node = ir.Node(ir.INPUT, (), {"slot": -1, "name": "g"}, self.aval)
        grads = {out.node.id: Sym(g_node, "tensor")}
        actions = []  # (statement with {} for the value, value)
        previous = _builder[0]
        _builder[0] = back
        try:
            for n in reversed(path.nodes):
                gn = grads.get(n.id)
                if gn is None or n.id not in needs:
                    continue
                if n.id in self.placeholders:  # a recursive call's result
                    actions.append((f"cot[c{n.id}] = {{}}", gn))
                    continue
                row = self._row_of(n)
                if row is not None:
                    actions.append((f"acc.rows[{row}].append({{}}); acc.rows_at[{row}].append({_var(n.inputs[1])})",
                                    gn))
                    continue
                folded = self._folded(n)
                if folded is not None:
                    actions.append((f"acc.xs[{folded}].append({_var(n.inputs[0])}); acc.gs[{folded}].append({{}})",
                                    gn))
                ins = [Sym(x, "tensor") if isinstance(x, ir.Node) else x for x in n.inputs]
                in_grads = REGISTRY[n.op].vjp(gn, Sym(n, "tensor"), *ins, **n.params)
                for i, (x, gx) in enumerate(zip(n.inputs, in_grads)):
                    if gx is None or not self._needs(x, needs) or (folded is not None and i == 1):
                        continue
                    tag = self.placeholders.get(x.id)
                    if tag is not None and tag[0] == "array":
                        actions.append((f"acc.plain[{tag[1]}].append({{}})", gx))
                    else:
                        grads[x.id] = gx if x.id not in grads else grads[x.id] + gx
        except Unsupported:
            raise
        except Exception as exc:
            raise Unsupported("op-error", f"recursion region {self.name}: a gradient rule ({exc})", self.site) from exc
        finally:
            _builder[0] = previous
        live = self._live([v for _, v in actions])
        lines = ["def back(rec, g, cot, acc, arrays):", f"    _k, {', '.join(self.saved(path))} = rec",
                 f"    {_var(g_node)} = g"]
        if self.captured:
            lines.append(f"    {', '.join(self.captured_names)}, = arrays")
        lines += ["    " + self.line(n) for n in back.graph.nodes if n.id in live]
        lines += ["    " + code.format(self.operand(v.node if isinstance(v, Sym) else v)) for code, v in actions]
        return "\n".join(lines) + "\n"

    @staticmethod
    def _live(values):
        """Ids of the nodes `values` need (the rules' unwanted cotangents are left out)."""
        live, todo = set(), [v.node for v in values if isinstance(v, Sym)]
        while todo:
            n = todo.pop()
            if n.id in live:
                continue
            live.add(n.id)
            todo.extend(x for x in n.inputs if isinstance(x, ir.Node))
        return live

    def _needs(self, x, needs):
        if not isinstance(x, ir.Node):
            return False
        tag = self.placeholders.get(x.id)
        if tag is not None and tag[0] == "array":
            return np.dtype(x.aval[1]).kind in "fc"
        return x.id in needs

    def _row_of(self, n):
        """j when n is `a_j[i]` (a row of captured array j by a run-time int), else None."""
        if n.op != "getitem" or n.params.get("index") != _ROW or len(n.inputs) != 2:
            return None
        tag = self.placeholders.get(getattr(n.inputs[0], "id", None))
        return tag[1] if tag is not None and tag[0] == "array" and len(n.inputs[0].aval[0]) >= 1 else None

    def _folded(self, n):
        """j when n is `x @ a_j` with x a vector and a_j a captured matrix, else None (always
        None unless the graph may reassociate: the per-call products are then summed as one)."""
        if not self.reassociate or n.op != "matmul" or n.params or len(n.inputs) != 2:
            return None
        x, a = n.inputs
        tag = self.placeholders.get(getattr(a, "id", None))
        if tag is None or tag[0] != "array" or not isinstance(x, ir.Node) or len(x.aval[0]) != 1 \
                or len(a.aval[0]) != 2 or np.dtype(x.aval[1]) != np.dtype(a.aval[1]):
            return None
        return tag[1]


def _tag(v):
    return v[0] if v else None


def _sym(v):
    return v[1] if v and v[0] == "array" else None


def _var(node):
    return f"v{node.id}"


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.MatMult: operator.matmul, ast.Pow: operator.pow}

__all__ = ["Translator"]
