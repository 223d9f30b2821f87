"""Shared pieces of the graph generator: tables, small value classes and helper functions."""
from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import inspect
import operator
import types

import numpy as np

from ..ops import api as F
from ..ops.registry import REGISTRY
from ..quiet import quiet, strict
from ..tensor import Tensor
from .tape import SymbolicTape
from .values import OPAQUE, DeferredStr, ObjRef, Sym, Unsupported, VarRef, numpy_scalar

MAX_DEPTH = 400
MAX_UNROLL = 20000

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.MatMult: operator.matmul, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}

# the operator module's arithmetic and comparisons: the operators, on graph values too
OPERATORS = frozenset((operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
                       operator.pow, operator.neg, operator.pos, operator.abs, operator.matmul, operator.lt,
                       operator.le, operator.gt, operator.ge, operator.eq, operator.ne))
# builtins evaluated at generation time on concrete values (pure, deterministic)
_PURE_BUILTINS = {id, vars, abs, all, any, ascii, bool, callable, chr, complex, dict, divmod, enumerate, filter, float,
                  frozenset, getattr, hasattr, hash, int, isinstance, issubclass, iter, len, list, map, max, min,
                  next, ord, pow, range, repr, reversed, round, set, slice, sorted, str, sum, tuple, type,
                  zip, format,
                  *OPERATORS}
_LIBRARY_PREFIXES = ("numpy", "math", "builtins", "janus_like.ops", "janus_like.tensor", "janus_like.autodiff",
                     "janus_like.backend", "operator", "functools", "itertools", "collections", "typing")
_INLINE_LIBRARY = ("janus_like.nn", "janus_like.optim")
_LOG_FUNCTIONS = {"debug", "info", "warning", "error", "critical", "log", "exception"}
# the item lookups of Python's own containers (a class's own `__getitem__` is not one: `G.nodes[v]`)
_BUILTIN_LOOKUPS = (list.__getitem__, tuple.__getitem__, dict.__getitem__, collections.deque.__getitem__)


def _range_args(bounds):
    """range()'s arguments as (start, stop, step)."""
    return (0, bounds[0], 1) if len(bounds) == 1 else (list(bounds) + [1])[:3]


def plain_lookup(obj) -> bool:
    """`obj[k]` is Python's own list, tuple, dict or deque lookup: not a class's own `__getitem__`
    (networkx's `G.nodes[v]`), nor a missing key's default (a defaultdict's, a Counter's) except
    for exactly those two classes (COUNTS: an assert node checks that the key is one they hold,
    draws.known_key, and the call that fails it runs eagerly, which gives the default)."""
    target = obj.obj if isinstance(obj, ObjRef) else obj
    if type(target) in COUNTS:
        return True
    if isinstance(obj, ObjRef):
        return getattr(type(obj.obj), "__getitem__", None) in _BUILTIN_LOOKUPS \
            and not hasattr(type(obj.obj), "__missing__")
    return isinstance(obj, (list, tuple, dict)) and not hasattr(type(obj), "__missing__")


COUNTS = (collections.Counter, collections.defaultdict)  # (per-class counts: `c[int(y[0])] += 1`)
_VIEW_OPS = {"transpose", "reshape", "expand_dims", "squeeze", "broadcast_to", "reshape_like", "broadcast_like"}


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Leave(BaseException):
    """A `break` (ret None) or `return` (ret: the _Return) in the body of a loop over a user
    generator: out of the generator's body, through its `finally` blocks, as Python closes the
    generator there (generators.py). A BaseException: no handler in that body takes it."""

    def __init__(self, loop, ret=None):
        self.loop, self.ret = loop, ret


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class Frame:
    __slots__ = ("func", "locals", "globals", "cells", "filename", "global_names", "nonlocal_names", "enclosing",
                 "local_names", "written_reads", "closure_names")

    def __init__(self, func, globals_, filename, enclosing=None, local_names=None):
        self.func = func
        self.locals = {}
        self.globals = globals_
        self.cells = {}
        self.filename = filename
        self.global_names = set()
        self.nonlocal_names = set()  # declared `nonlocal`: stores go to the binding scope (statements.py)
        self.enclosing = enclosing  # the frame a local function (def/lambda in jitted code) was defined in
        self.local_names = local_names  # this function's own local names (for a local function's scoping)
        # sites reading state the function also assigns (source.state_written_reads; inlined_body)
        self.written_reads = enclosing.written_reads if enclosing is not None else frozenset()
        # the names the local functions defined here mention (their late-bound reads of this frame)
        self.closure_names = set()


class OneBranch:
    """The value of a local name that only one branch of a conditional node bound (it was
    unbound before the node), such as a temporary of that branch. Binding it again is fine;
    reading it is Unsupported (eager reads either a value or an unbound name, by the data)."""

    __slots__ = ("name", "site")

    def __init__(self, name, site):
        self.name, self.site = name, site

    def unsupported(self, site):
        return Unsupported("data-dependent-python", f"{self.name!r} is bound in only one branch of the conditional "
                                                    f"at {self.site} and read after it", site)


class ErrState:
    """np.errstate(...) inside a jitted function: its settings travel with the nodes."""

    __slots__ = ("settings",)

    def __init__(self, settings):
        self.settings = settings


class ContainerMethod:
    __slots__ = ("ref", "name")

    def __init__(self, ref, name):
        self.ref, self.name = ref, name


def keyword_only(fn):
    """(the number of positional parameters, the keyword-only parameters' names) of a function
    with keyword-only parameters and neither `*args` nor `**kwargs`, else None. The JIT takes a
    call's values as one tuple, those of the keyword-only parameters last (jit/function.py
    `_positional`), and `split_call` gives them back as keywords."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in params]
    if inspect.Parameter.KEYWORD_ONLY not in kinds or inspect.Parameter.VAR_POSITIONAL in kinds \
            or inspect.Parameter.VAR_KEYWORD in kinds:
        return None
    names = tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)
    return len(params) - len(names), names


def split_call(kw, args):
    """(positional arguments, keyword arguments) that call a function whose `keyword_only` is
    `kw` with the values `args`."""
    if kw is None or len(args) <= kw[0]:
        return args, {}
    return args[:kw[0]], dict(zip(kw[1], args[kw[0]:]))


def _truth_value(test):
    """bool(x) as a graph value (x != 0 unless it is already boolean)."""
    if test.dtype == np.bool_:
        return test
    return F.ne(Sym(test.node, "array"), 0)


def _assigned_names(stmts):
    names = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
    return names


def _is_immutable(v):
    return v is None or isinstance(v, (int, float, complex, str, bytes, bool, np.generic, tuple, frozenset,
                                       types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType))


def _is_jit(v):
    return getattr(type(v), "_janus_jit", False)


def users_jit_attribute(v, name, written=False) -> bool:
    """Whether `v.name` is (`written`: would be) an attribute the user gave a jitted function
    (`train.lr = 0.1`), not one of the JIT's own: read and written through guards and the
    commit, as a function's are."""
    internal = getattr(v, "_internal", None) if _is_jit(v) else None
    return internal is not None and name not in internal and (written or name in v.__dict__)


def _is_tape_class(v):
    from ..autodiff import GradientTape

    return v is GradientTape


def _tensor_fn():
    from ..tensor import tensor

    return tensor


def _any_of(x, kinds, seen=None):
    """Whether a value, or anything in nested lists/tuples/sets/dicts or objects the function
    made (their attributes), is an instance of `kinds`."""
    if isinstance(x, kinds):
        return True
    fields = None if isinstance(x, (list, tuple, set, dict)) else made_fields(x)
    if fields is None and not isinstance(x, (list, tuple, set, dict)):
        return False
    seen = set() if seen is None else seen
    if id(x) in seen:  # (objects made here may refer to each other)
        return False
    seen.add(id(x))
    items = x.values() if isinstance(x, dict) else x if fields is None else fields.values()
    return any(_any_of(i, kinds, seen) for i in items)


def made_fields(x):
    """The attributes of a dataclass object or a plain class's object (`plain_class`) the
    function may have made, else None."""
    if isinstance(x, type):
        return None
    if hasattr(type(x), "__dataclass_fields__"):
        return vars(x) if hasattr(x, "__dict__") else field_values(x)
    return vars(x) if plain_class(type(x)) else None


# names a plain class may define among the dunders (everything else changes what the object does;
# `copy` and `pickle` cache `__slotnames__` on the class)
_PLAIN_DUNDERS = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__init__",
                            "__annotations__", "__firstlineno__", "__static_attributes__", "__slotnames__"})


def plain_class(cls) -> bool:
    """A user's class whose objects the function may make in the graph (calls.construct): no
    metaclass, builtin base, `__slots__` or dunder of its own but `__init__` (a Python
    function, inlined on the new object), so that the object is its `__dict__`, and nothing
    the interpreter calls implicitly (`__eq__`, `__hash__`, `__bool__`, `__repr__`,
    `__setattr__`, `__getattr__`, `__del__`...) runs user code the graph would not."""
    if type(cls) is not type or cls.__new__ is not object.__new__ or cls.__module__ == "builtins":
        return False
    for klass in cls.__mro__[:-1]:
        if klass.__module__ == "builtins" or "__slots__" in klass.__dict__ or any(
                n.startswith("__") and n.endswith("__") and n not in _PLAIN_DUNDERS for n in klass.__dict__):
            return False
    return cls.__init__ is object.__init__ or isinstance(cls.__init__, types.FunctionType)


def plain_dataclass(cls) -> bool:
    """A dataclass whose `__init__` is the one `dataclasses` writes, which only stores its
    arguments and the fields' defaults (a new list or dict from `default_factory`): called on
    graph values at generation it gives the object eager's call makes, its fields holding them.
    Not with `__post_init__`, fields left out of `__init__`, a factory of the user's, or a
    `__new__` of its own."""
    params = getattr(cls, "__dataclass_params__", None)
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if params is None or not params.init or code is None or not code.co_filename.startswith("<") \
            or hasattr(cls, "__post_init__") or cls.__new__ is not object.__new__:
        return False
    return all(f.init and f.default_factory in (dataclasses.MISSING, list, dict) for f in dataclasses.fields(cls))


def field_values(obj) -> dict:
    """A new dataclass object's fields by name (as its `__init__` set them)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _any_abstract(x):
    return _any_of(x, (Sym, SymbolicTape))


def _any_objref(x):
    return _any_of(x, ObjRef)


def _unwrap_obj(v):
    if isinstance(v, ObjRef):
        return v.obj
    if isinstance(v, tuple):
        return tuple(_unwrap_obj(i) for i in v)
    if isinstance(v, list):
        return [_unwrap_obj(i) for i in v]
    return v


def _identity(v):
    if isinstance(v, ObjRef):
        return v.obj
    if isinstance(v, VarRef):
        return v.var
    return v


def _dict_key(k):
    if type(k) is tuple:  # ("E", word): each item as a key
        return tuple(_dict_key(item) for item in k)
    if isinstance(k, tuple) and _any_abstract(tuple(k)):  # (a namedtuple of graph values)
        raise Unsupported("data-dependent-python", "a tuple of graph values used as a dict key", "")
    if isinstance(k, Sym) and not isinstance(k, VarRef):
        raise Unsupported("data-dependent-python", "a graph value used as a dict key or a list index", "")
    if isinstance(k, DeferredStr):  # f"act_{step % 2}" of a graph value: which entry is known only at run time
        raise Unsupported("data-dependent-python", "a string formatted from graph values used as a dict key", "")
    if isinstance(k, (ObjRef, VarRef)):  # Variables and input objects key dicts by the object itself: the
        from .values import _builder  # graph holds the one it saw, so that object is guarded to be the input's

        _builder().key_identity(k)
    return _identity(k)


def _raw(v):
    return Sym(v.node, "array") if isinstance(v, Sym) else v


def _as_kind(v, kind):
    if isinstance(v, Sym) and v.kind != kind:
        return Sym(v.node, kind)
    return v


def _as_tensor_kind(out):
    if isinstance(out, Sym):
        return _as_kind(out, "tensor")
    if isinstance(out, (list, tuple)):
        return type(out)(_as_tensor_kind(o) for o in out)
    return out


def _as_array_kind(out):
    return _as_kind(out, "array")


def class_lookup(mro, name, default=None):
    """`name` as the first class of `mro` that defines it holds it (a function, a property,
    a slot, a constant), else `default`: what an instance's attribute falls back to."""
    return next((k.__dict__[name] for k in mro if name in k.__dict__), default)


def own_attribute(obj, name) -> bool:
    """Whether obj holds attribute `name` itself (in its __dict__ or a set slot), not only its
    class (a class attribute read as a default, which the branch not taken leaves in place)."""
    if name in getattr(obj, "__dict__", {}):
        return True
    slot = class_lookup(type(obj).__mro__, name)
    return type(slot).__name__ == "member_descriptor" and hasattr(obj, name)


def _integer_index(i) -> bool:
    """An index item NumPy takes as one integer (a view's axis, not a gather): an int, a NumPy
    integer, or a graph value that is one (a Python int or a NumPy integer scalar: `E[tok]`,
    `Q[s]` with `s` from the inputs or computed). Not a bool, nor a 0-d integer ndarray (NumPy
    indexes with that as an array: a copy)."""
    if isinstance(i, Sym):
        return i.ndim == 0 and np.issubdtype(i.dtype, np.integer) and (i.kind == "py" or numpy_scalar(i))
    return isinstance(i, (int, np.integer)) and not isinstance(i, bool)


def _is_basic_index(index):
    items = index if isinstance(index, tuple) else (index,)
    return all(_integer_index(i) or isinstance(i, (slice, type(None), type(Ellipsis))) for i in items)


def _is_element_index(index, ndim):
    """`w[0]` of a 1-d array, `W[1, 0]`, `a[()]` of a 0-d one: one integer per axis, which NumPy
    answers with a NumPy scalar, a copy of the element (not a view, as `W[0, ...]` is)."""
    items = index if isinstance(index, tuple) else (index,)
    return len(items) == ndim and all(_integer_index(i) for i in items)


def _concrete_type_probe(v):
    if isinstance(v, ObjRef):
        return v.obj
    if isinstance(v, VarRef):
        return v.var
    if isinstance(v, Sym):
        if v.kind == "tensor":
            return Tensor.__new__(Tensor)
        if v.kind == "py":
            return np.zeros((), v.dtype).item()
        if v.shape or not numpy_scalar(v):  # (a 0-d ndarray: `np.array(s)`, a 0-d Variable's gradient)
            return np.zeros(v.shape, v.dtype)
        return np.zeros((), v.dtype)[()]
    return v


def _str_parts(v):
    if isinstance(v, DeferredStr):
        return list(v.parts)
    if isinstance(v, str):
        return [v]
    return [(v, "s", "")]


_MISSING = object()


# view ops whose NumPy function, run on the input after the commit, gives eager's view of it
_REPLAYED_VIEWS = frozenset({"transpose", "reshape", "expand_dims", "squeeze", "broadcast_to", "flip", "diagonal",
                             "ascontiguousarray",  # (ravel: the input itself when C-ordered, as eager's)
                             "real", "imag"})


def input_view(v):
    """("index", base, index, token) when array v is a basic-index view (`buf[1:]`, `buf[0][::2]`) of an
    input array, ("viewop", base, fn, token) when it is a reshaped, transposed, ... view of one (made
    by `fn`, NumPy's function, from the input after the commit), else None: eager's view shares the
    input's memory, and a later write through it changes the input."""
    if v.kind != "array" or v.view is None:
        return None
    base, index = v.view
    if base is OPAQUE:  # (a view op's: index is the array it was made from, unwritten since, or v is stale)
        node = v.node
        if node.op not in _REPLAYED_VIEWS or len(node.inputs) != 1 or not isinstance(index, Sym) \
                or index.kind != "array" or node.inputs[0] is not index.node:
            return None
        inner = ("slot", index.origin) if index.origin is not None else input_view(index)
        fn = functools.partial(REGISTRY[node.op].impl, np, **node.params)
        return None if inner is None else ("viewop", inner, fn, None)
    items = index if isinstance(index, tuple) else (index,)
    if not isinstance(base, Sym) or base.kind != "array" \
            or any(_any_abstract(i) and not _integer_index(i) for i in items):  # (an int the graph computes: `W[k]`)
        return None
    if base.origin is not None:
        return ("index", ("slot", base.origin), index, None)
    inner = input_view(base)
    return None if inner is None else ("index", inner, index, None)


_PURE_NODES = (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.Compare, ast.UnaryOp,
               ast.BinOp, ast.BoolOp, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def _pure(node):
    """An expression whose evaluation has no effects a caller could see (no calls)."""
    return all(isinstance(n, _PURE_NODES) for n in ast.walk(node))


def _may_raise(node):
    """An expression that may raise where an operand before it would have stopped eager
    (`while k < n and x[k] < th`: x[n]): an index that is not a constant, a division."""
    return any(isinstance(n, ast.Subscript) and not isinstance(n.slice, ast.Constant)
               or isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow))
               for n in ast.walk(node))


def python_index(builder, index):
    """A NumPy integer the graph computes, used to index a Python list or dict (`counts[np.argmax(p)]
    += 1`): the Python int it stands for (a list takes it through `__index__`, a dict by its equal
    hash); anything else as it is."""
    if isinstance(index, Sym) and index.kind == "array" and index.ndim == 0 and np.dtype(index.dtype).kind in "iu":
        return builder.to_py(index, int)
    return index


def scalar_binop(op, left, right, site):
    """`a * np.int8(100)` of NumPy scalars the graph knows (constants, ints kept as values):
    computed now, once, where eager computes it on every call; one that warns (an overflow) would
    warn on every call, so the step runs eagerly."""
    try:
        with strict():
            return op(left, right)
    except Exception:
        pass
    with quiet():
        op(left, right)  # (raises as eager does: the user's error)
    raise Unsupported("data-dependent-python", f"{op.__name__} of NumPy scalars that warns (eager warns on every "
                                              "call)", site)
