"""Loop nodes: a `while` on a graph value, or a `for` over `range()` with graph-valued bounds,
as one LOOP node whose body is generated once.

What an iteration hands to the next is carried: the body's placeholders stand for it, and its
values at the end of the body are the body's outputs.

- **Locals** the body reassigns. A Python number bound before the loop (a counter, an
  accumulated float) becomes a graph number of the same Python type.
- **State** the body writes: Variables it assigns, arrays it writes in place (an input array,
  an attribute's array), attributes of input objects, globals and closure cells. After the
  node, the final value is written back the way a straight-line write is, so it is committed
  with the graph.

Which state the body writes is known only once its code has run, so the body is generated
twice when it writes any: first to find the writes (that attempt's nodes are dropped and the
state is put back), then with placeholders for them. A local the body only writes in place
(`x += 1` on an array) keeps naming the same array, so it is carried as that array's state and
not as a rebinding. Arrays and Variables the body itself creates are not carried: in-place
writes to them are ordinary writes (`statements.branch_box_write` tells them apart by the node
counter at the start of the node).

One `if <test>: break` or `if <test>: continue` (nothing else in that `if`) at the body's top
level is converted (`loop_exits.loop_exit`): a break first in the body joins the loop condition; a
break elsewhere ends the loop through a carried flag after the trip, and the statements after
it (after a continue too) run under a conditional node on the test — exactly what eager does.
Several exits, or one nested deeper, stay a named reason.

Not converted, each with a named reason: writes of state inside a GradientTape, writes of the
function's own lists and dicts, a local both rebound and written in place, values that change
type, shape or dtype across an iteration (but for an accumulator that starts as a Python number
and a `while True:` body's names read after it: loop_carries.py).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import ir
from ..jit.assumptions import Assumption
from ..ops.registry import REGISTRY
from ..source import site_key
from .builder import OPAQUE
from .control import _PY_NUMBERS, _bound, _describe, _input_identity
from .loop_carries import bound_before_exit, forever, rebound_carries, scalar_carries, stand_in_carries
from .loop_exits import loop_exit
from .loop_grad import LoopGradient
from .support import _Break, _Continue, _MISSING, _assigned_names, _truth_value
from .values import Sym, Unsupported, VarRef, after_loop, numpy_scalar


class LoopMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def loop(self, node, frame, counter=None):
        """A loop whose trip count is a graph value (see the module docstring). `node` is a `while`
        (its test is the condition) or, with `counter=(target, start, stop, step)`, a
        `for target in range(start, stop, step)` whose bounds are graph values."""
        kind = "while" if counter is None else "for"
        tapes = list(self.builder.tapes)
        if node.orelse:
            raise Unsupported("unsupported-syntax", f"{kind} ... else with a graph-valued trip count", self.site)
        target = counter[0] if counter is not None else None
        exit_ = loop_exit(node)
        if exit_ is not None and tapes:
            raise Unsupported("unsupported-syntax", f"{exit_.kind} in a differentiated {kind} loop on a graph value",
                              self.site)
        names = sorted(_assigned_names(node.body) - ({target} if target else set())
                       - frame.global_names - frame.nonlocal_names)  # those two are state
        if exit_ is not None and exit_.how == "flag":
            frame.locals[_RUNNING] = True  # carried: whether the last trip's test let the loop go on
            names.append(_RUNNING)
        # names first bound inside the body (an inner loop's target, a temporary) are local to
        # an iteration; after the loop they are stale (eager would hold the last iteration's)
        local_names = [n for n in names if _bound(frame.locals.get(n, _MISSING)) is _MISSING
                       or getattr(frame.locals[n], "kind", None) == "stale"]  # (an inner loop's variable after it)
        carried = [(name, self.carried_initial(name, frame.locals[name])) for name in names if name not in local_names]
        sure = bound_before_exit(node) & set(local_names) if counter is None else set()  # (`while True:`)
        before = dict(frame.locals)
        state = {}  # {write key: (kind, target, name, value before the loop)} (second attempt)
        unrolled, views = self.unrolled, {k: list(v) for k, v in self.builder.views.items()}
        attempt, promoted, rebound = 0, None, False  # promoted: the relax key of carried numbers made NumPy scalars
        key = ("carry", site_key(frame.filename, node))
        captured = _captured(frame)  # (read by a closure: its value on a first trip may be read there)
        while True:
            grad = LoopGradient(self.builder, tapes, self.site) if tapes else None
            self.unrolled = unrolled  # an unrolled inner loop counts once
            self._views_back(views)  # nor do the first attempt's views count
            try:
                gen = self.loop_attempt(node, frame, counter, carried, state, grad, exit_)
            finally:
                self.builder.tapes = tapes
                for name in names:  # every attempt starts from the locals before the loop
                    frame.locals.pop(name, None)
                frame.locals.update({n: v for n, v in before.items() if n in names})
            extra = stand_in_carries(self.builder, node, sure, gen) if sure and not sure & captured else None
            if extra is not None:  # (the same attempt again, carrying them)
                carried, local_names, sure = carried + extra, [n for n in local_names if n not in sure], set()
                continue
            lifted = None if promoted or counter is None and not forever(node) or key in self.relaxed \
                else scalar_carries(self.builder, node, carried, gen["frame"], captured)
            if lifted is not None:  # (the same attempt again, with those carried values)
                carried, promoted = lifted, key
                continue
            lifted = None if rebound or counter is not None else rebound_carries(self.builder, node, carried, gen, captured)
            if lifted is not None:
                carried, rebound = lifted, True
                continue
            found = {k: w for k, w in gen["written"].items() if k not in state}
            if not found:
                break
            if attempt or grad is not None:
                what = _what(next(iter(found.values())))
                raise Unsupported("unsupported-syntax", f"{what} inside a {kind} loop on a graph value"
                                  + (" that is differentiated" if grad is not None else ""), self.site)
            carried, state = self.carried_state(carried, found, gen, kind)
            attempt += 1
        # views the body made (`W[k]` at the trip's `k`) are of the body's values: a write after
        # the loop must not read them again (at the count the loop ended with: out of bounds)
        bases = self._bases_of_finals(carried, gen["frame"])
        self._views_back(views)
        body_names = {n for n, _ in carried}
        self.set_site(node, frame)
        outs = []
        written_boxes = {id(w[1]) for w in state.values() if w[0] == "box"}
        for (name, v), ph in zip(carried, gen["placeholders"]):
            new = gen["frame"].get(name, _MISSING)
            if id(new) in written_boxes:  # `v = a` of an `a += p` in the body: eager's v is a (after a trip)
                raise Unsupported("varying-trip-count", f"{name!r} is bound inside the loop to an array the loop "
                                                        "writes in place", self.site)
            if not isinstance(new, Sym) or new.node.aval != ph.aval or new.kind != v.kind:
                raise Unsupported("varying-trip-count", f"{name!r} changes type, shape or dtype inside the loop",
                                  self.site)
            outs.append(new.node)
        for (key, (wkind, wtarget, wname, init)), ph in zip(state.items(), gen["state_placeholders"]):
            new = self.carried_final(gen["finals"].get(key, _MISSING), init)
            if new is None:
                raise Unsupported("varying-trip-count", f"{_what((wkind, wtarget, wname, init))} changes type, shape "
                                                        "or dtype inside the loop", self.site)
            outs.append(new.node)
        for name in local_names:
            frame.locals[name] = after_loop(name, self.site)
        for name, value in before.items():  # a local the body writes in place still names its array
            if name not in body_names and name not in local_names and name != target \
                    and gen["frame"].get(name, _MISSING) is not value:
                raise Unsupported("varying-trip-count", f"{name!r} is rebound inside the loop", self.site)
        placeholders = gen["placeholders"] + gen["state_placeholders"]
        inputs = [v.node for _, v in carried] + [w[3].node for w in state.values()]
        if counter is not None:
            start = counter[1]
            placeholders.append(gen["count"])
            outs.append(gen["next_count"].node)
            inputs.append(start.node if isinstance(start, Sym) else start)
        if grad is not None:
            grad.check_body(gen["body"])
            grad.add_stack(placeholders, gen["body"], outs, inputs)
        loop = self.builder.add(ir.Node(ir.LOOP, tuple(inputs), {
            "placeholders": placeholders, "cond_nodes": gen["cond"], "cond": gen["pred"].node,
            "body_nodes": gen["body"], "body_outs": outs, "max_iter": self.max_unroll * 50}))
        results = []
        for i, (name, v) in enumerate(carried):
            out = self.builder.add(ir.Node(ir.TUPLE_GET, (loop,), {"index": i}, v.node.aval))
            frame.locals[name] = self.maybe_entry(Sym(out, v.kind), v, gen["frame"].get(name))
            for base in bases.get(name, ()):  # (`v = a` in the body, `a += 1` after)
                self.builder.alias(base, frame.locals[name])
            results.append(out)
        for i, (wkind, wtarget, wname, init) in enumerate(state.values(), start=len(carried)):
            out = Sym(self.builder.add(ir.Node(ir.TUPLE_GET, (loop,), {"index": i}, init.node.aval)), init.kind)
            self.branch_result((wkind, wtarget, wname), self.maybe_entry(out, init), frame)
        if grad is not None:
            grad.finish(loop, carried, results, len(placeholders) - 1, tapes)
        if counter is not None:  # the count after the node: one step past the trip that ran last
            count = Sym(self.builder.add(ir.Node(ir.TUPLE_GET, (loop,), {"index": len(outs) - 1},
                                                 gen["count"].aval)), "py")
        if promoted is not None and counter is not None and not _runs(counter):  # (after none: the Python number)
            self.builder.assert_(self.builder.py_op(operator.ne, count, counter[1], sample=True), True,
                                 Assumption("trip_count", self.site, "at least one", relax=promoted))
        prev = _bound(before.get(target, _MISSING)) if counter is not None else _MISSING
        modelled = counter is not None and target not in _assigned_names(node.body)  # (not `i += 1` in it)
        if modelled and (exit_ is None or exit_.how != "join") and (_runs(counter) or type(
                prev) is int or isinstance(prev, Sym) and prev.kind == "py" and prev.dtype.kind in "iu"):
            # the trip that ran last (the break's, or the range's last) gives the loop variable, as
            # eager leaves it; after no trip it is the int bound before the loop (`it = -1; for it in range(n):`)
            last = self.builder.py_op(operator.sub, count, counter[3])
            frame.locals[target] = last if _runs(counter) else self.builder.py_op(
                _after_range, count, counter[1], last, prev)
        elif counter is not None:  # the loop variable after the loop is not modelled
            frame.locals[target] = after_loop(target, self.site)
        frame.locals.pop(_RUNNING, None)

    def _bases_of_finals(self, carried, body_frame):
        """{name: the body's last value of a carried name and the arrays it is a view of}: eager's
        value after the loop is that array or view (`v = a` or `v = p[j:j + 2]` in the body), so
        a later write of either changes it (read before the body's views are dropped)."""
        found = {}
        for name, _ in carried:
            final = body_frame.get(name)
            if isinstance(final, Sym) and not isinstance(final, VarRef):
                found[name] = [final] + [self.builder._view_bases[k] for k, views in self.builder.views.items()
                                         if k in self.builder._view_bases and any(v is final for v in views)]
        return found

    def _views_back(self, views):
        """The builder's views as they were before the loop (`views`, a copy of them)."""
        self.builder.views.clear()
        self.builder.views.update((k, list(v)) for k, v in views.items())

    def maybe_entry(self, out, entry, final=None):
        """A loop's result that is its entry value's object when the loop runs zero times (eager
        code then still names that object): writing through it in place, or writing the entry
        value in place, cannot be modelled (the same rule as a conditional's merged values).
        `final`: the body's value at the end of a trip, which may be an input's object too
        (`v = p` in the body of p written in place before the loop)."""
        if isinstance(entry, Sym) and not isinstance(entry, VarRef):
            out.view = (OPAQUE, None)
            self.builder.alias(entry, out)
            # eager's object after zero trips is the entry's, after some the body's: an input's
            # array written before, or an input's Tensor, where the graph's result is its own
            # (outputs.check_merged_identity)
            values = (entry,) if final is None else (entry, final)
            self.builder.merged(out, values, any(_input_identity(v) is not None for v in values), None)
        return out

    def carried_initial(self, name, v):
        """A local's value before the loop as a carried graph value."""
        if type(v) in _PY_NUMBERS:  # a counter or an accumulator: a graph number of its type
            return self.builder.constant(v, "py")
        if not isinstance(v, Sym) or isinstance(v, VarRef):
            raise Unsupported("varying-trip-count", f"loop variable {name!r} is neither an array nor a number "
                                                    "before the loop", self.site)
        return v

    def carried_final(self, value, init):
        """A carried piece of state's value at the end of the body, as a Sym of `init`'s type, or None."""
        if type(value) in _PY_NUMBERS and init.kind == "py":
            value = self.branch_constant(value, init)
        if not isinstance(value, Sym) or value.node.aval != init.node.aval or value.kind != init.kind:
            return None
        return value

    def carried_state(self, carried, found, gen, kind):
        """After the first attempt: (carried locals, carried state) for the second. A local the
        body wrote only in place (still naming its placeholder at the end) is carried as the
        array's state instead."""
        state = {}
        boxes = {id(ph): name for name, ph in gen["local_boxes"].items()}
        in_place = set()
        for key, (wkind, wtarget, wname, before) in found.items():
            if wkind == "box" and id(wtarget) in boxes:
                name = boxes[id(wtarget)]
                if gen["frame"].get(name) is not wtarget:
                    raise Unsupported("varying-trip-count", f"{name!r} is both written in place and rebound inside "
                                                            f"the {kind} loop", self.site)
                in_place.add(name)
                v = dict(carried)[name]
                state[("box", id(v))] = ("box", v, None, Sym(v.node, v.kind))
                continue
            if wkind == "box":
                state[key] = ("box", wtarget, None, Sym(before.node, before.kind))
                continue
            init = self.read_state(wkind, wtarget, wname) if before is _MISSING else before
            if type(init) in _PY_NUMBERS:
                init = self.builder.constant(init, "py")
            if not isinstance(init, Sym) or isinstance(init, VarRef):
                raise Unsupported("varying-trip-count", f"{_what(found[key])} is neither an array nor a number before "
                                                        "the loop", self.site)
            state[key] = (wkind, wtarget, wname, init)
        carried = [(n, v) for n, v in carried if n not in in_place]
        # a value carried from before the loop that is an array the body writes in place: eager
        # reads the written array through it, a carried value would hold the one before the loop
        written_boxes = {id(w[1]) for w in state.values() if w[0] == "box"}
        for label, v in [(repr(n), v) for n, v in carried] + [(_what(w)[:-len(" write")], w[3]) for w in state.values()
                                                              if w[0] != "box"]:
            if id(v) in written_boxes:
                raise Unsupported("varying-trip-count", f"{label} names an array that is written in place inside the "
                                                        f"loop", self.site)
        return carried, state

    def loop_attempt(self, node, frame, counter, carried, state, grad, exit_=None):
        """Generate the condition and body once, with placeholders for the carried locals and
        state; the state and the containers are put back as before the loop afterwards."""
        placeholders, local_boxes = [], {}
        for name, v in carried:
            ph = _placeholder(name, v, self.site)
            placeholders.append(ph)
            frame.locals[name] = local_boxes[name] = Sym(ph, v.kind)
        state_placeholders, restore = [], []
        for key, (wkind, wtarget, wname, init) in state.items():
            ph = _placeholder(_what((wkind, wtarget, wname, init)), init, self.site)
            state_placeholders.append(ph)
            restore.append(self.set_loop_state(key, wkind, wtarget, wname, Sym(ph, init.kind)))
        gen = {"placeholders": placeholders, "state_placeholders": state_placeholders, "count": None}
        if counter is not None:
            gen["count"] = ir.Node(ir.LOOP_VAR, (), {"name": counter[0]}, ((), np.dtype(np.int64)), self.site)
            frame.locals[counter[0]] = Sym(gen["count"], "py")
        outer = self.builder.block
        containers = self.container_snapshot(frame)
        if grad is not None:
            grad.watch_carried(placeholders, [v.kind for _, v in carried])
        try:
            with self.inside_node(frame, loop=True) as written:
                gen["cond"], gen["body"] = [], []
                self.builder.block = gen["cond"]
                self.builder.tapes = []  # the test is not differentiated
                if counter is None:
                    before = self._state_mark(), len(written)
                    test = self.eval_test(node.test, frame)
                    if (self._state_mark(), len(written)) != before:  # `while k < n and obj.check(x)`
                        raise Unsupported("varying-trip-count", "a loop test on a graph value that writes state (the "
                                          "graph would write it where eager's `and` or `or` stops)", self.site)
                    if exit_ is not None and not isinstance(test, Sym):  # `while True:` left by its break
                        test = self.builder.constant(self.truth(test), "py")
                    if not isinstance(test, Sym):
                        raise Unsupported("varying-trip-count", "loop condition is not a graph value inside the loop",
                                          self.site)
                    gen["pred"] = _truth_value(test)
                else:
                    below = operator.lt if counter[3] > 0 else operator.gt  # (a negative step counts down)
                    gen["pred"] = self.builder.py_op(below, Sym(gen["count"], "py"), counter[2])
                if exit_ is not None and exit_.how != "skip":  # the trip goes on while the break's test is false
                    go = frame.locals[_RUNNING] if exit_.how == "flag" else self.goes_on(exit_.node, frame)
                    gen["pred"] = self.builder.py_op(operator.and_, self.py_bool(gen["pred"]), go)
                    if _draws(gen["cond"]):  # `and` of two values: no short circuit in the graph
                        raise Unsupported("unsupported-syntax", "a random draw in the test of a loop left by "
                                          "a break (the graph would make it once more than Python)", self.site)
                self.builder.block = gen["body"]
                self.builder.tapes = [grad.tape] if grad is not None else []
                try:
                    if exit_ is None:
                        self.exec_block(node.body, frame)
                    elif exit_.how == "join":
                        self.exec_block(node.body[1:], frame)
                    else:
                        go = self.exit_body(node.body, exit_, frame)
                        if exit_.how == "flag":
                            frame.locals[_RUNNING] = go
                except (_Break, _Continue):
                    raise Unsupported("unsupported-syntax", "break/continue in a loop on a graph value (other than "
                                      "one `if ...: break` or `if ...: continue` in the body)", self.site) from None
                if counter is not None:
                    gen["next_count"] = self.builder.py_op(operator.add, Sym(gen["count"], "py"), counter[3])
        finally:
            self.builder.block = outer
            gen["finals"] = self.take_branch_state(written)
            for put_back in restore:
                put_back()
            changed = containers.take()  # generated once, a write here would count as one trip
        if changed:
            c = containers.saved[next(iter(changed))][0]
            raise Unsupported("varying-trip-count", f"{_describe(c, frame)} is written inside a "
                              f"{'while' if counter is None else 'for'} loop on a graph value", self.site)
        gen["written"] = written
        gen["local_boxes"] = local_boxes
        gen["frame"] = dict(frame.locals)
        return gen

    def goes_on(self, if_node, frame):
        """Whether a loop goes on past its `if ...: break` or `if ...: continue` (the test is
        false), as a Python bool held in the graph."""
        self.set_site(if_node, frame)
        test = self.eval_test(if_node.test, frame)
        if not isinstance(test, Sym):
            return self.builder.constant(not self.truth(test), "py")
        if test.size != 1:
            raise Unsupported("data-dependent-python", "truth value of an array with more than one element", self.site)
        return self.builder.py_op(operator.not_, self.py_bool(test))

    def py_bool(self, v):
        """bool(v) of a graph value as a Python bool held in the graph."""
        return v if v.kind == "py" and v.dtype == np.bool_ else self.builder.py_op(operator.truth, _truth_value(v))

    def set_loop_state(self, key, kind, target, name, value):
        """Make a piece of state read as `value` (a placeholder); returns what puts it back."""
        if kind == "box":
            node = target.node
            target.node = value.node

            def put_back():
                target.node = node
            return put_back
        over, okey = self.state_overlay(kind, target, name)
        old = over.get(okey, _MISSING)
        over[okey] = value

        def put_back():
            if old is _MISSING:
                over.pop(okey, None)
            else:
                over[okey] = old
        return put_back


def _what(write):
    kind, target, name, _ = write
    if kind == "box":
        return f"Variable {target.var.name!r} write" if isinstance(target, VarRef) else "in-place array write"
    return {"setattr": f"attribute {name!r} write", "global": f"global {name!r} write",
            "cell": f"nonlocal {name!r} write"}[kind]


def _after_range(count, start, last, prev):
    """The loop variable after a `for` over a range: the last trip's value, or (no trip ran: the
    count is still the start) the value it had before the loop."""
    return last if count != start else prev


def _placeholder(name, start, site):
    """The LOOP_VAR standing for a carried value in the loop's blocks; of a 0-d array, whether it
    is a NumPy scalar or an ndarray is its start's (an ndarray stays one: `m += e` writes into it)."""
    ph = ir.Node(ir.LOOP_VAR, (), {"name": name}, start.node.aval, site)
    if start.kind == "array" and start.ndim == 0:
        ph.params["scalar"] = numpy_scalar(start)
    return ph


def _captured(frame) -> set:
    """The names of `frame` that a function or lambda defined in it reads (its cell variables)."""
    code = getattr(frame.func, "__code__", None)
    return set(frame.closure_names) | set(getattr(code, "co_cellvars", ()))


def _runs(counter):
    """Whether a `for` over range(start, stop, step) runs at least once, known when generating."""
    _, start, stop, step = counter
    return all(type(v) is int for v in (start, stop, step)) and (start < stop if step > 0 else start > stop)


_RUNNING = " running"  # the carried flag of a loop left by a break after its body (not a Python name)


def _draws(nodes) -> bool:
    """Whether nodes draw random numbers (NumPy's global generator or a Generator), also inside
    conditionals and loops: a draw made once more than Python makes it changes every later one."""
    for n in nodes:
        if n.op == ir.RANDOM or getattr(REGISTRY.get(n.op), "stateful", False):
            return True
        if n.op == ir.COND and _draws(n.params["then_nodes"] + n.params["else_nodes"]):
            return True
        if n.op == ir.LOOP and _draws(n.params["cond_nodes"] + n.params["body_nodes"]):
            return True
    return False
