"""Comprehensions: list, set and dict comprehensions unrolled over what they iterate, and
generator expressions (lazy, in their own scope: see callbacks.py).

A comprehension runs in the function's frame with its names restored after it; one holding a
lambda runs in its own scope, as Python runs every comprehension, so the lambda reads the
comprehension's names when it is called.
"""
from __future__ import annotations

import ast

from .refs import LocalFunction
from .support import _dict_key


class ComprehensionsMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def expr_ListComp(self, node, frame):
        return self.comprehension(node, frame, lambda: [], lambda acc, f: acc.append(self.eval(node.elt, f)))

    def expr_SetComp(self, node, frame):
        return self.comprehension(node, frame, set, lambda acc, f: acc.add(_dict_key(self.eval(node.elt, f))))

    def expr_DictComp(self, node, frame):
        def add(acc, f):
            acc[_dict_key(self.eval(node.key, f))] = self.eval(node.value, f)
        return self.comprehension(node, frame, dict, add)

    def comprehension(self, node, frame, make, add):
        names = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        if names & frame.closure_names or any(isinstance(n, ast.Lambda) or _calls_local(n, frame)
                                              for n in ast.walk(node)):
            # (a local function called there, however it is reached, `apply(g, x)`, `fs[0](x)`,
            # reads and writes the function's names, not the targets)
            return self.scoped_comprehension(node, frame, make, add)
        acc = make()
        # the comprehension's own names (its targets) are put back after it; a local function
        # it calls may write the function's other locals (`nonlocal count`), which stay written
        saved = {name: frame.locals[name] for name in names if name in frame.locals}
        self.comprehensions += 1

        def loop(gens):
            if not gens:
                add(acc, frame)
                return
            gen = gens[0]
            for item in self.iterate_lazily(self.eval(gen.iter, frame)):
                self.count_unroll()
                self.assign(gen.target, item, frame)
                if all(self.truth(self.eval(c, frame)) for c in gen.ifs):
                    loop(gens[1:])
        try:
            loop(node.generators)
        finally:
            self.comprehensions -= 1
            for name in names:
                frame.locals.pop(name, None)
            frame.locals.update(saved)
        return acc

    def scoped_comprehension(self, node, frame, make, add):
        """A comprehension with a lambda in it runs in its own scope, as Python runs every
        comprehension (callbacks.scoped_iteration): a lambda made there reads the
        comprehension's names when it is called (late binding: `[lambda: i for i in range(3)]`
        all see the last i)."""
        acc = make()
        outer, self.comprehensions = self.comprehensions, 0
        try:
            scope, steps = self.scoped_iteration(node, frame)
            for _ in steps:
                add(acc, scope)
        finally:
            self.comprehensions = outer
        return acc

    def expr_GeneratorExp(self, node, frame):
        return self.lazy_genexp(node, frame)  # lazy, in its own scope (callbacks.py)


def _calls_local(n, frame) -> bool:
    """n calls a function the jitted code defined (`[loss() for w in ws]`)."""
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
        and isinstance(frame.locals.get(n.func.id), LocalFunction)
