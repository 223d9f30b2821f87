"""`for` loops over the user's generator functions (a mixin of the graph generator).

    def batches(x, y, bs):
        for i in range(0, len(x), bs):
            yield x[i:i + bs], y[i:i + bs]

    for xb, yb in batches(x, y, 8):      # or: for k, (xb, yb) in enumerate(batches(x, y, 8)):
        ...

Python runs the generator's body up to a `yield`, then the loop's body on the yielded value, then
the generator again. The generator does the same: the generator's body is inlined like a call,
and each `yield v` it reaches runs one trip of the loop's body with the target bound to v, in the
loop's frame, before the generator's body goes on. So reads and writes interleave as in eager
code (a generator that reads what the loop's body writes sees the write). A `break` or a `return`
in the loop's body leaves the generator where it stands, as `for` does (the generator is closed).
`yield from` another generator call delivers its items to the same loop; `yield from` a list,
each item. The generator's `return` ends the loop, its value is that of `yield from`.

`with cm(...) as v:` over a `@contextlib.contextmanager` function or method of the user's is such a
loop of one trip: the generator's body inlined up to its one `yield`, the with-body run there, then
the generator's rest, also when the body is left by a `return`, `break` or `continue` (contextlib
resumes the generator then too); those go on out once the generator has finished.

`list(gen(...))`, `tuple`, `sorted`, `sum`, `max`, `min` and `set` of one run it to its end first,
as Python does, and take the collected items. What stays eager: a generator consumed any other
way (`next(g)`, `zip(gen(), ..)`, a comprehension over one), and a `yield` inside a branch or
loop on graph values (a conditional or loop node cannot stop in the middle).
"""
from __future__ import annotations

import ast
import contextlib

from ..source import function_ast, has_yield
from .support import _MISSING, _Break, _Continue, _Leave, _Return, _pure
from .values import BoundMethod, LocalFunction, Unsupported


# functions that pull a generator to its end before doing anything with its items
_COLLECTORS = (list, tuple, sorted, sum, max, min, set)
_COLLECTOR_NAMES = frozenset(f.__name__ for f in _COLLECTORS)


class _Loop:
    """A `for` loop consuming a user generator: where its items go."""
    __slots__ = ("node", "frame", "exit", "index", "depth", "call", "outer", "items")

    def __init__(self, node, frame, exit_, index, depth, call, outer=None, items=None):
        self.node, self.frame, self.exit, self.index, self.depth, self.call = node, frame, exit_, index, depth, call
        self.outer = outer  # a `yield from` generator's: the loop its items go on to
        self.items = items  # `list(gen())`: a list the items are appended to (no loop body)


class GeneratorLoopsMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def generator_loop(self, node, frame, exit_) -> bool:
        """Run `for` statement `node` over a call of a user generator function (or enumerate of
        one) by inlining the generator; False when its iterable is something else (nothing was
        evaluated then)."""
        call, index = node.iter, None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "enumerate"
                and 1 <= len(call.args) + len(call.keywords) <= 2 and len(call.args) >= 1
                and all(k.arg == "start" for k in call.keywords) and isinstance(call.args[0], ast.Call)
                and self.load_name("enumerate", frame, call.func) is enumerate):
            start = call.args[1:] or [k.value for k in call.keywords]  # `enumerate(gen(), 1)`, `start=1`
            index = self.eval(start[0], frame) if start else 0
            if type(index) is not int:
                raise Unsupported("unsupported-syntax", "enumerate() of a generator with a start the graph computes",
                                  self.site)
            call = call.args[0]
        if not isinstance(call, ast.Call) or not self._names_a_generator(call.func, frame):
            return False
        loop = _Loop(node, frame, exit_, index, self.pure_depth, call)
        self.armed_loops.append(loop)
        try:
            self.eval(call, frame)  # expressions.expr_Call hands the call to inline_generator
            self._consumed(loop)
        except _Leave as leave:
            if leave.loop is not loop:
                raise
            if leave.ret is not None:
                raise leave.ret
            return True  # a break: no `else`
        finally:
            if self.armed_loops and self.armed_loops[-1] is loop:
                self.armed_loops.pop()
        self.exec_block(node.orelse, frame)
        return True

    def _consumed(self, loop):
        """The call armed for `loop` reached inline_generator (else the loop would see no items)."""
        if self.armed_loops and self.armed_loops[-1] is loop:
            raise Unsupported("generator", "a generator call that was not inlined", self.site)

    def _names_a_generator(self, func_node, frame) -> bool:
        """Whether `func_node` is a plain name of a user generator function (its guards, if
        any, are the ones the call's own evaluation of the name adds again)."""
        if not isinstance(func_node, ast.Name):
            return False
        try:
            func = self.load_name(func_node.id, frame, func_node)
        except Unsupported:
            return False
        if isinstance(func, LocalFunction):
            return has_yield(func.node)
        code = getattr(func, "__code__", None)
        if code is None or not hasattr(func, "__globals__"):
            return False
        try:
            return has_yield(function_ast(func))
        except Exception:
            return False

    def collected_call(self, node, frame):
        """`list(gen(...))`, `sum(gen(...))`, `sorted(gen(...), key=...)`: Python runs the
        generator to its end before the function does anything with the items, so its body is
        inlined and its items collected first. _MISSING unless `node` is such a call (the other
        arguments pure: they are evaluated after the generator here, before it in Python)."""
        if not (isinstance(node.func, ast.Name) and node.func.id in _COLLECTOR_NAMES
                and not any(isinstance(a, ast.Starred) for a in node.args)
                and None not in (k.arg for k in node.keywords)
                and all(_pure(a) for a in node.args[1:]) and all(_pure(k.value) for k in node.keywords)
                and self._names_a_generator(node.args[0].func, frame)):
            return _MISSING
        func = self.load_name(node.func.id, frame, node.func)
        if func not in _COLLECTORS:
            return _MISSING
        items = []
        loop = _Loop(None, frame, None, None, self.pure_depth, node.args[0], items=items)
        self.armed_loops.append(loop)
        try:
            self.eval(node.args[0], frame)
            self._consumed(loop)
        finally:
            if self.armed_loops and self.armed_loops[-1] is loop:
                self.armed_loops.pop()
        rest = [self.eval(a, frame) for a in node.args[1:]]
        return self.call(func, [items] + rest, {k.arg: self.eval(k.value, frame) for k in node.keywords}, node)

    def collected_items(self, func, args) -> list:
        """The items a generator function's call yields, run to its end (a class's own
        `__iter__` written as a generator, as `for u, v in G.edges()` of a networkx graph
        iterates: materialized like the class's other iterations, containers.materialize)."""
        items = []
        loop = _Loop(None, None, None, None, self.pure_depth, None, items=items)
        self.armed_loops.append(loop)
        self.inline_generator(loop, func, args, {})
        return items

    def consuming_loop(self, node):
        """The armed loop that consumes call `node`'s generator, or None (expressions.expr_Call)."""
        loops = self.armed_loops
        return loops[-1] if loops and loops[-1].call is node else None

    def inline_generator(self, loop, func, args, kwargs):
        """The generator's body, inlined like a call, its yields delivered to `loop`."""
        fn_ast, frame = self.function_frame(func, generator=True)
        self.armed_loops.pop()  # taken: calls inside the generator's body are not this loop's
        self.yield_loops[id(frame)] = loop
        try:
            return self.inlined_body(func, fn_ast, frame, args, kwargs)
        finally:
            del self.yield_loops[id(frame)]

    def expr_Yield(self, node, frame):
        loop = self.yield_loops.get(id(frame))
        if loop is None:
            raise Unsupported("generator", "a generator consumed other than by a for loop", self.site)
        self.deliver(loop, None if node.value is None else self.eval(node.value, frame))
        return None  # what `yield` gives a generator a `for` loop runs

    def expr_YieldFrom(self, node, frame):
        loop = self.yield_loops.get(id(frame))
        if loop is None:
            raise Unsupported("generator", "a generator consumed other than by a for loop", self.site)
        inner = node.value
        if isinstance(inner, ast.Call) and self._names_a_generator(inner.func, frame):
            sub = _Loop(loop.node, loop.frame, loop.exit, None, loop.depth, inner, outer=loop)
            self.armed_loops.append(sub)
            try:
                return self.eval(inner, frame)  # the sub-generator's `return` value
            finally:
                if self.armed_loops and self.armed_loops[-1] is sub:
                    self.armed_loops.pop()
        for item in self.iterate_lazily(self.eval(inner, frame)):
            self.deliver(loop, item)
        return None

    def deliver(self, loop, value):
        """One trip of the consuming loop's body with its target bound to `value`."""
        while loop.outer is not None:  # a `yield from` generator's: the loop it delivers to
            loop = loop.outer
        if self.pure_depth != loop.depth:
            raise Unsupported("generator", "a yield inside a branch or loop on graph values", self.site)
        self.count_unroll()
        if isinstance(loop, _WithLoop):
            self._with_body(loop, value)
            return
        if loop.items is not None:  # list(gen())
            loop.items.append(value)
            return
        if loop.index is not None:  # enumerate(gen())
            value, loop.index = (loop.index, value), loop.index + 1
        self.frames.append(loop.frame)  # the loop's body runs in its function's frame
        try:
            self.assign(loop.node.target, value, loop.frame)
            outcome = self.iteration(loop.node.body, loop.frame, loop.exit)
        except _Return as ret:
            raise _Leave(loop, ret) from None
        finally:
            self.frames.pop()
        if outcome == "break":
            raise _Leave(loop)

    # ------------------------------------------------------------------ @contextlib.contextmanager
    def generator_cm(self, expr, frame):
        """(generator function, args, kwargs) when `expr` calls a `@contextlib.contextmanager`
        function of the user's (`with timed("fwd"):`, `with self.section():`), else None."""
        if not (isinstance(expr, ast.Call) and _pure(expr.func)
                and not any(isinstance(a, ast.Starred) for a in expr.args)
                and None not in (k.arg for k in expr.keywords)):
            return None
        func = self.eval(expr.func, frame)
        bound = func.self_value if isinstance(func, BoundMethod) else None
        func = func.func if isinstance(func, BoundMethod) else func
        if getattr(func, "__code__", None) is not _CM_HELPER or not callable(getattr(func, "__wrapped__", None)):
            return None
        args = [self.eval(a, frame) for a in expr.args]
        return func.__wrapped__, ([bound] if bound is not None else []) + args, \
            {k.arg: self.eval(k.value, frame) for k in expr.keywords}

    def with_generator(self, cm, target, body, frame):
        """`with cm(...) as target: body` for a `@contextmanager` generator: its body inlined up to
        its one `yield`, the with-body run there (target bound to the yielded value), then the rest
        of the generator, as contextlib resumes it when the body is left normally or by a
        `return`, `break` or `continue` (which then go on out). An exception at run time falls
        back to eager, where the generator sees it."""
        gen_fn, args, kwargs = cm
        loop = _WithLoop(frame, self.pure_depth, target, body)
        self.armed_loops.append(loop)
        try:
            self.inline_generator(loop, gen_fn, args, kwargs)
        finally:
            if self.armed_loops and self.armed_loops[-1] is loop:
                self.armed_loops.pop()
        if loop.trips != 1:  # eager: contextlib's RuntimeError("generator didn't yield")
            raise Unsupported("user-error", "a @contextmanager generator that does not yield", self.site)
        if loop.left is not None:
            raise loop.left

    def _with_body(self, loop, value):
        loop.trips += 1
        if loop.trips > 1:  # eager: contextlib's RuntimeError("generator didn't stop")
            raise Unsupported("user-error", "a @contextmanager generator that yields more than once", self.site)
        self.frames.append(loop.frame)  # the body runs in its function's frame
        try:
            if loop.target is not None:
                self.assign(loop.target, value, loop.frame)
            self.exec_block(loop.body, loop.frame)
        except (_Return, _Break, _Continue) as leave:  # raised again once the generator has finished
            loop.left = leave
        finally:
            self.frames.pop()


_CM_HELPER = contextlib.contextmanager(lambda: (yield)).__code__  # the code of every such function's wrapper


class _WithLoop(_Loop):
    """The body of a `with` over a `@contextmanager` generator: what its one `yield` runs."""
    __slots__ = ("target", "body", "trips", "left")

    def __init__(self, frame, depth, target, body):
        super().__init__(None, frame, None, None, depth, None)
        self.target, self.body, self.trips, self.left = target, body, 0, None
