"""Attributes the graph reads from classes, functions, user modules and defaults (`Config.lr`,
`self.scale` of a class-level default, `fn.cache`, `helpers.STATE`, `cache={}`, a method, a
property): through guards, as globals are. A value the user changes between calls, a class
patched or a module reloaded in place fails a guard instead of running with what the graph was
made from; writes into mutable ones are the graph's, made at the commit, and never while the
graph is generated. NumPy's, the standard library's and janus_like's own are held as constants.
"""
from __future__ import annotations

import collections.abc
import enum
import functools
import random
import sys
import types

import numpy as np

from ..source import function_ast, in_packages, nested_super
from .support import _LIBRARY_PREFIXES, _MISSING, _is_immutable, _is_jit, class_lookup, users_jit_attribute
from .draws import input_rng_method
from .values import BoundMethod, ObjRef, SuperRef, Unsupported

# what a default or a class, function or module attribute may hold that is not state: the object itself
_HELD_AS_IS = (types.BuiltinFunctionType, types.MethodType, np.ufunc, staticmethod, classmethod, property, np.dtype,
               types.MethodDescriptorType, types.WrapperDescriptorType, types.GetSetDescriptorType,
               types.MemberDescriptorType, types.ClassMethodDescriptorType)


def _library_owned(obj) -> bool:
    """A module, class or function of NumPy, the standard library or janus_like itself: held as
    a constant (nothing guards that `np.float32` or `nn.Linear.__call__` stays the same)."""
    module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None) or ""
    return library_module(module)


def data_descriptor(cls, name) -> bool:
    """`name` is a data descriptor of class `cls` with a `__get__` (a property, a slot): it wins
    over the instance's `__dict__` in Python's attribute lookup (one with only `__set__`, as
    networkx's `Graph._node`, does not)."""
    kind = type(class_lookup(cls.__mro__, name))
    return hasattr(kind, "__get__") and (hasattr(kind, "__set__") or hasattr(kind, "__delete__"))


def library_module(module: str) -> bool:
    """`module` (a name) is NumPy's, the standard library's or janus_like's own."""
    return in_packages(module, _LIBRARY_PREFIXES + ("janus_like",)) or module.split(".")[0] in sys.stdlib_module_names


def user_method(klass, name):
    """The function `klass.name` when a class of the user's defines it (not `object`, a library's
    class or a C type), else None."""
    owner = next((k for k in klass.__mro__ if name in k.__dict__), object)
    method = owner.__dict__.get(name)
    if owner is object or _library_owned(owner) or not isinstance(method, types.FunctionType):
        return None
    return method


def _changeable(value) -> bool:
    """Whether a value held outside the arguments may be state (a dict, a list, an array, an
    object, or a tuple holding one): read through guards, written at the commit."""
    if isinstance(value, tuple):  # (`Net.shared = (0, {"k": 1.0})`, a default `state=(buf,)`)
        return any(_changeable(v) for v in value)
    return not (_is_immutable(value) or isinstance(value, _HELD_AS_IS) or _is_jit(value))


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement, not by a C extension


class AttributesMixin:
    def class_attribute(self, obj, name, key, mro):
        """`obj.name` found in the classes `mro` (an ObjRef's type's MRO, or its tail after a
        `super()`'s class): a method bound to obj, a property's value, a slot, a constant."""
        target = obj.obj
        for klass in mro:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                break
        else:
            fallback = getattr(type(target), "__getattr__", None) if mro[0] is type(target) else None
            if fallback is dict.__getitem__:  # `class Config(dict): __getattr__ = dict.__getitem__`
                return self.getitem(obj, name, key)
            if isinstance(fallback, types.FunctionType):  # the class's own __getattr__, inlined, while the
                self.class_member(type(target), "__getattr__")  # name stays missing (`cfg.wd = 0.5` later)
                self.absent(obj, name)
                return self.inline(fallback, [obj, name], {})
            if mro[0] is type(target):  # eager's own error (a call raising it re-runs eagerly to raise it;
                # a C type's names its module: 'numpy.random._generator.Generator' object has no ...)
                kind, module = type(target).__name__, type(target).__module__
                kind = kind if type(target).__flags__ & _HEAP_TYPE or module == "builtins" else f"{module}.{kind}"
                raise AttributeError(f"{kind!r} object has no attribute {name!r}")
            raise AttributeError(f"'super' object has no attribute {name!r}")
        if (isinstance(target, (np.random.Generator, random.Random)) or type(target) is np.random.RandomState
                and target is not np.random.mtrand._rand) and callable(attr):  # rng.normal(...): draws
            method = input_rng_method(obj, name)
            if method is not None:  # from the generator the input holds at the call (draws.RngMethod)
                return method
            self.prog.check_identity(obj.slot, self.site)  # from this very generator (draws.generator_draw)
            return getattr(target, name)
        owner = mro[0] if mro[0] is type(target) else klass  # (the class after a super()'s: where found)
        member = isinstance(attr, (types.FunctionType, functools.cached_property, staticmethod, classmethod)) \
            or _is_jit(attr)
        if member or isinstance(attr, property) or type(attr).__name__ == "member_descriptor":
            self.class_member(owner, name)
        # read through the object: a value set on the object later hides the class's, unless the
        # class's is a data descriptor (a property, a slot); a method of a library class is not
        # checked (it is looked up on every call of a layer or an optimizer)
        data_descriptor = hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__")
        if owner is type(target) and hasattr(target, "__dict__") and not data_descriptor \
                and not (member and _library_owned(owner)):
            inst, _ = self.prog.attr(obj.slot, "__dict__", target.__dict__)
            self.prog.check_contains(inst, name, False, self.site)
        if isinstance(attr, types.FunctionType):
            return BoundMethod(attr, obj)
        if _is_jit(attr) and getattr(attr, "__self__", None) is None:  # @jit on a method
            return BoundMethod(attr.__wrapped__, obj)
        if isinstance(attr, property):
            return self.inline(attr.fget, [obj], {})
        if isinstance(attr, functools.cached_property) and isinstance(obj, ObjRef):
            value = self.inline(attr.func, [obj], {})  # its first read: computed, then kept in the
            self.setattr(obj, attr.attrname, value)  # object's __dict__, a write made at the commit
            return value
        if isinstance(attr, staticmethod):
            return attr.__func__
        if isinstance(attr, classmethod):
            return BoundMethod(attr.__func__, type(target))
        if type(attr).__name__ == "member_descriptor":
            slot, _ = self.prog.attr(obj.slot, name, getattr(target, name))
            return self.classify(slot, self.site, key)
        if hasattr(type(attr), "__get__") and not isinstance(attr, (types.FunctionType, type)):  # another descriptor:
            if name == "__class__" or isinstance(target, enum.Enum):  # what it gives is fixed by the guards
                return getattr(target, name)  # (the object's type; an enum member's name and value)
            raise Unsupported("unsupported-syntax", f"{type(target).__name__}.{name} through a descriptor", self.site)
        return self.shared_attribute(owner, name, getattr(owner, name), key)

    def construct(self, cls, args, kwargs):
        """`cls(...)` of a plain class (support.plain_class): a new object of the generator's,
        its `__init__` inlined on it, so that its `__dict__` holds graph values as eager's holds
        arrays; the commit makes one per call from that dict (outputs.spec). Not inside a
        conditional or loop node, whose body is generated once for either outcome or any number
        of trips (one object would stand for several or none)."""
        if self.pure_depth:
            raise Unsupported("object-construction", f"creating a {cls.__name__} inside a data-dependent branch "
                                                     "or loop", self.site)
        obj = object.__new__(cls)
        self.new_objects[id(obj)] = obj
        if cls.__init__ is object.__init__:
            if args or kwargs:  # as eager raises it
                raise TypeError(f"{cls.__name__}() takes no arguments")
            return obj
        self.class_member(cls, "__init__")
        out = self.inline(cls.__init__, [obj, *args], kwargs)
        if out is not None:
            raise TypeError(f"__init__() should return None, not {type(out).__name__!r}")
        return obj

    def super_ref(self, args):
        """`super()` in an inlined method (its class from the `__class__` cell Python gives a
        function that calls super, its object the method's first argument) or `super(cls, obj)`."""
        if len(args) == 2:
            cls, obj = args
        else:
            fn = self.frames[-1].func if self.frames and not args else None
            code = getattr(fn, "__code__", None)
            if code is None or "__class__" not in code.co_freevars or not code.co_varnames:
                raise Unsupported("unsupported-call", "super() outside a method", self.site)
            if nested_super(function_ast(fn)):  # (which super() this is, the frame does not say)
                raise Unsupported("unsupported-call", "super() in a comprehension, lambda or nested function",
                                  self.site)
            cls = fn.__closure__[code.co_freevars.index("__class__")].cell_contents
            obj = self.frames[-1].locals.get(code.co_varnames[0])
        # (an object the function made, or an input's: expressions.getattr looks names up after cls)
        target = obj if id(obj) in self.new_objects else obj.obj if isinstance(obj, ObjRef) else None
        if target is None or not isinstance(cls, type) or cls not in type(target).__mro__:
            raise Unsupported("unsupported-call", "super() of a value that is not an input object", self.site)
        return SuperRef(obj, cls)

    def made_attribute(self, obj, name, key, after=None):
        """`obj.name` of an object the function made (a dataclass's, calls.construct's): its own
        attribute as the function set it, else its class's member as an input object's is read
        (a method bound to it, a property inlined on it, a constant through guards). `after`:
        `super()`'s class (the lookup starts after it in the object's MRO)."""
        cls = type(obj)
        if name == "__dict__":  # (outputs.spec builds the object, not this dict)
            raise Unsupported("object-construction", "the __dict__ of an object made in the function", self.site)
        if name == "__class__" and after is None:
            return cls
        attr = class_lookup(cls.__mro__ if after is None else cls.__mro__[cls.__mro__.index(after) + 1:], name,
                            _MISSING)
        data_descriptor = hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__")
        inst = getattr(obj, "__dict__", {}) if after is None else {}
        if name in inst and not data_descriptor:
            return inst[name]
        if attr is _MISSING:
            raise AttributeError(f"{cls.__name__!r} object has no attribute {name!r}" if after is None
                                 else f"'super' object has no attribute {name!r}")
        if isinstance(attr, (types.FunctionType, property, staticmethod, classmethod)):
            self.class_member(cls, name)
        if isinstance(attr, types.FunctionType):
            return types.MethodType(attr, obj)  # (calls.py inlines it on obj)
        if isinstance(attr, property):
            if attr.fget is None:
                raise AttributeError(f"property {name!r} of {cls.__name__!r} object has no getter")
            return self.inline(attr.fget, [obj], {})
        if isinstance(attr, staticmethod):
            return attr.__func__
        if isinstance(attr, classmethod):
            return types.MethodType(attr.__func__, cls)
        if hasattr(type(attr), "__get__") and not isinstance(attr, type):
            raise Unsupported("object-construction", f"{cls.__name__}.{name} through a descriptor, of an object "
                                                     "made in the function", self.site)
        return self.shared_attribute(cls, name, getattr(cls, name), key)

    def made_setattr(self, obj, name, value):
        """`obj.name = value` of an object the function made: into its `__dict__` (a conditional
        node's branches snapshot and merge it as a dict of the function's), or a property's
        setter inlined."""
        cls = type(obj)
        attr = class_lookup(cls.__mro__, name, _MISSING)
        if isinstance(attr, property):
            self.class_member(cls, name)
            if attr.fset is None:
                raise AttributeError(f"property {name!r} of {cls.__name__!r} object has no setter")
            self.inline(attr.fset, [obj, value], {})
            return
        if cls.__setattr__ is not object.__setattr__ or not hasattr(obj, "__dict__") \
                or hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__"):
            raise Unsupported("object-construction", f"setting attribute {name!r} of a {cls.__name__} made in the "
                                                     "function (its own __setattr__, a slot or a descriptor)",
                              self.site)
        obj.__dict__[name] = value

    def default_value(self, func, where, key, value):
        """A parameter's default, `func.<where>[key]`: read through guards like a global, so that
        a default changed or rebound after the graph was made (`f.__defaults__ = ...`) is seen,
        writes into a mutable one (`cache={}`) are the graph's, made at the commit, and the
        object is never written while the graph is generated."""
        if not isinstance(func, types.FunctionType) or _library_owned(func):
            return value
        root, _ = self.prog.root_const(func, func.__qualname__)
        holder, _ = self.prog.attr(root, where, getattr(func, where))
        slot, _ = self.prog.item(holder, key, value)
        return self.guarded(slot)

    def shared_attribute(self, owner, name, value, key=None):
        """`owner.name` of a class, a function or a user's module: read through guards from its
        owner like a global (`Config.lr`, `helpers.LR`, `Registry.table`, `fn.cache`, a
        class-level `scale = 1.0` read through `self`), so that a value the user changes
        between calls is seen, writes into a mutable one are the graph's, made at the commit,
        and the object is never written while the graph is generated. Library modules and
        classes (NumPy's, janus_like's) are held as constants."""
        if isinstance(owner, types.ModuleType):
            if _library_owned(owner) and not (owner.__name__.split(".")[0] in sys.stdlib_module_names
                                              and isinstance(value, (collections.abc.Mapping, list))):
                return value
            return self.read_global(owner.__dict__, name, key)  # (os.environ and sys.argv change too)
        if _library_owned(owner):
            return value
        over = self.overlay.get((id(owner), name), _MISSING)  # written by the call (`Config.steps += 1`)
        if over is not _MISSING:
            return over
        if isinstance(value, types.MethodType) and value.__self__ is owner:  # `Net.scale` of a classmethod:
            self.class_member(owner, name)  # a new bound method on each read, guarded by its function
            return value
        slot, _ = self.prog.attr(self.owner_ref(owner).slot, name, value)
        return self.guarded(slot, key)

    def owner_ref(self, owner):
        """An ObjRef of a user's class or function (a constant of the graph) whose attributes the
        call reads through guards and writes at the commit (`Config.steps += 1`, `fn.calls = n`)."""
        root, _ = self.prog.root_const(owner, getattr(owner, "__qualname__", type(owner).__name__))
        return ObjRef(owner, root, root.text)

    def shared_setattr(self, owner, name, value):
        """`Config.name = value` or `fn.name = value` of a user's class or function: a state write,
        committed with the graph. A library's, or a class whose metaclass sets attributes its own
        way or holds a descriptor for `name`, stays eager."""
        meta = type(owner)
        if _library_owned(owner) or (isinstance(owner, type) and (meta.__setattr__ is not type.__setattr__
                                                                 or hasattr(getattr(meta, name, None), "__set__"))):
            raise Unsupported("unsupported-syntax", f"setting attribute {name!r} of {meta.__name__} "
                                                    f"{getattr(owner, '__qualname__', owner)}", self.site)
        self.state_write("setattr", self.owner_ref(owner), name, value)

    def guarded(self, slot, key=None):
        """The value of a slot read from a class, a function or a default: state and numbers as
        any input (classify), any other constant (a tuple, a bound method, a ufunc, a
        descriptor) by identity."""
        v = slot.value
        if _changeable(v) or v is None or type(v) in (int, float, bool, str) or isinstance(v, np.generic) \
                or isinstance(v, (types.FunctionType, type)) or _is_jit(v):
            return self.classify(slot, self.site, key)
        self.prog.check_identity(slot, self.site)
        return v

    def plain_lookup(self, cls, name):
        """An attribute read of an instance of `cls` runs no code of the user's class there: one
        of its classes defining `__getattribute__` (a read counter, a computed `W`) stays eager."""
        own = next((k for k in cls.__mro__ if "__getattribute__" in k.__dict__ and not _library_owned(k)), None)
        if own is not None:
            raise Unsupported("unsupported-syntax", f"reading attribute {name!r} of a {cls.__name__} through "
                                                    f"{own.__name__}.__getattribute__", self.site)

    def class_member(self, owner, name):
        """Guard that `owner.name` is still the method, property or descriptor the graph was
        made with: a class patched between calls (`Model.forward = ...`, a reloaded module)
        makes the graph's guard fail. The lookup starts at the object's own class, so that an
        override added to a subclass is seen too."""
        if _library_owned(owner):
            return
        root, _ = self.prog.root_const(owner, getattr(owner, "__qualname__", owner.__name__))
        value = getattr(owner, name)
        slot, _ = self.prog.attr(root, name, value)
        if isinstance(value, types.MethodType):  # a classmethod: a new bound method on each read
            slot, _ = self.prog.attr(slot, "__func__", value.__func__)
        self.prog.check_identity(slot, self.site)

    def code_guard(self, func):
        """Guard that an inlined function still runs the code the graph was made from: a module
        reloaded in place (IPython's autoreload) swaps `__code__` on the same function object."""
        if isinstance(func, types.FunctionType) and not _library_owned(func):
            root, _ = self.prog.root_const(func, func.__qualname__)
            slot, _ = self.prog.attr(root, "__code__", func.__code__)
            self.prog.check_code(slot, func)

    def getattr_default(self, obj, name, default):
        try:
            return self.getattr(obj, name)
        except AttributeError:
            self.absent(obj, name)
            return default

    def absent(self, obj, name):
        """Guard that an attribute the call found missing (`getattr(self, "cache", None)`,
        `hasattr(fn, "calls")`) is still missing: one set between calls (or by this graph's
        commit) is read by the next call. An object without a `__dict__` is not guarded."""
        if isinstance(obj, ObjRef):
            target, slot = obj.obj, obj.slot
        elif isinstance(obj, (type, types.FunctionType)) or isinstance(obj, types.ModuleType) \
                and not _library_owned(obj) or users_jit_attribute(obj, name, written=True):  # (a user's config
            target, slot = obj, self.owner_ref(obj).slot  # module: `getattr(cfg, "WD", 0.0)`; a jitted `train`)
        elif id(obj) in self.new_objects:  # (its own attributes are the function's: its classes' are guarded)
            target, slot = obj, None
        else:
            return
        if hasattr(target, "__dict__") and slot is not None:
            inst, _ = self.prog.attr(slot, "__dict__", target.__dict__)
            self.prog.check_contains(inst, name, False, self.site)
        if not isinstance(target, types.ModuleType):  # ... nor set on its class (or a base) since
            for klass in (target.__mro__ if isinstance(target, type) else type(target).__mro__)[1 if isinstance(
                    target, type) else 0:]:
                if klass is not object and not _library_owned(klass):
                    holder, _ = self.prog.attr(self.owner_ref(klass).slot, "__dict__", klass.__dict__)
                    self.prog.check_contains(holder, name, False, self.site)
                    if not isinstance(target, type) and "__getattr__" not in klass.__dict__:  # (one added
                        self.prog.check_contains(holder, "__getattr__", False, self.site)  # later answers)
