"""Held references to a Variable's array across jitted steps (tests of in-place weight updates):
what eager's rebinding leaves a holder must stay true under the jit's in-place writes."""
from __future__ import annotations

import weakref

import numpy as np


def hold(kind, variable, graph):
    """A reference of `kind` to `variable`'s current array: the array, a view of two of its
    rows, a weak reference, or the slots of `graph`'s last run."""
    array = variable._data
    return {"array": lambda: array, "view": lambda: array[3:5], "weakref": lambda: weakref.ref(array),
            "slots": lambda: graph.last_slots}[kind]()


def assert_held_unchanged(kind, held, kept):
    """What `hold(kind, ...)` returned still shows `kept` (the array's values when it was held),
    or, a weak reference, is gone: eager rebinds the Variable to new arrays."""
    if kind == "array":
        np.testing.assert_array_equal(held, kept)
    elif kind == "view":
        np.testing.assert_array_equal(held, kept[3:5])
    elif kind == "weakref":
        assert held() is None
    else:
        assert any(a is not None and a.shape == kept.shape and np.array_equal(a, kept)
                   for a in held if isinstance(a, np.ndarray))


def held_then_written(kind, variable, graph, step, xs):
    """Hold `variable`'s array (`hold(kind, ...)`) over `step(x)` for the first four of `xs`:
    eager rebinds the Variable to new arrays, so the held one must keep its values (or, a weak
    reference, be gone). Then, seen by no one, the array is written in place by the remaining
    steps: the Variable keeps one array from the second of them on. `graph`: () -> the graph."""
    kept = variable._data.copy()
    held = hold(kind, variable, graph())
    for x in xs[:4]:
        step(x)
    assert_held_unchanged(kind, held, kept)
    del held
    ids = []
    for x in xs[4:]:
        step(x)
        ids.append(id(variable._data))
    assert len(set(ids[1:])) == 1
