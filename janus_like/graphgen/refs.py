"""The graph generator's Python-side values (beside the graph values of values.py): an object
reached from the inputs (`ObjRef`), a method bound to one, `super()`, a function defined inside
the jitted code, text formatted from graph values (formatted after the commit), and a Variable
as a deferred print saw it. Refusals (`Unsupported`) come from values.py when they are raised."""
from __future__ import annotations


class ObjRef:
    """A Python object reached from the function's inputs, at input slot `slot`."""

    __slots__ = ("obj", "slot", "path")

    def __init__(self, obj, slot, path):
        self.obj = obj
        self.slot = slot
        self.path = path

    def __repr__(self):
        return f"ObjRef({type(self.obj).__name__} at {self.path})"


class BoundMethod:
    __slots__ = ("func", "self_value")

    def __init__(self, func, self_value):
        self.func = func
        self.self_value = self_value


class SuperRef:
    """`super()` (or `super(cls, obj)`) in inlined code: attributes of `obj` (an ObjRef) looked up
    in its class's MRO after `cls`."""

    __slots__ = ("obj", "cls")

    def __init__(self, obj, cls):
        self.obj = obj
        self.cls = cls


class LocalFunction:
    """A function defined inside the jitted code (`def` or `lambda`): inlined where it is
    called, reading its free names from the frame that defined it when it runs (Python's late
    binding). It never becomes a real function: passed to library code, or escaping through the
    result or the state, it is Unsupported."""

    __slots__ = ("node", "frame", "__defaults__", "__kwdefaults__", "__name__", "__qualname__")

    def __init__(self, node, frame, defaults, kwdefaults):
        self.node, self.frame = node, frame
        self.__defaults__, self.__kwdefaults__ = defaults, kwdefaults
        self.__name__ = self.__qualname__ = node.name

    def __call__(self, *args, **kwargs):  # library code calling it (map, sorted(key=...))
        from .values import Unsupported, _builder

        b = _builder()
        raise Unsupported("unsupported-call", f"{self.__name__} (defined inside the jitted function) called by "
                                              "library code", b.site if b is not None else "")

    def __repr__(self):
        return f"LocalFunction({self.__name__})"


class DeferredStr:
    """An f-string or str() whose parts include graph values: formatted after the commit."""

    __slots__ = ("parts",)

    def __init__(self, parts):
        self.parts = parts  # list of str | (value, conversion, format_spec)

    def __str__(self):  # its text exists only after the commit: code that needs it now stays eager
        from .values import Unsupported

        raise Unsupported("data-dependent-python", "text formatted from graph values, used as a string")

    def __format__(self, spec):
        from .values import Unsupported

        raise Unsupported("data-dependent-python", "text formatted from graph values, formatted again")

    def _read(self, *_):  # len(), `in`, comparisons, indexing, truth: the text is needed now
        from .values import Unsupported

        raise Unsupported("data-dependent-python", "text formatted from graph values, read as a string")

    def __repr__(self):  # (`repr(s)`, `str([s])`: the text's repr, which exists only after the commit)
        from .values import Unsupported

        raise Unsupported("data-dependent-python", "repr() of text formatted from graph values")

    def __array__(self, dtype=None, copy=None):  # (`np.array([f"{v:.2f}" for v in y])`: a str array of the text)
        from .values import Unsupported

        raise Unsupported("data-dependent-python", "text formatted from graph values given to NumPy")

    __len__ = __iter__ = __getitem__ = __contains__ = __bool__ = _read
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _read
    __hash__ = object.__hash__


class VarSnapshot:
    """A Variable as a deferred print saw it: same name, the value at the time of the call."""

    __slots__ = ("value", "var")

    def __init__(self, value, var):
        self.value, self.var = value, var
