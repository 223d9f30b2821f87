"""After the graph: the all-or-nothing commit, deferred effects, and the return value.

`build_outputs` turns what the generator logged (state writes in program order, deferred
print/logging calls, the abstract return value) into one `Outputs` object. Its `finish(values,
slots)` runs only after every node — every assert included — has succeeded: it writes the new
state, runs the deferred effects in order, and rebuilds the return value with the types eager
code would have produced (Tensor, ndarray, NumPy scalar, Python number, lists, dicts ...).
"""
from __future__ import annotations

import collections
import collections.abc

import numpy as np

from .. import ir
from ..ops.indexing import build_index
from ..tensor import Tensor, _next_id, _wrap
from .output_copies import (array_root, copied_value, copy as _copy, copy_lines, own_values, owner as _owner,
                            plan as plan_copies, root as _root, shared_copy as _shared_copy, view as _view)
from .output_specs import new_object as _new_object, op_line as _op_line, shared_tokens as _shared_tokens, view_base
from .support import _any_of, input_view, made_fields
from .values import OPAQUE, CACHED, DeferredStr, ObjRef, Sym, Unsupported, VarRef, VarSnapshot, stale_error
from .windows import WINDOW

_MUTABLE = (set, bytearray, collections.deque, collections.abc.Iterator)


class Outputs:
    def __init__(self):
        self.nodes: list = []
        self._index: dict = {}
        self.commits: list = []  # (kind, slot, value index, copy); kind "index": writes, not an index
        # (passes/indexed_commits.py: ((template, (value index, operand indices...)), ...))
        self.ops: list = []  # setattr/setitem/call/global/cell with value specs, in program order
        self.effects: list = []
        self.result = None
        self.sink_count: dict = {}
        self.copied: list = []  # output positions copied before the commit (plan_copies)
        self.viewed: dict = {}  # ... of those, the ones taken as another view of the same array: {position:
        # (the first position of its node, decided on the run's value)} (output_copies._apart)
        self.groups: list = []  # ... of those, one new array and its views (plan_copies, shared_copy)
        self.made: list = []  # per output position: a new array in eager code (set before the passes)
        self.bases: list = []  # per output position: output_specs.view_base (set before the passes)
        self.made_from: list = []  # per output position: the id of its array's node (before the passes)
        self._built: set = set()  # output positions a spec builds (not only committed)
        self._tokens: dict = {}  # id(object) -> token: one Tensor, list or dict per eager one
        self.escape = lambda v, what: None  # the builder's check that v's type cannot show (builder.escape)
        self.new_objects: dict = {}  # id -> dataclass or plain object the function made (the generator's)
        self._open: set = set()  # ids of the lists, dicts and objects `spec` is building

    def node_index(self, node):
        i = self._index.get(node.id)
        if i is None:
            i = self._index[node.id] = len(self.nodes)
            self.nodes.append(node)
        self.sink_count[node.id] = self.sink_count.get(node.id, 0) + 1
        return i

    # ------------------------------------------------------------------ specs
    def spec(self, v, views=True):
        """How `finish` builds v. `views`: a view of an input array (`buf[1:]`) is taken from the
        input after the commit, sharing its memory as eager's view does (False for a deferred
        print's arguments, which are built before the commit)."""
        if isinstance(v, VarSnapshot):
            return ("varsnap", self.spec(v.value, views), v.var.name, v.var.trainable)
        if isinstance(v, VarRef):
            return ("slot", v.slot)
        if isinstance(v, Sym):
            if v.kind == "stale":
                raise stale_error(v, "returning a view whose base was written in place", "")
            if v.view is not None and v.view[1] is CACHED and v.node.op == ir.CONST:
                return ("const", v.node.params["value"])  # the cache's own array, as eager's call returns it
            if views and v.view is not None and v.view[1] is WINDOW:  # (windows.py)
                raise Unsupported("view-write", "returning or storing a slice whose bounds the graph computes "
                                                "(eager's is a view of its array, the graph's a copy)", "")
            self.escape(v, "returned, stored or printed")
            if v.origin is not None and v.kind in ("array", "tensor"):
                return ("slot", v.origin)
            view = input_view(v) if views else None
            if view is not None:  # one view object per eager one (`st["y"] = x[:]; return y`)
                return self._view_spec(view, v)
            i = self.node_index(v.node)
            self._built.add(i)
            return ("node", i, v.kind, self._token(v) if v.kind == "tensor" else None)
        if isinstance(v, ObjRef):
            return ("slot", v.slot.index)
        if isinstance(v, DeferredStr):
            parts = [p if isinstance(p, str) else (self.spec(p[0], views), p[1], p[2]) for p in v.parts]
            return ("str", parts)
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return ("namedtuple", type(v), [self.spec(x, views) for x in v])
        if isinstance(v, tuple):
            return ("tuple", [self.spec(x, views) for x in v])
        if isinstance(v, (list, dict)) or id(v) in self.new_objects:
            if id(v) in self._open:  # (`box["self"] = box`, a node's parent pointing back at it)
                raise Unsupported("object-construction", f"an object made in the function ({type(v).__name__}) that "
                                                         "contains itself leaves it", "")
            self._open.add(id(v))
            try:
                return self._made_spec(v, views)
            finally:
                self._open.discard(id(v))
        if isinstance(v, (Tensor, np.ndarray)):
            return ("fresh", v)
        if type(v).__name__ in ("SymbolicTape", "BoundMethod", "ContainerMethod", "LocalFunction"):
            raise Unsupported("unsupported-syntax", f"a {type(v).__name__} escapes the function", "")
        if isinstance(v, _MUTABLE):
            # made by the call (an iterator over graph values, a set): a constant would hand every
            # call the same object, and an iterator's items would be computed outside the graph
            raise Unsupported("unsupported-syntax", f"a {type(v).__name__} object made in the function "
                                                    "leaves it (returned or stored)", "")
        if isinstance(v, BaseException):  # (`except KeyError as e: log.append(e)`: the one generation met)
            raise Unsupported("try", "an exception object leaves the function (eager's is a new one each call)", "")
        if made_fields(v) is not None and _any_of(v, (Sym, ObjRef, DeferredStr)):  # (library code's object)
            raise Unsupported("object-construction", f"a {type(v).__name__} holding graph values, made outside the "
                                                     "function's code, leaves it", "")
        return ("const", v)

    def _view_spec(self, view, v):
        """An `input_view` spec of v, its index items the graph computes (`W[k]` with `k` an int
        from the inputs or computed) as the graph's values: ("dynindex", base, item specs, token).
        Each level is one object per eager one (the token of its value: `a =
        np.ascontiguousarray(x[::2]); return a, a[0]`, where a copied and a[0] is a view of a)."""
        if view[0] == "slot":
            return view
        made_from = v.view[1] if v.view[0] is OPAQUE else v.view[0]
        base = self._view_spec(view[1], made_from) if view[1][0] != "slot" else view[1]
        items = view[2] if isinstance(view[2], tuple) else (view[2],)
        if view[0] == "index" and any(isinstance(i, Sym) for i in items):
            return ("dynindex", base, [self.spec(i) if isinstance(i, Sym) else ("const", i) for i in items],
                    self._token(v))
        return (view[0], base, view[2], self._token(v))

    def _made_spec(self, v, views):
        """A list, dict or object (a dataclass's, calls.construct's) the function made: one per
        eager one. An object made in the function is no key (its id would be the generator's)."""
        if isinstance(v, list):
            return ("list", [self.spec(x, views) for x in v], self._token(v))
        if isinstance(v, dict):
            return ("dict", [(self.key(k), self.spec(x, views)) for k, x in v.items()], self._token(v))
        fields = [(k, self.spec(x, views)) for k, x in made_fields(v).items()]
        return ("object", type(v), fields, self._token(v))

    def key(self, k):
        """A dict key or set element the commit puts in as it is: not an object the function
        made (eager's is a new one each call)."""
        if id(k) in self.new_objects or isinstance(k, tuple) and any(id(i) in self.new_objects for i in k):
            raise Unsupported("object-construction", f"an object made in the function ({type(k).__name__}) is a "
                                                     "key of a dict that leaves it", "")
        return k

    def _token(self, v) -> int:
        """The same number for every appearance of one object made in the function (a Tensor,
        list or dict): `finish` builds it once (`return h, h`; `st["box"] = box; return box`)."""
        return self._tokens.setdefault(id(v), len(self._tokens))

    def plan_copies(self):
        """Which positions the commit copies (output_copies.plan), and whether a committed
        Variable value must own its buffer (eager's assign copies). Rerun after passes, which may
        have replaced output nodes: distinct arrays in eager code stay distinct, views of one stay
        views of one, and nothing returned is the caller's input unless eager returns it."""
        if not self.made:  # the first call, before the passes: what eager code makes anew
            self.made = [array_root(node).op != ir.INPUT for node in self.nodes]
            self.bases = [view_base(node) for node in self.nodes]  # (two views of one array: two views)
            self.made_from = [array_root(node).id for node in self.nodes]  # (the array eager keeps it in)
        copied, self.viewed, self.groups = plan_copies(self)
        self.copied = sorted(copied & self._built)
        seen = collections.Counter(node.id for node in self.nodes)
        # arrays another output is a view of (`u = c[1:3]; c.assign(c); return u`): eager's assign
        # copied, so the Variable's new array is not the one the view shows
        viewed = {_root(n).id for n in self.nodes if _root(n) is not n}
        fixed = []
        for kind, slot, i, _old in self.commits:
            node = self.nodes[i]
            copy = kind == "var" and (node.op in ir.ALIASING_OPS or self.sink_count.get(node.id, 0) > 1
                                      or seen.get(node.id, 0) > 1 or node.id in viewed)
            fixed.append((kind, slot, i, copy))
        self.commits = fixed

    # ------------------------------------------------------------------ runtime
    def build(self, spec, values, slots, made):
        """`made`: the Tensors, lists and dicts built so far in this finish, by token."""
        tag = spec[0]
        if tag == "node":
            _, i, kind, token = spec
            if kind != "tensor":
                return values[i]
            t = made.get(token)
            if t is None:
                t = made[token] = _wrap(values[i])
            return t
        if tag in ("list", "dict"):
            obj = made.get(spec[2])
            if obj is None:
                obj = made[spec[2]] = [] if tag == "list" else {}
                if tag == "list":
                    obj.extend(self.build(s, values, slots, made) for s in spec[1])
                else:
                    obj.update((k, self.build(s, values, slots, made)) for k, s in spec[1])
            return obj
        if tag == "slot":
            return slots[spec[1]]
        if tag in ("index", "viewop", "dynindex"):
            view = made.get(spec[3])
            if view is None:
                base = self.build(spec[1], values, slots, made)
                if tag == "dynindex":
                    view = base[tuple(self.build(s, values, slots, made) for s in spec[2])]
                else:
                    view = base[spec[2]] if tag == "index" else spec[2](base)
                if spec[3] is not None:
                    made[spec[3]] = view
            return view
        if tag == "const":
            return spec[1]
        if tag == "tuple":
            return tuple(self.build(s, values, slots, made) for s in spec[1])
        if tag == "namedtuple":
            return spec[1](*[self.build(s, values, slots, made) for s in spec[2]])
        if tag == "object":
            obj = made.get(spec[3])
            if obj is None:
                obj = made[spec[3]] = _new_object(spec[1], [k for k, _ in spec[2]],
                                                  [self.build(s, values, slots, made) for _, s in spec[2]])
            return obj
        if tag == "str":
            out = []
            for p in spec[1]:
                if isinstance(p, str):
                    out.append(p)
                else:
                    val = self.build(p[0], values, slots, made)
                    if p[1] == "%":  # a printf-style directive (effects.percent_format)
                        out.append(p[2] % (val,))
                        continue
                    conv = {"": lambda x: x, "s": str, "r": repr, "a": ascii}[p[1]]
                    out.append(format(conv(val), p[2]))
            return "".join(out)
        if tag == "varsnap":
            from ..tensor import Variable

            return Variable(self.build(spec[1], values, slots, made), name=spec[2], trainable=spec[3])
        if tag == "fresh":
            v = spec[1]
            return v.copy() if isinstance(v, np.ndarray) else v
        raise AssertionError(tag)

    def _own(self, values, slots):
        """values with the `copied` positions copied: before the commit, which may write an
        input array in place (the effects' arguments, built earlier, get their own copies)."""
        return own_values(self, values, slots) if self.copied else values

    def prepare_effects(self, values, slots, made=None, owned=False):
        """Build (and, for print, format) every deferred effect's arguments *before* the commit,
        so that an exception while formatting leaves state untouched (the call then re-runs
        eagerly and raises where eager code raises)."""
        prepared = []
        made = {} if made is None else made
        if self.effects and not owned:  # (`owned`: finish copied them already)
            values = self._own(values, slots)
        for fn, args, kwargs in self.effects:
            built = [self.build(a, values, slots, made) for a in args]
            kw = {k: self.build(a, values, slots, made) for k, a in kwargs.items()}
            if fn is print:
                built = [str(a) for a in built]
            prepared.append((fn, built, kw))
        return prepared

    def finish(self, values, slots, prepared=None):
        """Commit every state write, run deferred effects, return the function's result."""
        made: dict = {}
        values = self._own(values, slots)
        if prepared is None:
            prepared = self.prepare_effects(values, slots, made, owned=True)
        for kind, slot, i, copy in self.commits:
            target = slots[slot]
            if kind == "index":  # writes at windows (passes/indexed_commits.py)
                _write_at(target, i, values)
                continue
            val = values[i]
            if kind == "var":
                target._data = _array(val.copy() if copy else val)
            elif kind == "tensor":
                target._data = val
                target._tid = _next_id()
            else:
                np.copyto(target, val)
        for op in self.ops:
            tag = op[0]
            if tag == "setattr":
                setattr(slots[op[1]], op[2], self.build(op[3], values, slots, made))
            elif tag == "setitem":
                slots[op[1]][op[2]] = self.build(op[3], values, slots, made)
            elif tag == "call":
                args = [self.build(a, values, slots, made) for a in op[3]]
                kwargs = {k: self.build(a, values, slots, made) for k, a in op[4].items()}
                getattr(slots[op[1]], op[2])(*args, **kwargs)
            elif tag == "global":
                op[1][op[2]] = self.build(op[3], values, slots, made)
            elif tag == "cell":
                op[1].cell_contents = self.build(op[3], values, slots, made)
        for fn, args, kwargs in prepared:
            fn(*args, **kwargs)
        return self.build(self.result, values, slots, made)


    # ------------------------------------------------------------------ compiled runtime
    def compile_finish(self):
        """`finish` as one generated function (no spec walking, no loops), or None when the
        outputs need the general path: deferred effects (printing), or a formatted string or
        Variable snapshot in the result or a written value. Same commits, the same attribute,
        item, global and cell writes and container calls in the same order, same result types."""
        if self.effects:
            return None
        consts: list = []
        tensors: dict = {}  # token -> output position: each Tensor built once (`_t{token}`)
        shared = _shared_tokens([op[3] for op in self.ops if op[0] in ("setattr", "setitem", "global", "cell")]
                                + [a for op in self.ops if op[0] == "call" for a in (*op[3], *op[4].values())]
                                + [self.result])
        containers: list = []  # `_c{token} = [...]`: a list or dict that appears twice, built once

        def const(v):
            consts.append(v)
            return f"C[{len(consts) - 1}]"

        def expr(spec):
            tag = spec[0]
            if tag == "node":
                _, i, kind, token = spec
                if kind == "tensor":
                    tensors[token] = i
                    return f"_t{token}"
                return f"_v{i}" if i in self.copied else f"values[{i}]"
            if tag == "slot":
                return f"slots[{spec[1]}]"
            if tag in ("index", "viewop", "dynindex") and spec[3] in shared:
                name = f"_c{spec[3]}"
                if shared[spec[3]] is None:
                    shared[spec[3]] = name
                    containers.append(f"{name} = {expr(spec[:3] + (None,))}")
                return name
            if tag == "index":
                return f"{expr(spec[1])}[{const(spec[2])}]"
            if tag == "dynindex":
                return f"{expr(spec[1])}[{''.join(expr(s) + ', ' for s in spec[2])}]"
            if tag == "viewop":
                return f"{const(spec[2])}({expr(spec[1])})"
            if tag == "const":
                return const(spec[1])
            if tag in ("list", "dict", "object") and spec[-1] in shared:  # (its token: the last item)
                name = f"_c{spec[-1]}"
                if shared[spec[-1]] is None:
                    shared[spec[-1]] = name
                    containers.append(f"{name} = {expr(spec[:-1] + (None,))}")
                return name
            if tag in ("list", "tuple"):
                items = ", ".join(expr(s) for s in spec[1])
                return f"[{items}]" if tag == "list" else f"({items}{',' if len(spec[1]) == 1 else ''})"
            if tag == "namedtuple":
                return f"{const(spec[1])}({', '.join(expr(s) for s in spec[2])})"
            if tag == "object":
                names = tuple(k for k, _ in spec[2])
                return f"_new_object({const(spec[1])}, {const(names)}, ({''.join(expr(s) + ', ' for _, s in spec[2])}))"
            if tag == "dict":
                return "{" + ", ".join(f"{const(k)}: {expr(s)}" for k, s in spec[1]) + "}"
            if tag == "fresh" and not isinstance(spec[1], np.ndarray):
                return const(spec[1])
            raise LookupError(tag)  # str, varsnap, fresh arrays: the general path

        lines = []
        for kind, slot, i, copy in self.commits:
            if kind == "index":
                lines.append(f"_write_at(slots[{slot}], {const(i)}, values)")
            elif kind == "var":  # a 0-d result may be a NumPy scalar: a Variable holds an array
                scalar = self.nodes[i].aval is not None and len(self.nodes[i].aval[0]) == 0
                value = f"values[{i}]{'.copy()' if copy else ''}"
                lines.append(f"slots[{slot}]._data = {f'_array({value})' if scalar else value}")
            elif kind == "tensor":
                lines += [f"slots[{slot}]._data = values[{i}]", f"slots[{slot}]._tid = _next_id()"]
            else:
                lines.append(f"_copyto(slots[{slot}], values[{i}])")
        try:
            tail = [_op_line(op, expr, const) for op in self.ops] + [f"return {expr(self.result)}"]
        except LookupError:
            return None
        # copies before the commit, which may write an input array in place; objects that appear
        # twice after it, as the general path builds them: a view of an input made after the
        # write (a copying reshape of it holds the written values)
        lines[:0] = copy_lines(self, const) + [f"_t{token} = _wrap({copied_value(self, i)})"
                                               for token, i in tensors.items()]
        lines += containers + tail
        src = "def finish(values, slots):\n" + "".join(f"    {line}\n" for line in lines)
        env = {"C": consts, "_wrap": _wrap, "_array": _array, "_copy": _copy, "_view": _view, "_next_id": _next_id,
               "_shared_copy": _shared_copy, "_owner": _owner,
               "_copyto": np.copyto, "_new_object": _new_object, "_write_at": _write_at}
        exec(compile(src, "<janus_like finish>", "exec"), env)
        finish = env["finish"]
        finish.parts = (lines, env)  # for executor/fused.py
        return finish


def _array(val):
    """A Variable's value as eager's `assign` leaves it: an array, never a NumPy scalar (a 0-d
    array's arithmetic gives one)."""
    return np.asarray(val) if isinstance(val, np.generic) else val


def _write_at(target, writes, values):
    """The commit of an array written at windows: `target[index] = value` for each write, in
    order (`writes`: (index template, (value position, index operand positions...)))."""
    for template, (v, *operands) in writes:
        target[build_index(template, [values[k] for k in operands])] = values[v]


def build_outputs(gen, result) -> Outputs:
    out = Outputs()
    out.escape = gen.builder.escape
    out.new_objects = gen.new_objects
    seen_boxes = {}
    for w in gen.writes:
        if w[0] == "box":
            seen_boxes[id(w[1])] = w[1]
    for value, _slot in gen.memo.values():  # Variables assigned through their own methods
        if isinstance(value, VarRef) and value.dirty:
            seen_boxes.setdefault(id(value), value)
    for box in seen_boxes.values():
        if isinstance(box, VarRef):
            out.commits.append(("var", box.slot, out.node_index(box.node), False))
        elif box.origin is not None and box.dirty:
            kind = "tensor" if box.kind == "tensor" else "array"
            out.commits.append((kind, box.origin, out.node_index(box.node), False))
    for w in gen.writes:
        tag = w[0]
        if tag == "setattr":
            out.ops.append(("setattr", w[1].slot.index, w[2], out.spec(w[3])))
        elif tag == "setitem":
            out.ops.append(("setitem", w[1].slot.index, out.key(w[2]), out.spec(w[3])))
        elif tag == "call":
            out.ops.append(("call", w[1].slot.index, w[2], [out.spec(a) for a in w[3]],
                            {k: out.spec(a) for k, a in w[4].items()}))
        elif tag in ("global", "cell"):
            out.ops.append((tag, w[1], w[2], out.spec(w[3])))
    for fn, args, kwargs, _site in gen.effects:
        out.effects.append((fn, [out.spec(a, False) for a in args], {k: out.spec(a, False) for k, a in kwargs.items()}))
    out.result = out.spec(result)
    check_merged_identity(out, gen.builder.merged_from)
    out.plan_copies()
    out.escape, out.new_objects = Outputs().escape, {}  # (they held the generator, and so the call's inputs)
    return out


def check_merged_identity(out, merged_from):
    """A conditional's result that is, by the outcome, eager's object from before the branch or
    a new one, where the graph's result is always its own object: `x[i] += 1; return clipped(x,
    c)` (eager returns the caller's `x` after one outcome; an input's Tensor, or a view of a
    written input, alike), or `box = {"a": h}; if big: h = h * s; return h, box` of a Tensor h
    (eager's h and box["a"] are one Tensor after one outcome; an array's object passes through
    the node). Where such a result leaves the call (and, for the second, a value it merges
    too), Unsupported naming the branch: the JIT makes one graph per outcome there instead."""
    built = {out.nodes[i].id for i in out._built}
    for node_id, (branch, originals, of_input) in merged_from.items():
        if node_id in built and (of_input or any(o in built for o in originals)):
            exc = Unsupported("data-dependent-python", "a value a branch (or a loop that may run zero times) may leave "
                                                       "as it was, or replace, leaves the call (one object or another "
                                                       "by the outcome, where the graph's is always its own)", "")
            exc.branch = branch
            raise exc
