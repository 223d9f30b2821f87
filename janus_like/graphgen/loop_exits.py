"""How a loop body is left early: `_leaves_loop` (whether statements break or continue the loop
around them) and `loop_exit` (the one `if <test>: break` or `continue` a loop node or an
unrolled trip can convert, see `loops.py` and `control.iteration`)."""
from __future__ import annotations

import ast
from typing import NamedTuple

from ..source import SCOPES, scope_nodes
from .support import _assigned_names


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _leaves_loop(stmts) -> bool:
    """Whether `stmts` (an `if`'s branches) break or continue the loop around them: not a loop,
    function or class nested in them, but a nested loop's `else` clause, which belongs to the
    enclosing loop's body."""
    return any(isinstance(n, (ast.Break, ast.Continue)) or isinstance(n, _LOOPS) and _leaves_loop(n.orelse)
               for n in scope_nodes(stmts, SCOPES + _LOOPS))


class LoopExit(NamedTuple):
    """A loop body's one `if <test>: break` or `if <test>: continue` (nothing else in that `if`)
    at its top level, statement `index`. `how`: "join" (a break first in the body: its test joins
    the loop condition), "flag" (a break elsewhere: a carried flag ends the loop after the trip,
    the statements after it under a conditional), "skip" (a continue: the statements after it
    under a conditional)."""
    how: str
    node: ast.If
    index: int

    @property
    def kind(self):
        return "continue" if self.how == "skip" else "break"


def loop_exit(loop):
    """The LoopExit of a loop whose body leaves or skips a trip only through one such `if`, or
    None. A first break's test is evaluated once more than the body when it joins the
    condition: not when it reads a `for` loop's variable (`if x[i] > 0: break` would index past
    the range's end there), which is a "flag" exit instead."""
    body = loop.body
    found = [(k, s) for k, s in enumerate(body) if isinstance(s, ast.If) and not s.orelse and len(s.body) == 1
             and isinstance(s.body[0], (ast.Break, ast.Continue))]
    if len(found) != 1:
        return None
    index, stmt = found[0]
    if _leaves_loop(body[:index] + body[index + 1:]):
        return None
    if isinstance(stmt.body[0], ast.Continue):
        return LoopExit("skip", stmt, index)
    reads_target = isinstance(loop, ast.For) and _assigned_names([loop.target]) & {
        n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)}
    return LoopExit("join" if index == 0 and not reads_target else "flag", stmt, index)
