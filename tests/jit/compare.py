"""How the side-by-side harness compares eager's and the jit's call: values, types and structure
(`assert_same`), who is who among the result, state and arguments (`assert_same_aliasing`),
printed text and warnings (`_same_text`), exactly or, inside `within`, to a tolerance."""
from __future__ import annotations

import collections
import contextlib
import functools
import math
import re
import types
import warnings

import numpy as np

from janus_like import backend
from janus_like.tensor import Tensor


_TOLERANCE: list = [None]  # (rtol, atol) while `within` is active: floats compare approximately


@contextlib.contextmanager
def within(rtol, atol):
    """Compare floating-point values to a tolerance instead of bit for bit (reassociating mode,
    whose graphs round differently from eager by design)."""
    old = _TOLERANCE[0]
    _TOLERANCE[0] = (rtol, atol)
    try:
        yield
    finally:
        _TOLERANCE[0] = old


_DEAD_VALUES: list = [False]  # while `with_dead_values` is active: see there


@contextlib.contextmanager
def with_dead_values():
    """For generated programs, which assign values nothing reads (`h0 = ...` twice): the graph
    does not compute such a value, so its floating-point warnings (an overflow) do not show
    (a documented difference). The jit's warnings must then be some of eager's floating-point
    warnings, never others; printed text is compared as always."""
    old = _DEAD_VALUES[0]
    _DEAD_VALUES[0] = True
    try:
        yield
    finally:
        _DEAD_VALUES[0] = old


def _same_text(text_e, text_j, where):
    if _TOLERANCE[0] is not None:  # reassociating mode: a small product runs as np.dot (passes/products.py),
        # whose floating-point warning names "dot" where eager's names "matmul" (documented in the README)
        text_j = re.sub(r" encountered in dot$", " encountered in matmul", text_j, flags=re.M)
    if text_e == text_j or not _DEAD_VALUES[0]:
        assert text_e == text_j, f"{where}: printed output differs:\n{text_e!r}\n{text_j!r}"
        return
    (printed_e, *warned_e), (printed_j, *warned_j) = text_e.split("\n[warning] "), text_j.split("\n[warning] ")
    missing = set(warned_e) - set(warned_j)
    assert printed_e == printed_j and set(warned_j) <= set(warned_e) and all(
        w.startswith("RuntimeWarning: ") and " encountered in " in w for w in missing), \
        f"{where}: printed output differs:\n{text_e!r}\n{text_j!r}"


def _close(a, b):
    """|a - b| within atol + rtol * max|b| elementwise (inf and nan in the same places): relative to the
    array's scale, since one rounding apart is amplified where a value cancels to near zero."""
    tol = _TOLERANCE[0]
    if tol is None:
        return False
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    # past an overflow, summing in another order gives inf where eager has nan or the other way
    # (inf - inf): a value that is not finite on one side must be not finite on the other
    bad = ~np.isfinite(a)
    if not np.array_equal(bad, ~np.isfinite(b)):
        return False
    a, b = a[~bad], b[~bad]
    scale = float(np.max(np.abs(b[np.isfinite(b)]), initial=0.0))
    return bool(np.all((a == b) | (np.abs(a - b) <= tol[1] + tol[0] * scale)))


def assert_same(a, b, path="value", seen=None, flags=False):
    """a and b hold the same values, types and structure; with `flags`, arrays that are
    writeable on one side are writeable on the other (eager's read-only views, `x.diagonal()`);
    with `flags="strides"`, arrays have the same strides too (graphgen/layouts.py)."""
    seen = set() if seen is None else seen
    if id(a) in seen:
        return
    if isinstance(a, (list, dict, collections.deque)) or hasattr(a, "__dict__") or _slots(type(a)):
        seen.add(id(a))
    assert type(a) is type(b), f"{path}: type {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, Tensor):
        _arrays_equal(a._data, b._data, path)
    elif isinstance(a, np.ndarray) or backend.device_of(a) == "gpu":  # a raw CuPy array too
        _arrays_equal(a, b, path)
        if flags and isinstance(a, np.ndarray):
            with warnings.catch_warnings():  # (np.broadcast_arrays' views warn when asked)
                warnings.simplefilter("ignore")
                assert a.flags.writeable == b.flags.writeable, f"{path}: writeable {a.flags.writeable} != " \
                                                               f"{b.flags.writeable}"
                if flags == "strides" and a.size > 1:  # (a later product or sum rounds by layout)
                    sa, sb = ([s for s, n in zip(x.strides, x.shape) if n > 1] for x in (a, b))  # (any on a unit axis)
                    assert sa == sb, f"{path}: strides {a.strides} != {b.strides}"
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype and (a == b or (a != a and b != b) or _close(a, b)), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, float):
        assert a == b or (math.isnan(a) and math.isnan(b)) or _close(a, b), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, (list, tuple, collections.deque)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        if isinstance(a, collections.deque):
            assert a.maxlen == b.maxlen, f"{path}: maxlen {a.maxlen} != {b.maxlen}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]", seen, flags)
        _same_attributes(a, b, path, seen, flags)  # (a list subclass's own attributes)
    elif isinstance(a, dict):
        simple = all(isinstance(k, (str, int, float, tuple, type(None))) for k in a)
        assert (list(a.keys()) == list(b.keys())) if simple else len(a) == len(b), f"{path}: keys {list(a)} != {list(b)}"
        for (ka, x), (kb, y) in zip(a.items(), b.items()):
            assert_same(x, y, f"{path}[{ka!r}]", seen, flags)
        _same_attributes(a, b, path, seen, flags)
    elif isinstance(a, types.CellType):  # a closure's variable
        assert_same(a.cell_contents, b.cell_contents, f"{path}.cell_contents", seen, flags)
    elif isinstance(a, np.random.Generator):
        assert type(a.bit_generator) is type(b.bit_generator), f"{path}: bit generators differ"
        assert_same(a.bit_generator.state, b.bit_generator.state, f"{path}.state", seen)  # (MT19937's: an array)
    elif isinstance(a, np.random.RandomState):  # (its == is identity: compare what it would draw next)
        assert_same(a.get_state(legacy=False), b.get_state(legacy=False), f"{path}.state", seen)
    elif isinstance(a, (types.FunctionType, types.MethodType, type, types.ModuleType)) or callable(a) and not hasattr(a, "__dict__"):
        return
    elif (hasattr(a, "__dict__") or _slots(type(a))) and not isinstance(a, type):
        _same_attributes(a, b, path, seen, flags)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@functools.lru_cache(maxsize=None)
def _slots(cls):
    """The names of the `__slots__` an object of class cls has (its classes' own)."""
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [n for n in slots if n not in ("__dict__", "__weakref__")]
    return tuple(names)


def _same_attributes(a, b, path, seen, flags):
    """An object's attributes (its __dict__ and its slots) hold the same values on both sides."""
    if hasattr(a, "__dict__"):
        assert_same(vars(a), vars(b), f"{path}.__dict__", seen, flags)
    for name in _slots(type(a)):
        assert hasattr(a, name) == hasattr(b, name), f"{path}.{name}: set on one side only"
        if hasattr(a, name):
            assert_same(getattr(a, name), getattr(b, name), f"{path}.{name}", seen, flags)


_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), np.generic, range, slice, frozenset,
              types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, types.ModuleType)


def _aliasing(root):
    """Who is who in `root` (a call's result, state and arguments): the objects it reaches in walk
    order with, for each, the first earlier one it *is*, and for arrays the earlier arrays whose
    memory it shares. Two sides that hold equal values can still differ here: eager's `return y, y`
    gives one array twice, and a later in-place write shows through both."""
    seen, order, arrays, device_arrays = {}, [], [], []

    def walk(obj, path, loose=False):
        if isinstance(obj, _IMMUTABLE) or isinstance(obj, np.random.Generator):
            return
        if isinstance(obj, tuple):
            for i, v in enumerate(obj):
                walk(v, f"{path}[{i}]")
            return
        first = seen.setdefault(id(obj), len(order))
        entry = [path, first, None, type(obj).__name__, loose]
        order.append(entry)
        if first != len(order) - 1:
            return
        if isinstance(obj, np.ndarray):
            entry[2] = tuple(k for k, a in arrays if np.shares_memory(a, obj, max_work=1000))
            arrays.append((len(order) - 1, obj))
        elif backend.device_of(obj) == "gpu":  # a CuPy array: its own memory, told apart by CuPy
            may_share = backend._cupy().may_share_memory
            entry[2] = tuple(k for k, a in device_arrays if may_share(a, obj))
            device_arrays.append((len(order) - 1, obj))
        elif isinstance(obj, Tensor):
            walk(obj._data, f"{path}._data", True)
        elif isinstance(obj, list) or type(obj).__name__ == "deque":
            for i, v in enumerate(obj):
                walk(v, f"{path}[{i}]")
        elif isinstance(obj, dict):
            for i, (k, v) in enumerate(obj.items()):
                walk(v, f"{path}[{k!r}]" if isinstance(k, (str, int)) else f"{path}[#{i}]")
        elif hasattr(obj, "__dict__") and not callable(obj):
            walk(vars(obj), f"{path}.__dict__")

    walk(root, "")
    arrays.clear()  # `walk` refers to itself: the arrays would live until the next collection
    device_arrays.clear()
    return order


def assert_same_aliasing(root_e, root_j, where):
    """The jit's result, state and arguments alias one another as eager's do (`_aliasing`)."""
    compare_aliasing(_aliasing(root_e), _aliasing(root_j), where)


def compare_aliasing(ae, aj, where):
    """`assert_same_aliasing` of two `_aliasing` lists, taken when each side's call returned."""
    for k, ((pe, fe, me, te, le), (pj, fj, mj, tj, lj)) in enumerate(zip(ae, aj)):
        if le and lj and te == tj == "ndarray":
            # a Tensor's buffer: eager hands it out (`t.numpy()`, `np.asarray(t)`, a Variable's
            # `v[1]` view) where the graph's result is a copy; it must never share more than eager's
            shared_e = set(me) if me is not None else {fe} | set(ae[fe][2] or ())
            ok = fj == fe if fj != k else set(mj) <= shared_e
        else:
            ok = fe == fj and me == mj
        assert ok, f"{where}: aliasing differs at {pe} ({te}, {tj}): eager {ae[fe][0]} {me}, jit {aj[fj][0]} {mj}"
    assert len(ae) == len(aj), f"{where}: {len(ae)} objects reached eagerly, {len(aj)} under jit"


def _arrays_equal(x, y, path):
    assert x.dtype == y.dtype, f"{path}: dtype {x.dtype} != {y.dtype}"
    assert x.shape == y.shape, f"{path}: shape {x.shape} != {y.shape}"
    assert np.array_equal(x, y, equal_nan=x.dtype.kind in "fc") or (x.dtype.kind in "fc" and _close(x, y)), \
        f"{path}: values differ\n{x}\n{y}"
