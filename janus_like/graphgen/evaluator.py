"""The graph generator proper: a partial evaluator over the function's AST.

It walks the source (not a trace) with abstract values: Python values known at generation time
stay Python values (guarded by the input program), arrays become graph nodes, and every
speculation — a branch outcome, a trip count, a scalar's value, a callee's identity — becomes a
guard or an assert node. User functions and methods are inlined (recursion included, guarded by
the structure it walks); writes to state are logged for the all-or-nothing commit.

Anything it cannot convert raises `Unsupported` with a named reason and the source line; the
JIT then keeps that signature eager.
"""
from __future__ import annotations

import random
import types

import numpy as np

from .. import backend, ir
from ..executor import located
from ..ops.registry import set_builder
from ..profiler.profile import member_key
from ..tensor import Tensor, Variable
from .builder import GraphBuilder
from .attributes import AttributesMixin
from .callbacks import CallbacksMixin
from .comparisons import ComparisonsMixin
from .calls import CallsMixin
from .numpy_calls import NumpyCallsMixin
from .effects import EffectsMixin
from .containers import ContainersMixin
from .draws import DrawsMixin
from .generators import GeneratorLoopsMixin
from .blocks import BlocksMixin
from .control import ControlFlowMixin
from .expressions import ExpressionsMixin
from .comprehensions import ComprehensionsMixin
from .loops import LoopMixin
from .patterns import PatternsMixin
from .recursion import RecursionMixin
from .inputs import InputProgram, relax_text
from .statements import StatementsMixin
from .support import MAX_UNROLL, _is_immutable, _is_jit, keyword_only, split_call
from .values import ObjRef, Sym, Unsupported, VarRef  # Unsupported is re-exported


class GeneratedGraph:
    """What the generator hands the executor: the IR plus how to feed it and commit its effects."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _of_state(method) -> bool:
    """A built-in method bound to an object whose contents may change between calls (a dict, a
    list, an array): not to a module, a class, an immutable value or a random generator (their
    calls are handled as such, calls.py)."""
    owner = method.__self__
    return owner is not None and not isinstance(owner, (types.ModuleType, type, random.Random, np.random.RandomState,
                                                         np.random.Generator)) and not _is_immutable(owner)


class Generator(CallsMixin, EffectsMixin, DrawsMixin, CallbacksMixin, ControlFlowMixin, BlocksMixin, LoopMixin,
                StatementsMixin, ExpressionsMixin, ComprehensionsMixin, ContainersMixin, RecursionMixin,
                GeneratorLoopsMixin, AttributesMixin, ComparisonsMixin, NumpyCallsMixin, PatternsMixin):
    """Partial evaluator of one function call's AST: `generate(args)` -> GeneratedGraph.

    The methods live in mixins by topic: calls, control flow, statements, expressions, input
    containers; this class holds the state they share and the input/output ends."""

    def __init__(self, fn, name, profile=None, relaxed=frozenset(), max_unroll=MAX_UNROLL, unknown_dims=None,
                 reassociate=False, split=None, regions=False, sizes=None, static=frozenset()):
        self.fn = fn
        # ints kept as values though they vary (relax texts): one graph per value (jit/generation.py)
        self.static = static
        self.dynamic_ints: list = []  # ints read as graph inputs (relax texts), in the order read
        self.regions = regions  # stage self-recursive callees as recursion regions (recursion.py)
        self.region_misses: list[str] = []  # why a recursive callee was inlined instead (for explain)
        # branches generated once per outcome (control.stmt_If): site key -> the outcome this
        # graph takes, or None for the one the profile saw more often; `forced` records the choices
        self.split = dict(split or {})
        self.forced: dict = {}
        self.unknown_dims = unknown_dims or {}  # argument index -> axes of unknown size
        self.sizes = sizes  # masks' first stand-in count (masks.py), or None: x[mask] refused
        self.name = name
        self.profile = profile
        self.relaxed = relaxed
        self.max_unroll = max_unroll
        self.builder = GraphBuilder(name)
        self.builder.graph.python_floats = ir.FLOATS_RELAX not in relaxed
        self.builder.relaxed = relaxed  # (the power types relaxed: py_numbers.typed_pow)
        self.builder.reassociate = reassociate  # generated gradients may sum in another order too
        self.builder.branch_write = self.branch_box_write  # VarRef.assign inside a branch
        self.builder.trainable = lambda var: self.value_attribute(var, "trainable", None)  # (its value guarded)
        self.builder.key_identity = lambda ref: self.prog.check_identity(
            ref.slot if isinstance(ref, ObjRef) else self.prog.slots[ref.slot], self.site)
        self.prog = InputProgram()
        self.memo: dict = {}  # id(object) -> (abstract value, slot)
        self.slot_values: dict = {}  # slot index -> abstract value
        self.overlay: dict = {}  # (id(obj), attr) -> value written by the function
        self.shadows: dict = {}  # id(container) -> list/dict of abstract values (after a mutation)
        # ids of input containers a class's own `__iter__` read (`for u, v in G.edges()`: the
        # adjacency dicts), whose items were taken before the loop's body ran; while `collecting`,
        # such an iteration is being inlined (containers.materialize, `resizes`)
        self.iterated: set = set()
        self.materialized: list = []  # every input container read whole, in order (loop_sources.py)
        self.collecting = 0
        self.appends: dict = {}  # id(list) -> (ObjRef, values appended before anything read the list)
        self.written_containers: set = set()  # ids of input containers the function writes (containers.shadow)
        self.global_overlay: dict = {}
        # per cond/loop node being built: {overlay key: (kind, target, name, value before)}; for an
        # array written in place ("box"), `name` holds the views made before a conditional node
        # with their nodes then (statements.branch_box_write), put back after each branch
        self.cond_writes: list = []
        self.node_is_loop: list = []  # per cond/loop node being built: whether it is a loop node
        self.cell_overlay: dict = {}  # id(closure cell) -> value written by `nonlocal` (statements.py)
        self.writes: list = []  # commit log, program order
        self.new_objects: dict = {}  # id -> dataclass object the function made (calls.py; outputs.spec rebuilds it)
        self.effects: list = []  # deferred print/logging calls
        self.mutable_slots: list = []
        self.array_slots: list = []  # the slots of input arrays and of Tensors' arrays
        self.input_nodes: list = []
        self.depth = 0
        self.unrolled = 0
        self.branch_frames: list = []  # frames whose own `return` would leave a cond/loop block
        self.loop_depths: list = []  # per unrolled loop being run: the cond/loop-node depth it runs at
        self.branch_marks: list = []  # per cond/loop node being built: the first node id made inside it
        self.frames: list = []  # the frames of the functions being generated, outermost first
        self.pick_key = None  # the site of the min()/max()/np.bincount call being generated (calls.call)
        self.split_picks: set = set()  # the split min()/max() sites met so far (py_numbers.speculate_pick)
        self.try_sites: list = []  # `try` statements run as if their bodies raise nothing (control.stmt_Try)
        self.armed_loops: list = []  # `for` loops over a user generator, waiting for its call (generators.py)
        self.yield_loops: dict = {}  # id of a generator's frame -> the loop its yields go to
        self.comprehensions = 0  # comprehensions being evaluated (a lambda there is not supported)
        self.site = ""
        self.caller = ("", 0, None)  # (file, line, function) of the statement being generated
        self._unknown = ()

    def generate(self, args):
        old = set_builder(self.builder)
        self.builder.polymorphic = self.builder.graph.polymorphic = bool(self.unknown_dims) or self.sizes is not None
        self.builder.sizes = self.sizes
        self.builder.sizes_only = not self.unknown_dims
        self.builder.graph.origin = located.origin_of(self.fn)  # (the plan reports the user's lines)
        try:
            arg_values = []
            self.prog.check_arity(len(args))
            for i, a in enumerate(args):
                slot, _ = self.prog.root_arg(i, a)
                self._unknown = self.unknown_dims.get(i, ())
                arg_values.append(self.classify(slot, f"argument {i}", ("arg", i)))
                self._unknown = ()
            pos, kw = split_call(keyword_only(self.fn), arg_values)  # (keyword-only parameters: the last values)
            result = self.call(self.fn, list(pos), kw)
        except Unsupported as exc:
            exc.forced = dict(self.forced)  # the split branches' outcomes this graph was taking
            exc.dynamic_ints = self.dynamic_ints
            raise
        except RecursionError as exc:  # a recursion whose end the graph computes (a depth read as an input)
            exc.dynamic_ints = self.dynamic_ints
            raise
        except Exception as exc:  # the user's code raising on a split outcome the call may not take
            if self.forced:
                try:
                    exc.forced = dict(self.forced)
                except AttributeError:  # (an exception type without attributes)
                    pass
            raise
        finally:
            set_builder(old)
        try:
            return self.finish(result)
        finally:
            self.release()

    def release(self):
        """Let go of the call's objects the generation read: the builder holds callbacks of this
        generator, a cycle the garbage collector frees only when it next runs, and until then the
        call's arguments (a batch, an object with a `__del__`) would stay alive."""
        for held in (self.memo, self.slot_values, self.overlay, self.shadows, self.appends, self.global_overlay,
                     self.cell_overlay, self.new_objects):
            held.clear()
        self.materialized.clear()
        self.writes.clear()
        self.effects.clear()

    def classify(self, slot, site, ast_key=None):
        """Abstract value of a freshly read slot; adds its guards."""
        if slot.index in self.slot_values:
            return self.slot_values[slot.index]
        v = slot.value
        prog = self.prog
        mutable = isinstance(v, (Tensor, np.ndarray, list, dict)) or not _is_immutable(v)
        if mutable and not isinstance(v, (types.FunctionType, types.ModuleType, type, types.BuiltinFunctionType)):
            hit = self.memo.get(id(v))
            if hit is not None and hit[1].value is v:
                prog.check_alias(slot, hit[1], site)
                self.slot_values[slot.index] = hit[0]
                return hit[0]
        if isinstance(v, Tensor):
            prog.check_type(slot, site)
            data, _ = prog.data(slot)
            prog.check_array(data, site, self._unknown)
            node = self.input_node(data, v._data)
            self.array_slots.append(data)
            out = VarRef(node, slot.index, v) if isinstance(v, Variable) else Sym(node, "tensor", origin=slot.index)
            self.mutable_slots += [slot, data]  # (its buffer may be another input's array: `v.numpy()`)
        elif type(v) is np.ndarray or backend.device_of(v) == "gpu":  # a NumPy or CuPy array
            prog.check_type(slot, site)
            prog.check_array(slot, site, self._unknown)
            out = Sym(self.input_node(slot, v), "array", origin=slot.index)
            self.mutable_slots.append(slot)
            self.array_slots.append(slot)
        elif v is None or type(v) in (bool, str, bytes, complex) or (type(v) in (int, float) and not self._dynamic(slot, ast_key)):
            prog.check_value(slot, site)
            out = v
        elif type(v) in (int, float):
            prog.check_type(slot, site)
            out = Sym(self.input_node(slot, np.asarray(v), python_number=True), "py")
            if type(v) is int:
                self.dynamic_ints.append(relax_text(slot))
        elif isinstance(v, np.generic):
            if self._dynamic(slot, ast_key):
                if isinstance(v, np.integer):
                    self.dynamic_ints.append(relax_text(slot))
                prog.check_type(slot, site)
                out = Sym(self.input_node(slot, np.asarray(v), numpy_scalar=True), "array")
            else:
                prog.check_value(slot, site)
                out = v
        elif isinstance(v, types.BuiltinMethodType) and _of_state(v):
            # `st["get"] = d.get`, networkx's `view._nodes_nbrs = adj.items`: the method of that
            # object as it stands at the call (a call of the held method ran at generation: a constant)
            prog.check_identity(slot, site)
            owner = self.classify(prog.attr(slot, "__self__", v.__self__)[0], site, ast_key)
            out = self.getattr(owner, v.__name__)
        elif isinstance(v, (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type, np.ufunc,
                            types.MethodType, np.dtype)) or _is_jit(v):
            prog.check_identity(slot, site)
            out = v
        else:
            prog.check_type(slot, site)
            out = ObjRef(v, slot, slot.text)
        if mutable:
            self.memo[id(v)] = (out, slot)
        self.slot_values[slot.index] = out
        return out

    def pinned(self, obj):
        """A concrete object reached through a guarded constant (a bound method's `self`)."""
        slot, _ = self.prog.root_const(obj, f"<{type(obj).__name__} object>")
        return self.classify(slot, self.site)

    def bind_args(self, frame, fn_ast, func, args, kwargs):
        a = fn_ast.args
        params = [p.arg for p in a.posonlyargs + a.args]
        defaults = func.__defaults__ or ()
        bound = {}
        for name, value in zip(params, args):
            bound[name] = value
        extra = list(args[len(params):])
        if extra:
            if not a.vararg:
                raise Unsupported("user-error", f"{func.__qualname__}() got too many positional arguments", self.site)
            bound[a.vararg.arg] = tuple(extra)
        elif a.vararg:
            bound[a.vararg.arg] = ()
        kw_left = dict(kwargs)
        for name in params + [k.arg for k in a.kwonlyargs]:
            if name in kw_left:
                bound[name] = kw_left.pop(name)
        if kw_left:
            if not a.kwarg:
                raise Unsupported("user-error", f"unexpected keyword arguments {sorted(kw_left)}", self.site)
            bound[a.kwarg.arg] = kw_left
        elif a.kwarg:
            bound[a.kwarg.arg] = {}
        for i, name in enumerate(params[len(params) - len(defaults):]):
            if name not in bound:
                bound[name] = self.default_value(func, "__defaults__", i, defaults[i])
        kwd = func.__kwdefaults__ or {}
        for k in a.kwonlyargs:
            if k.arg not in bound:
                if k.arg not in kwd:
                    raise Unsupported("user-error", f"missing keyword argument {k.arg}", self.site)
                bound[k.arg] = self.default_value(func, "__kwdefaults__", k.arg, kwd[k.arg])
        for name in params:
            if name not in bound:
                raise Unsupported("user-error", f"{func.__qualname__}() missing argument {name!r}", self.site)
        frame.locals.update(bound)

    def _dynamic(self, slot, ast_key):
        if relax_text(slot) in self.static:
            return False
        if ("value", relax_text(slot)) in self.relaxed:
            return True
        member = None  # the object's own member, profiled by object: its values decide, not the site's
        if self.profile is not None and slot.parent is not None and slot.step[0] in ("item", "attr"):
            member = member_key(slot.parent.value, slot.step)
            if self.profile.varies(member):
                return True
            if not self.profile.seen_on_calls(member):
                member = None
        if (type(slot.value) is float or isinstance(slot.value, np.floating)) and (
                self.frames and ast_key in self.frames[-1].written_reads or (
                slot.parent is not None and slot.step[0] == "item"
                and id(slot.parent.value) in self.written_containers)):
            return True  # a float the function assigns (there, or into this container) may change on any call
        # (a site reading `self.stride` of layers with strides 2 and 1 varies; each layer's does not,
        # while a tree node's `word`, a new node each call, is decided by the site)
        return self.profile is not None and ast_key is not None and member is None and self.profile.varies(ast_key)

    def input_node(self, slot, array, python_number=False, numpy_scalar=False):
        arr = array if hasattr(array, "shape") and hasattr(array, "dtype") else np.asarray(array)
        params = {"slot": slot.index, "name": slot.text}
        if python_number:  # the run-time value is an int or float, not a NumPy value (ir.numpy_typed)
            params["python"] = True
        if numpy_scalar:  # np.float64, not a 0-d ndarray (values.numpy_scalar)
            params["scalar"] = True
        if backend.device_of(arr) == "gpu":
            params["device"] = "gpu"  # see executor/placement.py
        node = ir.Node(ir.INPUT, (), params, (tuple(arr.shape), np.dtype(arr.dtype)))
        self.input_nodes.append(node)
        return node

    def object_id(self, func, v):
        """`id(v)` or `hash(v)` (func) where eager's answer is an object's (an optimizer's state
        keyed by `id(p)`): an input object's, Variable's or array's, its identity guarded (a call
        passing another object fails the guard). Refused for a value the function makes (eager's
        is a new object each call) and for the id of a Python number or string (which object
        holds it is not guarded); a hash of a number or string is its value's."""
        what = f"{func.__name__}() of"
        if isinstance(v, (ObjRef, VarRef)):
            obj = v.obj if isinstance(v, ObjRef) else v.var
            if func is hash and type(obj).__hash__ is not object.__hash__:
                raise Unsupported("data-dependent-python", f"{what} a {type(obj).__name__}, whose class has its own "
                                                           "__hash__", self.site)
            self.builder.key_identity(v)
            return func(obj)
        if isinstance(v, Sym):
            if v.kind == "array" and v.origin is not None and func is id:  # (an array's hash: eager's TypeError)
                slot = self.prog.slots[v.origin]
                self.prog.check_identity(slot, self.site)
                return id(slot.value)
            raise Unsupported("data-dependent-python", f"{what} a value the graph computes", self.site)
        if func is id and not (v is None or type(v) is bool or isinstance(v, (type, types.FunctionType,
                                                                              types.BuiltinFunctionType,
                                                                              types.ModuleType))):
            raise Unsupported("data-dependent-python", f"{what} a {type(v).__name__} (eager's is the object's "
                                                       "identity, which the graph does not keep)", self.site)
        return func(v)

    def concrete_sizes(self, v):
        """A size or shape where a constant is needed: each Python int in it that the graph reads
        as an input (an item of a list a loop reads at varying positions) taken at its value now,
        under a value guard (a call with another value fails it; once that guard is relaxed, the
        function stays eager here)."""
        if type(v) in (tuple, list):
            return type(v)(self.concrete_sizes(x) for x in v)
        node = v.node if isinstance(v, Sym) else None
        if node is None or v.kind != "py" or v.dtype.kind not in "iu" or node.op != ir.INPUT \
                or "slot" not in node.params:
            return v
        slot = self.prog.slots[node.params["slot"]]
        if type(slot.value) is not int:
            return v
        if ("value", relax_text(slot)) in self.relaxed:
            raise Unsupported("shape-dependent", f"a size read from {slot.text}, which changed between calls",
                              self.site)
        self.prog.check_value(slot, self.site)
        return slot.value

    def lift(self, value):
        """Concrete arrays made during generation become graph constants (so aliases share one box)."""
        if isinstance(value, Tensor):
            return self.builder.constant(value, "tensor")
        if type(value) is np.ndarray:
            return self.builder.constant(value, "array")
        return value

    def distinct_inputs(self):
        """Input arrays, Tensors and Tensors' buffers distinct at generation stay distinct (those
        the same object stay the same): the graph took each as its own value, where eager's
        writes through one show in the other (`step(a, a)` of one Variable, tied weights listed
        twice, a state array that is a Variable's own buffer), and `a is b`, `id(a)` or a tape's
        sources were decided by them, written or not."""
        first, distinct = {}, []
        for slot in self.mutable_slots:
            other = first.setdefault(id(slot.value), slot)
            if other is slot:
                distinct.append(slot)
            elif ("data",) in (slot.step, other.step):  # (two input nodes: the graph would not see one's writes)
                array, tensor = (other, slot) if slot.step == ("data",) else (slot, other)
                raise Unsupported("view-write", f"{array.text} is the buffer of the Tensor {tensor.text}", "")
            else:
                self.prog.check_alias(slot, other, "inputs")
        self.prog.check_distinct(distinct, "inputs")

    def distinct_objects(self):
        """Input dicts, lists and objects the call writes into are not one object with another
        input it reads of their type (`step(src, dst)` called with `src is dst`, tied layers
        listed twice): the graph read the other one's items before its writes, where eager
        reads what it just wrote. Objects the same at generation are guarded so already."""
        written = {w[1].slot.index: w[1].slot for w in self.writes
                   if w[0] in ("setattr", "setitem", "call") and isinstance(w[1], ObjRef)}
        if not written:
            return
        kinds = {type(s.value) for s in written.values()}
        for out, slot in self.memo.values():
            if isinstance(out, ObjRef) and type(slot.value) in kinds:
                written.setdefault(slot.index, slot)
        self.prog.check_distinct(list(written.values()), "inputs")

    def commit_guards(self, graph, outputs):
        """The NumPy arrays the commit writes in place are writeable, and share no memory with
        another input array the graph reads (an input it never reads, such as the old value of a
        dict item the call replaces, may: nothing of the graph depends on it)."""
        written = {}
        for w in self.writes:
            box = w[1] if w[0] == "box" else None
            if isinstance(box, Sym) and not isinstance(box, VarRef) and box.kind == "array" and box.dirty \
                    and box.origin is not None and type(self.prog.slots[box.origin].value) is np.ndarray:
                written[box.origin] = self.prog.slots[box.origin]
        if not written:
            return
        for slot in written.values():
            self.prog.check_writeable(slot)
        used = {id(i) for n in graph.nodes for i in n.inputs} | {id(n) for n in outputs.nodes}
        read = {n.params["slot"] for n in self.input_nodes if id(n) in used} | set(written)
        self.prog.check_disjoint(list(written.values()), [s for s in self.array_slots
                                                           if s.index in read and type(s.value) is np.ndarray])

    def finish(self, result):
        from .outputs import build_outputs

        from ..executor.placement import DeviceMismatch, place

        graph = self.builder.graph
        graph.nodes[:0] = self.input_nodes + self.builder.prelude
        try:
            place(graph)
        except DeviceMismatch as exc:  # eager raises on this op too (CuPy refuses NumPy operands)
            raise Unsupported("device-mismatch", str(exc), exc.node.site) from None
        self.distinct_inputs()
        self.distinct_objects()
        outputs = build_outputs(self, result)
        self.commit_guards(graph, outputs)
        guard, guard_src = self.prog.compile()
        graph.outputs = outputs.nodes
        graph.n_inputs = len(self.input_nodes)
        return GeneratedGraph(graph=graph, guard=guard, guard_src=guard_src, outputs=outputs,
                              assumptions=list(self.prog.assumptions),  # the asserts' after the passes (_build)
                              uses_rng=self.builder.uses_rng, slots=self.prog.slots, try_sites=self.try_sites,
                              forced=self.forced, region_misses=self.region_misses)


__all__ = ["Generator", "GeneratedGraph", "Unsupported"]

