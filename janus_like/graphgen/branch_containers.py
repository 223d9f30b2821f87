"""Lists, dicts and sets of the jitted code that a conditional or loop node writes into.

The generator runs the function's Python at generation time, so a list the function built is a
real Python list holding graph values. A conditional node generates both of its branches, one
after the other, and a loop node generates its body once for any number of trips. A write into
such a container there (`d["k"] = y`, `l.append(y)`, `l.sort()`, `l[0] += 1`) used to stay in the
container: the `else` branch saw the `then` branch's write, the code after the node saw both,
and a loop's body counted as one trip. The graph could then return what eager never does.

`ContainerSnapshot` records the containers reachable when the node starts (from the frames
being generated, local functions' frames, and the state overlays) with a shallow copy of their
contents (an object the function made: its `__dict__`); `take()` reports which of them a branch
changed and puts their contents back. A conditional node merges each changed container element
by element between its branches (the same structure in both: a value that differs becomes an
output of the node); a loop node whose body changed one is not converted.
"""
from __future__ import annotations

from .support import Frame
from .values import LocalFunction, Unsupported


class ContainerSnapshot:
    """The lists, dicts and sets reachable from `roots`, each with a copy of its contents."""

    def __init__(self, roots, made=()):
        self.saved = {}  # id -> (container, contents: list of items / of (key, value) / set)
        seen = set()
        stack = list(roots)
        while stack:
            v = stack.pop()
            if id(v) in seen:
                continue
            if id(v) in made and hasattr(v, "__dict__"):  # an object the function made: its attributes
                seen.add(id(v))
                stack.append(vars(v))
                continue
            if isinstance(v, (list, dict, set)):
                seen.add(id(v))
                contents = _contents(v)
                self.saved[id(v)] = (v, contents)
                stack.extend([x for kv in contents for x in kv] if isinstance(v, dict) else contents)
            elif isinstance(v, (tuple, frozenset)):
                seen.add(id(v))
                stack.extend(v)
            elif isinstance(v, LocalFunction):
                seen.add(id(v))
                stack.append(v.frame)
            elif isinstance(v, Frame):
                seen.add(id(v))
                stack.extend(v.locals.values())
                if v.enclosing is not None:
                    stack.append(v.enclosing)

    def take(self):
        """{id: contents now} of the containers changed since the snapshot (the container is
        `saved[id][0]`); each of them is then put back as it was."""
        changed = {}
        for key, (c, before) in self.saved.items():
            now = _contents(c)
            if not _same(c, before, now):
                changed[key] = now
                put(c, before)
        return changed

    def merges(self, then_changes, else_changes, describe, site):
        """The writes that put a conditional node's containers in their state after it:
        (structure, [(label, then value, else value, ("item", container, key))]) where
        `structure` is [(container, contents)] to put in first (the then-branch's, equal to the
        else-branch's in everything but the values that differ) and the list holds the elements
        whose value depends on the branch. Raises Unsupported when the branches leave a
        container with different lengths, keys or set elements."""
        structure, items = [], []
        for key in then_changes.keys() | else_changes.keys():
            c, before = self.saved[key]
            a = then_changes.get(key, before)
            b = else_changes.get(key, before)
            what = describe(c)
            if isinstance(c, set):
                if {id(x) for x in a} != {id(x) for x in b}:
                    raise Unsupported("data-dependent-python", f"{what} gets different elements in the two "
                                                               "branches", site)
                structure.append((c, a))
                continue
            pairs = a if isinstance(c, dict) else list(enumerate(a))
            other = b if isinstance(c, dict) else list(enumerate(b))
            if len(pairs) != len(other) or any(not _same_key(k1, k2) for (k1, _), (k2, _) in zip(pairs, other)):
                change = "keys" if isinstance(c, dict) else "lengths"
                raise Unsupported("data-dependent-python", f"{what} has different {change} after the two "
                                                           "branches", site)
            structure.append((c, a))
            for (k, x), (_, y) in zip(pairs, other):
                if x is not y:
                    items.append((f"item {k!r} of {what}", x, y, ("item", c, k)))
        return structure, items


def _contents(c):
    if isinstance(c, dict):
        return list(c.items())
    if isinstance(c, set):
        return set(c)
    return list(c)


def _same(c, before, now):
    if len(before) != len(now):
        return False
    if isinstance(c, set):
        return {id(x) for x in before} == {id(x) for x in now}
    if isinstance(c, dict):
        return all(k1 is k2 and v1 is v2 for (k1, v1), (k2, v2) in zip(before, now))
    return all(x is y for x, y in zip(before, now))


def _same_key(k1, k2):
    if k1 is k2:
        return True
    try:
        return type(k1) is type(k2) and bool(k1 == k2)
    except Exception:  # a key without a plain equality
        return False


def put(c, contents):
    """Set container `c`'s contents (as `_contents` gives them)."""
    if isinstance(c, list):
        c[:] = contents
    else:
        c.clear()
        c.update(contents)
