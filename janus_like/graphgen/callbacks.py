"""User code called back by library code, and lazy iterators.

Library code (a builtin, NumPy, functools) that receives a user function calls it with whatever
it holds. Called during generation with graph values, the user function would run as plain
Python: the generator would not see what it reads, so nothing guards a global it reads (the
graph keeps the generation-time value after the global changes) and whatever it returns can
escape the graph. So:

- `map`, `filter`, `sorted(key=)`, `min`/`max(key=)` and `functools.reduce` with a user
  function are done here, the function inlined like any call;
- any other library call given a user function stays eager (`unsupported-call`).

`map`, `filter` and generator expressions are lazy in Python: the function runs when the
consumer pulls the next item, interleaved with the consumer's own code (a `for` body that prints,
or reads state the function writes). Here they are Python generators that inline the next
call when pulled, so a `for` loop over them, or a builtin consuming them, builds the nodes in
eager's order. An iterator that leaves the function (returned, stored) stays eager: the graph
cannot hand back a live iterator (see outputs.spec).
"""
from __future__ import annotations

import ast
import functools
import itertools
import operator
import types

import numpy as np

from .. import autodiff, ir
from ..ops.registry import REGISTRY
from ..source import in_packages
from .tape import SymbolicTape
from .support import OPERATORS, ContainerMethod, Frame, _LIBRARY_PREFIXES, _any_abstract, _is_jit
from .values import BoundMethod, LocalFunction, ObjRef, Sym, Unsupported
from .py_numbers import speculate_pick

_NOT_HANDLED = object()


def is_user_callable(v) -> bool:
    """A function whose body the generator would inline if it were called directly; or one it
    answers itself: `id` (`map(id, params)`: the identity of the Variable or object a graph
    value stands for, not of the generator's wrapper around it) and the operator module's
    arithmetic (`functools.reduce(operator.add, losses)`)."""
    if isinstance(v, (LocalFunction, BoundMethod)) or _is_jit(v) or v is id or (
            isinstance(v, types.BuiltinFunctionType) and v in OPERATORS):
        return True
    if isinstance(v, types.MethodType):
        v = v.__func__
    if isinstance(v, types.FunctionType):
        return not in_packages(v.__module__ or "", _LIBRARY_PREFIXES)
    if isinstance(v, ObjRef):
        call = getattr(type(v.obj), "__call__", None)
        return isinstance(call, types.FunctionType) and not isinstance(v.obj, type)
    return False


def _lookup(v) -> bool:
    """`scores.get` or `scores.__getitem__` of a dict (or a list's) as a key function
    (`max(scores, key=scores.get)`): called item by item, as a user function is."""
    if isinstance(v, ContainerMethod):
        return v.name in ("get", "__getitem__") and isinstance(v.ref.obj, (dict, list))
    return isinstance(v, types.BuiltinMethodType) and type(v.__self__) in (dict, list) \
        and v.__name__ in ("get", "__getitem__")


def _callables_in(args, kwargs):
    found = []
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, (list, tuple)):
            found += [x for x in v if is_user_callable(x)]
        elif is_user_callable(v):
            found.append(v)
    return found


def _name(f) -> str:
    f = getattr(f, "func", f)
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__




class _Lazy:
    """The items of a generator expression or a replayed `map`, pulled as they are needed;
    `shared`: they are pulled from an iterator the function holds (`it = iter(x)`), which a
    pull the graph makes and eager does not would move on."""
    __slots__ = ("items", "shared")

    def __init__(self, items, shared):
        self.items, self.shared = items, shared

    def __iter__(self):
        return self

    def __next__(self):
        return next(self.items)


def _pulls_shared(source) -> bool:
    """Pulling `source` (what iterate_lazily gave) moves an iterator that other code holds."""
    return source.shared if isinstance(source, _Lazy) else hasattr(type(source), "__next__")

_RAISING_PY = frozenset((operator.truediv, operator.floordiv, operator.mod, operator.pow, divmod))


def _unsafe(n) -> bool:
    """Node n draws, has an effect, or may raise when the graph runs (an index it computes, a
    Python division): not made for an item of any()/all() that eager may not reach."""
    if n.op in ir.STATEFUL and n.op != ir.ASSERT or n.op in REGISTRY and REGISTRY[n.op].stateful:
        return True
    if n.op == ir.PY_OP:
        return n.params.get("fn") in _RAISING_PY or not isinstance(n.params.get("fn"), types.BuiltinFunctionType)
    return n.op in ("getitem", "take", "index_update") and any(isinstance(i, ir.Node) for i in n.inputs[1:])

class CallbacksMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def library_callback(self, func, args, kwargs):
        """The result of library `func` called with a user function among its arguments, or
        _NOT_HANDLED when there is none. Raises Unsupported for library code this module does
        not replay."""
        users = _callables_in(args, kwargs)
        if not users and (func is min or func is max) and _lookup(kwargs.get("key")):
            users = [kwargs["key"]]  # `max(scores, key=scores.get)`: a lookup in the function's values
        if not users:
            return _NOT_HANDLED
        handler = _HANDLERS.get(func)
        if handler is not None:
            result = handler(self, args, kwargs)
            if result is not _NOT_HANDLED:
                return result
        raise Unsupported("unsupported-call", f"{_name(func)}() would call the user function {_name(users[0])} "
                                              "from library code", self.site)

    def iterate(self, value):
        if isinstance(value, ObjRef):
            return list(self.materialize(value, self.site))
        if isinstance(value, Sym) and self.builder.polymorphic and not (value.ndim and self.builder.fixed(value, 0)):
            raise Unsupported("shape-dependent", "iterating over an array whose size is not fixed", self.site)
        if isinstance(value, Sym):
            return list(value)
        if isinstance(value, SymbolicTape):
            raise Unsupported("unsupported-syntax", "iterating a tape", self.site)
        return list(value)

    def iterate_lazily(self, value):
        """What a `for` loop or a comprehension iterates: an iterator as it is (its items are
        computed as they are pulled, as in eager code), anything else as `iterate` lists it."""
        if hasattr(type(value), "__next__"):
            return value
        return self.iterate(value)

    def any_all(self, is_any, iterable):
        """`any(...)` / `all(...)` of items some of which are graph values: the or (and) of their
        truths, a Python bool held in the graph. Items are pulled as eager pulls them, and a
        Python item that decides the result ends the pulling there. Eager stops at the first
        graph value that decides it too, which the graph cannot know: the items after one are
        built only when building them draws no random numbers and makes no effect (a print);
        computing them anyway changes nothing else."""
        builder = self.builder
        items = self.iterate_lazily(iterable)
        shared, items = _pulls_shared(items), iter(items)
        acc = None
        while True:
            if acc is not None and shared:
                raise Unsupported("data-dependent-python", "any()/all() of an iterator the function holds, after an "
                                                           "item the graph computes (eager stops pulling it there)",
                                  self.site)
            block, mark, effects, state = builder.block, len(builder.block), len(self.effects), self._state_mark()
            try:
                item = next(items)
            except StopIteration:
                return (not is_any) if acc is None else acc
            except Exception as exc:  # (an item eager may never reach: `any(x[j] > 2 for j in idx)`)
                if acc is None:
                    raise
                raise Unsupported("data-dependent-python", f"any()/all() whose later item raises {type(exc).__name__}"
                                                           ", after an item the graph computes", self.site) from exc
            if acc is not None and (len(self.effects) != effects or builder.block is not block
                                    or self._state_mark() != state or any(map(_unsafe, block[mark:]))):
                raise Unsupported("data-dependent-python", "any()/all() whose later items draw random numbers, print, "
                                                           "write state or may raise, after an item the graph computes",
                                  self.site)
            if isinstance(item, Sym):
                truth = item if item.kind == "py" and item.dtype == np.bool_ else \
                    builder.py_op(operator.truth, self.one_truth(item))
                acc = truth if acc is None else builder.py_op(operator.or_ if is_any else operator.and_, acc, truth)
            elif bool(self.truth(item)) == is_any:
                return is_any

    def _state_mark(self):
        """A mark that changes when the function writes state the graph commits or a list it
        appends to (the writes an item after the deciding one must not make)."""
        return (len(self.writes), len(self.overlay), len(self.global_overlay), len(self.cell_overlay),
                len(self.shadows), sum(len(v[1]) for v in self.appends.values()), len(self.new_objects))

    # ---------------------------------------------------------------- the replayed builtins
    def _map(self, args, kwargs):
        if kwargs or len(args) < 2 or not is_user_callable(args[0]):
            return _NOT_HANDLED
        f, iterators = args[0], [self.iterate_lazily(a) for a in args[1:]]
        shared = any(map(_pulls_shared, iterators))
        iterators = [iter(it) for it in iterators]

        def pulled():
            while True:
                items = []
                for it in iterators:
                    try:
                        items.append(next(it))
                    except StopIteration:
                        return
                yield self.call(f, items, {})
        return _Lazy(pulled(), shared)

    def _accumulate(self, args, kwargs):
        """`itertools.accumulate(rewards, lambda g, r: 0.9 * g + r)`, `accumulate(xs, operator.mul)`:
        the running results, computed as they are pulled."""
        func = args[1] if len(args) > 1 else kwargs.get("func")
        if not 1 <= len(args) <= 2 or set(kwargs) - {"func", "initial"} or not is_user_callable(func):
            return _NOT_HANDLED
        source, initial = iter(self.iterate_lazily(args[0])), kwargs.get("initial")

        def pulled():
            acc = initial
            if acc is None:  # (Python's: no initial value; the first item starts)
                try:
                    acc = next(source)
                except StopIteration:
                    return
            yield acc
            for x in source:
                acc = self.call(func, [acc, x], {})
                yield acc
        return pulled()

    def _filter(self, args, kwargs):
        if kwargs or len(args) != 2 or not is_user_callable(args[0]):
            return _NOT_HANDLED
        f, source = args[0], iter(self.iterate_lazily(args[1]))
        return (x for x in source if self.truth(self.call(f, [x], {})))

    def _keys(self, f, items, what):
        keys = [self.call(f, [x], {}) for x in items]
        if _any_abstract(keys):
            raise Unsupported("data-dependent-python", f"{what}() by keys computed in the graph", self.site)
        return keys

    def _sorted(self, args, kwargs):
        key = kwargs.get("key")
        if len(args) != 1 or set(kwargs) - {"key", "reverse"} or not is_user_callable(key):
            return _NOT_HANDLED
        items = list(self.iterate_lazily(args[0]))
        keys = self._keys(key, items, "sorted")
        # the same comparisons on the same keys: the same (stable) order as eager's sorted
        order = sorted(range(len(items)), key=keys.__getitem__, reverse=bool(kwargs.get("reverse", False)))
        return [items[i] for i in order]

    def _extreme(self, pick, args, kwargs):
        key = kwargs.get("key")
        if not args or set(kwargs) - {"key", "default"} or not (is_user_callable(key) or _lookup(key)):
            return _NOT_HANDLED
        site = self.pick_key  # (before the key function's own calls set theirs)
        items = list(self.iterate_lazily(args[0])) if len(args) == 1 else list(args)
        if not items:
            if "default" in kwargs and len(args) == 1:
                return kwargs["default"]
            raise Unsupported("user-error", f"{pick.__name__}() of an empty sequence", self.site)
        keys = [self.call(key, [x], {}) for x in items]
        if _any_abstract(keys):
            return self._extreme_of_graph_keys(pick, items, keys, site)
        return items[pick(range(len(items)), key=keys.__getitem__)]  # the first extreme, as eager

    def _extreme_of_graph_keys(self, pick, items, keys, site):
        """`max(items, key=f)` with keys the graph computes: Python's own scan, item by item (a
        later key replaces the best only when it compares greater, for min less: the first
        extreme wins, a NaN never replaces and is never replaced), as Python-number nodes; the
        item picked is then looked up among the items (Python numbers of one type)."""
        b = self.builder
        what = f"{pick.__name__}() by keys computed in the graph"
        numbers = []
        for k in keys:
            if isinstance(k, Sym) and k.kind != "py":
                if k.size != 1 or np.dtype(k.dtype).kind not in "biuf":
                    raise Unsupported("data-dependent-python", f"{what}, keys that are not real scalars", self.site)
                k = b.to_py(k, float if np.dtype(k.dtype).kind == "f" else int)
            elif not isinstance(k, (Sym, int, float, np.integer, np.floating)) or isinstance(k, np.bool_):
                raise Unsupported("data-dependent-python", f"{what}, keys of type {type(k).__name__}", self.site)
            numbers.append(k)
        better = operator.gt if pick is max else operator.lt
        best, index = numbers[0], 0
        for j, k in enumerate(numbers[1:], 1):
            replace = b.py_op(better, k, best)
            best, index = b.py_op(_choose, replace, k, best), b.py_op(_choose, replace, j, index)
        try:
            return self.table_lookup(list(items), index)
        except Unsupported:  # arrays, objects: the item the warm-up got, asserted (py_numbers.speculate_pick)
            return speculate_pick(self, pick, items, site, index, "items by keys computed in the graph")

    def _reduce(self, args, kwargs):
        if kwargs or len(args) not in (2, 3) or not is_user_callable(args[0]):
            return _NOT_HANDLED
        f, source = args[0], iter(self.iterate_lazily(args[1]))
        if len(args) == 3:
            acc = args[2]
        else:
            try:
                acc = next(source)
            except StopIteration:
                raise Unsupported("user-error", "reduce() of an empty iterable with no initial value",
                                  self.site) from None
        for x in source:
            acc = self.call(f, [acc, x], {})
        return acc

    # ---------------------------------------------------------------- generator expressions
    def lazy_genexp(self, node, frame):
        """A generator expression: its first iterable evaluated now, everything else in its own
        scope when the next item is pulled (names of the enclosing function read then)."""
        scope, steps = self.scoped_iteration(node, frame)
        return _Lazy((self.eval(node.elt, scope) for _ in steps), steps.shared)

    def scoped_iteration(self, node, frame):
        """(scope, steps) for a comprehension or generator expression run in its own scope, as
        Python runs them: the first iterable is evaluated now, in `frame`; each step (pulled
        lazily) binds the targets of the next item that passes the `if`s in `scope`, where the
        element (and any lambda made there) reads them."""
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):  # (it binds in the function's scope)
            raise Unsupported("unsupported-syntax", "`:=` inside a comprehension", self.site)
        first = self.iterate_lazily(self.eval(node.generators[0].iter, frame))
        shared = _pulls_shared(first)  # (an iterator the function holds: pulling it is seen)
        targets = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        scope = Frame(frame.func, frame.globals, frame.filename, frame, frozenset(targets))
        scope.cells = frame.cells

        def steps(k, source):
            gen = node.generators[k]
            for item in source:
                self.count_unroll()
                self.assign(gen.target, item, scope)
                if not all(self.truth(self.eval(c, scope)) for c in gen.ifs):
                    continue
                if k + 1 == len(node.generators):
                    yield
                else:
                    yield from steps(k + 1, self.iterate_lazily(self.eval(node.generators[k + 1].iter, scope)))
        return scope, _Lazy(steps(0, first), shared)


_HANDLERS = {
    map: CallbacksMixin._map,
    filter: CallbacksMixin._filter,
    sorted: CallbacksMixin._sorted,
    min: lambda self, args, kwargs: self._extreme(min, args, kwargs),
    max: lambda self, args, kwargs: self._extreme(max, args, kwargs),
    functools.reduce: CallbacksMixin._reduce,
    itertools.accumulate: CallbacksMixin._accumulate,
    # jl.grad(f) / jl.value_and_grad(f): made now (nothing runs yet); the closure they give is
    # inlined where it is called, and calls f there (autodiff.py marks it `_janus_inline`)
    autodiff.grad: lambda self, args, kwargs: autodiff.grad(*args, **kwargs),
    autodiff.value_and_grad: lambda self, args, kwargs: autodiff.value_and_grad(*args, **kwargs),
}


def _choose(replace, new, old):
    return new if replace else old
