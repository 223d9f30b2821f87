"""Function source → AST with the file's real line numbers (shared by profiler and graphgen).

Sites are keyed by (filename, lineno, col_offset) of an AST node, so an observation the profiler
made at `model.py:42` is found again by the generator walking the same node.
"""
from __future__ import annotations

import ast
import functools
import inspect
import linecache
import os
import textwrap


@functools.lru_cache(maxsize=4096)
def in_packages(module, packages):
    """Whether `module` is one of `packages` or inside one: a user's `numpy_utils` or `mathlib`
    module is not NumPy's or `math`'s."""
    return module in packages or module.startswith(tuple(p + "." for p in packages))


class NoSource(Exception):
    pass


@functools.lru_cache(maxsize=1024)
def _parse_cached(filename, firstlineno, code):
    return _parse(code)


def _parse(code):
    if code.co_name == "<lambda>":
        return _mangled(_lambda(code), code)
    found = _from_own_lines(code)
    if found is not None and _matches(found, code):
        return _mangled(found, code)
    try:
        lines, first = inspect.getsourcelines(code)
    except (OSError, TypeError) as exc:
        raise NoSource(str(exc)) from None
    text = textwrap.dedent("".join(lines))
    try:
        module = ast.parse(text)
    except SyntaxError as exc:  # e.g. a lambda in the middle of an expression
        raise NoSource(f"cannot parse source: {exc}") from None
    ast.increment_lineno(module, first - 1)
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not _matches(node, code):  # the file was edited since the function was loaded
                raise NoSource(f"the source at {os.path.basename(code.co_filename)}:{code.co_firstlineno} is no "
                               f"longer {code.co_name}() (the file changed since it was loaded)")
            return _mangled(node, code)
    raise NoSource("source is not a function definition")


def _matches(node, code) -> bool:
    """Whether a parsed definition is the code object's: its name and its parameters."""
    a = node.args
    cls = _mangling_class(code)
    params = tuple(mangle(p.arg, cls) for p in a.posonlyargs + a.args + a.kwonlyargs)
    return node.name == code.co_name and params == code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def mangle(name: str, cls) -> str:
    """`name` as Python compiles it in the body of class `cls` (None: outside any class): a
    private `__x` becomes `_Cls__x`."""
    if cls is None or not name.startswith("__") or name.endswith("__") or "." in name:
        return name
    stripped = cls.lstrip("_")
    return f"_{stripped}{name}" if stripped else name


def _mangling_class(code):
    """The innermost class whose body the code was written in, by its qualified name (a name
    followed by `<locals>` is a function's)."""
    parts = code.co_qualname.split(".")[:-1]
    cls = None
    for i, part in enumerate(parts):
        if part != "<locals>" and (i + 1 == len(parts) or parts[i + 1] != "<locals>"):
            cls = part
    return cls


class _Mangler(ast.NodeTransformer):
    """Private names of a function written in a class, as the compiler mangled them in its code
    (`self.__h` reads `_RNN__h`): the profiler's copy and the generator read what eager reads. A
    class defined inside keeps its own names (its body mangles them by its own name)."""

    def __init__(self, cls):
        self.cls = cls

    def visit_ClassDef(self, node):
        node.name = mangle(node.name, self.cls)
        return node

    def visit_Name(self, node):
        node.id = mangle(node.id, self.cls)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = mangle(node.attr, self.cls)
        return node

    def visit_arg(self, node):
        self.generic_visit(node)
        node.arg = mangle(node.arg, self.cls)
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        node.arg = node.arg and mangle(node.arg, self.cls)
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.name = mangle(node.name, self.cls) if node is not self.top else node.name
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Global(self, node):
        node.names = [mangle(n, self.cls) for n in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_ExceptHandler(self, node):
        self.generic_visit(node)
        node.name = node.name and mangle(node.name, self.cls)
        return node


def _mangled(node, code):
    cls = _mangling_class(code)
    if cls is not None:  # (a no-op on names that are not private)
        mangler = _Mangler(cls)
        mangler.top = node
        mangler.visit(node)
    return node


def _from_own_lines(code):
    """The function's definition parsed from its own lines: from its first line (its first
    decorator's) to the last line any of its instructions (or a nested function's) comes from;
    None when they are not a whole definition, or the next line with code is indented deeper.
    The standard library's `inspect.getsourcelines` finds the end by tokenizing the rest of the
    file, and the first time it maps every loaded module to its real path: 18-27 ms for the LSTM
    step's three functions, most of the profiler's set-up on the first call. A statement after
    the last instruction may compile to nothing (a lone string, dead code): the next-line check
    then leaves the decision to inspect."""
    linecache.checkcache(code.co_filename)  # a file edited since: its new text, as inspect reads it
    lines = linecache.getlines(code.co_filename)
    first, last = code.co_firstlineno, _last_line(code)
    if not lines or last > len(lines) or last < first or not _ends_at(lines, first, last):
        return None
    try:
        module = ast.parse(textwrap.dedent("".join(lines[first - 1:last])))
    except (SyntaxError, ValueError):
        return None
    body = module.body
    if len(body) != 1 or not isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) \
            or body[0].name != code.co_name:
        return None
    ast.increment_lineno(module, first - 1)
    return body[0]


def _ends_at(lines, first, last) -> bool:
    """The first line after `last` with code on it is indented no deeper than the definition."""
    indent = len(lines[first - 1]) - len(lines[first - 1].lstrip())
    for line in lines[last:]:
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            return len(line) - len(stripped) <= indent
    return True


def _last_line(code) -> int:
    last = max((p[1] for p in code.co_positions() if p[1] is not None), default=code.co_firstlineno)
    for k in code.co_consts:
        if isinstance(k, type(code)):
            last = max(last, _last_line(k))
    return last


def _lambda(code):
    """A lambda as the FunctionDef `def <lambda>(args): return body`, its nodes at their places
    in the file. The lambda is the one on its first line whose body starts where one of the
    code object's instructions does (two lambdas there with the same start: no source)."""
    text = "".join(linecache.getlines(code.co_filename))
    if not text:
        raise NoSource(f"no source file for the lambda at {os.path.basename(code.co_filename)}:{code.co_firstlineno}")
    try:
        module = ast.parse(text)
    except SyntaxError as exc:
        raise NoSource(f"cannot parse source: {exc}") from None
    starts = {(p[0], p[2]) for p in code.co_positions() if p[0] is not None}
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    found = [n for n in ast.walk(module) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno
             and (n.body.lineno, n.body.col_offset) in starts
             and tuple(a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs) == params]
    if len(found) != 1:
        raise NoSource(f"{len(found) or 'no'} lambdas match the one at "
                       f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}")
    return lambda_as_def(found[0])


def lambda_as_def(lam: ast.Lambda) -> ast.FunctionDef:
    """`lambda args: body` as `def <lambda>(args): return body`, at the lambda's place."""
    ret = ast.copy_location(ast.Return(value=lam.body), lam.body)
    fn = ast.FunctionDef(name="<lambda>", args=lam.args, body=[ret], decorator_list=[], returns=None,
                         type_comment=None)
    return ast.copy_location(fn, lam)


def local_names(fn_ast) -> frozenset:
    """The names local to a function (parameters, names bound in its body, not declared global
    or nonlocal), by Python's scoping rules: nested functions, lambdas, classes and
    comprehensions have their own scopes (only a nested def's or class's own name binds here)."""
    a = fn_ast.args
    names = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    names.update(p.arg for p in (a.vararg, a.kwarg) if p is not None)
    declared = set()
    todo = list(fn_ast.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            todo.extend(node.decorator_list)
            continue
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.NamedExpr):
            names.add(node.target.id)
        todo.extend(ast.iter_child_nodes(node))
    return frozenset(names - declared)


def function_ast(func) -> ast.FunctionDef:
    """The FunctionDef of a Python function, with decorators removed from consideration."""
    code = getattr(func, "__code__", None)
    if code is None:
        raise NoSource(f"{func!r} has no Python source")
    # code objects compare equal across files (co_filename is not part of equality): key on both
    return _parse_cached(code.co_filename, code.co_firstlineno, code)


def site_key(filename: str, node: ast.AST) -> tuple:
    return (filename, node.lineno, node.col_offset)


def site_text(filename: str, node: ast.AST) -> str:
    return f"{os.path.basename(filename)}:{getattr(node, 'lineno', '?')}"


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def scope_nodes(nodes, boundary=SCOPES):
    """Every node under `nodes` (themselves included) that belongs to their scope: a `boundary`
    node (by default a nested function, lambda or class) is yielded but not entered."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, boundary):
            todo.extend(ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=4096)
def has_yield(fn_node: ast.FunctionDef) -> bool:
    """Whether the function is a generator or a coroutine: `async def`, or a yield or an await in
    its own body (not in a function, lambda or class nested in it). Cached per node (function
    ASTs are cached too): inlining a recursive function asks once per call."""
    body = fn_node.body if isinstance(fn_node.body, list) else [fn_node.body]  # a lambda's is an expression
    return isinstance(fn_node, ast.AsyncFunctionDef) or any(
        isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in scope_nodes(body))


_INNER_SCOPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda,
                 ast.FunctionDef, ast.AsyncFunctionDef)


@functools.lru_cache(maxsize=4096)
def nested_super(fn_node: ast.FunctionDef) -> bool:
    """Whether a zero-argument `super()` is called in a comprehension, lambda or function nested
    in the function: Python binds it to that scope's first argument (a comprehension's iterator,
    so it raises), not to the method's."""
    def zero_super(n):
        return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" \
            and not n.args and not n.keywords
    return any(isinstance(n, _INNER_SCOPES) and any(map(zero_super, ast.walk(n)))
               for n in scope_nodes(fn_node.body, SCOPES + _INNER_SCOPES))


@functools.lru_cache(maxsize=4096)
def state_written_reads(filename: str, fn_node: ast.AST) -> frozenset:
    """Site keys of the function's reads of `obj.attr` and `obj[key]` that the same function
    also assigns (`t.scale = ...`, `t.scale *= 2`), wherever that assignment is: a Python float
    read there may change in any call (on a branch no warm-up call took), so the generator reads
    it as an input rather than speculating on its value and failing until it is relaxed."""
    written = set()
    for node in ast.walk(fn_node):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else ()
        for target in targets:
            for t in target.elts if isinstance(target, (ast.Tuple, ast.List)) else (target,):
                if isinstance(t, (ast.Attribute, ast.Subscript)):
                    written.add(ast.unparse(t))
    if not written:
        return frozenset()
    return frozenset(site_key(filename, n) for n in ast.walk(fn_node)
                     if isinstance(n, (ast.Attribute, ast.Subscript)) and ast.unparse(n) in written)
