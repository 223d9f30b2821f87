"""The lists and dicts a `for` loop iterates in their own order (`for p in ps`, `ps.items()`,
`ps.values()`, `enumerate(ps)`, `zip(ps, gs)`), checked while the loop is unrolled.

Eager's loop reads each item when it gets to it, and sees the items the body appends (a dict
raises when the body adds or removes a key). The generator took the items when the loop began,
so a body that writes an item ahead (`ps["out"] = ps["emb"]` in a loop over `ps.items()`, tied
weights synced) or appends to the list it walks would run differently in the graph: such a
loop is Unsupported (eager runs it). Writes to the item at hand or to items already passed
(`ps[name] = p - lr * g`, the usual update) change nothing the loop reads later, nor do writes
to the values of a dict whose keys alone the loop takes (`for k in ps`, `ps.keys()`).
"""
from __future__ import annotations

import ast
import collections

from .values import ObjRef, Unsupported

_VIEWS = ("items", "values", "keys")
_KINDS = (list, dict, collections.deque)
_REMOVALS = ("pop", "popitem", "clear", "__delitem__", "popleft")


class LoopSources:
    """What one `for` loop iterates, checked before each trip (`check(t)`) and after the last
    (`check(None)`): the containers it walks in their own order (`iterated_sources`, or the
    iterable itself when an expression gives an input's list or dict: `m.parameters()`
    returning `self.ps`), and, under a lazy iterable (`reversed(ps)`, `iter(ps)`, a generator
    expression, `map`), every input container read whole for it by the first trip, whose
    items may then not be written at all during the loop."""

    def __init__(self, gen, expr, frame, iterable, mark):
        self.gen, self.mark = gen, mark
        self.natural = iterated_sources(gen, expr, frame)
        obj = _raw(iterable)
        if isinstance(obj, _KINDS) and not any(v is iterable for v, _, _ in self.natural):
            self.natural.append((iterable, _contents(gen, iterable), isinstance(obj, dict)))  # (a dict: its keys)
        self.lazy = None if isinstance(iterable, (ObjRef, list, tuple, dict, range, str)) else []
        # an item removed from a container walked in order (`ps.pop(k)`, put back or not), which
        # eager's iterator notices though the keys and values may read the same: the writes are
        # scanned from where the last check left off
        self.walked = {id(_raw(v)) for v, _, _ in self.natural}
        self.scanned = len(gen.writes)

    def check(self, t):
        if self.lazy == [] and t == 0:  # (a generator expression reads its list at its first item)
            seen = {id(v) for v, _, _ in self.natural} | self.walked
            self.lazy = [(r, _contents(self.gen, r), False) for r in self.gen.materialized[self.mark:]
                         if id(r.obj) not in seen and isinstance(r.obj, _KINDS)]
        check_unwritten(self.gen, self.natural, t)
        writes, start, self.scanned = self.gen.writes, self.scanned, len(self.gen.writes)
        if self.walked and any(w[0] == "call" and w[2] in _REMOVALS and id(w[1].obj) in self.walked
                               for w in writes[start:]):
            raise Unsupported("data-dependent-python", "a loop removes items of the container it iterates",
                              self.gen.site)
        if self.lazy:
            check_unwritten(self.gen, self.lazy, None if t is None else 0)


def iterated_sources(gen, expr, frame) -> list:
    """[(container, its contents now, whether only its keys are taken)] for each list, dict or
    deque `expr` iterates in order (read again here only where reading is free of effects:
    names, attributes, constant subscripts)."""
    out = []

    def leaf(e):
        if isinstance(e, ast.Call) and _pure(e.func) and any(gen.eval(e.func, frame) is f for f in (enumerate, zip)):
            for a in e.args:
                leaf(a)
            return
        keys = True
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _VIEWS and not e.args:
            e, keys = e.func.value, e.func.attr == "keys"
        if _pure(e):
            v = gen.eval(e, frame)
            if isinstance(_raw(v), _KINDS):
                out.append((v, _contents(gen, v), keys and isinstance(_raw(v), dict)))

    leaf(expr)
    return out


def check_unwritten(gen, sources, t):
    """Before trip `t` (None: after the last one) of a loop over `sources`: the containers have
    their items and, from position t on, the same values as when the loop began."""
    for v, before, keys_only in sources:
        now = _contents(gen, v)
        kind = type(_raw(v)).__name__
        if len(now) != len(before) or any(k1 is not k2 and k1 != k2 for (k1, _), (k2, _) in zip(now, before)):
            raise Unsupported("data-dependent-python", f"a loop adds or removes items of the {kind} it iterates",
                              gen.site)
        if t is not None and not keys_only and any(a is not b for (_, a), (_, b) in zip(now[t:], before[t:])):
            raise Unsupported("data-dependent-python", f"a loop writes an item of the {kind} it iterates before "
                                                       "it gets to it", gen.site)


def _contents(gen, v):
    """[(key, value)] of a container as the generator holds it: an input's copy once the call
    wrote it (and the items it appended), else its items as the graph reads them."""
    if isinstance(v, ObjRef):
        target = v.obj
        shadow = gen.shadows.get(id(target))
        pending = gen.appends.get(id(target))
        if shadow is None and pending is not None:  # appended to in the loop (its items: not read here)
            return [(i, None) for i in range(len(target) + len(pending[1]))]
        items = shadow if shadow is not None else gen.materialize(v, gen.site)
    else:
        items = v
    return list(items.items()) if isinstance(items, dict) else list(enumerate(items))


def _raw(v):
    """The container itself: an input's (an ObjRef's object) or one the function made."""
    return v.obj if isinstance(v, ObjRef) else v


def _pure(e) -> bool:
    if isinstance(e, ast.Name):
        return True
    if isinstance(e, ast.Attribute):
        return _pure(e.value)
    return isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant) and _pure(e.value)
