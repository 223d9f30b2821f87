"""Load-time AST rewrite: give every top-level function and method a cheap hotness prologue.

Input: a module's source. Output: the module AST, where each candidate function begins with

    def lossFun(inputs, targets, hprev):
        '''docstring stays first'''
        if __janus_like_rt__.hot[7]():
            try: return __janus_like_rt__.call[7](inputs, targets, hprev)
            except BaseException: __janus_like_rt__.trim(); raise   # the JIT's frames cut (jit/frames.py)
        ...  # the original body, line numbers unchanged

and carries one more (innermost) decorator, `@__janus_like_rt__.register(7)`, so the runtime
knows the function object. `hot[7]` is a C-level iterator step that answers False until the
function has been called `hot_after` times; then `call[7]` decides (jit it, or put the clean
code back so the prologue costs nothing from then on).

Why a prologue and not a replacement object in the module's globals: the function object keeps
its identity, so decorators, methods, staticmethods, recursion and references taken early all
see the same object; and the JIT reads a function's *source file*, never its bytecode, so the
profiler and graph generator see the original body without the prologue.
"""
from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass

from ..source import has_yield

RT = "__janus_like_rt__"  # ends in "__": not name-mangled inside class bodies


@dataclass
class FunctionSite:
    """One rewritten function: where it is and its place in the runtime's tables."""

    id: int
    qualname: str
    module: str
    filename: str
    lineno: int


def matches(qualname: str, module: str, include, exclude) -> bool:
    """Glob patterns on `qualname` (or `module.qualname`): included and not excluded."""
    names = (qualname, f"{module}.{qualname}")
    if include and not any(fnmatch.fnmatchcase(n, p) for p in include for n in names):
        return False
    return not any(fnmatch.fnmatchcase(n, p) for p in exclude for n in names)


def rewrite_module(tree: ast.Module, filename: str, module: str, new_site, include=("*",), exclude=()) -> list:
    """Rewrite `tree` in place; `new_site(qualname, module, filename, lineno) -> FunctionSite`.
    Returns the sites. Functions inside functions and nested classes are left alone."""
    sites: list = []

    def visit_block(stmts, prefix):
        for stmt in stmts:
            if isinstance(stmt, ast.FunctionDef):
                qualname = prefix + stmt.name
                if _candidate(stmt, prefix) and matches(qualname, module, include, exclude):
                    site = new_site(qualname, module, filename, stmt.lineno)
                    _add_prologue(stmt, site.id)
                    sites.append(site)
            elif isinstance(stmt, ast.ClassDef) and not prefix:
                visit_block(stmt.body, stmt.name + ".")
            elif isinstance(stmt, (ast.If, ast.With)) and not prefix:
                visit_block(stmt.body, prefix)
                visit_block(getattr(stmt, "orelse", []), prefix)
            elif isinstance(stmt, ast.Try) and not prefix:
                for block in (stmt.body, stmt.orelse, stmt.finalbody):
                    visit_block(block, prefix)
                for handler in stmt.handlers:
                    visit_block(handler.body, prefix)

    visit_block(tree.body, "")
    ast.fix_missing_locations(tree)
    return sites


def _candidate(fn: ast.FunctionDef, prefix: str) -> bool:
    if prefix and fn.name.startswith("__") and fn.name.endswith("__") and fn.name != "__call__":
        return False  # __init__, __repr__, ...: object plumbing, not array code
    if has_yield(fn):
        return False
    for dec in fn.decorator_list:  # already jitted by the user: the user's JitFunction rules
        if "jit" in ast.unparse(dec):
            return False
    return True


def _rt_attr(name: str, index: int) -> ast.expr:
    return ast.Subscript(ast.Attribute(ast.Name(RT, ast.Load()), name, ast.Load()), ast.Constant(index), ast.Load())


def _add_prologue(fn: ast.FunctionDef, index: int) -> None:
    a = fn.args
    positional = [ast.Name(p.arg, ast.Load()) for p in a.posonlyargs + a.args]
    if a.vararg:
        positional.append(ast.Starred(ast.Name(a.vararg.arg, ast.Load()), ast.Load()))
    keywords = [ast.keyword(k.arg, ast.Name(k.arg, ast.Load())) for k in a.kwonlyargs]
    if a.kwarg:
        keywords.append(ast.keyword(None, ast.Name(a.kwarg.arg, ast.Load())))
    test = ast.Call(_rt_attr("hot", index), [], [])
    forward = ast.Return(ast.Call(_rt_attr("call", index), positional, keywords))
    trim = ast.Expr(ast.Call(ast.Attribute(ast.Name(RT, ast.Load()), "trim", ast.Load()), [], []))
    # try: return call[7](...)  except BaseException: rt.trim(); raise  (the bare raise adds no frame)
    forward = ast.Try([forward], [ast.ExceptHandler(ast.Name("BaseException", ast.Load()), None, [trim, ast.Raise()])],
                      [], [])
    prologue = ast.If(test, [forward], [])
    has_doc = (fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant)
               and isinstance(fn.body[0].value.value, str))
    at = 1 if has_doc else 0
    anchor = fn.body[min(at, len(fn.body) - 1)]
    for node in ast.walk(prologue):  # every new node sits on the first body line
        if "lineno" in node._attributes:
            ast.copy_location(node, anchor)
    fn.body.insert(at, prologue)
    # innermost decorator (applied first, to the raw function); on the def's own line so that
    # co_firstlineno, which inspect uses to find the source, does not move
    register = ast.Call(ast.Attribute(ast.Name(RT, ast.Load()), "register", ast.Load()), [ast.Constant(index)], [])
    line_of = fn.decorator_list[-1] if fn.decorator_list else fn
    for node in ast.walk(register):
        node.lineno, node.col_offset = line_of.lineno, 0
        node.end_lineno, node.end_col_offset = line_of.lineno, 0
    fn.decorator_list.append(register)


def code_index(code, out=None) -> dict:
    """{(co_qualname, co_firstlineno): code} for every code object nested in `code`."""
    out = {} if out is None else out
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            out[(const.co_qualname, const.co_firstlineno)] = const
            code_index(const, out)
    return out
