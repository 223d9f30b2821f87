"""Early returns folded into one: a function whose `if` returns early (a guard clause, a
learning-rate schedule's `if step < warmup: return ...`) is generated as if written

    if test:                         if test:
        return a                         _jl_return = a
    rest                     ->      else:
    return b                             rest
                                         _jl_return = b
                                     return _jl_return

which is what it computes: the statements after an `if` whose branch always returns run only
when the other branch is taken. An `if` on a graph value then becomes a conditional node whose
output is the returned value, like any name both branches assign; on a Python value it runs the
branch the value picks, as before. Functions with a return anywhere else (in a loop, a `with`,
a `try`) are generated as written.
"""
from __future__ import annotations

import ast

from ..source import SCOPES, scope_nodes

RESULT = "_jl_return"
MAX_GROWTH = 4  # statements copied into both branches: at most this many times the code


def function_body(fn_ast: ast.FunctionDef) -> list:
    """The statements to generate for `fn_ast` (cached on the node)."""
    body = getattr(fn_ast, "_jl_body", None)
    if body is None:
        body = fn_ast._jl_body = _fold(fn_ast.body)
    return body


def _fold(body):
    if not any(isinstance(s, ast.If) and _returns_in(s) for s in body):
        return body
    tail = _tail(body)
    out = _assign_results(tail) + [_at(ast.Return(value=ast.Name(RESULT, ast.Load())), body[-1])]
    nodes = [n for s in out[:-1] for n in scope_nodes([s])]
    if any(isinstance(n, ast.Return) for n in nodes) or len(nodes) > MAX_GROWTH * _size(body):
        return body  # a return this cannot move (in a loop, a with, a try), or too many copies: as written
    return out


def _size(stmts):
    return sum(1 for s in stmts for _ in scope_nodes([s]))


def _tail(stmts):
    """stmts with the statements after an `if` that returns somewhere moved into each of its
    branches that does not always return (recursively), so that a return is only ever a block's
    last statement. (The statements moved into both branches are generated once for each.)"""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and _returns_in(s):
            rest = stmts[i + 1:]
            body = s.body if _exits(s.body) else s.body + rest
            orelse = s.orelse if _exits(s.orelse) else s.orelse + rest
            return stmts[:i] + [_at(ast.If(test=s.test, body=_tail(body), orelse=_tail(orelse)), s)]
    return stmts


def _assign_results(stmts):
    """Each path's final `return v` as `_jl_return = v` (None where the path falls off the end)."""
    last = stmts[-1] if stmts else None
    if isinstance(last, ast.Return):
        value = last.value if last.value is not None else ast.Constant(None)
        return stmts[:-1] + [_at(ast.Assign(targets=[ast.Name(RESULT, ast.Store())], value=value), last)]
    if isinstance(last, ast.If) and _returns_in(last):
        return stmts[:-1] + [_at(ast.If(test=last.test, body=_assign_results(last.body),
                                        orelse=_assign_results(last.orelse)), last)]
    if isinstance(last, ast.Raise):
        return stmts
    where = last if last is not None else ast.Pass(lineno=1, col_offset=0)
    return stmts + [_at(ast.Assign(targets=[ast.Name(RESULT, ast.Store())], value=ast.Constant(None)), where)]


def _exits(stmts) -> bool:
    """Whether every path through stmts ends in a return or a raise."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _exits(last.body) and _exits(last.orelse)


def _returns_in(node) -> bool:
    return any(isinstance(n, ast.Return) for n in scope_nodes([node], SCOPES))


def _at(new, old):
    """new with old's source position (sites, profile keys)."""
    ast.copy_location(new, old)
    for n in ast.walk(new):
        if not hasattr(n, "lineno") and isinstance(n, (ast.stmt, ast.expr)):
            ast.copy_location(n, old)
    return new
