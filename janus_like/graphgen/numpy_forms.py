"""How NumPy treats the forms of a few calls, for the graph to do the same: `np.einsum` of one
array that only permutes its axes returns a view of it, `np.stack`-like functions make every
item of their sequence an array first, and an ndarray's C methods (`x.dot(w)`, `x.take(t)`) make
their arguments arrays (a Tensor among them gives an ndarray, through which no gradient flows)."""
from __future__ import annotations

import functools
import inspect

import numpy as np

from ..ops import api as F
from ..tensor import Tensor
from .support import _any_abstract
from .values import ObjRef, Sym, Unsupported

# ndarray methods that make their arguments arrays (a Tensor among them gives no Tensor result)
CONVERTING_METHODS = frozenset(("take", "repeat", "searchsorted", "choose", "compress"))
# NumPy functions of a sequence of arrays, each item made an array first
SEQUENCE_FUNCTIONS = frozenset((np.stack, np.concatenate, np.hstack, np.vstack, np.column_stack, np.dstack))


def ndarray_operand(v):
    """A Tensor given to an ndarray's method that converts its arguments (`x.dot(w)`,
    `x.take(idx)`): NumPy's array of it, a constant of the tape (eager's method returns an ndarray,
    and no gradient flows through it). Other values as they are."""
    if isinstance(v, Sym) and v.kind == "tensor":
        return Sym(F.stop_gradient(v).node, "array")
    return v._data if isinstance(v, Tensor) else v


def array_items(builder, items):
    """np.stack([x.sum(), 1.0]): NumPy makes every item an array first; the graph's constants
    among graph arrays are array constants (not the eager Tensors its ops make of them)."""
    if not any(isinstance(v, Sym) and v.kind == "array" for v in items) \
            or any(isinstance(v, Sym) and v.kind == "tensor" or isinstance(v, (Tensor, ObjRef)) for v in items):
        return items  # (a tuple from the inputs: as before, the op's own conversion)
    return type(items)(v if isinstance(v, Sym) or _any_abstract(v) else builder.constant(np.asarray(v), "array")
                       for v in items)


def einsum_view(subscripts, x, kwargs, site):
    """`np.einsum("ij->ji", x)` of one NumPy array: NumPy gives a view of x where the
    subscripts only permute (or take diagonals of) x's axes, and a write to x later shows
    through it. A permutation is x's transpose (a view in the graph too); a diagonal view is
    refused (eager). None: NumPy makes a new array (a sum, a broadcast), an einsum op."""
    sample = np.zeros((2,) * x.ndim, x.dtype)  # 2 in every axis: repeated labels agree
    try:
        out = np.einsum(subscripts, sample, **kwargs)
    except Exception:  # eager's error, from the op
        return None
    if not isinstance(out, np.ndarray) or not np.shares_memory(out, sample):
        return None
    # a permutation (`'ij->ji'`, `'...ij->...ji'`) moves the sample's strides, which all differ
    if out.ndim != sample.ndim or sorted(out.strides) != sorted(sample.strides):
        raise Unsupported("unsupported-call", f"numpy.einsum({subscripts!r}) of one array gives a view of its "
                                              "diagonal", site)
    return x.transpose(tuple(sample.strides.index(s) for s in out.strides))


def as_operand(builder, v, site, constants=False):
    """A list or tuple of values the graph computes as NumPy's array of it (`constants`: of
    constants too, a constant array); anything else as it is."""
    from .conversions import convert

    if type(v) not in (list, tuple):
        return v
    if _any_abstract(v):
        return convert(np.asarray, [v], {}, site)
    return builder.constant(np.asarray(v), "array") if constants else v


@functools.lru_cache(maxsize=None)
def array_like(func) -> frozenset:
    """The positions of NumPy function `func`'s parameters that take one array_like, which it
    converts with asarray (`np.mean(a)`, `np.outer(a, b)`), rather than a sequence of arrays
    (`np.concatenate(arrays)`) or a shape."""
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(k for k, name in enumerate(params[:3]) if name in _ARRAY_LIKE)


_ARRAY_LIKE = frozenset(("a", "b", "x", "x1", "x2", "m", "array", "ary", "y"))


def einsum_sublists(args):
    """(subscripts, operands) of np.einsum's sublist form `op0, sub0, op1, sub1, ..., [out]`,
    with NumPy's own letters for the axis numbers (0-25 'A'-'Z', 26-51 'a'-'z': an implicit
    output keeps NumPy's order)."""
    import string

    letters = string.ascii_uppercase + string.ascii_lowercase

    def word(sub):
        return "".join("..." if s is Ellipsis else letters[int(s)] for s in sub)

    pairs = len(args) // 2
    spec = ",".join(word(sub) for sub in args[1:2 * pairs:2])
    return spec + ("->" + word(args[-1]) if len(args) % 2 else ""), tuple(args[0:2 * pairs:2])


def input_tuple(v) -> bool:
    """v is a tuple the function reads from its inputs (its items guarded or read as values)."""
    return isinstance(v, ObjRef) and type(v.obj) is tuple


def same_dtype(given, dtype) -> bool:
    """Whether `given` (a view's argument) names `dtype` itself (not a type, which NumPy reads as
    an ndarray subclass, nor another dtype: a reinterpretation)."""
    try:
        return not (isinstance(given, type) and issubclass(given, np.ndarray)) and np.dtype(given) == dtype
    except TypeError:
        return False
