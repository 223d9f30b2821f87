"""Abstract values the graph generator computes with.

* `Sym` — a graph value (one node) with a *kind* that says what eager code would hold:
  "tensor" (a janus_like Tensor), "array" (whatever NumPy returns: ndarray or NumPy scalar) or
  "py" (a Python number from float()/int()/.item()). A Sym is a mutable box: in-place updates
  (`a += b`, `a[i] = v`) point it at a new node, and every alias (the same Sym object held in a
  list, a dict, another local) sees the update, as NumPy's object identity would.
* `VarRef` — a Variable reached from the function's inputs; reads give its current node,
  `assign*` are deferred state writes.
* `ObjRef` — a Python object reached from the inputs (a module, an optimizer, a tree node, a
  list): attribute and item reads become guarded inputs. It and the generator's other Python-side
  values (bound methods, `super()`, local functions, deferred text) are in refs.py, imported here.

Operators and NumPy's functions on a Sym go through the op registry exactly like Tensors do.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import ir
from ..ops import api as F
from ..ops.methods import ArrayMethods
from ..ops.registry import P, bind, _builder as _BUILDER  # [the builder in charge], a list read per op
from .refs import BoundMethod, DeferredStr, LocalFunction, ObjRef, SuperRef, VarSnapshot  # noqa: F401 (re-exported)

OPAQUE = object()  # marks a view we do not track element-wise (reshape, transpose, ...)
# the second item of an OPAQUE view that is an ndarray sharing a Tensor's buffer (np.asarray(t),
# t.numpy()): eager writes through it change the Tensor (a Tensor's own `t += 1` takes a new buffer)
TENSOR_BUFFER = object()
CACHED = object()  # ... that is an array a `functools.lru_cache` function returned (eager's write changes the cache)


def numpy_scalar(v) -> bool:
    """Whether a 0-d graph array is a NumPy scalar when the graph runs (ir.numpy_scalar_node):
    eager's meaning of the code follows it (`s += g` binds a new scalar, what else holds the
    old one keeps it, but writes a 0-d ndarray in place; `s.copy()` of a scalar is a scalar)."""
    return ir.numpy_scalar_node(v.node)


def array_copy(v):
    """A new ndarray holding v's value (a 0-d one for a NumPy scalar, as np.array(s) gives),
    where `v.copy()` follows NumPy's method (a scalar's copy is a scalar)."""
    return bind(P.copy, v)


class Unsupported(Exception):
    """The generator cannot convert this code; the function stays eager for this signature."""

    def __init__(self, reason: str, detail: str, site: str = ""):
        super().__init__(f"{reason}: {detail}" + (f" at {site}" if site else ""))
        self.reason = reason
        self.detail = detail
        self.site = site
        self.branch = None  # the site key of the `if` whose conditional node this made impossible
        self.retry = False  # this call only (it takes a `try`'s handler): profile it, generate again later


AFTER_LOOP = "after_loop"  # the param marking a name's value after a loop node (`stale`, `stale_error`)


def after_loop(name, site):
    """The value of `name` after a loop node where the graph does not model it: a name first bound
    in the body (eager's is the last trip's), or the loop variable after a loop left early."""
    stale = Sym(ir.Node(ir.LOOP_VAR, (), {"name": name, AFTER_LOOP: True}, ((), np.dtype(object)), site), "py")
    stale.kind = "stale"
    return stale


def stale_error(v, written_text, site):
    """Unsupported for a use of the stale value v: a view of an array since written in place
    (`written_text` says how it was used), or a name after a loop (`after_loop`)."""
    if v.node.params.get(AFTER_LOOP):
        return Unsupported("varying-trip-count", f"{v.node.params['name']!r} is read after a loop the graph runs "
                                                 "as a loop node, which does not model it there (a name first "
                                                 "bound in the body, or a loop variable the body rebinds)",
                           v.node.site or site)
    return Unsupported("view-write", written_text, site)


class Sym(ArrayMethods):
    __slots__ = ("node", "kind", "origin", "dirty", "view", "__weakref__")

    def __init__(self, node, kind="tensor", origin=None):
        self.node = node
        self.kind = kind
        self.origin = origin  # input slot of the mutable object this value lives in
        self.dirty = False  # written in place (commit needed when origin is set)
        self.view = None  # (base Sym, index) for basic-slice views of arrays

    # array facts are static: graphs are specialized on shapes
    shape = property(lambda self: tuple(self.node.aval[0]))
    dtype = property(lambda self: np.dtype(self.node.aval[1]))
    ndim = property(lambda self: len(self.node.aval[0]))
    size = property(lambda self: int(np.prod(self.node.aval[0], dtype=np.int64)))

    def __repr__(self):
        return f"Sym(%{self.node.id}, {self.kind})"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.kind == "array" and self.ndim >= 2:  # rows: views, as NumPy's (`for row in W: row *= 0.9`)
            return (self._row(i) for i in range(len(self)))
        return (F.getitem(self, i) for i in range(len(self)))  # (a 1-d array's items: NumPy scalars, copies)

    def _row(self, i):
        out = F.getitem(self, i)
        out.view = (self, i)
        _builder().alias(self, out)
        return out

    @property
    def flags(self):  # (`np.isfortran(r)`: NumPy's Python code reads it)
        raise Unsupported("unsupported-call", "an array's flags (its memory layout) read in a graph")

    def __bool__(self):
        raise Unsupported("data-dependent-python", "truth value of an array computed in the graph is needed "
                                                  "by library code")

    def __float__(self):
        raise Unsupported("data-dependent-python", "float() of a graph value inside library code")

    def __index__(self):  # (`x.sum(axis=k)` of an axis the warm-up saw vary: read as a value)
        raise Unsupported("data-dependent-python", "a graph value used as an integer (an axis, a size or an "
                                                  "index) inside library code")

    __int__ = __index__

    def __hash__(self):  # a dict key or set item in library code (`dict(zip(ids, ...))`): eager hashes the value
        raise Unsupported("data-dependent-python", "a graph value hashed by library code (a dict key or set item)")

    def __array__(self, dtype=None, copy=None):
        # library code with no graph op made a graph value into an array (np.full's fill value,
        # np.require): without this, NumPy made an object array holding the symbolic values
        raise Unsupported("unsupported-call", "a NumPy function with no graph op given a graph value")

    def __add__(self, o): return _arith(operator.add, F.add, self, o)
    def __radd__(self, o): return _arith(operator.add, F.add, o, self)
    def __sub__(self, o): return _arith(operator.sub, F.sub, self, o)
    def __rsub__(self, o): return _arith(operator.sub, F.sub, o, self)
    def __mul__(self, o): return _arith(operator.mul, F.mul, self, o)
    def __rmul__(self, o): return _arith(operator.mul, F.mul, o, self)
    def __truediv__(self, o): return _arith(operator.truediv, F.div, self, o)
    def __rtruediv__(self, o): return _arith(operator.truediv, F.div, o, self)
    def __floordiv__(self, o): return _arith(operator.floordiv, F.floor_divide, self, o)
    def __rfloordiv__(self, o): return _arith(operator.floordiv, F.floor_divide, o, self)
    def __mod__(self, o): return _arith(operator.mod, F.remainder, self, o)
    def __rmod__(self, o): return _arith(operator.mod, F.remainder, o, self)
    def __pow__(self, o): return _arith(operator.pow, F.pow, self, o)
    def __rpow__(self, o): return _arith(operator.pow, F.pow, o, self)
    def __matmul__(self, o): return F.matmul(self, o)
    def __rmatmul__(self, o): return F.matmul(o, self)
    def __neg__(self): return _arith(operator.neg, F.neg, self)
    def __pos__(self):  # NumPy's `+x` is a new array (of a 0-d one, as any ufunc's result: a NumPy scalar)
        if self.kind == "py" and self.dtype == np.bool_:  # `+flag` of a Python bool is an int
            return _builder().py_op(operator.pos, self)
        if self.kind != "array":
            return self
        if self.dtype == np.bool_:  # NumPy's `positive` has no loop for bools: eager raises
            raise Unsupported("op-error", "unary + (numpy.positive) of a bool array", _builder().site)
        return self._as_numpy_scalar() if self.ndim == 0 else self.copy()
    def __abs__(self): return _arith(abs, F.abs, self)
    def __lt__(self, o): return _arith(operator.lt, F.lt, self, o)
    def __le__(self, o): return _arith(operator.le, F.le, self, o)
    def __gt__(self, o): return _arith(operator.gt, F.gt, self, o)
    def __ge__(self, o): return _arith(operator.ge, F.ge, self, o)
    def __eq__(self, o): return _arith(operator.eq, F.eq, self, o)
    def __ne__(self, o): return _arith(operator.ne, F.ne, self, o)
    # `&`, `|`, `^`, `~`: bitwise on NumPy arrays and Python ints, the logical ops on booleans only
    def __and__(self, o): return _bitwise(operator.and_, F.logical_and, F.bitwise_and, self, o)
    def __rand__(self, o): return _bitwise(operator.and_, F.logical_and, F.bitwise_and, o, self)
    def __or__(self, o): return _bitwise(operator.or_, F.logical_or, F.bitwise_or, self, o)
    def __ror__(self, o): return _bitwise(operator.or_, F.logical_or, F.bitwise_or, o, self)
    def __xor__(self, o): return _bitwise(operator.xor, F.ne, F.bitwise_xor, self, o)
    def __rxor__(self, o): return _bitwise(operator.xor, F.ne, F.bitwise_xor, o, self)
    def __invert__(self): return _bitwise(operator.invert, F.logical_not, F.invert, self)
    def __lshift__(self, o): return _bitwise(operator.lshift, None, F.left_shift, self, o)
    def __rlshift__(self, o): return _bitwise(operator.lshift, None, F.left_shift, o, self)
    def __rshift__(self, o): return _bitwise(operator.rshift, None, F.right_shift, self, o)
    def __rrshift__(self, o): return _bitwise(operator.rshift, None, F.right_shift, o, self)


    def __round__(self, ndigits=None):
        """`round(x.mean(), 3)` of a NumPy scalar: NumPy's rounding, a NumPy scalar of its dtype;
        `round(s)` a Python int (an ndarray has no `__round__`: eager's TypeError)."""
        if self.kind != "array" or self.ndim != 0 or not numpy_scalar(self) or np.dtype(self.dtype).kind not in "biuf":
            raise TypeError(f"type {'numpy.ndarray' if self.kind == 'array' else self.kind} doesn't define __round__")
        if ndigits is None:
            return _builder().py_op(round, self)
        if isinstance(ndigits, Sym):
            raise Unsupported("data-dependent-python", "round() to a number of digits the graph computes")
        return F.round(self, operator.index(ndigits))

    def copy(self):
        if self.kind == "array" and self.ndim == 0 and numpy_scalar(self):  # `x.sum().copy()`: a NumPy scalar
            return self._as_numpy_scalar()
        return array_copy(self)

    def dot(self, o):  # ndarray.dot makes a Tensor argument an array (no gradient): an ndarray
        from .numpy_forms import ndarray_operand

        return F.dot(self, ndarray_operand(o) if self.kind == "array" else o)

    def ravel(self, order="C"):
        """A C-ordered array's view, as NumPy's; another array's copy (`x[::2].ravel()`, which a
        plain reshape would give as a view): reshape of np.ascontiguousarray, x itself if C-ordered."""
        if self.kind != "array":
            return super().ravel()
        if order != "C":  # ("K": a view of a transposed array too)
            raise Unsupported("unsupported-call", f"ravel(order={order!r}) of a graph array", _builder().site)
        contiguous = bind(P.ascontiguousarray, self)  # (its view of self, if any, tracked as emit made it)
        return F.reshape(contiguous if contiguous.kind == "array" else Sym(contiguous.node, "array"), (-1,))

    def _as_numpy_scalar(self):
        """A new NumPy scalar of this 0-d value (`np.float64(x)`'s node)."""
        return bind(P.numpy_scalar, self, dtype=self.dtype)

    @property
    def device(self):
        from ..executor.placement import node_device

        return node_device(self.node) or "cpu"

    def to(self, device_name):
        from ..ops import api as F

        return F.to_device(self, device_name)  # a transfer node

    def numpy(self):
        if self.kind == "tensor" and self.device == "gpu":  # a host copy, as Tensor.numpy() makes
            return Sym(F.to_device(self, "cpu").node, "array")
        # under a tape, a Tensor's values are a constant to it, as np.asarray's (conversions._detach)
        out = Sym((F.stop_gradient(self) if self.kind == "tensor" and _builder().tapes else self).node, "array")
        if isinstance(self, VarRef) and out.ndim == 0 and numpy_scalar(out):  # a Variable holds a 0-d ndarray
            out = array_copy(out)  # (its assign_add computed a NumPy scalar)
        if self.kind == "tensor":
            out.view = (OPAQUE, TENSOR_BUFFER)
        return out

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from ..tensor import _UFUNCS, ufunc_method_op

        if kwargs.get("out") is not None:
            raise Unsupported("unsupported-call", f"numpy.{ufunc.__name__}(..., out=) inside library code")
        if method == "__call__" and ufunc in _UFUNCS and not kwargs:
            return _UFUNCS[ufunc](*inputs)
        result = None if method == "__call__" else ufunc_method_op(ufunc, method, inputs, kwargs)
        if result is None:
            raise Unsupported("unsupported-call",
                              f"numpy.{ufunc.__name__}.{method} with these arguments has no graph op")
        return result

    def item(self):
        """`x.item()` of a one-element graph value: the Python number eager gets (a TO_PY node)."""
        if self.size != 1 or self.dtype.kind not in "biuf":
            raise Unsupported("data-dependent-python", f".item() of a graph value of {self.size} elements "
                                                       f"({self.dtype})")
        flat = self if self.ndim == 0 else F.reshape(self, ())  # (float() of a 1-d array raises)
        return _builder().to_py(flat, self.py_type)

    def __copy__(self):
        """`copy.copy(x)` / `copy.deepcopy(x)` of a graph array (copy.py is inlined, and reaches
        these): a new array, as ndarray's give, laid out as x (ndarray.__copy__ copies in order "K":
        a transposed x stays Fortran-ordered)."""
        if self.kind != "array":
            raise Unsupported("unsupported-call", f"copy of a {self.kind} graph value")
        return self.copy() if self.ndim == 0 else Sym(bind(P.copy_keep, self).node, "array")

    def __deepcopy__(self, memo):
        return self.__copy__()

    def tolist(self):
        """`x.tolist()` of a graph value of at most TOLIST_MAX elements: nested lists of the
        Python numbers eager gets, items of one `ravel().tolist()` of the run's array."""
        if self.kind == "py":
            raise Unsupported("user-error", f"'{self.py_type.__name__}' object has no attribute 'tolist'")
        if self.size > TOLIST_MAX or self.dtype.kind not in "biuf":
            raise Unsupported("data-dependent-python", f".tolist() of a graph value of {self.size} elements "
                                                       f"({self.dtype}; at most {TOLIST_MAX} are read as numbers)")
        if not self.shape:
            return self.item()
        if not self.size:  # [[], []]: nothing to read
            return _nest([], self.shape)
        builder = _builder()
        flat = builder.add(ir.Node(ir.PY_OP, (self.node,), {"fn": _flat_list}))
        items = [Sym(builder.add(ir.Node(ir.TUPLE_GET, (flat,), {"index": i}, ((), np.dtype(self.py_type)))), "py")
                 for i in range(self.size)]
        return _nest(items, self.shape)

    @property
    def py_type(self):
        """The Python number type of this value's dtype (bool, int, float or complex)."""
        kind = self.dtype.kind
        return bool if kind == "b" else int if kind in "iu" else complex if kind == "c" else float

    def __array_function__(self, func, types, args, kwargs):
        from ..tensor import _FUNCTIONS, unimplemented_arguments

        impl = _FUNCTIONS.get(func)
        if impl is None:
            raise Unsupported("unsupported-call", f"numpy.{func.__name__} has no graph op")
        unimplemented = unimplemented_arguments(func, args, kwargs)
        if unimplemented:
            raise Unsupported("unsupported-call", f"numpy.{func.__name__} with {unimplemented} has no graph op")
        return impl(*args, **kwargs)


TOLIST_MAX = 256  # elements of an array whose `.tolist()` a graph reads as Python numbers


def _flat_list(x):
    return x.ravel().tolist()


def _nest(items, shape):
    """The flat `items` as nested lists of `shape` (C order), as ndarray.tolist() nests them."""
    if len(shape) == 1:
        return list(items)
    step = len(items) // shape[0] if shape[0] else 0
    return [_nest(items[k * step:(k + 1) * step], shape[1:]) for k in range(shape[0])]


def _is_complex_py(v):
    return type(v) is complex or isinstance(v, Sym) and v.kind == "py" and v.dtype.kind == "c"


def _is_py(v):
    return (isinstance(v, Sym) and v.kind == "py") or (type(v) in (int, float, bool, complex))


def complex_operand(z, v):
    """v as Python's complex z takes it on its left: a NumPy float64 scalar, a float subclass, as
    a Python float (`z + x.sum()`, `z == x.max()` are Python's complex arithmetic and bool)."""
    if _is_complex_py(z) and isinstance(v, Sym) and v.kind == "array" and v.dtype == np.float64 and v.ndim == 0 \
            and numpy_scalar(v):
        return _builder().to_py(v, float)
    return v


def _arith(pyop, op, *args):
    """Python operators: Python numbers held in the graph keep Python semantics (int + int is an
    int); anything involving an array is the registry op. A Python complex on the left takes a
    NumPy float64 scalar (a float subclass) as a float: `z + x.sum()` is a Python complex."""
    if len(args) == 2:
        args = (args[0], complex_operand(args[0], args[1]))
    if all(_is_py(a) for a in args):
        out = _builder().py_op(pyop, *args)
        if pyop is operator.pow:  # (its type depends on the values: py_numbers.typed_pow)
            from .py_numbers import typed_pow
            return typed_pow(_builder(), pyop, args, out)
        return out
    if op is None:
        raise Unsupported("unsupported-syntax", f"operator {pyop.__name__} on arrays in the graph")
    if _scalar_math(op, args):
        return bind(getattr(P, op.__name__), *args, operator=True)
    return op(*args)


def _scalar_math(op, args) -> bool:
    """The operator on values of rank 0, a NumPy one among them, where NumPy's scalar math differs
    from the ufunc the op calls: in the last bit (a power; a product, quotient or abs of complex
    numbers) or in its warnings (integer overflow warns in the operator only). The node
    then applies the operator too (ops/primitives.py), as eager's code did; `np.power(a, b)`
    stays the ufunc."""
    if op not in (F.pow, F.mul, F.div, F.abs, F.add, F.sub, F.neg):
        return False
    if any(isinstance(a, Sym) and (a.ndim or a.kind not in ("array", "py")) for a in args):
        return False
    numpy = [a for a in args if isinstance(a, np.generic) or isinstance(a, Sym) and a.kind == "array"]
    if not numpy:
        return False
    if any(a.dtype.kind in "iu" for a in numpy):
        return op is not F.div
    return op is F.pow or op not in (F.add, F.sub, F.neg) and any(
        a.dtype.kind == "c" if isinstance(a, Sym) else isinstance(a, complex) for a in args)


_GENERIC_OPS = {operator.add: F.add, operator.sub: F.sub, operator.mul: F.mul, operator.truediv: F.div,
                operator.pow: F.pow}


def generic_operator(pyop, left, right):
    """`k * d` of a NumPy scalar the graph knows (a constant) and a graph value of rank 0: the
    node applying the operator where eager's scalar math needs it (_scalar_math), or None."""
    op = _GENERIC_OPS.get(pyop)
    value = right if isinstance(left, np.generic) else left
    if op is None or not isinstance(value, Sym) or value.ndim or not _scalar_math(op, (left, right)):
        return None
    return bind(getattr(P, op.__name__), left, right, operator=True)


def _bitwise(pyop, logical, bitwise, *args):
    """`a & b` and its kin: Python semantics on Python numbers held in the graph (3 & 1 is 1); on
    arrays the logical op where every operand is boolean (where NumPy's bitwise op gives the
    same), and the logical op a Tensor's operator is; NumPy's bitwise op where an operand is an
    integer array (`k & 5` of an int array is ints, not booleans)."""
    if all(_is_py(a) for a in args):
        return _builder().py_op(pyop, *args)
    if any(isinstance(a, Sym) and a.kind == "tensor" for a in args):  # a Tensor has `&`, `|`, `~` only
        if logical is None or logical is F.ne:
            raise Unsupported("unsupported-syntax", f"operator {pyop.__name__.strip('_')} on a Tensor")
        return logical(*args)
    if logical is not None and all(_is_bool(a) for a in args):
        return logical(*args)
    if all(_is_integral(a) for a in args):
        return bitwise(*args)
    kinds = ", ".join(str(a.dtype) if isinstance(a, Sym) else type(a).__name__ for a in args)
    raise Unsupported("unsupported-syntax", f"operator {pyop.__name__.strip('_')} on {kinds} values "
                                            "(bitwise) has no graph op")


def _is_integral(v):
    return v.dtype.kind in "biu" if isinstance(v, (Sym, np.ndarray, np.generic)) else type(v) in (bool, int)


def _is_bool(v):
    return v.dtype == np.bool_ if isinstance(v, (Sym, np.ndarray, np.generic)) else type(v) is bool


class VarRef(Sym):
    """A Variable reached from the inputs. `slot` is the input slot of the Variable object."""

    __slots__ = ("slot", "var", "writes")

    def __init__(self, node, slot, var):
        super().__init__(node, "tensor")
        self.slot = slot
        self.var = var  # the generation-time Variable (for identity-keyed dict lookups)
        self.writes = 0

    def __repr__(self):
        return f"VarRef(%{self.node.id})"

    @property
    def _data(self):
        """Library code reaching for the Variable's array: an optimizer making a slot the first
        time a Variable gets a gradient (`Optimizer._slot`). That call runs eagerly and makes it;
        a later call generates again and finds it."""
        err = Unsupported("object-construction", "a new optimizer slot (a Variable made in the function)")
        err.retry = True
        raise err

    def assign(self, value):
        b = _builder()
        if b.block is not b.graph.nodes:  # inside a conditional node (merged after it) or a loop node
            hook = getattr(b, "branch_write", None)
            if hook is None:
                raise Unsupported("unsupported-syntax", "Variable write inside a data-dependent branch", b.site)
            hook(self)
        value = value if isinstance(value, Sym) else b.constant(np.asarray(value))
        if tuple(value.shape) != self.shape:
            value = F.broadcast_to(value, self.shape)
        if value.dtype != self.dtype:
            value = F.cast(value, self.dtype)
        if value.node.op in ir.ALIASING_OPS:  # eager assign copies: later reads (`v[1]`, `v.numpy()`)
            value = array_copy(Sym(value.node, "array"))  # must not be views of the input assigned
        self.node = value.node
        self.writes += 1
        self.dirty = True
        return self

    def assign_add(self, delta):
        return self.assign(F.add(Sym(self.node, "array"), _raw(delta)))

    def assign_sub(self, delta):
        return self.assign(F.sub(Sym(self.node, "array"), _raw(delta)))

    def value(self):
        """A snapshot Tensor: eager's keeps the Variable's tape identity (a gradient through it is
        the Variable's, also after a later assign), as a tape entry's frozen value does."""
        from .tape import ValueOf

        return ValueOf(self, self.node)


def _raw(v):
    return Sym(v.node, "array") if isinstance(v, Sym) else v


def _builder():
    return _BUILDER[0]
