"""Per-site observations collected during warm-up calls."""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from ..tensor import Tensor

_SCALARS = (bool, int, float, str, type(None), np.generic)


def picked_position(items, result):
    """Which of min()/max()'s arguments `result` is: the first one that is that object (what the
    profile records, and what the graph's `pick` assert checks again), or None."""
    return next((i for i, x in enumerate(items) if x is result), None)


def member_key(obj, step) -> tuple:
    """The profile's key of a member of `obj` by object rather than by site: `step` is
    ("item", key) of a dict or list item (read anywhere: `d[k]`, `d.get(k, 0)`, `d.pop(k)`) or
    ("attr", name) of an attribute read by `getattr(obj, name[, default])`, as the generator's
    input slots name their steps. Whether its value changed between warm-up calls is then known
    wherever the generator reads it (every item of a dict it writes into, `stats["loss"] +=
    loss`), so a changing one is read as an input rather than speculated on."""
    return (step[0], id(obj), step[1])


class Profile:
    """Observations keyed by (filename, lineno, col_offset) of an AST node."""

    def __init__(self):
        self.branches = defaultdict(lambda: [0, 0])  # key -> [times true, times false]
        self.trip_counts = defaultdict(set)  # key -> trip counts seen
        self.types = defaultdict(set)  # key -> type names seen
        self.shapes = defaultdict(set)  # key -> (shape, dtype) of arrays seen
        self.values = {}  # key -> first scalar value seen
        self.varying = set()  # keys whose scalar value changed between observations
        self.callees = defaultdict(set)  # key -> qualified names called
        self.lengths = defaultdict(set)  # key -> lengths of lists/tuples/dicts read there
        self.picks = defaultdict(Counter)  # key of a min()/max() call -> position of the argument it gave -> times
        self.calls = 0
        self.first_call = {}  # member key -> the call that first saw it
        self.repeated = set()  # member keys seen on two calls or more (the same object each call)

    # ------------------------------------------------------------------ recording
    def record_branch(self, key, outcome: bool):
        self.branches[key][0 if outcome else 1] += 1

    def record_trips(self, key, n: int):
        self.trip_counts[key].add(n)

    def record_value(self, key, value):
        t = type(value)
        self.types[key].add(t.__name__)
        if isinstance(value, _SCALARS):
            if key in self.values:
                old = self.values[key]
                if type(old) is not t or old != value:
                    self.varying.add(key)
            else:
                self.values[key] = value
            return
        if isinstance(value, (list, tuple, dict)):
            self.lengths[key].add(len(value))
            return
        data = value._data if isinstance(value, Tensor) else value
        if isinstance(data, np.ndarray):
            self.shapes[key].add((data.shape, str(data.dtype)))

    def record_pick(self, key, index: int):
        self.picks[key][index] += 1

    def record_callee(self, key, fn):
        self.callees[key].add(getattr(fn, "__qualname__", type(fn).__name__))

    # ------------------------------------------------------------------ queries (used by graphgen)
    def branch(self, key):
        seen = self.branches.get(key)
        return (0, 0) if seen is None else (seen[0], seen[1])

    def trips(self, key):
        return set(self.trip_counts.get(key, ()))

    def picked(self, key):
        return set(self.picks.get(key, ()))

    def pick_counts(self, key) -> Counter:
        return Counter(self.picks.get(key, ()))

    def varies(self, key) -> bool:
        return key in self.varying

    def record_member(self, key, value):
        """A member of an object (member_key): its value, and whether more than one call read it."""
        self.record_value(key, value)
        first = self.first_call.setdefault(key, self.calls)
        if first != self.calls:
            self.repeated.add(key)

    def seen_on_calls(self, key) -> bool:
        """Whether the member was read on two calls or more: its object is not a new one each call
        (a layer of the model, not a node of this call's tree), so its values say whether it varies."""
        return key in self.repeated

    def summary(self) -> dict:
        return {
            "calls": self.calls,
            "branch_sites": len(self.branches),
            "loop_sites": len(self.trip_counts),
            "value_sites": len(self.types),
            "varying_values": len(self.varying),
            "call_sites": len(self.callees),
            "container_sites": len(self.lengths),
            "min_max_sites": len(self.picks),
        }
