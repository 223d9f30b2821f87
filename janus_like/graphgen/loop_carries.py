"""Values a loop node carries that are not yet what eager's later trips hold when the loop
starts (loops.py asks after a first attempt at the body, and makes it again carrying them):

- an accumulator that starts as a Python number and that the body makes a NumPy scalar (`s =
  0.0` ... `s = s + h.sum()`): carried as that scalar from the start (`scalar_carries`), with an
  assert after a `for` loop that a trip ran (after none, eager's is still the Python number; a
  `while True:` body runs at least once);
- a name a `while True:` body binds before its first `break` (`zn = f(z)`), read after the loop,
  or bound before the loop too but first bound by the body to a value of another type (`tok =
  lp.argmax()` of an int argument `tok`): carried from a stand-in constant that no trip reads
  (`stand_in_carries`, `rebound_carries`).

Both are decided on the body's source (which statement first reads the name, which come before
an exit) and on the first attempt's values (their type, and which object they are).
"""
from __future__ import annotations

import ast

import numpy as np

from .. import ir
from .support import _assigned_names
from .values import Sym, VarRef, numpy_scalar

_EXITS = (ast.Break, ast.Continue, ast.Return, ast.Raise, ast.Try)
_ACCUMULATING = (ast.Add, ast.Sub, ast.Mult)


def _before_exit(node):
    """The loop body's top-level statements before its first one that may leave it or skip the
    rest of a trip (`break`, `continue`, `return`, `raise`, `try`)."""
    for stmt in node.body:
        if any(isinstance(n, _EXITS) for n in ast.walk(stmt)):
            return
        yield stmt


def _accumulates(node, name) -> bool:
    """The body's first statement that reads or binds `name` is `name = name + e` or `name += e`
    (or `-`, `*`; e not reading it), before any exit: the first trip runs `number op e`, which
    NumPy's weak Python scalars make `type(e's result)(number) op e`, the same bits as the
    carried scalar gives (not `0.9 * ema + ...`, nor `isinstance(c, int)`, nor `y = x * s`)."""
    for stmt in _before_exit(node):
        uses = sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt))
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name \
                and isinstance(stmt.op, _ACCUMULATING):
            return uses == 1
        value = getattr(stmt, "value", None)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id == name and isinstance(value, ast.BinOp) \
                and isinstance(value.op, _ACCUMULATING) and isinstance(value.left, ast.Name) and value.left.id == name:
            return uses == 2
        if uses:
            return False  # (read or bound before: `isinstance(c, int)`, `y = x * s`)
    return False


def scalar_carries(builder, node, carried, body, captured):
    """`carried` ([(name, value before the loop)]) with each Python-number constant that the
    body (its last values: `body`) makes a NumPy scalar of a number dtype, by `_accumulates`'s
    statement, replaced by that scalar (the same value: `0.0 + x` is `np.float64(0.0) + x`); None
    where none is so, or a start is not exactly a number of the scalar's dtype. Names in
    `captured` (read by a closure, which may read the start) are left as they are."""
    out, changed = [], False
    for name, v in carried:
        new = body.get(name)
        if name not in captured and v.kind == "py" and v.node.op == ir.CONST and isinstance(new, Sym) and new.kind == "array" \
                and new.ndim == 0 and numpy_scalar(new) and new.dtype.kind in "iuf" and v.dtype.kind in "iuf" \
                and _accumulates(node, name):
            try:
                start = new.dtype.type(v.node.params["value"])
            except (OverflowError, ValueError):
                return None
            if start != v.node.params["value"]:  # (not exactly the Python number)
                return None
            v, changed = builder.constant(start, "array"), True
        out.append((name, v))
    return out if changed else None


def forever(node) -> bool:
    """`while True:` (or `while 1:`): its body runs at least once."""
    return isinstance(node, ast.While) and isinstance(node.test, ast.Constant) \
        and type(node.test.value) in (bool, int) and bool(node.test.value)


def _target_names(stmt) -> set:
    """The names a top-level `a = e` or `a, (b, c) = e` binds (a name only: not `a[i] = e`, nor
    `*rest`, whose list a trip makes anew)."""
    names = set()
    todo = list(stmt.targets) if isinstance(stmt, ast.Assign) else []
    while todo:
        t = todo.pop()
        if isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            todo.extend(t.elts)
    return names


def bound_before_exit(node) -> set:
    """The names a `while True:` body binds (`zn = f(z)`, at its top level) before its first
    statement that may leave the loop: bound on every trip that leaves, and the body runs at least
    once, so after the loop they hold the last trip's values."""
    if not forever(node):
        return set()
    names = set()
    for stmt in _before_exit(node):
        names |= _target_names(stmt)
    return names


def stand_in_carries(builder, node, names, gen):
    """[(name, stand-in constant)] for `names` (bound_before_exit's, first bound in the body),
    after a first attempt `gen`; None unless each is carried so (`_stand_in`)."""
    others = _exit_values(node, gen)
    out = []
    for name in sorted(names):
        v = _stand_in(gen["frame"].get(name), others, builder)
        if v is None:
            return None
        out.append((name, builder.constant(*v)))
    return out


def _bound_first(node, name) -> bool:
    """The body's first statement that reads or binds `name` is `name = e` or `name, b = e` (e
    not reading it), before any exit: no trip reads the value the loop starts with."""
    for stmt in _before_exit(node):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and name in _target_names(stmt) \
                and not any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
                            for n in ast.walk(stmt.targets[0])):
            return not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt.value))
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt)):
            return False
    return False


def rebound_carries(builder, node, carried, gen, captured):
    """`carried` with each name bound before a `while True:` loop (an argument `tok`, `tok = 0`)
    that the body binds first (`tok = lp.argmax()`, by `_bound_first`) to a value of another type,
    shape or dtype (a NumPy int for a Python int) carried from a stand-in of the body's value:
    no trip reads the start, and after the loop the name holds the last trip's value. None where
    none is so, or one may not be carried so (`_stand_in`). Names in `captured` (a closure may
    read the start) are left as they are."""
    if not forever(node):
        return None
    others = _exit_values(node, gen)
    out, changed = [], False
    for name, v in carried:
        new = gen["frame"].get(name)
        if isinstance(new, Sym) and isinstance(v, Sym) and (new.node.aval != v.node.aval or new.kind != v.kind) \
                and name not in captured and _bound_first(node, name):
            stand_in = _stand_in(new, others, builder)
            if stand_in is None:
                return None
            v, changed = builder.constant(*stand_in), True
        out.append((name, v))
    return out if changed else None


def _exit_values(node, gen) -> list:
    """The values at a trip's exit a stand-in may not be (`_stand_in`'s `others`): the names the
    body binds before its first exit, and the state the loop writes, after the attempt `gen`."""
    early = {n for stmt in _before_exit(node) for n in _assigned_names([stmt])}
    return [gen["frame"].get(n) for n in early] + list(gen.get("finals", {}).values())


def _stand_in(v, others, builder):
    """(value, kind) of a constant of v's type, shape and dtype (the initial value of a carried
    name no trip reads), or None where v is not an array or a Python number the graph computes,
    or may be another value's object when the loop is left (an input's, a view of or viewed by
    one, or what `others` holds: the values of the names bound before the first exit and of the
    state the loop writes; `w = zn`, `best = z`, `head = zn[:2]`), whose identity the loop node
    would not keep."""
    if not isinstance(v, Sym) or isinstance(v, VarRef) or v.kind not in ("array", "py") \
            or not all(type(d) is int for d in v.shape):
        return None
    viewed = any(w.view is not None and (w.view[0] is v or w.view[1] is v) for w in builder.views.get(id(v), ()))
    if v.kind == "array" and (v.node.op in ir.ALIASING_OPS or v.node.op in (ir.LOOP_VAR, ir.TUPLE_GET)
                              or v.view is not None or viewed or sum(u is v for u in others) > 1):
        return None
    value = np.zeros(v.shape, v.dtype)
    if v.kind == "py":
        return value.item(), "py"
    return (value[()] if numpy_scalar(v) else value), "array"
