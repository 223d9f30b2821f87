"""Statements and writes: assignment, augmented assignment with NumPy's in-place semantics,
and every write to state logged for the all-or-nothing commit.
"""
from __future__ import annotations

import ast
import collections
import importlib.util
import operator
import os
import sys
import types

import numpy as np

from ..ops import api as F
from ..source import site_key
from . import windows
from .builder import OPAQUE
from .tape import SymbolicTape
from ..ops.registry import P, bind
from .values import CACHED, TENSOR_BUFFER, ObjRef, Sym, Unsupported, VarRef, numpy_scalar, stale_error
from .containers import builtin_member, plain_concat, plain_protocol
from .conversions import convert
from .layouts import kept_layout
from .windows import WINDOW, has_dynamic_slice, window_index
from .support import (ContainerMethod, _BINOPS, _any_abstract, _Break, _Continue, _MISSING, _Return, _as_kind,
                      COUNTS, _dict_key, _raw, _unwrap_obj, class_lookup, python_index, users_jit_attribute)


# `__setattr__`s that store into the instance's `__dict__` as object's does (SimpleNamespace's
# is its own slot wrapper, with object's behaviour)
_GENERIC_SETATTR = frozenset({object.__setattr__, types.SimpleNamespace.__setattr__})
# what an opaque view's second item (values.OPAQUE) says an in-place write through it would write
_OPAQUE_WRITES = ((None, "a name that refers to one of several arrays (which one depends on a branch taken or a "
                         "loop's trip count)"),
                  (TENSOR_BUFFER, "an ndarray sharing a Tensor's buffer (np.asarray(t), t.numpy())"),
                  (CACHED, "an array an lru_cache function returned (eager's write changes its cache)"),
                  (WINDOW, "a slice whose bounds the graph computes (a copy in the graph)"))

class StatementsMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def exec_block(self, stmts, frame):
        for stmt in stmts:
            self.exec_stmt(stmt, frame)

    def set_site(self, node, frame):
        self.site = f"{os.path.basename(frame.filename)}:{node.lineno}"
        self.builder.site = self.site
        self.caller = (frame.filename, node.lineno, frame.func)  # (a deferred log record's caller)

    def exec_stmt(self, node, frame):
        self.set_site(node, frame)
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            reason = "try" if isinstance(node, ast.TryStar) else "unsupported-syntax"
            raise Unsupported(reason, f"`{type(node).__name__}` statement", self.site)
        method(node, frame)

    def stmt_Expr(self, node, frame):
        self.eval(node.value, frame)

    def stmt_Pass(self, node, frame):
        pass

    def stmt_Return(self, node, frame):
        if self.pure_depth and frame in self.branch_frames:
            raise Unsupported("unsupported-syntax", "return inside a data-dependent branch", self.site)
        raise _Return(None if node.value is None else self.eval(node.value, frame))

    def stmt_Break(self, node, frame):
        self.leaving_loop("break")
        raise _Break()

    def stmt_Continue(self, node, frame):
        self.leaving_loop("continue")
        raise _Continue()

    def leaving_loop(self, what):
        """A break or continue inside a conditional node (a branch on a graph value) whose loop is
        outside it: taken or not depends on data the generator does not see, so the statement
        cannot run at generation time like the unrolled loop's other control flow. (A loop
        node's body has its own check in loops.py.)"""
        if self.loop_depths and self.loop_depths[-1] < self.pure_depth:
            raise Unsupported("unsupported-syntax", f"{what} inside a branch on a graph value", self.site)

    def stmt_FunctionDef(self, node, frame):
        if node.decorator_list:
            raise Unsupported("unsupported-syntax", f"decorated function {node.name!r} defined inside the function",
                              self.site)
        self.store_name(node.name, self.local_function(node, frame), frame)

    def stmt_Global(self, node, frame):
        frame.global_names.update(node.names)

    def stmt_Nonlocal(self, node, frame):
        frame.nonlocal_names.update(node.names)

    def stmt_Import(self, node, frame):
        """`import math`, `import numpy.linalg as la` in the function: after the first run an
        import is a lookup in `sys.modules`, so the names are bound to the modules there (a
        module not imported yet, which eager would import now, keeps the signature eager)."""
        for alias in node.names:
            module = self.imported(alias.name)
            if alias.asname is None:  # `import a.b` binds `a`
                module = self.imported(alias.name.partition(".")[0])
            self.store_name(alias.asname or alias.name.partition(".")[0], module, frame)

    def stmt_ImportFrom(self, node, frame):
        """`from numpy import linalg`, `from .utils import clip`: each name is read from the
        module as `module.name` is (a submodule not imported yet keeps the signature eager)."""
        try:
            name = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                               frame.globals.get("__package__")) if node.level else node.module
        except (ImportError, ValueError) as exc:
            raise Unsupported("unsupported-syntax", f"relative import ({exc})", self.site) from None
        module = self.imported(name)
        for alias in node.names:
            if hasattr(module, alias.name):
                value = self.getattr(module, alias.name)
            else:
                value = self.imported(f"{name}.{alias.name}")
            self.store_name(alias.asname or alias.name, value, frame)

    def imported(self, name):
        module = sys.modules.get(name)
        if module is None:
            raise Unsupported("unsupported-syntax", f"`import {name}` of a module not imported yet", self.site)
        return module

    def stmt_Assign(self, node, frame):
        value = self.eval(node.value, frame)
        for target in node.targets:
            self.assign(target, value, frame)

    def stmt_AnnAssign(self, node, frame):
        if node.value is not None:
            self.assign(node.target, self.eval(node.value, frame), frame)

    def stmt_AugAssign(self, node, frame):
        op = _BINOPS[type(node.op)]
        target = node.target
        # Python reads the target before the value (`s += f(x)` of an unbound s raises
        # UnboundLocalError, not f's error); its current value is taken after the value, which
        # may have written the same array in place
        if isinstance(target, ast.Name):
            self.load_name(target.id, frame, target)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            obj = self.eval(target.value, frame)
            index = self.eval(target.slice, frame) if isinstance(target, ast.Subscript) else None
        rhs = self.eval(node.value, frame)
        if isinstance(target, ast.Name):
            cur = self.load_name(target.id, frame, target)
            self.store_name(target.id, self.augment(cur, op, rhs), frame)
        elif isinstance(target, ast.Attribute):
            cur = self.getattr(obj, target.attr, site_key(frame.filename, target))  # (profiled: `t.step += 1`)
            new = self.augment(cur, op, rhs)
            if new is not cur:
                self.setattr(obj, target.attr, new)
        elif isinstance(target, ast.Subscript):
            cur = self.getitem(obj, index, site_key(frame.filename, target))
            if isinstance(cur, Sym) and cur.view is not None and cur.view[1] is WINDOW:  # read, computed, written back
                self.setitem(obj, index, self.inplace_value(cur, op(Sym(cur.node, "array"), rhs)))
                return
            was_view = isinstance(cur, Sym) and cur.view is not None and cur.view[0] is obj
            new = self.augment(cur, op, rhs, keep=not isinstance(obj, Sym))  # (`E[ids] -= g`: only put back)
            if new is cur and isinstance(cur, Sym) and isinstance(obj, ObjRef) \
                    and isinstance(obj.obj, (list, dict)) and plain_protocol(obj.obj):
                return  # `st["w"] -= g`: written in place; putting the same array back changes nothing
            if not (was_view and new is cur):  # a view's in-place write already updated obj
                self.setitem(obj, index, new)
        else:
            raise Unsupported("unsupported-syntax", "augmented assignment target", self.site)

    def augment(self, cur, op, rhs, keep=True):
        """`cur op= rhs` with Python's in-place protocol: arrays and tensors mutate in place (the
        value laid out as cur, graphgen/layouts.py, unless `keep` is False: `x[i] op= v` of an
        array x, whose item or view is read only to be written back)."""
        if isinstance(cur, VarRef):
            if op is operator.add:
                return cur.assign_add(rhs)
            if op is operator.sub:
                return cur.assign_sub(rhs)
            return cur.assign(op(Sym(cur.node, "array"), rhs))
        if isinstance(cur, Sym) and cur.kind == "array" and cur.ndim == 0 and numpy_scalar(cur):
            return self.binop(op, cur, rhs)  # a NumPy scalar: a new value (what held the old one keeps it)
        if isinstance(cur, Sym) and cur.kind in ("array", "tensor"):
            self.builder.escape(cur, "updated in place (`x += ...`)")
            new = op(cur, rhs)
            if cur.kind == "array":
                new = self.inplace_value(cur, new)
                self.write_box(cur, kept_layout(self, cur, new) if keep else new)
            else:
                self.write_box(cur, new)
            return cur
        # `acc += x * w` of a list and an array is the array's `__radd__` (NumPy's sum, an array):
        # only a sequence on the right extends the list
        sequence = isinstance(rhs, (list, tuple)) or isinstance(rhs, ObjRef) and isinstance(rhs.obj, (list, tuple))
        if isinstance(cur, list) and op is operator.add and (sequence or not isinstance(rhs, Sym)):
            cur.extend(self.materialize(rhs, self.site) if isinstance(rhs, ObjRef) else rhs)
            return cur
        if isinstance(cur, ObjRef) and isinstance(cur.obj, (list, collections.deque)) and op is operator.add:
            if not sequence or any(builtin_member(cur.obj, m) != "method" for m in ("__iadd__", "extend")):
                # (a subclass's own `+=` or `extend`, an array's `__radd__`, a generator reading the deque)
                raise Unsupported("unsupported-call", f"`+=` of {type(cur.obj).__name__} from the inputs and "
                                                      f"a {type(rhs).__name__}", self.site)
            self.container_method(ContainerMethod(cur, "extend"), [rhs], {})  # (a deque's `+=` extends it too)
            return cur
        if op is operator.or_ and plain_concat(cur, rhs, op):  # (plain dicts)
            self.container_method(ContainerMethod(cur, "update"), [rhs], {})  # `st |= {"lr": lr}`: an update
            return cur
        return self.binop(op, cur, rhs)  # (`line += f"..."` of graph values: a deferred string too)

    def inplace_value(self, target, value):
        """The value an in-place NumPy write leaves in `target`: cast to its dtype, its shape."""
        if not isinstance(target, Sym):
            raise Unsupported("unsupported-syntax", "in-place write into a non-array", self.site)
        if not isinstance(value, Sym):
            value = F.broadcast_to(self.builder.constant(np.asarray(value)), target.shape)
        if value.shape != target.shape:
            try:
                ok = np.broadcast_shapes(value.shape, target.shape) == target.shape
            except ValueError:
                ok = False
            if not ok:
                raise Unsupported("op-error", f"cannot write shape {value.shape} into {target.shape}", self.site)
            value = F.broadcast_to(value, target.shape)
        if value.dtype != target.dtype:
            if not np.can_cast(value.dtype, target.dtype, casting="same_kind"):
                raise Unsupported("op-error", f"cannot cast {value.dtype} to {target.dtype} in place", self.site)
            value = F.cast(value, target.dtype)
        return value

    def write_box(self, box, new):
        """Point a mutable value (and what it is a view of) at a new node."""
        if not isinstance(box, Sym):
            raise Unsupported("unsupported-syntax", "in-place write into a non-array value", self.site)
        if isinstance(box, VarRef):
            box.assign(new)
            self.note_write(box)
            return
        if box.kind == "stale" or (box.view is not None and box.view[0] is OPAQUE):
            what = next((text for marker, text in _OPAQUE_WRITES if box.view is not None and box.view[1] is marker),
                        "a reshaped or transposed view")
            raise stale_error(box, f"in-place write through {what}", self.site)
        if self.pure_depth:
            self.branch_box_write(box)
        if box.kind == "array" and box.ndim == 0 and numpy_scalar(new) and not numpy_scalar(box):
            new = _as_kind(bind(P.copy, new), "array")  # NumPy writes into the 0-d ndarray, which stays one
        box.node = new.node
        if box.view is not None:
            base, index = box.view
            written = _as_kind(F.index_update(base, index, Sym(new.node, base.kind)), base.kind)
            self.write_box(base, kept_layout(self, base, written))  # (a reversed base stays reversed)
        self.refresh_views(box)
        if box.origin is not None:
            box.dirty = True
            self.note_write(box)

    def refresh_views(self, base):
        for view in self.builder.views.get(id(base), []):
            if view.view[0] is OPAQUE or base.kind == "stale":  # (a slice of a stale view: of its old node)
                if view.kind != "stale":
                    view.kind = "stale"
                    # what may alias it may alias the written array too: a loop carrying a value a
                    # conditional merged from this array (its entry, after zero trips) went stale
                    # only one step away, and a write through a third name was lost (a wrong result)
                    self.refresh_views(view)
            else:
                view.node = F.getitem(Sym(base.node, "array"), view.view[1]).node
                self.refresh_views(view)  # a view of this view (`c[0][1:]`) reads the write too

    def views_of(self, base):
        """The views of `base`'s buffer the generator knows, and their views, and so on."""
        found, seen, pending = [], {id(base)}, [base]
        while pending:  # (a merged value may alias more than one array: each view is taken once)
            for view in self.builder.views.get(id(pending.pop()), ()):
                if id(view) not in seen:
                    seen.add(id(view))
                    found.append(view)
                    pending.append(view)
        return found

    def note_write(self, box):
        if self.pure_depth:  # in a conditional node (`branch_box_write` checked that): noted by its merge
            return
        self.writes.append(("box", box))

    def branch_box_write(self, box):
        """An in-place write of an array, or a Variable's assignment, inside a conditional or loop
        node: the value before the node is recorded the first time, so that `control.cond` can
        put it back after each branch and merge both branches' values, and `loops.loop` can
        carry it (see `state_write`). An array the node's own code made (not an input, its node
        newer than the node's start) is not state outside it: written as usual. Under a gradient
        tape, or for an array that is itself a view, it is not converted; nor for one with views
        made before a loop node (its body would read them as before the loop on every trip) or
        with reshaped or transposed views. In a conditional node, the slicing views made before it
        (`c[None]` read before `if m.any(): c[j] = ...`, and their own views) are recorded too:
        each branch reads them refreshed from its own writes, the conditional puts them back, and
        its merge refreshes them."""
        mark = self.branch_marks[-1]
        if box.node.id >= mark and box.origin is None and not isinstance(box, VarRef):
            return
        what = "Variable write" if isinstance(box, VarRef) else "in-place write"
        if self.builder.tapes:
            raise Unsupported("unsupported-syntax", f"{what} inside a differentiated branch", self.site)
        older = [v for v in self.views_of(box) if v.node.id < mark]  # views made in it are refreshed there
        if not isinstance(box, VarRef) and (box.view is not None or older and (
                self.node_is_loop[-1] or any(v.view[0] is OPAQUE for v in older))):
            raise Unsupported("view-write", "in-place write inside a data-dependent branch into an array with "
                                            "views", self.site)
        self.cond_writes[-1].setdefault(("box", id(box)), ("box", box, [(v, v.node) for v in older] or None,
                                                           Sym(box.node, box.kind)))

    def stmt_Raise(self, node, frame):
        err = Unsupported("user-error", "the function raises on these inputs", self.site)
        err.retry = True  # (this call's: eager raises it; a later call with other inputs generates again)
        raise err

    def stmt_Delete(self, node, frame):
        for t in node.targets:
            if isinstance(t, ast.Name) and t.id in frame.locals:
                del frame.locals[t.id]
            elif isinstance(t, ast.Subscript):  # `del history[0]`, `del log[:-100]`, `del cache[key]`
                obj, index = self.eval(t.value, frame), self.eval(t.slice, frame)
                if has_dynamic_slice(index) or _any_abstract(index):
                    raise Unsupported("data-dependent-python", "del of an item the graph computes", self.site)
                if isinstance(obj, ObjRef) and isinstance(obj.obj, (list, dict)) \
                        and builtin_member(obj.obj, "__delitem__") == "method":
                    self.container_method(ContainerMethod(obj, "__delitem__"), [_dict_key(index)], {})
                elif type(obj) in (list, dict):  # a container the function made
                    del obj[_dict_key(index)]
                else:
                    raise Unsupported("unsupported-syntax", f"del of an item of a {type(obj).__name__}", self.site)
            else:
                raise Unsupported("unsupported-syntax", "del of a non-local", self.site)

    def assign(self, target, value, frame):
        if isinstance(target, ast.Name):
            self.store_name(target.id, value, frame)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.iterate(value)
            starred = [i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)]
            if starred:
                s = starred[0]
                n_after = len(target.elts) - s - 1
                parts = items[:s] + [list(items[s:len(items) - n_after])] + items[len(items) - n_after:]
                for t, v in zip(target.elts, parts):
                    self.assign(t.value if isinstance(t, ast.Starred) else t, v, frame)
                return
            if len(items) != len(target.elts):
                raise Unsupported("user-error", f"cannot unpack {len(items)} values into {len(target.elts)}", self.site)
            for t, v in zip(target.elts, items):
                self.assign(t, v, frame)
        elif isinstance(target, ast.Attribute):
            self.setattr(self.eval(target.value, frame), target.attr, value)
        elif isinstance(target, ast.Subscript):
            self.setitem(self.eval(target.value, frame), self.eval(target.slice, frame), value)
        else:
            raise Unsupported("unsupported-syntax", f"assignment to {type(target).__name__}", self.site)

    def store_name(self, name, value, frame):
        if name in frame.global_names:
            self.state_write("global", frame.globals, name, value)
        elif name in frame.nonlocal_names:
            self.store_nonlocal(name, value, frame)
        else:
            frame.locals[name] = value

    def store_nonlocal(self, name, value, frame):
        """`nonlocal name; name = value`: the binding is a local of a frame enclosing a local
        function (written there now, as Python does), or a closure cell of a function defined
        outside the jitted code (read through `cell_overlay` from now on, its contents set at the
        commit, like a global)."""
        enc = frame.enclosing
        while enc is not None:
            if name in enc.global_names:
                break
            if name not in enc.nonlocal_names and name in self.names_of(enc):
                if self.pure_depth:  # a branch restores only its own frame's locals
                    raise Unsupported("unsupported-syntax", "nonlocal write inside a data-dependent branch", self.site)
                enc.locals[name] = value
                return
            enc = enc.enclosing
        cell = frame.cells.get(name)
        if cell is None:
            raise Unsupported("unsupported-syntax", f"nonlocal {name!r} with no binding found", self.site)
        self.state_write("cell", cell, name, value)

    def state_write(self, kind, target, name, value):
        """Write state that is committed with the graph: "setattr" (an attribute of an input
        object, `target` its ObjRef), "global" (`target` the module's dict) or "cell" (a closure
        cell). Later reads see it through an overlay. Inside conditional-node branches the write
        stays in the overlay and `control.cond` merges both branches' values after them; under
        a loop node, `loops.loop` carries it from iteration to iteration."""
        over, key = self.state_overlay(kind, target, name)
        if self.pure_depth:
            self.cond_writes[-1].setdefault(key, (kind, target, name, over.get(key, _MISSING)))
        else:
            self.writes.append((kind, target, name, value))
        over[key] = value

    def state_overlay(self, kind, target, name):  # (not for "box": see control.take_branch_state)
        """(overlay dict, key) where reads of this piece of state look for a value written earlier."""
        if kind == "setattr":
            return self.overlay, (id(target.obj), name)
        if kind == "global":
            return self.global_overlay, (id(target), name)
        return self.cell_overlay, id(target)

    def setattr(self, obj, name, value):
        if isinstance(obj, ObjRef):
            cls = type(obj.obj)
            attr = class_lookup(cls.__mro__, name)
            if isinstance(attr, property):  # its setter, as eager runs it (it writes what it writes)
                if attr.fset is None:
                    raise AttributeError(f"property {name!r} of {cls.__name__!r} object has no setter")
                self.inline(attr.fset, [obj, value], {})
                return
            if cls.__setattr__ not in _GENERIC_SETATTR or (hasattr(type(attr), "__set__")
                                                             and type(attr).__name__ != "member_descriptor"):
                raise Unsupported("unsupported-syntax", f"setting attribute {name!r} of a {cls.__name__} through "
                                                        f"its own __setattr__ or a descriptor", self.site)
            self.class_member(cls, "__setattr__")  # (one given to the class later stores otherwise)
            self.state_write("setattr", obj, name, value)
            return
        if isinstance(obj, (Sym, SymbolicTape)):
            raise Unsupported("unsupported-syntax", f"setting attribute {name!r} on an array", self.site)
        if isinstance(obj, (type, types.FunctionType)) or users_jit_attribute(obj, name, written=True):
            self.shared_setattr(obj, name, value)
            return
        if isinstance(obj, types.ModuleType):
            raise Unsupported("unsupported-syntax", f"setting attribute {name!r} of module {obj.__name__}", self.site)
        if id(obj) in self.new_objects:
            self.made_setattr(obj, name, value)
            return
        raise Unsupported("object-construction", f"setting attribute {name!r} on a {type(obj).__name__} "
                                                 "created inside the function", self.site)

    def setitem(self, obj, index, value):
        if has_dynamic_slice(index):
            if not (isinstance(obj, Sym) and obj.kind == "array") or isinstance(obj, VarRef):
                windows.refuse(self)
            index = window_index(self, obj, index)
        if isinstance(obj, Sym):
            index = self.guarded_index(index)
            if isinstance(obj, VarRef):
                new = F.index_update(Sym(obj.node, "array"), _unwrap_obj(index), _raw(value))
                obj.assign(new)
                self.note_write(obj)
                return
            self.builder.escape(obj, "written in place (`x[i] = ...`)")
            if isinstance(value, ObjRef) and isinstance(value.obj, (list, tuple)):  # `ids[i, :len(s)] = s`
                value = convert(np.asarray, [self.materialize(value, self.site)], {}, self.site)
            new = F.index_update(Sym(obj.node, obj.kind), _unwrap_obj(index), value)
            self.write_box(obj, kept_layout(self, obj, _as_kind(new, obj.kind)))
            return
        if isinstance(obj, ObjRef):
            if self.pure_depth:
                raise Unsupported("unsupported-syntax", "container write inside a data-dependent branch", self.site)
            index = python_index(self.builder, index) if type(obj.obj) in (list, dict, *COUNTS) else index
            if isinstance(index, Sym) and index.kind == "py" and type(obj.obj) in (list, dict, *COUNTS) \
                    and plain_protocol(obj.obj):  # (a key the dict lacks: an assert, eager's re-run adds it)
                return self.table_store(obj, index, value)
            key = _dict_key(index)
            self.resizes(obj.obj, key)
            shadow = self.shadow(obj)
            shadow[key] = value
            self.writes.append(("setitem", obj, key, value))
            return
        if isinstance(obj, (list, dict)):
            index = python_index(self.builder, index) if type(obj) in (list, dict) else index
            if isinstance(index, Sym) and index.kind == "py" and type(obj) in (list, dict):
                return self.table_store(obj, index, value)  # (a list the function made: `hist[int(v)] += 1`)
            obj[_dict_key(index)] = value
            return
        raise Unsupported("unsupported-syntax", f"item assignment on {type(obj).__name__}", self.site)
