"""Calls: library functions run on abstract values, user functions and methods are inlined,
print/logging are deferred, the NumPy global RNG becomes a graph node.
"""
from __future__ import annotations

import ast
import collections
import collections.abc
import contextlib
import copy
import functools
import inspect
import itertools
import logging
import random
import types

import numpy as np

from ..ops import api as F
from ..ops.draws import CLOCKS
from ..ops.library import library_operands
from ..source import NoSource, function_ast, has_yield, in_packages, local_names, site_key, state_written_reads
from ..tensor import Tensor, Variable
from .tape import SymbolicTape
from .callbacks import _NOT_HANDLED, is_user_callable
from .conversions import convert
from .draws import _SEARCHES, STATE_CALLS, RngMethod
from .early_returns import function_body
from .numpy_calls import SIZED as _SIZED, UFUNC_METHODS, ArrayMethod, _refuse_global_state
from .effects import LoggedAt, joined_text
from .recursion import recursion_kind
from .py_numbers import (LIBRARY_OF_NUMBERS, is_library_of_numbers, is_number_call, library_of_numbers, mixed_items,
                         mixed_types, number_call, python_sum, scalar_extreme, sorted_numbers, speculate_pick)
from .values import BoundMethod, array_copy, DeferredStr, LocalFunction, ObjRef, Sym, Unsupported, VarRef
from .attributes import _library_owned
from .support import (ContainerMethod, ErrState, Frame, MAX_DEPTH, _INLINE_LIBRARY, _LIBRARY_PREFIXES, _LOG_FUNCTIONS,
                      _PURE_BUILTINS, _Return, _any_abstract, _any_objref, _as_kind, _as_tensor_kind, _dict_key,
                      _concrete_type_probe, _is_jit, _is_tape_class, _tensor_fn, plain_class,
                      plain_dataclass, users_jit_attribute)


_ITERTOOLS = frozenset((itertools.islice, itertools.chain, itertools.zip_longest, itertools.product,
                        itertools.permutations, itertools.combinations, itertools.combinations_with_replacement,
                        itertools.accumulate, itertools.pairwise))
_STORES = frozenset(("append", "insert"))  # list methods that store an item without comparing or iterating it
_KEYED = frozenset(("get", "pop", "setdefault", "__contains__", "__getitem__", "__delitem__"))  # given a key
# what `max`/`min`/`sum` pull whole: a generator expression, an iterator, `d.values()`, `d.keys()`
_VIEWS = (collections.abc.Iterator, collections.abc.KeysView, collections.abc.ValuesView)

# builtins (and C library functions outside the library modules' names) that call a function
# they are given; the other builtins only hold, name or test it
_CALLING_BUILTINS = {map, filter, sorted, min, max, iter, functools.reduce}


# callables an input object may hold that are functions rather than objects with state
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, np.ufunc, type(np.clip))


@functools.lru_cache(maxsize=4096)
def _binds(func, n_positional, keywords):
    """Whether `func(self, <n_positional arguments>, <keywords>=...)` matches its signature."""
    try:
        inspect.signature(func).bind(None, *range(n_positional), **dict.fromkeys(keywords))
        return True
    except TypeError:
        return False


class CallsMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def call(self, func, args, kwargs, node=None):
        if func is min or func is max or func is np.bincount:  # the profile's key for which argument min/max
            # gives (py_numbers.speculate_pick), how many bins np.bincount gave (masks.bincount)
            self.pick_key = site_key(self.frames[-1].filename, node) if node is not None and self.frames else None
        if func is next and self.pure_depth:  # (the body is generated once: the iterator would advance once)
            raise Unsupported("unsupported-syntax", "next() inside a branch or loop on a graph value", self.site)
        if func is copy.copy or func is copy.deepcopy:
            return self.copy_call(func, args, kwargs)
        if func is contextlib.suppress and not _any_abstract((args, kwargs)) and not _any_objref((args, kwargs)):
            return contextlib.suppress(*args)  # for `with` (blocks.stmt_With)
        if (func is any or func is all) and len(args) == 1 and not kwargs:
            return self.any_all(func is any, args[0])
        if func is functools.partial and args and is_user_callable(args[0]):  # made here: held as it is,
            if isinstance(args[0], BoundMethod):  # (a method: its function, the object its first argument)
                args = [args[0].func, args[0].self_value, *args[1:]]
            return functools.partial(*args, **kwargs)
        if type(func) is functools.partial and is_user_callable(func.func):  # and called as the call it stands for
            return self.call(func.func, list(func.args) + list(args), {**func.keywords, **kwargs}, node)
        if _is_jit(func):
            inner = func.__wrapped__
            if getattr(func, "__self__", None) is not None:
                args = [self.pinned(func.__self__)] + list(args)
            func = inner
        if func in _SEARCHES and len(args) == 2 and not kwargs:
            return self.bisect(func, *args)
        if isinstance(func, RngMethod):
            return self.rng_method_call(func, args, kwargs)
        if isinstance(getattr(func, "__self__", None), random.Random):
            return self.python_random(func, args, kwargs)
        if isinstance(func, types.MethodType) and isinstance(func.__func__, types.FunctionType) \
                and not isinstance(func.__self__, (Sym, SymbolicTape, type, types.ModuleType)):
            owner = func.__self__  # (a dataclass object made here is itself: it holds graph values)
            owner = owner if id(owner) in self.new_objects else self.pinned(owner)
            return self.inline(func.__func__, [owner] + list(args), kwargs)
        if isinstance(func, types.MethodType) and isinstance(func.__func__, types.FunctionType) \
                and isinstance(func.__self__, type) and not _library_owned(func.__self__) \
                and not in_packages(func.__func__.__module__ or "", _LIBRARY_PREFIXES):
            return self.inline(func.__func__, [func.__self__] + list(args), kwargs)  # a user classmethod
        if isinstance(func, BoundMethod):
            owner = func.self_value
            if isinstance(owner, ObjRef) and isinstance(owner.obj, (logging.Logger, logging.LoggerAdapter)):
                self.prog.check_identity(owner.slot, self.site)  # log through the same logger
                if func.func.__name__ in _LOG_FUNCTIONS:
                    return self.defer(LoggedAt(types.MethodType(func.func, owner.obj), owner.obj, self.caller),
                                      args, kwargs)
                return self.logger_query(owner, func.func.__name__, args, kwargs)
            return self.inline(func.func, [func.self_value] + list(args), kwargs)
        if isinstance(func, ContainerMethod):
            return self.container_method(func, args, kwargs)
        if isinstance(func, ObjRef) and isinstance(func.obj, LocalFunction):  # held by a closure the function
            func = func.obj  # made (`jl.grad(lambda w: ...)`, created at generation, inlined where called)
        if isinstance(func, LocalFunction):
            return self.inline(func, list(args), kwargs)
        if isinstance(func, ObjRef) and isinstance(func.obj, _FUNCTION_TYPES):  # `self.norm = np.clip`
            self.prog.check_identity(func.slot, self.site)  # the same function on every call
            func = func.obj
        if isinstance(func, ObjRef) and type(func.obj) is functools.partial:  # its members, guarded like attributes
            pargs = self.materialize(self.getattr(func, "args"), self.site)
            keywords = self.getattr(func, "keywords")
            keywords = self.materialize_dict(keywords) if isinstance(keywords, ObjRef) else keywords
            return self.call(self.getattr(func, "func"), list(pargs) + list(args), {**keywords, **kwargs}, node)
        if isinstance(func, ObjRef) and isinstance(func.obj, functools._lru_cache_wrapper):
            return self.cached_call(func, args, kwargs)
        if isinstance(func, ObjRef):
            call = getattr(type(func.obj), "__call__", None)
            if isinstance(call, types.FunctionType):
                self.class_member(type(func.obj), "__call__")
                return self.inline(call, [func] + list(args), kwargs)
            raise Unsupported("unsupported-call", f"calling a {type(func.obj).__name__} object", self.site)
        if isinstance(func, ArrayMethod):
            return self.array_method(func, args, kwargs)
        if func in _SIZED:  # (np.full's fill value stays a graph value)
            args = [a if k == 1 and func is np.full else self.concrete_sizes(a) for k, a in enumerate(args)]
            kwargs = {k: v if k == "fill_value" else self.concrete_sizes(v) for k, v in kwargs.items()}
        if func is np.full and _any_abstract((args, kwargs)):
            return self.numpy_full(args, kwargs)
        if isinstance(func, SymbolicTape) or isinstance(func, Sym):
            raise Unsupported("unsupported-call", "calling a non-callable graph value", self.site)
        if func is super:
            return self.super_ref(args)
        if func is np.errstate:  # `with np.errstate(...)`: recorded on the nodes built inside
            return ErrState(dict(kwargs))
        if isinstance(func, types.BuiltinFunctionType) and func in CLOCKS and not args and not kwargs:
            return self.clock_read(func)
        if func is print:
            return self.defer(func, args, kwargs)
        if isinstance(func, types.FunctionType) and func.__module__ == "logging" and func.__name__ in _LOG_FUNCTIONS:
            return self.defer(LoggedAt(func, logging.root, self.caller), args, kwargs)  # (`logging.info(...)`)
        if isinstance(func, types.MethodType) and isinstance(func.__self__, (Sym, SymbolicTape)):
            # tape.gradient(loss, params) with `params` an input list: hand over its elements
            args = [self.containers_to_python(a) for a in args]
            kwargs = {k: self.containers_to_python(v) for k, v in kwargs.items()}
            if isinstance(func.__self__, Sym) and not _binds(func.__func__, len(args), tuple(kwargs)):
                # x.sum(where=m), x.astype(t, copy=False): NumPy's arguments, not our method's
                given = [f"{len(args)} positional arguments"] * bool(args) + [f"{k}=" for k in kwargs]
                raise Unsupported("unsupported-call", f"array method .{func.__name__}() with {', '.join(given)} "
                                                      "has no graph op", self.site)
            return func(*args, **kwargs)
        if isinstance(func, types.MethodType) and func.__self__ is getattr(np.random, "mtrand", None)._rand:
            return self.global_random(func.__name__, args, kwargs)
        module = getattr(func, "__module__", None) or ""
        if in_packages(module, ("numpy.random",)) or (isinstance(func, types.BuiltinMethodType)
                                                 and type(getattr(func, "__self__", None)).__name__ == "RandomState"):
            owner = getattr(func, "__self__", None)  # (a RandomState's methods say module numpy.random too)
            if isinstance(owner, (np.random.Generator, np.random.RandomState)) and owner is not np.random.mtrand._rand:
                if func.__name__ in STATE_CALLS:
                    raise Unsupported("unsupported-call", f"{type(owner).__name__}.{func.__name__}() in a graph",
                                      self.site)
                return self.generator_draw(owner, func.__name__, args, kwargs)
            if owner is np.random.mtrand._rand or module == "numpy.random":
                return self.global_random(func.__name__, args, kwargs)
            raise Unsupported("unsupported-call", f"random generator method {func.__name__}", self.site)
        if func is SymbolicTape or _is_tape_class(func):
            tape = SymbolicTape(self.builder, kwargs.get("persistent", args[0] if args else False),
                                kwargs.get("watch_accessed_variables", True))
            return tape
        if func in (Tensor, Variable) or func is _tensor_fn():
            if _any_abstract((args, kwargs)):
                if func is Variable:
                    raise Unsupported("object-construction", "creating a Variable inside the function", self.site)
                return self.new_tensor(args, kwargs)
            return self.lift(func(*args, **kwargs))
        library = isinstance(func, np.ufunc) or (in_packages(module, _LIBRARY_PREFIXES) and module != "builtins"
                                                 and callable(func))
        if library or func in _CALLING_BUILTINS:
            result = self.library_callback(func, args, kwargs)  # library code given a user function
            if result is not _NOT_HANDLED:
                return result
        if module.startswith("scipy.") and library_operands(func) is not None and _any_abstract((args, kwargs)):
            return self.library_call(func, args, kwargs)  # scipy.special.logsumexp(z, axis=1): a library node
        if func in LIBRARY_OF_NUMBERS:  # statistics.mean(losses), heapq.nlargest(k, losses)
            args = self._containers(args, (list, tuple, collections.deque))
            if is_library_of_numbers(func, args, kwargs):
                return library_of_numbers(self.builder, func, args, self.site)
        if func is np.isscalar:  # (of a graph value: which kind of value it is, numpy_calls.py)
            return self.call_numpy(func, args, kwargs)
        if isinstance(func, types.FunctionType):
            if in_packages(module, _LIBRARY_PREFIXES) and not in_packages(module, _INLINE_LIBRARY) \
                    and not getattr(func, "_janus_inline", False):  # (jl.grad(f)'s and jl.value_and_grad(f)'s)
                return self.call_library(func, args, kwargs)
            return self.inline(func, list(args), kwargs)
        if isinstance(func, np.ufunc) or (in_packages(module, ("numpy",)) and callable(func)):
            return self.call_numpy(func, args, kwargs)
        if getattr(func, "__self__", None) is np.add and getattr(func, "__name__", "") == "at":
            return self.add_at(*args, **kwargs)
        if isinstance(getattr(func, "__self__", None), np.ufunc) and getattr(func, "__name__", "") in UFUNC_METHODS:
            return self.ufunc_method(func, args, kwargs)
        if func in _PURE_BUILTINS or func is setattr or (isinstance(func, types.BuiltinFunctionType)
                                                         and module == "math"):
            return self.call_builtin(func, args, kwargs)
        if isinstance(func, types.BuiltinMethodType) and not isinstance(func.__self__, types.ModuleType):
            owner = func.__self__
            if type(owner) is str and func.__name__ == "format" and self.formats_graph_values(args, kwargs):
                return self.str_format(owner, args, kwargs)
            if type(owner) is str and func.__name__ == "join" and len(args) == 1 and not kwargs \
                    and isinstance(args[0], (list, tuple, *_VIEWS)):  # " ".join(f"{k}={v:.3f}" for ...)
                items = list(args[0])  # (a generator expression: consumed here, as join consumes it)
                if any(isinstance(t, DeferredStr) for t in items):
                    return joined_text(owner, items, self.site)
                args = (items,)
            # (an input's object may go into a local list, `modules.append((name, module))`: no
            # method that compares items, whose `==` eager calls and an ObjRef does not have)
            if type(owner) is list and func.__name__ == "extend" and len(args) == 1 and isinstance(args[0], ObjRef) \
                    and type(args[0].obj) in (list, tuple):  # `src.extend(ns)` of an input's list: its items
                args = (list(self.materialize(args[0], self.site)),)
            if type(owner) is dict and func.__name__ == "get" and len(args) in (1, 2) and isinstance(args[0], Sym):
                return self.dict_get(owner, *args)  # `d.get(int(y[0]), 0)` of the step's own dict
            if isinstance(owner, set) and args or isinstance(owner, dict) and func.__name__ in _KEYED and args:
                for key in (args if isinstance(owner, set) else args[:1]):  # hashed: a graph value's hash is
                    _dict_key(key)  # its id's, not its value's (raises for one)
            if isinstance(owner, (list, dict, set, str, tuple)) and (
                    not _any_objref((args, kwargs)) or (isinstance(owner, list) and func.__name__ in _STORES)):
                if func.__name__ not in _STORES:  # (stored, never called: a Module appended)
                    self.library_callback(func, args, kwargs)  # raises for a user function (list.sort(key=f))
                return func(*args, **kwargs)  # a local container's method
        if func in _ITERTOOLS:  # finite iterators over the function's lists (infinite ones would not end here)
            args = self._containers(args, (list, tuple, dict, collections.deque))
            if any(isinstance(a, ObjRef) for a in (*args, *kwargs.values())):
                raise Unsupported("unsupported-call", f"itertools.{func.__name__} of an input object", self.site)
            if any(isinstance(a, Sym) and a.kind == "py" for a in (*args, *kwargs.values())):  # (`islice(xs, n)`)
                raise Unsupported("data-dependent-python", f"itertools.{func.__name__} of a number the graph "
                                                           "computes", self.site)
            return func(*args, **kwargs)  # (given a user function, `library_callback` above has raised)
        if isinstance(func, type):
            if issubclass(func, BaseException):
                return func(*args, **kwargs)
            if issubclass(func, tuple) and hasattr(func, "_fields") and not _any_objref((args, kwargs)):
                return func(*args, **kwargs)  # a namedtuple of graph values is a tuple (outputs.spec rebuilds it)
            if plain_dataclass(func) and not _any_objref((args, kwargs)):
                obj = func(*args, **kwargs)  # eager's object, holding graph values: each call's own (outputs.spec)
                self.new_objects[id(obj)] = obj
                return obj
            if plain_class(func) and not _library_owned(func):
                return self.construct(func, args, kwargs)
            if in_packages(func.__module__, _INLINE_LIBRARY) or func.__module__ not in ("builtins",):
                raise Unsupported("object-construction", f"creating a {func.__name__} inside the function", self.site)
        raise Unsupported("unsupported-call", f"call to {getattr(func, '__qualname__', repr(func))}", self.site)

    def new_tensor(self, args, kwargs):
        """Tensor(data, dtype) of graph values: np.array(data, dtype) as a new Tensor, which
        (as eagerly) no gradient reaches through `data`."""
        from .. import backend

        src = args[0]
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
        if isinstance(src, Sym) and src.kind == "array" and dtype is None and len(args) == 1 and not kwargs:
            return _as_kind(array_copy(Sym(src.node, "array")), "tensor")  # eager copies: its own buffer, 0-d an array
        if isinstance(src, Sym) and src.kind == "tensor" and dtype is None and len(args) == 1 and not kwargs:
            return _as_kind(array_copy(Sym(F.stop_gradient(src).node, "array")), "tensor")  # on its device
        if backend._state["device"] != "cpu" or len(args) > 2 or set(kwargs) - {"dtype"}:
            raise Unsupported("unsupported-call", "tensor() of graph values with these arguments", self.site)
        out = convert(np.array, [src], {} if dtype is None else {"dtype": dtype}, self.site)
        if isinstance(out, Sym) and out.shape == ():  # of a number: a 0-d array, as eager's Tensor holds
            out = array_copy(out)
        return _as_kind(out, "tensor")

    def call_library(self, func, args, kwargs):
        """janus_like's functional API and other pure library code: call it with abstract values."""
        module = getattr(func, "__module__", None) or "?"
        _refuse_global_state(func, self.site)
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, ObjRef):  # the library sees the object itself (e.g. a Generator): pin it
                self.prog.check_identity(a.slot, self.site)
        args = [self.written_container(a) for a in args]
        kwargs = {k: self.written_container(v) for k, v in kwargs.items()}
        if not _any_abstract((args, kwargs)):
            return self.lift(func(*args, **kwargs))
        try:
            out = func(*args, **kwargs)
        except Unsupported as exc:  # from the values' NumPy protocol, which has no site at hand
            if exc.detail.startswith("a NumPy function with no graph op"):  # (Sym.__array__): name it
                exc.detail = f"{module.split('.')[0]}.{func.__name__} with a graph value has no graph op"
            raise self.located(exc)
        if in_packages(func.__module__, ("janus_like.ops",)):
            out = _as_tensor_kind(out)
        return out

    def call_builtin(self, func, args, kwargs):
        if (func in (float, int, bool) or func is complex and len(args) == 1 and not kwargs) and args \
                and isinstance(args[0], Sym):
            v = args[0]
            if v.size != 1:
                raise Unsupported("data-dependent-python", f"{func.__name__}() of an array", self.site)
            return self.builder.to_py(v, func)  # bool(np.any(bad)): the truth `if` takes, as a Python bool
        if func in (id, hash) and len(args) == 1 and id(args[0]) in self.new_objects:
            raise Unsupported("object-construction", f"{func.__name__}() of an object made in the function (eager's "
                                                     "is a new object each call)", self.site)
        if func in (id, hash) and len(args) == 1 and not kwargs:
            return self.object_id(func, args[0])
        if func in (vars, locals) and not args and not kwargs:  # (the generator's own frame otherwise)
            raise Unsupported("unsupported-call", f"{func.__name__}() of the function's own names", self.site)
        if func is vars and len(args) == 1 and isinstance(args[0], ObjRef):
            return self.attributes(args[0])
        if func is vars and args and id(args[0]) in self.new_objects:  # its own dict: built apart at the commit
            raise Unsupported("object-construction", "vars() of an object made in the function", self.site)
        if func is len and args and isinstance(args[0], Sym) and self.builder.polymorphic \
                and not (args[0].ndim and self.builder.fixed(args[0], 0)):
            return self.builder.dim(args[0], 0)
        if func is len and args and isinstance(args[0], ObjRef):
            return self.container_len(args[0])
        if func in (isinstance, type, hasattr) and args:
            self.builder.escape(args[0], f"passed to {func.__name__}()")
        if func in (isinstance, type, hasattr) and args and isinstance(args[0], DeferredStr):
            return func("", *args[1:])  # (text formatted from graph values is a str when the graph runs)
        if func is isinstance and args and isinstance(args[0], (ObjRef, Sym)):
            return isinstance(_concrete_type_probe(args[0]), args[1])
        if func is type and len(args) == 1 and isinstance(args[0], (ObjRef, Sym)):
            return type(_concrete_type_probe(args[0]))
        made = bool(args) and id(args[0]) in self.new_objects
        if func in (getattr, hasattr) and len(args) >= 2 and isinstance(args[1], str) and (
                isinstance(args[0], (ObjRef, Sym, VarRef)) or made or isinstance(args[0], (type, types.FunctionType,
                                                                                  types.ModuleType))
                and not _library_owned(args[0]) or users_jit_attribute(args[0], args[1], written=True)):
            if func is hasattr:
                try:
                    self.getattr(args[0], args[1])
                    return True
                except AttributeError:
                    self.absent(args[0], args[1])
                    return False
                except Unsupported:  # an ndarray method without a graph op: the array has it
                    return True
            return self.getattr(args[0], args[1]) if len(args) == 2 else self.getattr_default(args[0], args[1], args[2])
        if func is setattr and len(args) == 3 and not kwargs and isinstance(args[1], str) and (
                isinstance(args[0], (ObjRef, Sym)) or made or isinstance(args[0], (type, types.FunctionType))
                and not _library_owned(args[0]) or users_jit_attribute(args[0], args[1], written=True)):
            self.setattr(*args)  # `setattr(model, name, value)`: as `model.<name> = value`
            return None
        if func is setattr:
            raise Unsupported("unsupported-call", "setattr() of this object or name", self.site)
        if func in (str, repr, ascii, format):  # (a deque's or a Counter's text is its class's)
            args = [self.snapshot_for_effect(a) if isinstance(a, ObjRef) else a for a in args]
        args = self._containers(args, (list, tuple, dict, collections.deque))
        if func is sum and len(args) == 1 and set(kwargs) == {"start"}:  # sum(grads, start=g0): as sum(grads, g0)
            args, kwargs = [args[0], kwargs["start"]], {}
        if func is sum and len(args) >= 1 and isinstance(args[0], _VIEWS):
            total, items = self.sum_as_pulled(args)
            if total is not None:
                return total
            args = [items, *args[1:]]  # Python numbers: summed as sum() sums them (py_numbers.py)
        if func in (max, min, sorted) and len(args) >= 1 and isinstance(args[0], (*_VIEWS, dict)):
            args = [list(args[0]), *args[1:]]  # `max(float(n) for n in norms)`: these consume it whole anyway;
            # a dict's keys (`for k in sorted(params)`), guarded where it was read
        if func is sum and args and _any_abstract(args[0]):
            return python_sum(self.builder, list(args[0]), args[1] if len(args) > 1 else 0, self.site)
        module = getattr(func, "__module__", None)
        if func in (max, min) and (items := mixed_types(func, args, kwargs)) is not None:
            return speculate_pick(self, func, items, self.pick_key, what="Python numbers of several types")
        if is_number_call(func, module, args, kwargs):
            return number_call(self.builder, func, module, args, self.site, kwargs)
        if func in (max, min) and (items := mixed_items(func, args, kwargs)) is not None:
            return speculate_pick(self, func, items, self.pick_key)
        if func is sorted and _any_abstract((args, kwargs)):
            return sorted_numbers(self.builder, args, kwargs, self.site)
        if func in (max, min) and _any_abstract(args):
            return scalar_extreme(self.builder, func, args, kwargs, self.site)
        if func is divmod and len(args) == 2 and _any_abstract(args):
            if any(isinstance(a, Sym) and a.kind == "tensor" for a in args):  # (a Tensor has no __divmod__)
                a, b = (type(_concrete_type_probe(v) if isinstance(v, (Sym, ObjRef)) else v).__name__ for v in args)
                raise TypeError(f"unsupported operand type(s) for divmod(): '{a}' and '{b}'")
            if any(isinstance(a, Sym) and a.kind == "array" for a in args):  # an array's __divmod__ is np.divmod
                return self.call(np.divmod, list(args), {})  # (one ufunc: its warnings say "in divmod")
            return args[0] // args[1], args[0] % args[1]
        if func in (str, repr, ascii, format) and len(args) >= 1 and (_any_abstract(args[0]) or _any_objref(args[0])):
            spec = (args[1] if len(args) > 1 else kwargs.get("format_spec", "")) if func is format else ""
            if not isinstance(spec, str) or func is str and (len(args) > 1 or kwargs):  # (str(b, "utf-8"))
                raise Unsupported("data-dependent-python", f"{func.__name__}() of a graph value with arguments",
                                  self.site)
            conv = {str: "s", repr: "r", ascii: "a", format: ""}[func]  # text made where the program makes it
            return DeferredStr(self.formatted_parts(args[0], conv, spec))
        if func in (hash, set, frozenset) and _any_abstract((args, kwargs)):  # (a graph value's hash is its
            raise Unsupported("data-dependent-python", f"{func.__name__}() of a graph value", self.site)  # id's)
        try:
            return self.lift(func(*args, **kwargs))
        except TypeError:  # round(float(x[0])): a Python function of a value the graph computes
            if _any_objref((args, kwargs)):  # an input object it cannot read (`sorted(batch, key=len)`)
                objects = [type(a.obj).__name__ for a in args if isinstance(a, ObjRef)] or ["objects"]
                raise Unsupported("unsupported-call", f"{getattr(func, '__name__', func)}() of "
                                  f"{', '.join(objects)} from the inputs", self.site) from None
            if not _any_abstract((args, kwargs)):
                raise
            raise Unsupported("data-dependent-python", f"{func.__name__}() of a graph value", self.site) from None

    def sum_as_pulled(self, args):
        """`sum(enc(k) for k in kids)`: Python's sum adds each item as the generator gives it, so
        an item a later one writes in place (a shared leaf's `n.x += 0.01`) is added with its
        value then. (total, items): the running total where an item is an array or an object;
        (None, the items) for Python numbers, which nothing can write in place."""
        start = args[1] if len(args) > 1 else 0
        total, items, numbers = start, [], True
        for x in args[0]:
            items.append(x)
            if numbers and not (type(x) in (int, float, bool) or isinstance(x, Sym) and x.kind == "py"):
                numbers = False  # (the Python numbers before the first array: summed as sum() sums them)
                total = python_sum(self.builder, items[:-1], start, self.site)
            if not numbers:
                total = total + x
        return (None, items) if numbers else (total, items)

    def function_frame(self, func, generator=False):
        """(AST, Frame) of a user function to inline: the scope its free names are read from (a
        generator function's only with `generator`: its yields go to a loop, generators.py)."""
        if isinstance(func, LocalFunction):  # defined in jitted code: its scope is the defining frame
            fn_ast, outer = func.node, func.frame
            frame = Frame(func, outer.globals, outer.filename, outer, local_names(fn_ast))
            frame.cells = outer.cells
        else:
            try:
                fn_ast = function_ast(func)
            except NoSource as exc:
                name = getattr(func, "__qualname__", repr(func))  # (a property's getter may be an attrgetter)
                raise Unsupported("no-source", f"{name}: {exc}", self.site) from None
            self.code_guard(func)
            frame = Frame(func, func.__globals__, func.__code__.co_filename)
            if func.__closure__:
                for name, cell in zip(func.__code__.co_freevars, func.__closure__):
                    frame.cells[name] = cell
        if has_yield(fn_ast) and not (generator and isinstance(fn_ast, ast.FunctionDef)):
            raise Unsupported("generator", f"{func.__qualname__} is a generator", self.site)
        return fn_ast, frame

    def inline(self, func, args, kwargs):
        fn_ast, frame = self.function_frame(func)
        kind = recursion_kind(func, fn_ast, args) if self.regions and not isinstance(func, LocalFunction) else None
        if kind is not None:
            try:
                return self.recursion_region(func, fn_ast, frame, args, kwargs, kind)
            except Unsupported as exc:  # inlined, as without regions; explain() says why
                what = exc.detail if exc.detail.startswith("recursion region") else \
                    f"recursion region {func.__qualname__}: {exc.detail}"
                if not any(m.startswith(what) for m in self.region_misses):  # once, at the outermost call
                    self.region_misses.append(what + (f" (called at {exc.site})" if exc.site else ""))
        return self.inlined_body(func, fn_ast, frame, args, kwargs)

    def inlined_body(self, func, fn_ast, frame, args, kwargs):
        """Run `func`'s body in `frame`, its parameters bound to the arguments: its return value."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.depth -= 1
            raise Unsupported("recursion-limit", f"inlining deeper than {MAX_DEPTH} calls", self.site)
        self.bind_args(frame, fn_ast, func, args, kwargs)
        frame.written_reads = state_written_reads(frame.filename, fn_ast)
        saved_site = self.site
        self.frames.append(frame)
        try:
            self.exec_block(function_body(fn_ast), frame)
            return None
        except _Return as ret:
            return ret.value
        except Unsupported as exc:
            raise self.located(exc)
        finally:
            self.frames.pop()
            self.depth -= 1
            self.site = saved_site
            self.builder.site = saved_site

    def located(self, exc):
        """`exc` with the current statement's site when it was raised where no site was at hand."""
        if not exc.site and self.site:
            exc.site = self.site
            exc.args = (f"{exc.reason}: {exc.detail} at {exc.site}",)
        return exc
