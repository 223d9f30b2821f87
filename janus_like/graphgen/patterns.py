"""`match` statements (a mixin of evaluator.Generator): cases tried in order, as Python tries
them, on a subject the graph does not compute (`match cfg.activation:` of a configuration
string, an enum member, a number read from the state and guarded): each pattern's test is a
Python value at generation, so the graph holds only the body of the case that matches. Value,
singleton, capture, wildcard and `|` patterns, with guards; a subject or a guard the graph
computes, and sequence, mapping and class patterns, keep the function eager."""
from __future__ import annotations

import ast

from .support import _any_abstract
from .values import Unsupported


class PatternsMixin:
    def stmt_Match(self, node, frame):
        subject = self.eval(node.subject, frame)
        if _any_abstract(subject):
            raise Unsupported("data-dependent-python", "`match` on a value the graph computes", self.site)
        for case in node.cases:
            bound: dict = {}
            if not self.matches(case.pattern, subject, bound, frame):
                continue
            for name, value in bound.items():  # (bound before the guard, as Python binds them)
                self.store_name(name, value, frame)
            if case.guard is not None and not self.truth(self.eval(case.guard, frame)):
                continue
            self.exec_block(case.body, frame)
            return

    def matches(self, pattern, subject, bound, frame) -> bool:
        if isinstance(pattern, ast.MatchValue):
            return self.truth(self.compare(ast.Eq(), subject, self.eval(pattern.value, frame)))
        if isinstance(pattern, ast.MatchSingleton):
            return self.truth(self.compare(ast.Is(), subject, pattern.value))
        if isinstance(pattern, ast.MatchAs):  # `case x:`, `case _:`, `case "a" | "b" as name:`
            if pattern.pattern is not None and not self.matches(pattern.pattern, subject, bound, frame):
                return False
            if pattern.name is not None:
                bound[pattern.name] = subject
            return True
        if isinstance(pattern, ast.MatchOr):
            return any(self.matches(p, subject, bound, frame) for p in pattern.patterns)
        raise Unsupported("unsupported-syntax", f"a `match` pattern of kind {type(pattern).__name__}", self.site)
