"""Function source → AST with the file's real line numbers (shared by profiler and graphgen).

Sites are keyed by (filename, lineno, col_offset) of an AST node, so an observation the profiler
made at `model.py:42` is found again by the generator walking the same node.
"""
from __future__ import annotations

import ast
import functools
import inspect
import os
import textwrap


class NoSource(Exception):
    pass


@functools.lru_cache(maxsize=1024)
def _parse_cached(filename, firstlineno, code):
    return _parse(code)


def _parse(code):
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
            return node
    raise NoSource("source is not a function definition")


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


def has_yield(fn_node: ast.FunctionDef) -> bool:
    for node in ast.walk(fn_node):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return node is not None
        if node is not fn_node and isinstance(node, (ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef)):
            continue
    return False
