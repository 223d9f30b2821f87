"""NumPy calls in a graph (a mixin of the generator): a function or ufunc of graph values is its
table entry's op (`tensor._FUNCTIONS`, `_UFUNCS`), with NumPy's own arguments that no entry
implements, `out=` (an in-place write), `np.copyto`, `np.add.at`, `np.split`'s views and
constant folding; a function that sets or reads NumPy's global state or files stays eager."""
from __future__ import annotations

import collections
import inspect

import numpy as np

from .. import ir
from ..quiet import quiet
from ..ops import api as F
from ..ops.library import LIBRARY_FUNCTIONS, WRITES, library_operands
from ..ops.memory import matmul_like
from . import masks, windows
from .tape import SymbolicTape
from .conversions import convert, is_conversion
from .layouts import kept_layout, unordered
from .loop_grad import OBJECT
from .numpy_forms import (CONVERTING_METHODS, SEQUENCE_FUNCTIONS, array_items, array_like, as_operand,
                          einsum_sublists, einsum_view, input_tuple, ndarray_operand, same_dtype)
from .support import _any_abstract, _any_objref, _as_kind
from .values import ObjRef, Sym, Unsupported, VarRef, array_copy, numpy_scalar

# the ufunc methods `ufunc_method` takes (`np.add.at`, a write, is `add_at`)
UFUNC_METHODS = frozenset(("reduce", "accumulate", "reduceat", "outer"))

# NumPy functions that set or read NumPy's global state, or files: never called while generating
_NUMPY_GLOBAL_STATE = frozenset(f for f in (getattr(np, name, None) for name in (
    "seterr", "geterr", "seterrcall", "geterrcall", "set_printoptions", "get_printoptions", "setbufsize",
    "getbufsize", "save", "savez", "savez_compressed", "savetxt", "load", "loadtxt", "genfromtxt", "fromfile",
    "memmap")) if f is not None)
# NumPy functions of sizes: a Python int the graph reads as an input there (`np.zeros(dims[i + 1])`) is taken at
# its value (evaluator.concrete_sizes, calls.py); one the graph computes stays eager
SIZED = (np.zeros, np.ones, np.empty, np.full, np.eye, np.identity)
_UFUNC_KEYWORDS = frozenset({"dtype", "casting", "order"})  # a library node's (`where=`, `out=` write)

# functions with a graph op that NumPy's own call may stand in for, given arguments the op does not
# implement, unless they give a view of an operand (or the operand) or a result whose shape
# depends on the data (np.where(cond)); the parameters of theirs a graph value may fill
_VIEWS_OR_DATA_SHAPED = frozenset(f for f in (getattr(np, name, None) for name in (
    "reshape", "transpose", "squeeze", "expand_dims", "broadcast_to", "flip", "swapaxes", "atleast_1d",
    "atleast_2d", "atleast_3d", "split", "where", "shape", "ndim", "size")) if f is not None)
_OPERANDS = frozenset(("a", "b", "x", "x1", "x2", "m", "v", "arr", "arrays", "operands", "tup", "a_min", "a_max",
                       "condition", "weights", "initial", "where"))


def _stand_in(shape, dtype, family):
    """Ones of `shape`, or ("eye") identity matrices in its last two axes when they are square."""
    if family == "eye" and len(shape) >= 2 and shape[-1] == shape[-2]:
        return np.broadcast_to(np.eye(shape[-1], dtype=dtype), shape).copy()
    return np.ones(shape, dtype)


class NumpyCallsMixin:
    def call_numpy(self, func, args, kwargs):
        from ..tensor import _FUNCTIONS, _UFUNCS, unimplemented_arguments

        _refuse_global_state(func, self.site)
        out_target = kwargs.pop("out", None)
        if isinstance(func, np.ufunc) and out_target is None and len(args) == func.nin + 1:
            *args, out_target = args  # (`np.matmul(x, w, a)`: out by position)
        if isinstance(out_target, tuple):
            out_target = out_target[0]
        # np.array(rows) of a global tuple: a constant array when rows holds ints that did not vary
        args = self._containers(args, (list, tuple, collections.deque), nested=True)
        if not _any_abstract((args, kwargs)) and out_target is None:
            if _any_objref((args, kwargs)):  # (NumPy would read the generator's own object)
                raise Unsupported("unsupported-call", f"numpy.{getattr(func, '__name__', func)} of an input object",
                                  self.site)
            return self.lift(func(*args, **kwargs))  # constant folding
        made = windows.arange(self, args, kwargs) if func is np.arange else None
        if made is not None:  # np.arange(n), np.arange(t, t + T) of Python ints the graph computes
            return made
        if is_conversion(func):  # np.asarray(x), np.array([a, b]), np.float32(x)
            return convert(func, args, kwargs, self.site)
        if func is np.ascontiguousarray and len(args) + len(kwargs) in (1, 2) and set(kwargs) <= {"dtype"} \
                and isinstance(args[0], Sym) and args[0].kind == "array" and not _any_abstract((args[1:], kwargs)):
            return self._contiguous(args[0], kwargs.get("dtype", args[1] if len(args) > 1 else None))
        if func is np.copyto:
            return self._copyto(*args, **kwargs)
        if func is np.put_along_axis and out_target is None and args and isinstance(args[0], Sym) \
                and args[0].kind == "array":
            return self._put_along_axis(*args, **kwargs)
        if func is np.fill_diagonal and out_target is None and args and isinstance(args[0], Sym) \
                and args[0].kind == "array":
            return self._fill_diagonal(*args, **kwargs)
        if func in (np.split, np.array_split) and args and isinstance(args[0], Sym) and args[0].kind == "array" \
                and out_target is None and not _any_abstract((args[1:], kwargs)):  # (views of x, as NumPy's parts)
            return [self.getitem(args[0], index) for index in F.split_indices(
                args[0].shape, *args[1:], **kwargs, unequal=func is np.array_split)]
        if func is np.diag and args and isinstance(args[0], Sym) and args[0].kind == "array" and out_target is None:
            k = args[1] if len(args) > 1 else kwargs.get("k", 0)
            if args[0].ndim == 2 and len(args) + len(kwargs) <= 2 and set(kwargs) <= {"k"} and type(k) is int:
                return self.array_view("diagonal", args[0], (), {"offset": k})  # NumPy's read-only view
            return self.library_node(np.diag, "numpy.diag", args, kwargs)  # a new matrix (or eager's error)
        if func in SEQUENCE_FUNCTIONS and args and type(args[0]) in (list, tuple) and out_target is None:
            # (`np.concatenate([ids, [eos]])` of an input's list: each list NumPy's asarray of it)
            items = type(args[0])(as_operand(self.builder, v, self.site) for v in args[0])
            args = [array_items(self.builder, items), *args[1:]]
        if func is np.isscalar and len(args) == 1 and not kwargs and isinstance(args[0], Sym):
            return args[0].kind == "py" or args[0].kind == "array" and args[0].ndim == 0 and numpy_scalar(args[0])
        if func is np.einsum and len(args) >= 2 and type(args[0]) is not str and not _any_abstract(args[1::2]):
            spec, operands = einsum_sublists(tuple(self.containers_to_python(a) for a in args))  # the sublist form
            args = [spec, *operands]
        if func is np.einsum and out_target is None and len(args) == 2 and type(args[0]) is str \
                and isinstance(args[1], Sym) and args[1].kind == "array" and not _any_abstract(kwargs):
            view = einsum_view(args[0], args[1], kwargs, self.site)
            if view is not None:
                return view
        if func in _VIEW_FUNCTIONS and args and isinstance(args[0], Sym) and args[0].kind == "array" \
                and out_target is None and not _any_abstract((args[1:], kwargs)):
            return self.array_view(_VIEW_FUNCTIONS[func], args[0], args[1:], kwargs)
        if func in masks.NONZERO and len(args) == 1 and not kwargs and out_target is None:
            return masks.nonzero(self, func, args[0])  # np.nonzero(done): a mask's selection (masks.py)
        if func is np.unique and out_target is None:
            return masks.unique(self, args, kwargs)  # the first of each run of equal sorted values (masks.py)
        if func is np.bincount and out_target is None:
            return masks.bincount(self, args, kwargs)
        folded = _fold_constants(func, args, kwargs) if out_target is None else None
        if folded is not None:  # np.triu(np.ones((T, T), bool), 1): constants in, a constant out
            return self.lift(folded[0])
        if func is np.matmul and len(args) == 2 and not kwargs and unordered(self, out_target):
            result = self.library_node(matmul_like, "numpy.matmul", [*args, out_target], {})
        elif isinstance(func, np.ufunc):
            impl = _UFUNCS.get(func)
            if impl is not None and set(kwargs) == {"where"} and isinstance(out_target, Sym) \
                    and out_target.kind == "array" and len(args) == func.nin:
                return self._ufunc_where(impl, args, kwargs["where"], out_target)
            if (impl is None or kwargs) and out_target is None and len(args) == func.nin \
                    and set(kwargs) <= _UFUNC_KEYWORDS and not _any_abstract(kwargs):
                return self.library_node(func, f"numpy.{func.__name__}", args, kwargs)  # np.fmax, np.modf, dtype=
            if impl is None or kwargs:
                given = f" with {sorted(kwargs)}" if kwargs else ""
                raise Unsupported("unsupported-call", f"numpy.{func.__name__}{given} has no graph op", self.site)
            result = impl(*args)
        else:
            impl = _FUNCTIONS.get(func)
            name = getattr(func, "__name__", repr(func))
            if impl is None and func in LIBRARY_FUNCTIONS and out_target is None:
                return self.library_call(func, args, kwargs)
            if impl is None and func in SIZED and _any_abstract((args, kwargs)):  # np.zeros((int(n.sum()), D))
                raise Unsupported("shape-dependent", f"numpy.{name} of a size the graph computes (the array's "
                                                     "shape would be its value)", self.site)
            if impl is None:
                raise Unsupported("unsupported-call", f"numpy.{name} has no graph op", self.site)
            # np.mean(losses[-5:]) of Python numbers the graph computes, `np.outer(ids, [1, 1])`:
            # NumPy's own asarray of each list it takes as an array first
            arrays = array_like(func)
            if any(type(a) in (list, tuple) for k, a in enumerate(args) if k in arrays) and _any_abstract(args):
                args = [as_operand(self.builder, a, self.site, True) if k in arrays else a for k, a in enumerate(args)]
            static = self.containers_to_python  # an input's tuple where NumPy takes a static one (`axis=axes`)
            args, kwargs = [static(a) if input_tuple(a) else a for a in args], {
                k: static(a) if input_tuple(a) else a for k, a in kwargs.items()}
            given = kwargs if out_target is None else dict(kwargs, out=out_target)
            unimplemented = unimplemented_arguments(func, args, given)
            if unimplemented and out_target is None and func not in _VIEWS_OR_DATA_SHAPED \
                    and self.library_arguments(func, f"numpy.{name}", args, kwargs, _OPERANDS) is None:
                # np.einsum(..., optimize=True), np.sum(x, where=m): NumPy's own function, called when the graph runs
                return self.library_node(func, f"numpy.{name}", args, kwargs)
            if unimplemented:
                raise Unsupported("unsupported-call", f"numpy.{name} with {unimplemented} has no graph op", self.site)
            result = impl(*args, **kwargs)
        if out_target is not None:  # a Tensor takes the result as it is (eager's `out=` rebinds it, as `+=` does)
            kind = getattr(out_target, "kind", None)
            self.write_box(out_target, result if kind == "tensor" else
                           kept_layout(self, out_target, self.inplace_value(out_target, result)))
            return out_target
        return result

    def library_call(self, func, args, kwargs):
        """A NumPy function of `ops/library.py` (or an optional library's, `scipy.special.logsumexp`)
        of graph values: a node calling it when the graph runs, once its arguments are checked."""
        module = func.__module__
        name = f"{'scipy.special' if module.startswith('scipy.') else 'numpy'}." \
               f"{'linalg.' if module.endswith('linalg') else ''}{func.__name__}"
        error = self.library_arguments(func, name, args, kwargs, library_operands(func))
        if error is not None:
            raise error
        return self.library_node(func, name, args, kwargs)

    def library_arguments(self, func, name, args, kwargs, operands):
        """Why `func(*args, **kwargs)` cannot be a library node (an Unsupported), or None: eager
        rejects the arguments, one makes NumPy write into an operand (`out=`), or a graph value
        is given for a parameter not among `operands` (one that sets the result's shape)."""
        try:
            given = inspect.signature(func).bind(*args, **kwargs).arguments
        except (TypeError, ValueError) as exc:  # a call eager rejects: it raises there
            return Unsupported("user-error", f"{name}: {exc}", self.site)
        for param, value in given.items():
            write = WRITES.get(param)
            if write is not None and not _any_abstract(value) and write(value):
                return Unsupported("unsupported-call", f"{name} with {param}={value!r} (it writes an operand, or "
                                                       "gives a view of one)", self.site)
            if param not in operands and _any_abstract(value):
                return Unsupported("unsupported-call", f"{name}'s {param} from graph values (it sets the result's "
                                                       "shape)", self.site)
        return None

    def library_node(self, func, name, args, kwargs):
        """A node calling NumPy's `func` (a function of `ops/library.py`, or a ufunc without a
        graph op) when the graph runs. Its result's shape, dtype and Python type come from the
        function called on stand-ins (ones of the values' shapes and dtypes). A tuple result
        (`np.linalg.svd`, `np.histogram`, `np.modf`) is one node for the call and one item node
        for each of its values, in the container eager gets (NumPy's named tuple; a plain tuple
        of Tensors from a Tensor's call, as `tensor._constant_call` gives)."""
        from ..ops.registry import P
        from .draws import templates

        if _any_objref((args, kwargs)):
            raise Unsupported("unsupported-call", f"{name} of an input object", self.site)
        t_args, t_kwargs, values = templates(args, kwargs, name, self.site)
        tensors = any(v.kind == "tensor" for v in values)
        if self.builder.tapes and tensors:  # eager warns: a constant for the tape
            raise Unsupported("unsupported-call", f"{name} of a Tensor under a GradientTape", self.site)
        error = None
        for family in ("ones", "eye"):  # (a Cholesky factor needs a positive definite stand-in)
            stand_ins = [v.py_type(1) if v.kind == "py" else _stand_in(v.shape, v.dtype, family) for v in values]
            try:
                with quiet():
                    sample = P.numpy_call.impl(np, *stand_ins, fn=func, args=t_args, kwargs=t_kwargs)
                break
            except Exception as exc:
                error = error or exc
        else:
            raise Unsupported("unsupported-call", f"{name} of graph values: {error}", self.site) from error
        params = dict(fn=func, args=t_args, kwargs=t_kwargs)
        if type(sample) is tuple or isinstance(sample, tuple) and hasattr(sample, "_make"):
            kinds = [_result_kind(item, tensors, name, self.site) for item in sample]
            call = self.builder.emit(P.numpy_call, tuple(values), params, aval=((), OBJECT))
            items = [Sym(self.builder.add(ir.Node(ir.TUPLE_GET, (call.node,), {"index": i},
                                                  (tuple(np.shape(item)), np.asarray(item).dtype))), kind)
                     for i, (item, kind) in enumerate(zip(sample, kinds))]
            return tuple(items) if tensors or type(sample) is tuple else type(sample)._make(items)
        kind = _result_kind(sample, tensors, name, self.site)
        drawn = np.asarray(sample)
        out = self.builder.emit(P.numpy_call, tuple(values), params, aval=(tuple(drawn.shape), drawn.dtype))
        return _as_kind(out, kind)

    def numpy_full(self, args, kwargs):
        """np.full(shape, value[, dtype]) with a value the graph computes: the value (as NumPy
        converts it: a Python float is float64) broadcast to the shape, in a new C-ordered array."""
        names = ("shape", "fill_value", "dtype")
        given = dict(zip(names, args), **kwargs)
        if len(args) > 3 or set(given) - set(names) or _any_abstract((given.get("shape"), given.get("dtype"))):
            raise Unsupported("unsupported-call", "numpy.full with a graph value and these arguments", self.site)
        shape, dtype = given["shape"], given.get("dtype")
        value = convert(np.asarray, [given["fill_value"]], {} if dtype is None else {"dtype": dtype}, self.site)
        return _as_kind(F.broadcast_to(value, (shape,) if isinstance(shape, int) else tuple(shape)), "array").copy()

    def ufunc_method(self, func, args, kwargs):
        """`np.add.reduce(x, 1)`, `np.add.accumulate(x)`: the method called on the graph values;
        NumPy hands it to their `__array_ufunc__` (`tensor.ufunc_method_op`, as for a Tensor). One
        without an op there (`np.maximum.accumulate(x)`, `np.multiply.outer(a, b)`) is NumPy's
        method as a library node."""
        if not _any_abstract((args, kwargs)):
            return self.lift(func(*args, **kwargs))
        if _any_objref((args, kwargs)):
            raise Unsupported("unsupported-call", f"numpy.{func.__self__.__name__}.{func.__name__} of an input "
                                                  "object", self.site)
        try:
            return func(*args, **kwargs)
        except Unsupported as exc:
            if kwargs.get("out") is None:
                # no op (`np.maximum.accumulate(x)`, `np.add.reduce(x, where=m)`): NumPy's method
                return self.library_node(func, f"numpy.{func.__self__.__name__}.{func.__name__}", args, kwargs)
            raise self.located(exc)

    def array_method(self, method, args, kwargs):
        """x.fill(value) and x.sort(axis) of a graph array: writes into x, as `x[...] = value`;
        x.view() (or of x's own dtype): a new array object on x's memory."""
        x = method.array
        if method.name in CONVERTING_METHODS:  # (NumPy's C methods: a Tensor argument as an array)
            args, kwargs = [ndarray_operand(a) for a in args], {k: ndarray_operand(a) for k, a in kwargs.items()}
        func = _METHOD_FUNCTIONS.get(method.name)
        if func is not None:
            return self.call_numpy(func, [x, *args], dict(kwargs))
        if method.name in ("conj", "conjugate") and not args and not kwargs:  # of a real array: x itself
            return x if x.dtype.kind != "c" else self.call_numpy(np.conjugate, [x], {})
        if method.name == "compress" and args:  # x.compress(condition, axis) is np.compress(condition, x, axis)
            return self.call_numpy(np.compress, [args[0], x, *args[1:]], dict(kwargs))
        given = (*args, *kwargs.values())
        if method.name == "view" and len(given) <= 1 and set(kwargs) <= {"dtype"} and not _any_abstract(given) \
                and all(same_dtype(d, x.dtype) for d in given):
            if x.kind == "array":  # `x[...]`: a view of x the generator refreshes after writes and writes through
                return self.getitem(x, Ellipsis)
            from ..ops.registry import P, bind

            return _as_kind(bind(P.view, x), "array")
        if method.name == "fill" and len(args) == 1 and not kwargs:
            self.setitem(x, Ellipsis, args[0])
            return None
        if method.name == "nonzero" and not given:
            return masks.nonzero(self, np.nonzero, x)
        given = dict(zip(("axis", "kind", "order"), args), **kwargs)
        if method.name == "sort" and len(args) <= 3 and set(given) <= {"axis", "kind", "order", "stable"} \
                and all(given.get(k) is None for k in ("kind", "order", "stable")) \
                and type(given.get("axis", -1)) is int:  # (x.sort(axis=None): eager's TypeError)
            self.write_box(x, F.sort(x, given.get("axis", -1)))
            return None
        raise Unsupported("unsupported-call", f"ndarray.{method.name} with these arguments has no graph op", self.site)

    def _put_along_axis(self, arr, indices, values, axis):
        """np.put_along_axis(arr, indices, values, axis): an in-place write of arr at the index
        NumPy builds (`indices` along `axis`, the other axes' positions broadcast beside it)."""
        if type(axis) is not int or not hasattr(indices, "shape") or len(indices.shape) != arr.ndim:
            raise Unsupported("unsupported-call", "numpy.put_along_axis without an int axis and indices of the "
                                                  "array's ndim", self.site)
        if not -arr.ndim <= axis < arr.ndim:  # eager's AxisError
            raise Unsupported("user-error", f"axis {axis} is out of bounds for an array of dimension {arr.ndim}",
                              self.site)
        if self.builder.polymorphic and not self.builder.fixed(arr):  # (the positions are constants)
            raise Unsupported("shape-dependent", "numpy.put_along_axis of an array whose size is not fixed",
                              self.site)
        axis = axis % arr.ndim
        index = tuple(indices if d == axis else np.arange(n).reshape([-1 if k == d else 1 for k in range(arr.ndim)])
                      for d, n in enumerate(arr.shape))
        self.setitem(arr, index, values)

    def _fill_diagonal(self, arr, val, wrap=False):
        """np.fill_diagonal(arr, val): an in-place write of arr's main diagonal (of a tall matrix,
        its first columns' worth; of an N-d array, all axes of one length) with a scalar, a
        one-element value or one value per diagonal element (NumPy repeats shorter ones: eager)."""
        if arr.ndim < 2:
            raise Unsupported("user-error", "array must be at least 2-d", self.site)
        if arr.ndim > 2 and len(set(arr.shape)) != 1:
            raise Unsupported("user-error", "All dimensions of input must be of equal length", self.site)
        if self.builder.polymorphic and not self.builder.fixed(arr):
            raise Unsupported("shape-dependent", "numpy.fill_diagonal of an array whose size is not fixed", self.site)
        k = min(arr.shape)
        size = getattr(val, "size", None)
        if type(wrap) is not bool or wrap and arr.shape[0] > arr.shape[1] + 1 or not (
                type(val) in (bool, int, float) or size == 1 or (size == k and len(val.shape) == 1)):
            raise Unsupported("unsupported-call", "numpy.fill_diagonal with wrap=True on a tall matrix or values "
                                                  "NumPy repeats", self.site)
        if size == 1 and len(val.shape) != 0:
            val = self.getitem(val, (0,) * len(val.shape)) if isinstance(val, Sym) else val.reshape(())
        self.setitem(arr, (np.arange(k),) * arr.ndim, val)

    def array_view(self, name, x, args, kwargs):
        """`x.diagonal(offset, axis1, axis2)`, `np.diagonal(x, ...)`, `x.real`, `np.imag(x)` of a
        graph array: NumPy's view of x (memory.py's ops), with NumPy's errors for bad arguments."""
        from ..ops.registry import P, bind

        if name in _VIEW_PARAMETERS:
            func, defaults = _VIEW_PARAMETERS[name]
            try:
                given = inspect.signature(func).bind(None, *args, **kwargs).arguments
            except TypeError as exc:
                raise Unsupported("user-error", f"{name}(): {exc}", self.site) from None
            params = {k: given.get(k, d) for k, d in defaults.items()}
            if any(given.get(k, False) for k in ("subok", "writeable")) or not all(
                    type(v) is int or v is None and k == "axis" or type(v) is tuple and all(type(i) is int for i in v)
                    for k, v in params.items()):
                raise Unsupported("unsupported-call", f"{name}() with these arguments", self.site)
            return _as_kind(bind(getattr(P, name), x, **params), "array")
        if args or kwargs:
            raise Unsupported("user-error", f"{name}() takes one argument", self.site)
        return _as_kind(bind(getattr(P, name), x), "array")

    def _ufunc_where(self, impl, args, where, out):
        """`np.divide(a, b, out=np.zeros_like(a), where=b != 0)`, `np.log(p, out=..., where=p > 0)`:
        the ufunc where `where` holds, `out`'s values elsewhere. NumPy does not compute the other
        places, so neither does the graph in effect: their operands are ones of the operand's dtype
        there (no division by zero, no log of 0 and no warning from them), then dropped."""
        safe = [F.where(where, a, self.builder.constant(np.ones((), a.dtype))) if isinstance(a, Sym) else a
                for a in args]
        value = self.inplace_value(out, F.where(where, impl(*safe), Sym(out.node, "array")))
        self.write_box(out, kept_layout(self, out, value))
        return out

    def _copyto(self, dst, src, casting="same_kind", where=True):
        """`np.copyto(dst, src, casting=, where=)`: src cast by NumPy's rule `casting` (checked on
        the dtypes, which the guards fix), put where `where` holds."""
        if not isinstance(dst, Sym) or casting not in ("no", "equiv", "safe", "same_kind", "unsafe") \
                or _any_abstract(casting):
            raise Unsupported("unsupported-call", "np.copyto with these arguments", self.site)
        src_dtype = src.dtype if isinstance(src, (Sym, np.ndarray)) else None
        if src_dtype is None and casting != "same_kind":  # (a Python number's rules: NEP 50)
            raise Unsupported("unsupported-call", "np.copyto of a Python number with a casting rule", self.site)
        if src_dtype is not None and not np.can_cast(src_dtype, dst.dtype, casting):
            err = Unsupported("user-error", f"np.copyto cannot cast {src_dtype} to {dst.dtype} by rule {casting!r}",
                              self.site)
            err.original = TypeError(f"Cannot cast array data from {src_dtype!r} to {dst.dtype!r} according to "
                                     f"the rule {casting!r}")
            raise err
        if casting == "unsafe" and src_dtype is not None and src_dtype != dst.dtype:
            src = _as_kind(F.cast(src if isinstance(src, Sym) else self.builder.constant(src), dst.dtype), "array")
        if where is not True:
            src = F.where(where, src, Sym(dst.node, "array"))
        value = self.inplace_value(dst, src)  # (dst's box must not become src's node, nor a view of it)
        value = value if value is not src and value.view is None else _as_kind(array_copy(value), "array")
        self.write_box(dst, kept_layout(self, dst, value))

    def _contiguous(self, x, dtype):
        """np.ascontiguousarray(x[, dtype]) of a graph array: a node that calls it when the graph
        runs (x itself when x is C-ordered, as eagerly), on x cast first when the dtype differs."""
        from ..ops.registry import P, bind

        if dtype is not None and np.dtype(dtype) != x.dtype:
            x = _as_kind(F.cast(x, np.dtype(dtype)), "array")
        return _as_kind(bind(P.ascontiguousarray, x), "array")

    def add_at(self, target, indices, values=None):
        """np.add.at(target, indices, values): an in-place write of the target (add_at op)."""
        if values is None or not isinstance(target, Sym) or target.kind == "tensor":
            raise Unsupported("unsupported-call", "numpy.add.at on this target or without values", self.site)
        # (a list of ids the call passes: read with guards, as an index's, not the first call's ids)
        indices, values = self.guarded_index(indices), self.guarded_index(values)
        self.write_box(target, F.add_at(target, indices, values))


class ArrayMethod:
    """`x.fill` / `x.sort` / `x.view` / `x.nonzero` / `x.conj` / `x.compress` (and NumPy's
    functions of the array, `_METHOD_FUNCTIONS`) of a graph array, read as an attribute: a method
    whose call the generator makes itself (`NumpyCallsMixin.array_method`): a write into x, a view,
    a mask's selection, x itself (a real array's conjugate), NumPy's function."""

    __slots__ = ("array", "name")
    NAMES = frozenset({"fill", "sort", "view", "nonzero"})

    def __init__(self, array, name):
        self.array, self.name = array, name


# ndarray methods that are NumPy's function of the array (`x.argsort(axis=1)` is
# `np.argsort(x, axis=1)`, the same parameters after it): called as that function, so that its
# arguments an op does not implement make a library node as the function's do (`x.sum(where=m)`,
# `x.mean(dtype=np.float64)`, `x.max(initial=0.0)`)
_METHOD_FUNCTIONS = {name: getattr(np, name) for name in (
    "argsort", "argpartition", "trace", "take", "repeat", "cumprod", "searchsorted", "choose",
    "sum", "mean", "var", "std", "max", "min", "prod", "any", "all", "cumsum", "argmax", "argmin", "round",
    "diagonal")}
ArrayMethod.NAMES = ArrayMethod.NAMES | frozenset(_METHOD_FUNCTIONS) | {"compress", "conj", "conjugate"}
# NumPy functions giving a view of their array (array_view)
_VIEW_FUNCTIONS = {np.diagonal: "diagonal", np.real: "real", np.imag: "imag",
                   np.lib.stride_tricks.sliding_window_view: "sliding_window_view"}
# their parameters after the array (constants: the view's shape), with NumPy's defaults
_VIEW_PARAMETERS = {"diagonal": (np.diagonal, {"offset": 0, "axis1": 0, "axis2": 1}),
                    "sliding_window_view": (np.lib.stride_tricks.sliding_window_view,
                                            {"window_shape": None, "axis": None})}


def _result_kind(sample, tensors: bool, name: str, site) -> str:
    """The kind of graph value a library node's result (or tuple item) is, from its value on
    stand-ins: a Python number, an array or NumPy scalar, a Tensor (an array from a call with
    Tensors among its arguments: `tensor._constant_call` wraps those)."""
    if type(sample) in (bool, int, float):
        return "py"
    if isinstance(sample, (np.ndarray, np.generic)) and sample.dtype.kind in "biufc":
        return "tensor" if isinstance(sample, np.ndarray) and tensors else "array"
    raise Unsupported("unsupported-call", f"{name} giving a {type(sample).__name__}", site)


def _refuse_global_state(func, site):
    """A NumPy function that sets or reads NumPy's global state, or files: run once while the graph
    is generated, it would set (or read) that state once, not on every call."""
    name = getattr(func, "__name__", "")
    if func in _NUMPY_GLOBAL_STATE or "printoptions" in name and str(getattr(func, "__module__", "")).startswith(
            "numpy"):  # (also `np.printoptions`' own `_set_printoptions`, reached where the `with` is inlined)
        raise Unsupported("unsupported-call", f"numpy.{name} (NumPy's global state, or files)", site)


# NumPy functions that write into their first argument (a write into a copy of a constant is lost)
_WRITE_FIRST = frozenset((np.put, np.putmask, np.place))


def _fold_constants(func, args, kwargs):
    """(func(*args, **kwargs),) when every graph value among the arguments is a constant (an
    array made at generation time: `np.ones((T, T), bool)`) and func has no graph op, else None.
    The constants are copied first: NumPy code may write into its argument."""
    from ..tensor import _FUNCTIONS, _UFUNCS

    if func in _FUNCTIONS or func in _UFUNCS or func in _WRITE_FIRST:
        return None
    consts = []

    def concrete(v):
        if isinstance(v, Sym):
            if v.node.op != ir.CONST or v.kind != "array":
                raise LookupError
            consts.append(v)
            return np.array(v.node.params["value"], copy=True)
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(concrete(x) for x in v)
        if isinstance(v, dict):
            return {k: concrete(x) for k, x in v.items()}
        if isinstance(v, (ObjRef, VarRef, SymbolicTape)):
            raise LookupError
        return v

    try:
        args, kwargs = concrete(list(args)), concrete(dict(kwargs))
    except LookupError:
        return None
    if not consts:
        return None
    return (func(*args, **kwargs),)
