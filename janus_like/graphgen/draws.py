"""Draws and lookups on Python-level values (a mixin of the graph generator): a draw from a
numpy Generator, the NumPy global RNG or a `random.Random` becomes a stateful node drawn when
the graph runs (the executor puts the generators back after a failed run); `bisect` of guarded
milestones and a container read with a number the graph computes become PY_OP nodes on the same
Python numbers eager uses.
"""
from __future__ import annotations

import bisect
import copy
import functools
import operator
import random

import numpy as np

from ..ops import api as F
from ..jit.assumptions import Assumption
from .support import COUNTS, _any_abstract, _any_objref, _as_kind
from .values import ObjRef, Sym, Unsupported

_SEARCHES = {bisect.bisect_left: lambda x, *items: bisect.bisect_left(items, x),
             bisect.bisect_right: lambda x, *items: bisect.bisect_right(items, x)}

# `random.Random` methods that draw numbers (not `shuffle`, which permutes its argument in place,
# nor `choice`/`sample`, which return the caller's objects)
_RANDOM_DRAWS = frozenset(("random", "uniform", "randint", "randrange", "gauss", "normalvariate", "expovariate",
                           "betavariate", "gammavariate", "lognormvariate", "triangular", "vonmisesvariate",
                           "paretovariate", "weibullvariate", "getrandbits", "binomialvariate"))


# the methods of a Generator or RandomState that read, set or reseed its state: never graph draws
STATE_CALLS = frozenset(("get_state", "set_state", "seed"))


class RngMethod:
    """`rng.normal` of a numpy Generator, a `RandomState` or a `random.Random` (exactly those types) reached
    through the inputs: only its type is guarded, and its draws are made from whatever object
    the input holds at the call (ops/draws.SlotRng), so a new Generator each epoch runs the same
    graph. Only calling it is supported."""
    __slots__ = ("ref", "name")

    def __init__(self, ref, name):
        self.ref, self.name = ref, name

    def __repr__(self):
        return f"RngMethod({self.ref.path}.{self.name})"

    def __call__(self, *args, **kwargs):  # (callable(rng.normal) is True, as eagerly)
        raise Unsupported("unsupported-call", f"{self.name}() of an input's generator called by library code")


def input_rng_method(obj, name):
    """An RngMethod for `obj.name` when obj (an ObjRef) is a Generator or Random and name one of
    its draws, else None."""
    if type(obj.obj) in (np.random.Generator, np.random.RandomState) and obj.obj is not np.random.mtrand._rand:
        return RngMethod(obj, name) if callable(getattr(obj.obj, name, None)) and not name.startswith("_") \
            and name not in STATE_CALLS else None
    if type(obj.obj) is random.Random and (name in _RANDOM_DRAWS or name == "choice"):
        return RngMethod(obj, name)
    return None


class DrawsMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def rng_method_call(self, method, args, kwargs):
        """A call of an RngMethod: a draw from the generator in its input slot."""
        if method.name == "choice" and type(method.ref.obj) is random.Random:
            args, kwargs = self.number_choice(args, kwargs)
        return self.generator_draw(method.ref, method.name, args, kwargs)

    def number_choice(self, args, kwargs):
        """The arguments of `random.choice(pool)` for a draw node, with `pool` (an input list,
        guarded as for any read, or one the function holds) a list or tuple of Python numbers:
        the node calls `choice` on those numbers, so the generator moves as eagerly, and its
        result is a number, equal to the one eager returns."""
        pool = args[0] if len(args) == 1 and not kwargs else None
        items = self.materialize(pool, self.site) if isinstance(pool, ObjRef) else pool
        if not isinstance(items, (list, tuple)) or _number_type(items) is None:  # (the draw's type is the items')
            raise Unsupported("unsupported-call", "random.choice() of anything but a list of Python numbers of "
                                                  "one type", self.site)
        return (list(items),), {}

    def generator_draw(self, rng, method, args, kwargs):
        """`rng.normal(0, 0.1, size=x.shape)`, `rng.random() < p`, `rng.permutation(n)` on a
        Generator the function reaches through its inputs (its identity guarded): a draw node
        that calls the method on that Generator when the graph runs, in program order with the
        other draws; a run that fails puts the Generator's state back."""
        if method == "shuffle" and self.shuffled(lambda m, a, k: self.generator_draw(rng, m, a, k), args, kwargs):
            return None
        if isinstance(rng, ObjRef):  # an input's generator (RngMethod): drawn from the slot's object
            return self.draw_of(rng.obj, method, args, kwargs, slot=rng.slot.index)
        return self.draw_of(rng, method, args, kwargs)

    def draw_of(self, rng, method, args, kwargs, slot=None):
        """A `draw_of` node: the same method on the same generator (`rng` None: the NumPy global
        RNG, for arguments the graph computes) when the graph runs, in program order with the
        other draws. Its arguments may hold numbers or arrays the graph computes: `rng.binomial(1,
        p)` of a Gibbs step, `np.random.choice(n, p=probs)` of a policy, `rng.normal(mu, sigma)`.
        Its shape and type come from the method run on a copy of the generator with stand-ins of
        the values' shapes and dtypes (their numbers where the graph knows them). `slot`: the
        input slot `rng` was read from, whose object the graph draws from at each call."""
        from ..ops.draws import SlotRng
        from ..ops.registry import P

        if "out" in kwargs or method in _OUT_AT and len(args) > _OUT_AT[method]:
            # (the node would write the caller's array while the graph runs, unseen)
            raise Unsupported("unsupported-call", f"{method}(out=...): a draw into an existing array", self.site)
        t_args, t_kwargs, values = templates(args, kwargs, f"{method}()", self.site)
        if values and self.builder.polymorphic and not all(self.builder.fixed(v) for v in values):
            raise Unsupported("unsupported-call", f"{method}() of a graph value of unknown size", self.site)
        sample = _stand_in_draw(rng, method, t_args, t_kwargs, values, self.site)
        if _sized_by_values(rng, method, t_args, t_kwargs, values, np.shape(sample), self.site):
            # `rng.integers(0, n, size=bs)`, `np.random.randn(n)`: a size from the inputs taken at its
            # value under a guard (evaluator.concrete_sizes); one the graph computes stays eager
            args, kwargs = self.concrete_sizes(list(args)), {k: self.concrete_sizes(v) for k, v in kwargs.items()}
            t_args, t_kwargs, values = templates(args, kwargs, f"{method}()", self.site)
            sample = _stand_in_draw(rng, method, t_args, t_kwargs, values, self.site)
            if _sized_by_values(rng, method, t_args, t_kwargs, values, np.shape(sample), self.site):
                raise Unsupported("shape-dependent", f"{method}() of a size the graph computes (the draw's shape "
                                                     "would be its value)", self.site)
        drawn = np.asarray(sample)
        if type(sample) not in (float, int, bool) and not isinstance(sample, (np.ndarray, np.generic)) \
                or drawn.dtype == object:  # `np.random.seed(k)`, `rng.bytes(4)`: not a number or an array
            raise Unsupported("unsupported-call", f"{method}() giving a {type(sample).__name__}", self.site)
        if rng is None:
            self.builder.uses_rng = True
        owner = rng if slot is None else SlotRng(slot)
        out = self.builder.emit(P.draw_of, tuple(values), dict(rng=owner, method=method, args=t_args, kwargs=t_kwargs),
                                aval=(tuple(drawn.shape), drawn.dtype))
        return _as_kind(out, "py" if type(sample) in (float, int, bool) else "array")

    def bisect(self, func, seq, x):
        """`bisect.bisect(milestones, epoch)` with `epoch` or the milestones numbers the graph
        computes (an input list's elements are guarded or, once they changed, read): the same
        search on the same Python numbers, as a PY_OP."""
        items = self.materialize(seq, self.site) if isinstance(seq, ObjRef) else seq
        if not isinstance(items, (list, tuple)) or _any_objref((items, x)) \
                or any(isinstance(v, Sym) and v.kind != "py" for v in list(items) + [x]):
            raise Unsupported("data-dependent-python", f"{func.__name__}() over graph values", self.site)
        if not _any_abstract((items, x)):
            return func(items, x)
        return self.builder.py_op(_SEARCHES[func], x, *items)

    def python_random(self, method, args, kwargs):
        """`random.random() < p`, `random.uniform(a, b)`, `rng.randint(0, 9)` with `rng` a
        `random.Random` reached through the inputs (its identity guarded where it was read): a
        draw node, as for a numpy Generator, for the methods that give a number and leave
        their arguments alone."""
        if method.__name__ == "choice":  # (`lr = random.choice(rates)`)
            args, kwargs = self.number_choice(args, kwargs)
        elif method.__name__ not in _RANDOM_DRAWS:
            raise Unsupported("unsupported-call", f"random.{method.__name__}() in a graph", self.site)
        return self.generator_draw(method.__self__, method.__name__, args, kwargs)

    def shuffled(self, draw, args, kwargs):
        """`np.random.shuffle(idx)` / `rng.shuffle(idx)` of an array the graph holds: the same
        generator calls as `permutation(len(idx))` (NumPy's permutation shuffles an arange), so
        the draw is that permutation and idx is written in place with its rows taken in that order
        (the rows' order is all a shuffle changes). Returns None, as shuffle does."""
        x = args[0] if len(args) == 1 and not kwargs else None
        if not (isinstance(x, Sym) and x.kind == "array" and x.ndim >= 1):
            return None
        order = draw("permutation", (x.shape[0],), {})
        self.write_box(x, _as_kind(F.getitem(x, order), "array"))
        return True

    def global_random(self, method, args, kwargs):
        if method == "shuffle" and self.shuffled(self.global_random, args, kwargs):
            return None
        if not callable(getattr(np.random.RandomState, method, None)) or method in ("get_state", "set_state"):
            raise Unsupported("unsupported-call", f"numpy.random.{method}() in a graph", self.site)
        if _any_abstract((args, kwargs)):
            return self.draw_of(None, method, args, kwargs)
        probe = np.random.RandomState()
        probe.set_state(np.random.get_state())
        drawn = getattr(probe, method)(*args, **kwargs)  # a copy of the global state: the RNG does not move
        sample = np.asarray(drawn)
        out = self.builder.random(method, tuple(args), dict(kwargs), (sample.shape, sample.dtype))
        if sample.shape == () and not isinstance(drawn, np.ndarray):
            out.kind = "py" if method in ("rand", "randn", "random", "random_sample", "uniform", "normal",
                                          "randint", "choice") and not args else out.kind
        return out

    def table_lookup(self, obj, key, *default):
        """`class_weight[int(y[i])]`, `sizes[k]` with the key a Python number the graph computes
        and the container's values Python numbers of one type (an input container's keys and
        values guarded like any it reads): the lookup as a PY_OP on the same numbers. A key it
        lacks raises when the graph runs, and the eager re-run raises it for the user; one a
        Counter or defaultdict lacks fails an assert (`known_key`). `default`: `d.get(k, 0)`'s, a
        number of the values' type."""
        items = self.materialize(obj, self.site) if isinstance(obj, ObjRef) else obj
        if isinstance(items, (list, tuple)) and not (isinstance(obj, ObjRef) and id(obj.obj) in self.appends):
            keys, values = None, tuple(items)
        elif isinstance(items, dict) and all(type(k) in (int, bool, str) for k in items):
            keys, values = tuple(items), tuple(items.values())
        else:
            keys = values = None
        kind = _number_type(values + default) if values is not None and (keys is not None or not default) else None
        if kind is None:
            raise Unsupported("data-dependent-python", "indexing a Python container with a graph value", self.site)
        first = (values + default)[0]
        sample = first if not isinstance(first, Sym) else kind()
        if default:
            return self.builder.py_op(functools.partial(_get, keys), key, *default, *values, sample=sample)
        self.known_key(obj, keys, key)
        return self.builder.py_op(functools.partial(_lookup, keys), key, *values, sample=sample)

    def dict_get(self, obj, key, default=None):
        """`d.get(k)` / `d.get(k, 0)` with `k` a Python number the graph computes (`table_lookup`)."""
        return self.table_lookup(obj, key, default)

    def table_store(self, obj, key, value):
        """`counts[int(y[0])] += 1`, `best[k] = score` with the key a Python number the graph
        computes, into a list (or dict of int, bool or str keys) of Python numbers of one
        type, with a value of that type: every item is written, with a PY_OP giving the value at
        the key's position and the old item elsewhere. An index out of range raises when the graph
        runs, and eager's re-run does what eager does; a key the dict lacks (eager adds it) fails
        an assert (`known_key`)."""
        items = self.materialize(obj, self.site) if isinstance(obj, ObjRef) else obj
        keys = tuple(items) if isinstance(items, dict) else None
        values = tuple(items.values()) if keys is not None else tuple(items) if isinstance(items, list) else ()
        kind = _number_type(values + (value,)) if values else None
        if kind is None or len(values) > _TABLE_STORES or keys is not None and any(
                type(k) not in (int, bool, str) for k in keys):
            raise Unsupported("data-dependent-python", "writing a Python container at an index the graph "
                                                       "computes (only lists and dicts of Python numbers of one type)",
                              self.site)
        self.known_key(obj, keys, key, store=True)
        for j, (k, old) in enumerate(zip(keys or range(len(values)), values)):
            sample = old if not isinstance(old, Sym) else kind()
            new = self.builder.py_op(functools.partial(_put, k, keys or len(values)), key, value, old, sample=sample)
            self.setitem(obj, k, new)

    def known_key(self, obj, keys, key, store=False):
        """An assert node that `key` is one of `keys`, for a store into a dict (`store`: eager adds
        a key it lacks) and a read of a Counter or defaultdict (COUNTS: eager's `__missing__` gives
        a default): that call runs eagerly, and after repeated failures the site stays eager."""
        from .comparisons import _member_of

        target = obj.obj if isinstance(obj, ObjRef) else obj
        if keys is None or not store and type(target) not in COUNTS:
            return
        relax = ("known key", self.site)
        if relax in self.relaxed:
            raise Unsupported("data-dependent-python", f"a key the {type(target).__name__} may lack, computed in "
                                                       "the graph", self.site)
        present = self.builder.py_op(_member_of(frozenset(keys)), key, sample=True)
        self.builder.assert_(present, True, Assumption("value", self.site, f"one of {len(keys)} keys",
                                                       path=f"a {type(target).__name__}'s key", relax=relax))


# the position of `out` among a Generator method's parameters, for those that have one
_OUT_AT = {"random": 2, "standard_normal": 2, "standard_exponential": 3, "standard_gamma": 3}


def templates(args, kwargs, what, site):
    """A call's arguments as templates for a node that calls a function (`draw_of`,
    `numpy_call`): each graph value (in lists and tuples too) becomes a Hole numbering it among
    the node's inputs. Returns (args, kwargs, the values). `what` names the call in errors."""
    from ..ops.draws import Hole

    values = []

    def lift(v):
        if isinstance(v, Sym):
            if v.kind not in ("array", "py", "tensor"):
                raise Unsupported("unsupported-call", f"{what} of a {v.kind} graph value", site)
            values.append(v)
            return Hole(len(values) - 1)
        if type(v) in (list, tuple):
            return type(v)(lift(x) for x in v)
        if _any_abstract(v) or _any_objref(v):
            raise Unsupported("unsupported-call", f"{what} with graph values in a {type(v).__name__}", site)
        return v

    return tuple(lift(a) for a in args), {k: lift(v) for k, v in kwargs.items()}, values


def _sized_by_values(rng, method, args, kwargs, values, shape, site) -> bool:
    """Whether the draw's shape follows a Python int among `values` (a size): the stand-in draw
    with each such int one larger has another shape."""
    if not any(v.kind == "py" and np.dtype(v.dtype).kind in "iu" for v in values):
        return False
    try:
        other = _stand_in_draw(rng, method, args, kwargs, values, site, bump=True)
    except Unsupported:
        return True
    return np.shape(other) != tuple(shape)


def _stand_in_draw(rng, method, args, kwargs, values, site, bump=False):
    """`method` of a copy of `rng` (None: of the NumPy global RNG's state) on stand-ins for the
    graph values: their known numbers, else 0.5 / 1 / True by dtype; where that is outside the
    method's domain, each float array an even distribution over its elements (a choice's `p`).
    `bump`: each Python int's stand-in one larger (`_sized_by_values`)."""
    from ..ops.draws import fill

    def stand_in(v, even):
        dtype = np.dtype(v.dtype)
        if v.kind == "py":
            hint = v.node.hint
            value = hint if hint is not None else v.py_type(True if dtype.kind == "b" else 1 if dtype.kind in "iu"
                                                            else 0.5)
            return value + 1 if bump and dtype.kind in "iu" else value
        fill_value = True if dtype.kind == "b" else 1 if dtype.kind in "iu" else 1.0 / max(v.size, 1) if even else 0.5
        return np.full(v.shape, fill_value, dtype)

    error = None
    for even in (False, True):
        if rng is None:
            probe = np.random.RandomState()
            probe.set_state(np.random.get_state())
        else:
            probe = copy.deepcopy(rng)
        stand_ins = [stand_in(v, even) for v in values]
        try:
            return getattr(probe, method)(*fill(args, stand_ins), **{k: fill(v, stand_ins) for k, v in kwargs.items()})
        except Exception as exc:
            error = error or exc
    raise Unsupported("unsupported-call", f"{method}() of graph values: {error}", site) from error


def _number_type(values):
    """The one Python number type (int, float or bool) of `values`, Python numbers and numbers
    the graph holds; None when they are none, of several types, or anything else."""
    kinds = {v.py_type if isinstance(v, Sym) else type(v) for v in values}
    if len(kinds) != 1 or kinds - {int, float, bool} or any(isinstance(v, Sym) and v.kind != "py" for v in values):
        return None
    return kinds.pop()


_TABLE_STORES = 64  # the most items `table_store` writes a call


def _put(position, keys, key, value, old):
    """The item at `position` (a list index, or a dict's key) after `container[key] = value`:
    `keys` is the list's length or the dict's keys (an assert node has checked that key is one:
    `known_key`). Raises IndexError for an index out of range, as the list's store does."""
    if type(keys) is int:
        i = operator.index(key)
        if not -keys <= i < keys:
            raise IndexError("list assignment index out of range")
        return value if i % keys == position else old
    return value if key == position else old


def _get(keys, key, default, *values):
    """`d.get(key, default)` of the dict keys -> values."""
    return dict(zip(keys, values)).get(key, default)


def _lookup(keys, key, *values):
    """values[key] of a list or tuple (keys None), else the value of key in the dict keys -> values."""
    if keys is None:
        return values[key]
    return dict(zip(keys, values))[key]
