"""Input containers (lists, tuples, dicts reached from the arguments): element reads guarded by
length/keys, mutations applied to a shadow copy and replayed at commit.
"""
from __future__ import annotations

import collections
import copy
import inspect
import operator
import types

import numpy as np

from .attributes import _library_owned
from .values import ObjRef, Sym, Unsupported
from .support import _MISSING, _any_abstract, _any_objref, _dict_key, _unwrap_obj

# the containers whose items an input program reads directly (a user class's `__getitem__` is inlined)
_CONTAINERS = (list, tuple, dict, collections.deque)


class ContainersMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def materialize(self, ref, site, ast_key=None):
        """The elements of an input list/tuple/dict as abstract values (guards its length/keys)."""
        refuse_own_reads(ref.obj, site)
        self.materialized.append(ref)
        self.flush_appends(ref.obj)
        if self.collecting:
            self.iterated.add(id(ref.obj))
        shadow = self.shadows.get(id(ref.obj))
        if shadow is not None:
            return shadow
        target = ref.obj
        if isinstance(target, dict):
            self.prog.check_keys(ref.slot, site)
            return {k: self.classify(self.prog.item(ref.slot, k, v)[0], site, ast_key) for k, v in target.items()}
        if _made_here(target):  # (`zip(self._fields, self)` in its `_asdict`)
            return tuple(target)
        if isinstance(target, (list, tuple, collections.deque)):  # (a deque's items, as a list)
            self.prog.check_len(ref.slot, site)
            items = [self.classify(self.prog.item(ref.slot, i, v)[0], site, ast_key) for i, v in enumerate(target)]
            return tuple(items) if isinstance(target, tuple) else items
        method = getattr(type(target), "__iter__", None)
        if isinstance(method, types.FunctionType) and not _library_owned(type(target)):
            # a class's own iteration in Python (`for v in G` of a networkx graph: its node dict's keys)
            self.class_member(type(target), "__iter__")
            self.collecting += 1  # (its items are taken before the loop's body runs: `resizes`)
            try:
                if inspect.isgeneratorfunction(method):  # (networkx's edge views: `for u, v in G.edges()`)
                    return self.collected_items(method, [ref])
                it = self.inline(method, [ref], {})
                if isinstance(it, ObjRef) and it.obj is target:  # an iterator object (its own `__next__`)
                    raise Unsupported("unsupported-syntax", f"iterating a {type(target).__name__} whose "
                                                            "`__iter__` returns itself", site)
                return list(self.iterate_lazily(it))
            finally:
                self.collecting -= 1
        raise Unsupported("unsupported-syntax", f"iterating a {type(target).__name__}", site)

    def _containers(self, args, kinds, nested=False):
        """args with each container of `kinds` reached from the inputs (a global, an attribute)
        replaced by its elements, each guarded as the profile saw it. `nested`: those inside the
        lists and tuples too (`np.array(batch)` of an input's list of lists, `np.stack([s, s])`),
        which NumPy would otherwise have read as the generator's objects, for functions that
        neither write their list arguments nor return their items (NumPy's)."""
        def expand(a):
            if isinstance(a, ObjRef) and isinstance(a.obj, kinds):
                a = self.materialize(a, self.site)
            if nested and type(a) in (list, tuple):
                items = [expand(x) for x in a]
                if any(x is not y for x, y in zip(items, a)):
                    return type(a)(items)
            return a

        return [expand(a) for a in args]

    def guarded_index(self, index):
        """An index of a graph array with parts from the inputs (`E[ids]` with ids a list the
        call passes, `x[st["window"]]` a slice, `grid[pos]` a tuple): their contents read with
        guards, as any input's (before, only their type was checked, and the graph kept the
        first call's positions). A list whose items the graph reads as inputs is an index array
        it computes."""
        if isinstance(index, ObjRef):
            target = index.obj
            if isinstance(target, (slice, range)) or target is Ellipsis or target is None:  # (a range: its positions)
                self.prog.check_value(index.slot, self.site)
                return target
            if not isinstance(target, (list, tuple)):
                return target  # (an array-like object: NumPy's own conversion, as before)
            index = self.materialize(index, self.site)
        if isinstance(index, tuple):
            return tuple(self.guarded_index(i) if isinstance(i, (ObjRef, list, tuple)) else i for i in index)
        if isinstance(index, list):
            items = [self.guarded_index(i) if isinstance(i, (ObjRef, list, tuple)) else i for i in index]
            if _any_abstract(items):
                from .conversions import convert

                return convert(np.asarray, [items], {}, self.site)
            return items
        return index

    def container_len(self, ref):
        """len() of an input container: guards the length only (elements are read, and guarded,
        where the code reads them, so their own profile decides what is speculated). A list's
        length that kept failing its guard on new lengths (a log appended to on every call,
        `if len(history) < n: history.append(loss)`) is read as a graph input instead, plus
        what this call appended so far."""
        obj, pending = ref.obj, self.appends.get(id(ref.obj))
        refuse_own_reads(obj, self.site)
        if type(obj) is list and _length_key(ref) in self.relaxed and id(obj) not in self.shadows:
            slot, _ = self.prog.length(ref.slot)
            n = self.slot_values.get(slot.index)
            if n is None:
                n = self.slot_values[slot.index] = Sym(self.input_node(slot, np.asarray(len(obj)), python_number=True),
                                                       "py")
            return n if pending is None else self.builder.py_op(operator.add, n, len(pending[1]))
        if type(obj) is list and pending is not None:  # the input's length (its items unread) + appends
            self.prog.check_len(ref.slot, self.site, relax=_length_key(ref))
            return len(obj) + len(pending[1])
        self.flush_appends(obj)
        shadow = self.shadows.get(id(obj))
        if shadow is not None:
            return len(shadow)
        if isinstance(obj, dict):
            self.prog.check_keys(ref.slot, self.site)
        elif isinstance(obj, (list, tuple)):
            self.prog.check_len(ref.slot, self.site, relax=_length_key(ref) if type(obj) is list else None)
        else:
            method = getattr(type(obj), "__len__", None)
            if not isinstance(method, types.FunctionType):
                raise Unsupported("unsupported-call", f"len() of a {type(obj).__name__}", self.site)
            self.class_member(type(obj), "__len__")
            n = self.inline(method, [ref], {})  # a user class's own, on what the call wrote
            if type(n) is not int:
                raise Unsupported("data-dependent-python", f"len() of a {type(obj).__name__} the graph computes",
                                  self.site)
            return n
        return len(obj)

    def container_item(self, obj, index, ast_key=None):
        """`obj[index]` of an input container: its item, guarded and classified as the profile saw
        it. After appends (a log), an appended item is the appended value, and an item or the
        last items by negative index (`history[-2]`, `history[-5:]`) are the input's own items
        and the appends, so the input's length alone is guarded (relaxed when it keeps changing);
        other reads make the function's copy of the list (containers.flush_appends)."""
        if not isinstance(obj.obj, _CONTAINERS):  # a user class's own `__getitem__`, run on what the call wrote
            method = getattr(type(obj.obj), "__getitem__", None)
            if not isinstance(method, types.FunctionType):
                raise Unsupported("unsupported-call", f"indexing a {type(obj.obj).__name__}", self.site)
            self.class_member(type(obj.obj), "__getitem__")
            return self.inline(method, [obj, index], {})
        refuse_own_reads(obj.obj, self.site)
        key = _dict_key(index)
        if type(key) is int and _made_here(obj.obj):  # (`self.loss` in its method: the graph's own value)
            return obj.obj[key]
        pending = self.appends.get(id(obj.obj))
        if pending is not None and type(key) is int and -len(pending[1]) <= key < 0:
            return pending[1][key]  # `history[-1]` just appended: the input's items are not needed
        if pending is not None and type(obj.obj) is list and _last_items(key):
            # `history[-5:]` after one append: the input's last four items, then the append
            n, start, stop = len(pending[1]), key.start, 0 if key.stop is None else key.stop
            if _length_key(obj) not in self.relaxed:  # all of a short list: its length guarded
                self.prog.check_len(obj.slot, self.site, relax=_length_key(obj))
                start, stop = (max(i, -len(obj.obj) - n) for i in (start, stop))
            if -len(obj.obj) <= start + n or start >= stop:  # (relaxed: the items guarded to exist)
                return [pending[1][i] if i >= -n else self.container_item(obj, i) for i in range(start, stop)]
        if pending is not None and type(key) is int and key < 0 and type(obj.obj) is list:
            key += len(pending[1])  # `history[-2]` after one append: the input's own last item
        else:
            self.flush_appends(obj.obj)
        shadow = self.shadows.get(id(obj.obj))
        if hasattr(type(obj.obj), "__missing__") and not isinstance(key, Sym) and key not in (
                obj.obj if shadow is None else shadow):  # a defaultdict inserts the key: eager does that
            err = Unsupported("data-dependent-python", f"a missing key of a {type(obj.obj).__name__} (it inserts one)",
                              self.site)
            err.retry = True  # this call only: the next one finds the key
            raise err
        if shadow is not None:
            return shadow[key]
        if isinstance(key, Sym):
            raise Unsupported("data-dependent-python", "indexing a Python container with a graph value", self.site)
        # a list whose length is read when the graph runs (containers.container_len): its
        # last items are read by negative index, guarded only to exist (`history[-3:]`)
        tail = type(obj.obj) is list and _length_key(obj) in self.relaxed
        if isinstance(key, slice):
            if tail and _last_items(key) and (-len(obj.obj) <= key.start or key.start >= (key.stop or 0)):
                return [self.container_item(obj, i) for i in range(key.start, key.stop or 0)]
            return self.materialize(obj, self.site)[key]
        try:
            value = obj.obj[key]
        except (KeyError, IndexError, TypeError) as exc:
            err = Unsupported("user-error", f"lookup fails: {exc!r}", self.site)
            err.original = exc  # what eager raises here (a `try` around it may catch it)
            if type(exc) is KeyError and isinstance(obj.obj, dict) and type(key) in (str, int, bool):
                self.prog.check_contains(obj.slot, key, False, self.site)  # (a `try` may take its handler:
                err.decided = self.raise_mark()  # on every call that passes the guards, eager's lookup raises)
            raise err from None
        if isinstance(obj.obj, (list, tuple)) and isinstance(key, int) and key < 0:
            if tail:
                self.prog.check_min_len(obj.slot, -key, self.site)
            else:
                key = len(obj.obj) + key
                self.prog.check_len(obj.slot, self.site, relax=_length_key(obj) if type(obj.obj) is list else None)
        slot, _ = self.prog.item(obj.slot, key, value)
        return self.classify(slot, self.site, ast_key)  # element values that varied become inputs

    def attributes(self, ref):
        """vars(obj) of an input object: every attribute, with a guard on the attribute names."""
        d = vars(ref.obj)
        slot, _ = self.prog._new(ref.slot, ("vars",), f"vars({ref.slot.text})", d, f"vars(s{ref.slot.index})")
        self.prog.check_keys(slot, self.site)
        out = {}
        for name in d:
            over = self.overlay.get((id(ref.obj), name), _MISSING)
            out[name] = over if over is not _MISSING else self.getattr(ref, name)
        return out

    def containers_to_python(self, v):
        if isinstance(v, ObjRef) and isinstance(v.obj, (list, tuple, dict)):
            v = self.materialize(v, self.site)
        if isinstance(v, dict):
            return {k: self.containers_to_python(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(self.containers_to_python(x) for x in v)
        return v

    def copy_call(self, func, args, kwargs):
        """`copy.copy(x)` / `copy.deepcopy(x)` of graph arrays and of lists, tuples and dicts
        holding them and Python values (an input's elements read through its guards): new arrays
        and new containers, as eager's; the deep copy keeps eager's sharing (an array or a list
        held twice is copied once) and gives back a tuple of immutable items itself. Other
        objects, and Tensors, stay eager."""
        if len(args) != 1 or kwargs:
            raise Unsupported("unsupported-call", f"copy.{func.__name__} with these arguments", self.site)
        deep, memo = func is copy.deepcopy, {}

        def dup(v):
            key = id(v.obj if isinstance(v, ObjRef) else v)
            if key in memo:
                return memo[key]
            if isinstance(v, Sym):
                if v.kind == "py":
                    return v
                out = v.__copy__()  # (a Tensor's copy stays eager)
            elif v is None or type(v) in (bool, int, float, complex, str, bytes) or isinstance(v, np.generic):
                return v
            elif isinstance(v, (ObjRef, list, tuple, dict)) and type(_unwrap_obj(v)) in (list, tuple, dict):
                kind = type(_unwrap_obj(v))
                items = self.materialize(v, self.site) if isinstance(v, ObjRef) else v
                if kind is tuple and not deep:
                    return v  # copy.copy of a tuple is the tuple
                if kind is dict:
                    out = {k: dup(x) if deep else x for k, x in items.items()}
                else:
                    new = [dup(x) if deep else x for x in items]
                    if kind is tuple and all(a is b for a, b in zip(new, items)):
                        return v  # a deep copy of immutable items: the tuple itself
                    out = kind(new)
            else:
                raise Unsupported("unsupported-call", f"copy.{func.__name__} of a {type(_unwrap_obj(v)).__name__}",
                                  self.site)
            memo[key] = out
            return out
        return dup(args[0])

    def resizes(self, target, key=_MISSING):
        """A write that may add or remove items of input container `target` (`key`: the one a
        `d[key] = v` writes, which adds an item only if new). Refused for a container a class's own
        iteration read: its items were all taken before the loop's body ran, where eager's loop
        fails ("dictionary changed size during iteration") on a body that adds an edge to the
        networkx graph it iterates. (Also after the loop: the graph cannot tell where it ends.)"""
        if id(target) in self.iterated and (key is _MISSING or key not in self.shadows.get(id(target), target)):
            raise Unsupported("unsupported-syntax", f"items added to or removed from a {type(target).__name__} "
                                                    "a class's own iteration read", self.site)

    def materialize_dict(self, v):
        if isinstance(v, ObjRef):
            return dict(self.materialize(v, self.site))
        return dict(v)

    def written_container(self, v):
        """What library code is given for v: an input list or dict the function wrote is its
        shadow copy (the input itself is written only at commit); anything else unwrapped."""
        if isinstance(v, ObjRef) and (id(v.obj) in self.shadows or id(v.obj) in self.appends):
            return type(v.obj)(self.materialize(v, self.site))
        return _unwrap_obj(v)

    def flush_appends(self, obj):
        """Before the code reads a list or deque it appended to: its shadow copy, the input's
        elements (guarded) then the appended values (a bounded deque's oldest dropped)."""
        pending = self.appends.pop(id(obj), None)
        if pending is not None:
            shadow = self.shadow(pending[0])
            shadow.extend(pending[1])
            _bound(obj, shadow)

    def shadow(self, ref):
        self.flush_appends(ref.obj)
        s = self.shadows.get(id(ref.obj))
        if s is None:
            if not plain_protocol(ref.obj):
                raise Unsupported("unsupported-call", f"a write into a {type(ref.obj).__name__}, whose class "
                                                      "has its own item methods", self.site)
            self.written_containers.add(id(ref.obj))  # its float items: read as inputs (evaluator._dynamic)
            self.bound_guarded(ref)
            base = self.materialize(ref, self.site)
            s = dict(base) if isinstance(base, dict) else list(base)
            self.shadows[id(ref.obj)] = s
        return s

    def bound_guarded(self, ref):
        """A deque the function writes keeps its `maxlen` (the graph drops the oldest items by it):
        one swapped for a deque of another bound between calls takes another graph."""
        if isinstance(ref.obj, collections.deque):
            self.prog.check_result(ref.slot, "{v}.maxlen", ref.obj.maxlen, self.site)

    def container_method(self, m, args, kwargs):
        ref, name = m.ref, m.name
        target = ref.obj
        if name in ("append", "extend", "insert", "pop", "clear", "update", "setdefault", "__setitem__", "__delitem__",
                    "popleft", "appendleft"):
            if self.pure_depth:
                raise Unsupported("unsupported-syntax", "container write inside a data-dependent branch", self.site)
            if name in ("append", "extend") and type(target) in (list, collections.deque) \
                    and id(target) not in self.shadows and not kwargs and len(args) == 1:
                # a log the function only appends to (`history.append(loss)`, `.extend(batch_losses)`,
                # a replay buffer's deque): no guard on its length or its elements, which change
                # every call; the commit appends (`flush_appends` when the function reads it)
                if name == "extend":
                    args = [list(self.iterate(args[0]))]
                self.bound_guarded(ref)
                self.appends.setdefault(id(target), (ref, []))[1].extend(args if name == "append" else args[0])
                self.written_containers.add(id(target))  # a log of floats: each call's items differ
                self.writes.append(("call", ref, name, list(args), {}))
                return None
            self.resizes(target)
            if isinstance(target, collections.deque) and name not in _DEQUE_WRITES:
                raise Unsupported("unsupported-call", f"deque.{name} on an input deque", self.site)
            shadow = self.shadow(ref)
            if name == "extend":
                args = [self.iterate(args[0])]
            if name == "update" and args and isinstance(args[0], ObjRef):  # `p.update(saved)` of another input
                args = [self.materialize(args[0], self.site), *args[1:]]
            if isinstance(target, dict) and name in ("pop", "setdefault", "__setitem__", "__delitem__") and args:
                args = [_dict_key(args[0]), *args[1:]]  # (an object key: the object, its identity guarded)
            if name in _LEFT_WRITES:
                result = _left_write(target, shadow, name, args, kwargs)
            else:
                result = getattr(shadow, name)(*args, **kwargs)
                _bound(target, shadow)
            self.writes.append(("call", ref, name, list(args), dict(kwargs)))
            return result
        if isinstance(target, collections.deque):
            raise Unsupported("unsupported-call", f"deque.{name} on an input deque", self.site)
        if isinstance(target, dict) and name == "get" and 1 <= len(args) <= 2 and not kwargs \
                and id(target) not in self.shadows and type(args[0]) in (str, int, bool):
            present = args[0] in target  # `m.get("step", 0)`: that entry only, its presence guarded (reading
            self.prog.check_contains(ref.slot, args[0], present, self.site)  # the whole dict guarded each value)
            return self.container_item(ref, args[0]) if present else (args[1] if len(args) > 1 else None)
        if isinstance(target, dict) and name == "get" and len(args) in (1, 2) and isinstance(args[0], Sym) \
                and args[0].kind == "py" and not kwargs and plain_protocol(target):  # `d.get(int(y[0]), 0)`
            return self.dict_get(ref, *args)
        live = isinstance(target, dict) and name in ("items", "keys", "values") and plain_protocol(target) \
            and not self.pure_depth  # (a view sees the step's later writes: of the dict's shadow)
        view = self.shadow(ref) if live else self.materialize(ref, self.site)
        if isinstance(target, dict) and name in ("items", "keys", "values", "get", "copy"):
            # (the key: a dict key; `get`'s default: any value, an array the graph computes too)
            return getattr(view, name)(*[_dict_key(a) if k == 0 else a for k, a in enumerate(args)])
        if name == "__getitem__" and any(isinstance(a, Sym) for a in args):
            raise Unsupported("data-dependent-python", "indexing a Python container with a graph value", self.site)
        if name in ("index", "count", "copy", "__getitem__"):
            return getattr(view, name)(*args)
        fields = getattr(type(target), "_fields", None) if isinstance(target, tuple) else None
        # a namedtuple's new copy (`state._replace(step=...)`) or its dict, by collections' own methods
        if fields is not None and name in ("_replace", "_asdict") and not args and (name == "_replace" or not kwargs) \
                and set(kwargs) <= set(fields) and getattr(type(target), name).__module__ == "collections":
            items = [kwargs.get(f, v) for f, v in zip(fields, view)]
            if name == "_asdict":
                return dict(zip(fields, items))
            if not _any_objref(items):  # (as a namedtuple made here: calls.py)
                return type(target)(*items)
        raise Unsupported("unsupported-call", f"{type(target).__name__}.{name} on an input container", self.site)


def _made_here(target) -> bool:
    """A namedtuple the step made with the graph's values in it (its items are those values)."""
    return type(target) is not tuple and isinstance(target, tuple) and (_any_abstract(target) or _any_objref(target))


_BUILTIN_CONTAINERS = (list, dict, tuple, collections.deque)
# what the graph's shadow of a container (a plain list or dict) does as the container would only
# where the container's class keeps its builtin base's
_PROTOCOL = ("__getitem__", "__setitem__", "__contains__", "__iter__", "__len__")
_READS = ("__getitem__", "__contains__", "__iter__", "__len__")


def builtin_member(target, name):
    """`target.name` of a list, dict, tuple or deque (or a subclass): "method" where it is the
    builtin base's own method (what ContainerMethod does as the base does), "data" for the base's
    data attribute (a deque's `maxlen`), None for anything the subclass defines or overrides (a
    `CappedList.append`, a `Counter.update`, an attribute of its own: read as any object's)."""
    base = next((b for b in type(target).__mro__ if b in _BUILTIN_CONTAINERS), None)
    if base is None:  # (a class of the user's with its own `__setitem__`)
        return None
    attr = getattr(type(target), name, None)
    if attr is None or attr is not getattr(base, name, None):
        return None
    return "method" if callable(attr) else "data"


def plain_reads(target) -> bool:
    """A container whose class reads its items as its builtin base does (no `__getitem__`,
    `__contains__`, `__iter__` or `__len__` of the user's, which eager runs on every read: a
    read counter, a lazy loader)."""
    if isinstance(target, collections.OrderedDict):
        return type(target).__mro__.index(collections.OrderedDict) == 0
    return all(builtin_member(target, name) == "method" for name in _READS if hasattr(type(target), name))


def refuse_own_reads(target, site):
    """Unsupported for a list, dict, tuple or deque of the user's class that reads through its
    own methods, which the generator would run once, on the real object, and the guards again
    on every call."""
    if isinstance(target, _CONTAINERS) and not plain_reads(target):
        raise Unsupported("unsupported-call", f"reading a {type(target).__name__}, whose class reads its items "
                                              "through its own methods", site)


def plain_protocol(target) -> bool:
    """A container whose class keeps its builtin base's item protocol (not a dict subclass's own
    `__setitem__`), which the graph's shadow of it follows."""
    if isinstance(target, collections.OrderedDict):  # its own item methods keep dict's order
        return type(target).__mro__.index(collections.OrderedDict) == 0
    return all(builtin_member(target, name) == "method" for name in _PROTOCOL if hasattr(type(target), name))


# a deque's writes its list shadow makes as the deque does (then `_bound`): not `insert`, which a
# full bounded deque refuses
_DEQUE_WRITES = frozenset(("append", "extend", "pop", "clear", "__setitem__", "popleft", "appendleft"))
_LEFT_WRITES = ("popleft", "appendleft")


def _left_write(target, shadow, name, args, kwargs):
    """A deque's `popleft()` / `appendleft(x)` on its list shadow: the first item taken, or `x`
    put first with a full bounded deque's last item dropped, as the deque does."""
    if kwargs or len(args) != (name == "appendleft"):
        raise TypeError(f"deque.{name}() takes {'exactly one argument' if name == 'appendleft' else 'no arguments'}")
    if name == "popleft":
        if not shadow:
            raise IndexError("pop from an empty deque")
        return shadow.pop(0)
    shadow.insert(0, args[0])
    if target.maxlen is not None and len(shadow) > target.maxlen:
        del shadow[target.maxlen:]
    return None


def _bound(target, shadow):
    """A bounded deque's shadow (a list) after appends: its last `maxlen` items, as the deque
    keeps (the oldest dropped from the left; the commit appends to the deque itself)."""
    maxlen = getattr(target, "maxlen", None) if isinstance(target, collections.deque) else None
    if maxlen is not None and len(shadow) > maxlen:
        del shadow[:len(shadow) - maxlen]


def _last_items(key) -> bool:
    """`key` is a slice of a sequence's last items: `[-k:]`, `[-k:-j]`."""
    return type(key) is slice and key.step in (None, 1) and type(key.start) is int and key.start < 0 \
        and (key.stop is None or type(key.stop) is int and key.stop < 0)


def _length_key(ref) -> tuple:
    """What relaxing a list's length guard adds to the generator's `relaxed` set (the list's
    length then read when the graph runs: container_len, container_item)."""
    return ("length", ref.slot.text)


def plain_concat(left, right, op=operator.add) -> bool:
    """`st["a"] + st["b"]` (`left` an ObjRef, `right` one or a list or tuple) is the builtin
    list's or tuple's `+` of their items: not a deque's (a deque, and it refuses a list), nor
    where a subclass's own `__add__`, or the right one's `__radd__`, goes first. With `op`
    `or_`: `st | {"g": g}` of plain dicts, a new dict of their items."""
    if op is operator.or_:
        return isinstance(left, ObjRef) and type(left.obj) is dict and (
            type(right) is dict or isinstance(right, ObjRef) and type(right.obj) is dict)
    return op is operator.add and isinstance(left, ObjRef) and isinstance(left.obj, (list, tuple)) \
        and builtin_member(left.obj, "__add__") == "method" and isinstance(right, (ObjRef, list, tuple)) \
        and (not isinstance(right, ObjRef) or isinstance(right.obj, (list, tuple))
             and not hasattr(type(right.obj), "__radd__"))
