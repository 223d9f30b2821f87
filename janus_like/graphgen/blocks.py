"""`try`, `with` and `assert` statements (a mixin of the graph generator): a `try` runs as if
its body raises nothing, a `with` enters a GradientTape, an np.errstate, a
`contextlib.suppress` (a `try` whose handler passes) or an input object whose class defines
`__enter__`/`__exit__` in Python (both inlined, `__exit__(None, None, None)` when the body is
left), an assert on a graph value is speculated."""
from __future__ import annotations

import ast
import contextlib
import types

from ..source import function_ast, scope_nodes, site_key
from .tape import SymbolicTape
from .values import ObjRef, Sym, Unsupported
from .support import ErrState, _Break, _Continue, _Leave, _Return


class BlocksMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def stmt_Try(self, node, frame):
        """`try`: the body runs as if it raises nothing (when a graph op raises at run time, the
        call falls back and eager's handler runs; after `regen_after` such calls the signature
        goes eager), then `else`, then `finally` (also on a return, break or continue leaving the
        body). A handler that caught only some times (a cache filled on its first miss, `except
        KeyError: cache[k] = ...`) is no bar. An exception raised while generating the body is a
        generation failure, never handled here (the graph must not take a handler eager would
        not): when a handler catches it, this call runs eagerly and a later one generates again.
        Unless the inputs' guards decide it (a lookup of a key the state's dict lacks, its
        absence guarded: an optional entry, `except KeyError: aux = None`): the graph then runs
        the handler, as eager does on every call the guards pass. Where the handlers caught
        something every time the warm-up entered the `try` and nothing of the kind is raised
        while generating, it is expected to raise again at run time: the signature stays eager."""
        always = False
        if node.handlers:
            if self.profile is None:
                raise Unsupported("try", "a `try` with handlers in code the warm-up did not profile", self.site)
            entered = self.profile.branch(site_key(frame.filename, node))[0]
            n_caught = sum(self.profile.branch(site_key(frame.filename, h))[0] for h in node.handlers)
            always = bool(n_caught and n_caught >= entered)
            self.try_sites.append(self.site)
        site = self.site
        try:
            try:
                handled = self.guarded_body(node.body, frame, lambda: (
                    None if any(h.type is None for h in node.handlers) else tuple(
                        t for h in node.handlers if h.type is not None for t in _classes(self.eval(h.type, frame)))),
                    node.handlers)
            except Unsupported as exc:
                if not (always and exc.reason == "try" and exc.retry):
                    raise
                handled = False  # (a raise no guard decides: as below)
            if always and not handled:
                raise Unsupported("try", f"the handlers caught an exception each time the warm-up entered the "
                                         f"`try` ({n_caught} of {entered})", site)
            if not handled:
                self.exec_block(node.orelse, frame)
        except (_Return, _Break, _Continue, _Leave) as leaving:  # leaving through `finally`, as Python does
            if leaving.__class__ is _Leave and any(
                    h.type is None or any(issubclass(GeneratorExit, c) for c in _classes(self.eval(h.type, frame)))
                    for h in node.handlers):
                raise _closing_seen("a `try` whose handler catches GeneratorExit", site) from None
            if leaving.__class__ is _Leave and any(isinstance(n, (ast.Yield, ast.YieldFrom))
                                                   for n in ast.walk(ast.Module(node.finalbody, []))):
                raise _closing_seen("a `try` whose `finally` yields", site) from None
            self.exec_block(node.finalbody, frame)
            raise
        except Exception as exc:  # a raise the guards decide, for an outer `try`'s handler: `finally` first
            if node.finalbody and getattr(exc, "decided", None) is not None:
                self.exec_block(node.finalbody, frame)
            raise
        self.exec_block(node.finalbody, frame)

    def guarded_body(self, body, frame, caught, handlers=()):
        """Run a `try`'s (or a `with suppress(...)`'s) body as if it raises nothing. An exception
        the user's code raised while generating it that a handler catches (`caught()`: the
        classes, None for all) is never handled here: that call runs eagerly (Unsupported with
        `retry`, a later call generates again), unless guards decide it (`decided`, raised where
        the generator stands at the `try`'s own level, not inside a conditional or loop node):
        then the handler among `handlers` that catches it runs. Returns whether one ran."""
        mark = self.raise_mark()
        try:
            self.exec_block(body, frame)
        except (_Return, _Break, _Continue, _Leave):
            raise
        except Exception as exc:  # the user's code raised while generating: eager's handler may catch it
            raised = getattr(exc, "original", None) if isinstance(exc, Unsupported) else exc
            if raised is not None:
                classes = caught()
                if classes is None or isinstance(raised, classes):
                    handler = next((h for h in handlers if h.type is None
                                    or isinstance(raised, _classes(self.eval(h.type, frame)))), None)
                    if handler is not None and getattr(exc, "decided", None) == mark:
                        self.handler_body(handler, raised, frame)
                        return True
                    err = Unsupported("try", f"{type(raised).__name__} raised in the body, which a handler catches",
                                      self.site)
                    err.retry = True
                    raise err from exc
            raise
        return False

    def raise_mark(self):
        """Where generation stands, as a raise decided by guards records it (`decided`): a raise
        inside a conditional or loop node, or an inlined call, has another mark than its `try`."""
        return len(self.frames), self.pure_depth, id(self.builder.block), len(self.builder.tapes)

    def handler_body(self, handler, raised, frame):
        """An `except` block for an exception the guards decide: `as e` names the exception
        generation met (its type and text are eager's), unbound after the block as in Python."""
        if handler.name is not None:
            self.store_name(handler.name, raised, frame)
        try:
            self.exec_block(handler.body, frame)
        finally:
            if handler.name is not None:
                frame.locals.pop(handler.name, None)

    def stmt_With(self, node, frame):
        """`with` a GradientTape, an np.errstate, or a `contextlib.suppress(...)` (its body as a
        `try` whose handler passes: run as if it raises nothing; an exception at run time falls
        back to eager, where suppress swallows it, and after `regen_after` such calls the
        signature goes eager)."""
        entered, suppressed, inner = [], (), None
        for pos, item in enumerate(node.items):
            cm = self.generator_cm(item.context_expr, frame)
            if cm is not None:  # the rest of the statement runs at the generator's yield
                rest = node.items[pos + 1:]
                body = [ast.copy_location(ast.With(items=rest, body=node.body), node)] if rest else node.body
                inner = (cm, item.optional_vars, body)
                break
            ctx = self.eval(item.context_expr, frame)
            if isinstance(ctx, SymbolicTape):
                self.builder.tapes.append(ctx)
                entered.append(ctx)
                value = ctx
            elif isinstance(ctx, ErrState):
                self.builder.errstate.append({**(self.builder.errstate[-1] if self.builder.errstate else {}),
                                              **ctx.settings})
                entered.append(ctx)
                value = ctx
            elif isinstance(ctx, contextlib.suppress):
                suppressed += ctx._exceptions
                value = None  # (suppress's __enter__ gives None)
            elif isinstance(ctx, ObjRef) and _python_dunders(type(ctx.obj)):
                if _may_suppress(type(ctx.obj).__exit__):  # (eager's to swallow an error the graph meets)
                    raise Unsupported("unsupported-syntax", f"with a {type(ctx.obj).__name__}, whose `__exit__` may "
                                                            "suppress an exception", self.site)
                value = self.call(self.getattr(ctx, "__enter__", None), [], {})  # inlined as any method
                entered.append(_Exit(self.getattr(ctx, "__exit__", None), self.site))
            else:
                raise Unsupported("unsupported-syntax", f"with {type(ctx).__name__}", self.site)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, value, frame)
        left = False
        try:
            if inner is not None and suppressed:
                raise Unsupported("unsupported-syntax", "contextlib.suppress with a @contextmanager generator",
                                  self.site)
            if inner is not None:
                self.with_generator(*inner, frame)
            elif suppressed:
                self.try_sites.append(self.site)
                self.guarded_body(node.body, frame, lambda: suppressed)
            else:
                self.exec_block(node.body, frame)
            left = True
        except (_Return, _Break, _Continue, _Leave) as leaving:
            if leaving.__class__ is _Leave and any(isinstance(item, _Exit) for item in entered):
                raise _closing_seen("a `with` whose `__exit__` is given GeneratorExit", self.site) from None
            left = True  # Python calls __exit__ on the way out
            raise
        except Exception as exc:  # a raise the guards decide: eager's `__exit__` gets it (not inlined here),
            if any(isinstance(item, _Exit) for item in entered):  # so no outer handler runs it in the graph
                exc.decided = None
            raise
        finally:
            self._leave_with(entered, left)

    def _leave_with(self, entered, run_exits):
        """Leave a `with`'s items last first: pop a tape or an errstate, call an object's
        `__exit__(None, None, None)` (unless generating the body failed: then only pop)."""
        for k in range(len(entered) - 1, -1, -1):
            item = entered[k]
            if isinstance(item, ErrState):
                self.builder.errstate.pop()
            elif isinstance(item, _Exit) and run_exits:
                site, self.site = self.site, item.site
                try:
                    self.call(item.method, [None, None, None], {})  # (its result only matters on an error)
                except BaseException:
                    self._leave_with(entered[:k], False)
                    raise
                finally:
                    self.site = site
            elif item in self.builder.tapes:
                self.builder.tapes.remove(item)

    def stmt_Assert(self, node, frame):
        test = self.eval(node.test, frame)
        if isinstance(test, Sym):
            self.speculate(test, node, frame, "branch")
        elif not self.truth(test):
            raise Unsupported("user-error", "assert statement fails", self.site)


class _Exit:
    """An object's `__exit__` for `stmt_With` to call when its body is left."""
    __slots__ = ("method", "site")

    def __init__(self, method, site):
        self.method, self.site = method, site


def _python_dunders(cls) -> bool:
    """Whether a class's `__enter__` and `__exit__` are Python functions (inlined like methods)."""
    return all(isinstance(getattr(cls, name, None), types.FunctionType) for name in ("__enter__", "__exit__"))


def _may_suppress(exit_fn) -> bool:
    """Whether an `__exit__` may return a true value (suppressing the body's exception): a
    `return` of anything but None or False (its source unknown: it may)."""
    try:
        fn_ast = function_ast(exit_fn)
    except Exception:
        return True
    return any(isinstance(n, ast.Return) and n.value is not None
               and not (isinstance(n.value, ast.Constant) and n.value.value in (None, False))
               for n in scope_nodes(fn_ast.body))


def _closing_seen(what, site):
    """A loop over a user generator left by `break` or `return` closes the generator: Python
    raises GeneratorExit at its `yield`. The graph leaves the generator's body through its
    `finally` blocks only (support._Leave), so code that sees the GeneratorExit runs eagerly."""
    return Unsupported("generator", f"a generator closed by the loop's break or return inside {what}", site)


def _classes(value):
    """The exception classes an `except` clause's expression names (a class or a tuple of them)."""
    if isinstance(value, ObjRef):  # (a module's tuple of classes: `except RETRYABLE:`)
        value = value.obj
    items = value if isinstance(value, tuple) else (value,)
    return tuple(c for c in items if isinstance(c, type) and issubclass(c, BaseException))
