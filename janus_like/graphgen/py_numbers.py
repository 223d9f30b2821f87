"""Python-number functions of numbers the graph computes: `math.sqrt(total)` of a gradient norm
built with `float()`, `max(lr, floor)`, `round(x, 2)`, `math.cos(math.pi * t / T)` of a step
counter the graph reads. Eager code gets a Python number from each; the graph holds the same
call as a PY_OP node, run on the same Python numbers when the plan runs, so the result is the
same value of the same type. A call that raises there (`math.sqrt(-1.0)`, `math.log(0.0)`)
fails the graph run and the call re-runs eagerly, where it raises for the user.
"""
from __future__ import annotations

import functools
import heapq
import math
import statistics
import sys

import numpy as np

from .. import ir
from ..jit.assumptions import Assumption
from ..profiler.profile import picked_position
from .builder import py_sample
from .support import _CMPOPS
from .values import Sym, Unsupported, numpy_scalar

# builtins that take and give Python numbers; `math` module functions are added by module name
_NUMBER_BUILTINS = (min, max, round, pow, complex)
_NUMBER_TYPES = (bool, int, float, complex)


def is_number_call(func, module, args, kwargs) -> bool:
    """Whether `func(*args)` is a Python-number function some argument of which is a number the
    graph computes (a Python number, or a one-element array for `math`)."""
    if not args or (kwargs and (module != "math" or any(isinstance(v, Sym) for v in kwargs.values()))):
        return False  # (`math.isclose(a, b, rel_tol=1e-3)`: constant keywords)
    if func in (min, max, math.fsum) and len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]  # (`math.fsum(losses)`: of the items)
    if not any(isinstance(a, Sym) for a in args):
        return False
    if module == "math":
        return all(_number(a) or isinstance(a, Sym) and a.kind != "py" and a.size == 1 for a in args)
    return func in _NUMBER_BUILTINS and all(_number(a) for a in args)


def number_call(builder, func, module, args, site, kwargs=None):
    """The PY_OP node computing `func(*args, **kwargs)` (see `is_number_call`)."""
    if kwargs:
        func = functools.partial(func, **kwargs)
    if func is math.fsum:  # math.fsum(losses) of numbers the graph computes: one node of the items
        func, args = _fsum, tuple(args[0])
    if func in (min, max) and len(args) == 1:
        args = tuple(args[0])
        if len(args) == 1:  # max([x]) is x
            return args[0]
        if not args:
            raise Unsupported("op-error", f"{func.__name__}() of an empty sequence", site)
    if func is math.trunc and any(isinstance(a, Sym) and a.kind != "py" and not (
            a.ndim == 0 and a.dtype == np.float64 and numpy_scalar(a)) for a in args):  # (float's own __trunc__)
        raise Unsupported("user-error", "math.trunc() of an array or of a NumPy scalar other than float64 (eager "
                                        "raises TypeError: its type defines no __trunc__)", site)
    if module == "math":  # a one-element array goes in as the Python number math converts it to
        args = tuple(builder.to_py(a, a.py_type) if isinstance(a, Sym) and a.kind != "py" else a for a in args)
    sample = py_sample(func, args, site)
    if type(sample) not in _NUMBER_TYPES:  # math.frexp's tuple: not a Python number the graph can hold
        raise Unsupported("data-dependent-python", f"{getattr(func, '__name__', func)}() of a graph value "
                                                  f"giving a {type(sample).__name__}", site)
    out = builder.py_op(func, *args, sample=sample)
    return typed_pow(builder, func, args, out) if func is pow and len(args) == 2 else out


def _fsum(*items):
    return math.fsum(items)


def _real(v):
    return v.real


def _imag(v):
    return v.imag


def number_attribute(builder, obj, name, site):
    """`z.real` / `z.imag` of a Python number the graph computes (a float's are itself and 0.0);
    other attributes (`i.bit_length()`, `s.hex()`) keep the function eager."""
    fn = {"real": _real, "imag": _imag}.get(name)
    if fn is None:
        raise Unsupported("data-dependent-python", f"`.{name}` of a Python number the graph computes", site)
    return builder.py_op(fn, obj)


def typed_pow(builder, func, args, out):
    """`a ** b` or `pow(a, b)` of Python numbers the graph computes (`out`, its PY_OP): Python's
    result type depends on the values (an int to a negative int is a float, a negative float to
    a fraction a complex), the graph's is its stand-ins'; an assert checks it when the graph runs
    (a call where it differs runs eagerly). After `regen_after` such failures the graph is made
    again with the wider type (float for an int, complex for a float: `2 ** -k`, a root of a
    number that stays negative). Not where the type cannot change: a constant whole exponent, or
    a constant float base that is not negative."""
    a, b = args
    if not isinstance(b, Sym) and (type(b) is int or type(b) is float and b.is_integer()) \
            or not isinstance(a, Sym) and type(a) is float and a >= 0:
        return out
    t = complex if out.dtype.kind == "c" else out.py_type
    n = builder.powers[builder.site] = builder.powers.get(builder.site, -1) + 1
    key = ("pow", builder.site, n)  # (the site's n-th power, in program order)
    if key in builder.relaxed and t is not complex:
        t = float if t in (int, bool) else complex
        out = builder.py_op(func, *args, sample=t(1))
    builder.assert_(builder.py_op(_pow_gives(t), a, b, sample=True), True,
                    Assumption("type", builder.site, t.__name__, path="a ** b", relax=key))
    return out


@functools.lru_cache(maxsize=None)
def _pow_gives(t):  # (one function per type: the same check of the same operands is one node)
    def check(a, b):
        return type(a ** b) is t
    check.__name__ = f"pow_gives_{t.__name__}"
    return check


# From Python 3.12 on, sum() of floats compensates its rounding (Neumaier's sum): a chain of
# adds gives other last bits, so such a sum is one node calling sum() itself
_COMPENSATED_SUM = sys.version_info >= (3, 12)


def _sum_from(start, *items):
    return sum(items, start)


def python_sum(builder, items, start, site):
    """`sum(items, start)` of values some of which the graph computes, as this Python's sum()
    adds them: its rounding compensated over the leading Python numbers (`compensated_sum`), the
    correction added in at the first other item (a NumPy scalar, an array), the rest added one
    after the other."""
    run = next((k for k, item in enumerate(items) if not _number(item)), len(items))
    total = compensated_sum(builder, items[:run], start, site)
    if total is None:
        total, run = start, 0
    for x in items[run:]:
        total = total + x
    return total


def compensated_sum(builder, items, start, site):
    """`sum(items, start)` of Python numbers some of which the graph computes, as this Python's
    sum() gives it (one PY_OP node); None where a chain of adds gives the same bits (ints, or a
    Python before 3.12, whose sum() adds one item after the other)."""
    values = (start, *items)
    if not _COMPENSATED_SUM or not all(_number(a) for a in values) or not any(
            type(a) is float or isinstance(a, Sym) and np.dtype(a.node.aval[1]).kind not in "biu" for a in values):
        return None
    return builder.py_op(_sum_from, *values, sample=py_sample(_sum_from, values, site))


def _number(a) -> bool:
    return isinstance(a, _NUMBER_TYPES) or isinstance(a, Sym) and a.kind == "py"



def _sorted_items(*items, reverse=False):
    return sorted(items, reverse=reverse)


# statistics functions of Python floats that give a float (of ints some give an int or a float by
# the data: eager); and those needing two items
_STATISTICS = frozenset(getattr(statistics, n) for n in (
    "mean", "fmean", "median", "median_low", "median_high", "stdev", "pstdev", "variance", "pvariance",
    "geometric_mean", "harmonic_mean") if hasattr(statistics, n))
_TWO_ITEMS = frozenset((statistics.stdev, statistics.variance))
_HEAPQ = frozenset((heapq.nlargest, heapq.nsmallest))
LIBRARY_OF_NUMBERS = _STATISTICS | _HEAPQ  # (library_of_numbers)


def is_library_of_numbers(func, args, kwargs) -> bool:
    """`statistics.mean(losses[-10:])`, `heapq.nlargest(k, losses)`: standard-library Python
    functions of a list of Python numbers some of which the graph holds (`library_of_numbers`)."""
    if func not in LIBRARY_OF_NUMBERS or kwargs:
        return False
    items = args[0] if func in _STATISTICS and len(args) == 1 else args[1] if len(args) == 2 else None
    return isinstance(items, (list, tuple)) and any(isinstance(a, Sym) for a in items)


def library_of_numbers(builder, func, args, site):
    """One PY_OP node running the function on the numbers when the graph runs (its comparisons
    and rounding, NaNs where it puts them); a `heapq` result's items read from its tuple. Of
    Python floats only for statistics (the type of `mean` of ints depends on the data), of one
    type for heapq (which type is where would); lengths the function refuses run eagerly."""
    items = list(args[-1])
    types = {(a.py_type if isinstance(a, Sym) else type(a)) for a in items if _number(a)}
    name = f"{func.__module__}.{func.__name__}"
    if not all(_number(a) for a in items) or len(types) != 1 or func in _STATISTICS and types != {float}:
        raise Unsupported("data-dependent-python", f"{name}() of graph values other than Python floats "
                                                   "(of numbers of one type for heapq)", site)
    if func in _STATISTICS:
        if len(items) < (2 if func in _TWO_ITEMS else 1):
            raise Unsupported("user-error", f"{name}() of {len(items)} items", site)
        return builder.py_op(_of_items(func), *items, sample=1.0)
    n = args[0]
    if type(n) is not int:
        raise Unsupported("data-dependent-python", f"{name}() of a count that is not a constant int", site)
    node = builder.add(ir.Node(ir.PY_OP, tuple(a.node if isinstance(a, Sym) else a for a in items),
                               {"fn": _of_items(func, n)}))
    py_type = types.pop()
    return [Sym(builder.add(ir.Node(ir.TUPLE_GET, (node,), {"index": i}, ((), np.dtype(py_type)))), "py")
            for i in range(max(0, min(n, len(items))))]


@functools.lru_cache(maxsize=None)
def _of_items(func, n=None):
    """func of the list of items, as the user's call gives it one (heapq's first `n`: a tuple)."""
    def call(*items):
        return func(list(items)) if n is None else tuple(func(n, list(items)))
    call.__name__ = func.__name__
    return call


def sorted_numbers(builder, args, kwargs, site):
    """`sorted(losses)` of Python numbers of one type, some of them held in the graph: the builtin
    runs on them when the graph runs (one node, eager's comparisons, NaNs included), and the
    list's items are read from its result. Other sorts (a key, mixed types whose order decides
    which type is where, arrays) are refused."""
    items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else None
    reverse = kwargs.get("reverse", False)
    types = {(a.py_type if isinstance(a, Sym) else type(a)) for a in items or () if _number(a)}
    if items is None or set(kwargs) - {"reverse"} or type(reverse) is not bool or len(types) != 1 \
            or not all(_number(a) for a in items):
        raise Unsupported("data-dependent-python", "sorted() of graph values other than Python numbers of one type "
                                                   "(or with a key)", site)
    py_type = types.pop()
    node = builder.add(ir.Node(ir.PY_OP, tuple(a.node if isinstance(a, Sym) else a for a in items),
                               {"fn": functools.partial(_sorted_items, reverse=reverse)}))
    return [Sym(builder.add(ir.Node(ir.TUPLE_GET, (node,), {"index": i}, ((), np.dtype(py_type)))), "py")
            for i in range(len(items))]


def scalar_extreme(builder, func, args, kwargs, site):
    """`max(norms)` of one-element NumPy values of one dtype (NumPy scalars, 0-d arrays): the
    builtin itself runs on them when the graph runs, so the result is the very item eager's
    comparisons pick (NaN included), of its type."""
    items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    if (kwargs or not items or (len(args) == 1 and not isinstance(args[0], (list, tuple)))
            or not all(isinstance(x, Sym) and x.kind == "array" and x.shape == () for x in items)
            or len({x.dtype for x in items}) != 1):
        raise Unsupported("data-dependent-python", f"{func.__name__}() over graph values", site)
    if len(items) == 1:
        return items[0]
    node = builder.add(ir.Node(ir.PY_OP, tuple(x.node for x in items), {"fn": func}, ((), items[0].dtype)))
    return Sym(node, "array")


def mixed_items(func, args, kwargs):
    """The arguments of `min(1.0, clip / norm)` (or `max([floor, x])`) when they mix Python
    numbers with one-element NumPy values or Tensors the graph computes, or hold NumPy values of
    several dtypes, or Tensors: which argument eager gets depends on the data, and so does the
    result's type (a Python float or a numpy.float64, which a float32 array multiplied by it
    keeps or promotes). None for any other call of min or max."""
    if kwargs:
        return None
    items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    if len(items) < 2 or not all(_number(x) or isinstance(x, Sym) and x.kind in ("array", "tensor")
                                 and x.size == 1 for x in items):
        return None
    arrays = [x for x in items if isinstance(x, Sym) and x.kind != "py"]
    if not arrays or (len(arrays) == len(items) and all(x.shape == () and x.kind == "array" for x in items)
                      and len({x.dtype for x in items}) == 1):
        return None  # all Python numbers (number_call), or NumPy scalars of one dtype (scalar_extreme)
    return items


def mixed_types(func, args, kwargs):
    """The arguments of `max(0, 1 - t * 0.25)` when they are Python numbers of several types
    (an int and a float, a bool): the result's type is the argument's eager gets, which depends
    on the data (`np.array([t, eps])`'s dtype, `type(eps)`). None otherwise."""
    if kwargs:
        return None
    items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    if len(items) < 2 or not all(_number(x) for x in items) or not any(isinstance(x, Sym) for x in items):
        return None
    kinds = {np.dtype(x.dtype).kind if isinstance(x, Sym) else "b" if type(x) is bool else np.dtype(type(x)).kind
             for x in items}
    return items if len(kinds) > 1 else None


def speculate_pick(gen, func, items, key, index=None, what="Python numbers and graph values"):
    """`min(1.0, clip / norm)`: the argument the warm-up calls got (always the same one) is the
    result, and an assert node checks that the builtin, run on the values when the graph runs,
    gives that argument again; a call where it gives another falls back to eager. `index`: the
    position of the extreme as the graph computes it (`max(heads, key=score)`, callbacks.py),
    asserted instead. `key`: the call's site, as the profile knows it (calls.call sets
    `gen.pick_key`).

    Of two arguments, where the warm-up calls got both or the assert kept failing (a clip that
    binds on some steps), the site is split as a branch is (jit/variants.py): one graph per
    argument, each asserting its own, and a call the one graph does not take tries the other.
    Of more arguments the site then stays eager."""
    split_key = ("pick", key)
    seen = gen.profile.picked(key) if gen.profile is not None and key is not None else set()
    varies = len(seen) != 1 or split_key in gen.relaxed  # (the assert's relaxation key is the same)
    if varies and split_key in gen.split_picks:  # a loop's: one outcome for all of its iterations would not do
        raise Unsupported("data-dependent-python", f"{func.__name__}() of {what} in a loop: the argument it gives "
                                                   "varies", gen.site)
    if key is not None and split_key in gen.split:
        gen.split_picks.add(split_key)
        return _split_pick(gen, func, items, key, index, split_key)
    if varies:
        why = "differed between warm-up calls" if len(seen) > 1 else (
            "kept changing" if seen else "was not seen in warm-up")
        exc = Unsupported("data-dependent-python", f"{func.__name__}() of {what}: the argument it gives {why}",
                          gen.site)
        if seen and len(items) == 2:
            exc.branch = split_key  # the JIT makes one graph per argument instead
            gen.split_picks.add(split_key)
        raise exc
    (pos,) = seen
    if pos >= len(items):
        raise Unsupported("data-dependent-python", f"{func.__name__}() of a varying number of arguments", gen.site)
    gen.builder.assert_(_gives_check(gen, func, items, index, pos), True,
                        Assumption("pick", gen.site, f"argument {pos + 1}", path=f"{func.__name__}()",
                                   relax=split_key))
    return items[pos]


def _split_pick(gen, func, items, key, index, split_key):
    """One graph of a split two-argument site: the outcome is whether the builtin gives its first
    argument (first, the one the warm-up calls got more often)."""
    if len(items) != 2:
        raise Unsupported("data-dependent-python", f"{func.__name__}() of a varying number of arguments", gen.site)
    first = gen.split[split_key]
    if first is None:
        counts = gen.profile.pick_counts(key) if gen.profile is not None else {}
        first = counts.get(0, 0) >= counts.get(1, 0)
    gen.forced[split_key] = first
    gen.builder.assert_(_gives_check(gen, func, items, index, 0), first,
                        Assumption("pick", gen.site, first, path=f"{func.__name__}() gives its first argument",
                                   relax=("split", split_key)))
    return items[0 if first else 1]


def _gives_check(gen, func, items, index, pos):
    """A graph value: whether the builtin, on the values the graph runs on, gives argument `pos`."""
    if index is None:
        return gen.builder.py_op(_gives(func, pos), *items, sample=True)
    return gen.builder.py_op(_equals(pos), index, sample=True)


@functools.lru_cache(maxsize=None)
def _equals(pos):
    def equals(index):
        return index == pos
    equals.__name__ = f"is_{pos}"
    return equals


@functools.lru_cache(maxsize=None)
def _gives(func, index):
    def gives(*items):  # whether func's result is the item at `index` (the first one it is)
        return picked_position(items, func(items)) == index
    gives.__name__ = f"{func.__name__}_gives_{index}"
    return gives


def number_chain(builder, ops, values, site):
    """`v0 < v1 <= v2 ...` (the AST's comparison operators `ops`) where a comparison is of Python
    numbers the graph computes: one PY_OP over all the operands, a Python bool as eager's."""
    if not all(type(o) in _CMPOPS for o in ops) or not all(_number(v) for v in values):
        raise Unsupported("data-dependent-python", "chained comparison of graph values", site)
    return builder.py_op(_chain(tuple(type(o) for o in ops)), *values)


@functools.lru_cache(maxsize=None)
def _chain(op_types):
    fns = [_CMPOPS[t] for t in op_types]

    def chain(*values):  # the first false comparison's result, else the last one's: as Python's
        for fn, a, b in zip(fns, values, values[1:]):
            result = fn(a, b)
            if not result:
                return result
        return result
    return chain
