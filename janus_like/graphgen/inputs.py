"""The input program: how a graph reads its inputs, and the guards that make that safe.

Every value the generator read from the function's arguments, globals or closures is a *slot*
reached by a path (`arg0.layers[1].W`). Each slot carries checks (type, shape/dtype, value,
identity, length); all of them run, in the order the generator first read them, before any node
of the graph executes. The program is emitted as straight-line Python and compiled once:

    def guard(args):
        s0 = args[0]
        if type(s0) is not K0: return 0
        s1 = s0.W
        ...
        return (s0, s1, ...)

It returns all slot values, or the index of the first failed assumption (-1 if a read raised).
"""
from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..jit.assumptions import INT64_RANGE, Assumption


def _same_dtype(const: str) -> str:
    """The dtype check: identity first (NumPy's built-in dtypes are singletons, and `is` costs
    a third of `==`), equality for the rest (a byte-swapped or metadata-carrying equal dtype)."""
    return f"({{v}}.dtype is {const} or {{v}}.dtype == {const})"


def relax_text(slot) -> str:
    """The name relaxation uses for a slot: list elements relax together (`arg0.words[*]`)."""
    if slot.step[0] == "item" and isinstance(slot.step[1], int) and slot.parent is not None:
        return f"{slot.parent.text}[*]"
    return slot.text


def _disjoint(written, arrays) -> bool:
    """No array of `arrays` overlaps in memory an array of `written` (other than itself). The
    common case costs one `.base` read per array: each written array owns its memory, and no
    other is a view of one (NumPy's view of a view has the owner as its base)."""
    owners = set()
    for w in written:
        if w.base is not None:  # a written view: NumPy's bounds check, pair by pair
            return not any(w is not a and np.may_share_memory(w, a) for w in written for a in arrays)
        owners.add(id(w))
    for a in arrays:
        base = a.base
        if base is not None and id(base) in owners:
            return False
    return True


class Slot:
    __slots__ = ("index", "parent", "step", "text", "value")

    def __init__(self, index, parent, step, text, value):
        self.index, self.parent, self.step, self.text, self.value = index, parent, step, text, value


class InputProgram:
    def __init__(self):
        self.slots: list[Slot] = []
        self.lines: list[str] = []  # body of the guard function
        self._absent: dict = {}  # slot index of a globals dict -> the builtin names it must not define
        self.consts: list = []
        self.assumptions: list[Assumption] = []
        self._by_key: dict = {}
        self._checked: set = set()  # the conditions checked so far (`check`)
        self._keys: dict = {}  # tuple of a dict's keys -> the constant holding them as a list
        self._min_len: dict = {}  # slot index -> the greatest n of its `len >= n` guards

    def _const(self, value) -> str:
        # each constant is a global of the generated function (KG3): a global load is cheaper
        # than indexing a list, and a hot guard reads ~20 of them per call. Not the plan's K<id>:
        # executor/fused.py pastes both into one function (a guard's K4 beside the plan's K4 kept
        # a drawing policy step from its fused call)
        for i, c in enumerate(self.consts):
            if c is value:
                return f"KG{i}"
        self.consts.append(value)
        return f"KG{len(self.consts) - 1}"

    def check_arity(self, n):
        """The call passes n positional arguments: a graph made from a call that left a parameter
        to its default must not run a call that passes it (the default is a constant here)."""
        self.assumptions.append(Assumption("arity", "the call", n, "positional arguments"))
        self.lines.append(f"if len(args) != {n}: return {len(self.assumptions) - 1}")

    # ------------------------------------------------------------------ slots
    def root_arg(self, i, value):
        return self._new(None, ("arg", i), f"arg{i}", value, f"args[{i}]")

    def root_global(self, gdict, name, value, modname):
        return self._new(None, ("global", id(gdict), name), f"{modname}.{name}", value,
                         f"{self._const(gdict)}[{name!r}]")

    def root_const(self, value, name):
        """An object fixed by an identity guard elsewhere (a jitted method's `self`): read its
        attributes through guards like any input."""
        return self._new(None, ("const", id(value)), name, value, self._const(value))

    def root_cell(self, cell, name, value):
        return self._new(None, ("cell", id(cell)), name, value, f"{self._const(cell)}.cell_contents")

    def attr(self, parent: Slot, name, value):
        return self._new(parent, ("attr", name), f"{parent.text}.{name}", value, f"s{parent.index}.{name}")

    def item(self, parent: Slot, key, value):
        key_code = repr(key) if isinstance(key, (int, str, bool, float, type(None))) else self._const(key)
        return self._new(parent, ("item", key if isinstance(key, (int, str)) else id(key)),
                         f"{parent.text}[{key!r}]" if isinstance(key, (int, str)) else f"{parent.text}[<obj>]",
                         value, f"s{parent.index}[{key_code}]")

    def data(self, parent: Slot):
        """The `_data` array of a Tensor/Variable slot (read after its checks)."""
        return self._new(parent, ("data",), f"{parent.text}", parent.value._data, f"s{parent.index}._data")

    def _new(self, parent, step, text, value, code):
        key = (parent.index if parent else None, step)
        hit = self._by_key.get(key)
        if hit is not None:
            return hit, False
        slot = Slot(len(self.slots), parent, step, text, value)
        self.slots.append(slot)
        self._by_key[key] = slot
        self.lines.append(f"s{slot.index} = {code}")
        return slot, True

    # ------------------------------------------------------------------ checks
    def check(self, slot: Slot, cond_code: str, assumption: Assumption):
        """`cond_code` uses `v` for the slot value; failing it fails `assumption`. A check the
        program makes already (the same condition on the same slot) is not made again: nothing
        runs between the guard's checks that could change its outcome."""
        line = cond_code.replace('{v}', f's{slot.index}')
        if line in self._checked:
            return
        self._checked.add(line)
        self.assumptions.append(assumption)
        idx = len(self.assumptions) - 1
        self.lines.append(f"if not ({line}): return {idx}")

    def check_type(self, slot, site):
        t = type(slot.value)
        if t is int:  # the graph holds an int as an int64: NumPy converts a larger one otherwise
            self.check(slot, f"type({{v}}) is int and {-2 ** 63} <= {{v}} < {2 ** 63}",
                       Assumption("type", site, INT64_RANGE, slot.text))
            return
        self.check(slot, f"type({{v}}) is {self._const(t)}",
                   Assumption("type", site, t.__name__, slot.text))

    def check_array(self, slot, site, unknown_axes=()):
        arr = slot.value
        shape = tuple(arr.shape)
        dtype = self._const(arr.dtype)
        # the array type is the device: a graph made for NumPy arrays never gets CuPy ones (no
        # check at all where CuPy cannot be imported; NumPy scalars count as CPU arrays)
        gpu_type = backend.gpu_array_type()
        on_gpu = gpu_type is not None and type(arr) is gpu_type
        where = "" if gpu_type is None else f"type({{v}}) is{'' if on_gpu else ' not'} {self._const(gpu_type)} and "
        on = " on gpu" if on_gpu else ""
        if not unknown_axes:
            self.check(slot, f"{where}{{v}}.shape == {shape!r} and {_same_dtype(dtype)}",
                       Assumption("shape", site, f"{arr.dtype}{list(shape)}{on}", slot.text, relax=("shape", slot.text)))
            return
        # some dimensions are unknown: check the rank and every other dimension
        fixed = " and ".join(f"{{v}}.shape[{k}] == {d}" for k, d in enumerate(shape) if k not in unknown_axes)
        shown = [("?" if k in unknown_axes else d) for k, d in enumerate(shape)]
        self.check(slot, f"{where}{{v}}.ndim == {len(shape)} and {_same_dtype(dtype)}" + (f" and {fixed}" if fixed else ""),
                   Assumption("shape", site, f"{arr.dtype}{shown}{on}", slot.text))

    def check_value(self, slot, site):
        v = slot.value
        if v is None:
            self.check(slot, "{v} is None", Assumption("value", site, None, slot.text))
            return
        t = type(v)
        if t is bool:  # (a singleton: one identity test, `s7 is True`, checks type and value)
            self.check(slot, f"{{v}} is {v}", Assumption("value", site, v, slot.text))
            return
        relax = ("value", relax_text(slot)) if t in (int, float) or isinstance(v, (np.floating, np.integer)) else None
        sign = ""
        if isinstance(v, (float, np.floating)) and v == 0:  # (-0.0 == 0.0, and 1 / -0.0 is -inf)
            sign = f" and {self._const(math.copysign)}(1.0, {{v}}) == {math.copysign(1.0, v)}"
        self.check(slot, f"type({{v}}) is {self._const(t)} and {{v}} == {self._const(v)}{sign}",
                   Assumption("value", site, v, slot.text, relax=relax))

    def check_identity(self, slot, site):
        v = slot.value
        name = getattr(v, "__qualname__", None) or getattr(v, "__name__", None) or type(v).__name__
        self.check(slot, f"{{v}} is {self._const(v)}", Assumption("identity", site, name, slot.text))

    def check_code(self, slot, func):
        """`slot` is `func.__code__`: the function still runs the code the graph was made from."""
        self.check(slot, f"{{v}} is {self._const(slot.value)}",
                   Assumption("identity", f"{func.__qualname__}'s code", "the code the graph was made from", slot.text))

    def check_result(self, slot, code, result, site):
        """`code` of the slot's value `{v}` (`bool({v})`, `{v}.isEnabledFor(10)`: a library object's
        query) gives `result` again: asked on every call, as eager code asks it."""
        text = code.replace("{v}", slot.text)
        self.check(slot, f"{code} == {self._const(result)}", Assumption("value", site, result, text))

    def check_call_identity(self, slot, args, kwargs, result, site):
        """`{v}(*args, **kwargs)` still gives the object `result` (an lru_cache function's cached
        value): called by the guard on every call, as eager calls it (a `cache_clear()` between
        calls makes it compute a new object, which fails the guard)."""
        given = [self._const(a) for a in args] + [f"{k}={self._const(a)}" for k, a in kwargs.items()]
        name = getattr(slot.value, "__qualname__", type(slot.value).__name__)
        self.check(slot, f"{{v}}({', '.join(given)}) is {self._const(result)}",
                   Assumption("identity", site, f"{name}'s cached value", slot.text))

    def check_writeable(self, slot):
        """A NumPy array the commit writes in place accepts writes: a read-only one fails the
        guard, and the call runs eagerly, raising eager's error where eager writes it, instead of
        the commit failing half-way."""
        self.check(slot, "{v}.flags.writeable", Assumption("writeable", "the commit", True, slot.text))

    def check_c_order(self, slot, site):
        """The array is C-ordered (graphgen/layouts.py): another layout gets a graph of its own."""
        self.check(slot, "{v}.flags.c_contiguous", Assumption("layout", site, "C order", slot.text))

    def check_alias(self, slot, other: Slot, site):
        self.check(slot, f"{{v}} is s{other.index}", Assumption("alias", site, f"same object as {other.text}", slot.text))

    def check_len(self, slot, site, relax=None):
        n = len(slot.value)
        self.check(slot, f"len({{v}}) == {n}", Assumption("length", site, n, slot.text, relax=relax))

    def check_min_len(self, slot, n, site):
        """At least n items: reads by negative index (`history[-1]`) of a list whose exact
        length is a graph input. A weaker guard after a stronger one (`history[-5:]` reads its
        items from the first) is implied, and not checked again."""
        if n <= self._min_len.get(slot.index, 0):
            return
        self._min_len[slot.index] = n
        self.check(slot, f"len({{v}}) >= {n}", Assumption("length", site, f">= {n}", slot.text))

    def length(self, parent: Slot):
        """`len()` of a container slot, read when the graph runs (a Python int)."""
        return self._new(parent, ("len",), f"len({parent.text})", len(parent.value), f"len(s{parent.index})")

    def check_keys(self, slot, site):
        keys = list(slot.value.keys())
        const = self._keys.get(tuple(keys))
        if const is None:  # equal lists share one constant, so that a repeated check is seen as one
            const = self._keys[tuple(keys)] = self._const(keys)
        self.check(slot, f"list({{v}}.keys()) == {const}", Assumption("keys", site, keys, slot.text))

    def check_builtin(self, slot, name, site):
        """The globals dict `slot` still defines no global `name`: the function's `name` is the
        builtin. One test a dict for all its names (the set grows while the graph is made)."""
        names = self._absent.get(slot.index)
        if names is None:
            names = self._absent[slot.index] = set()
            self.check(slot, f"{{v}}.keys().isdisjoint({self._const(names)})",
                       Assumption("contains", site, "no global shadowing a builtin", slot.text))
        names.add(name)

    def check_contains(self, slot, key, expected, site):
        self.check(slot, f"({self._const(key)} in {{v}}) is {expected}",
                   Assumption("contains", site, expected, slot.text))

    def check_distinct(self, slots, site):
        """Mutable inputs that were distinct objects at generation must stay distinct."""
        if len(slots) < 2:
            return
        ids = ", ".join(f"id(s{s.index})" for s in slots)
        self.assumptions.append(Assumption("alias", site, "distinct objects", ", ".join(s.text for s in slots[:4])))
        self.lines.append(f"if len({{{ids}}}) != {len(slots)}: return {len(self.assumptions) - 1}")

    def check_disjoint(self, written, arrays):
        """The NumPy arrays the commit writes in place share no memory with another input array
        (`st["view"] = buf[1:]` passed beside `buf`): the graph reads and writes each as its own
        value, where eager's write through one shows in the other."""
        self.assumptions.append(Assumption("alias", "the commit", "no input array overlapping one written in place",
                                           ", ".join(s.text for s in written[:4])))
        w = "".join(f"s{s.index}, " for s in written)
        a = "".join(f"s{s.index}, " for s in arrays)
        self.lines.append(f"if not {self._const(_disjoint)}(({w}), ({a})): return {len(self.assumptions) - 1}")

    # ------------------------------------------------------------------ compile
    def compile(self, name="guard"):
        body = "\n".join("        " + line for line in self.lines)
        ret = ", ".join(f"s{s.index}" for s in self.slots)
        src = (f"def {name}(args):\n    try:\n{body}\n        return ({ret}{',' if len(self.slots) == 1 else ''})\n"
               f"    except Exception:\n        return -1\n")
        env = {"np": np, **{f"KG{i}": c for i, c in enumerate(self.consts)}}
        exec(compile(src, f"<janus_like guard {name}>", "exec"), env)
        fn = env[name]
        fn.parts = (list(self.lines), f"({ret}{',' if len(self.slots) == 1 else ''})", env)  # for executor/fused.py
        return fn, src
