"""Control flow: `if`/`while`/`for` (and `a if b else c`) — speculated from the profile (assert nodes),
unrolled when Python values fix them, or turned into conditional and loop nodes once relaxed."""
from __future__ import annotations

import ast
import contextlib

import numpy as np

from .. import ir
from ..source import site_key
from ..jit.assumptions import Assumption
from .builder import OPAQUE
from .branch_containers import ContainerSnapshot, put
from .loop_sources import LoopSources
from .cond_grad import CondGradient
from .early_returns import RESULT
from .loop_exits import _leaves_loop, loop_exit
from .values import ObjRef, Sym, Unsupported, VarRef, numpy_scalar
from .support import (OneBranch, _Break, input_view, own_attribute, _Continue, _MISSING, _Return, _assigned_names,
                      _range_args, _truth_value)


_PY_NUMBERS = {bool: "b", int: "i", float: "f"}  # Python number type -> NumPy dtype kind of its "py" Sym


class ControlFlowMixin:
    """Methods of the graph generator (see evaluator.Generator)."""

    def stmt_If(self, node, frame):
        self.branch_on(node, self.eval_test(node.test, frame), frame)

    def if_expression(self, node, test, frame, body=None, orelse=None):
        """`a if test else b` on a graph value: the `if` statement `tmp = a` / `tmp = b`, so the
        expression gets what a statement gets (speculated, or a conditional node once the
        warm-up saw both outcomes or the speculation kept failing, or one graph per outcome).
        `body` / `orelse`: the arms' expressions, when `node` is not an IfExp."""
        tmp = f"{_IFEXP_PREFIX}{len(frame.locals)}_{node.col_offset}"
        arms = [ast.copy_location(ast.Assign(targets=[ast.copy_location(ast.Name(tmp, ast.Store()), node)],
                                             value=arm), node)
                for arm in ((node.body, node.orelse) if body is None else (body, orelse))]
        test_ast = node.test if body is None else ast.copy_location(ast.Constant(True), node)  # (evaluated already)
        statement = ast.copy_location(ast.If(test=test_ast, body=arms[:1], orelse=arms[1:]), node)
        ast.fix_missing_locations(statement)
        self.branch_on(statement, test, frame)
        return frame.locals.pop(tmp)

    def branch_on(self, node, test, frame):
        """An `if` statement whose test is evaluated."""
        if isinstance(test, Sym):
            key = site_key(frame.filename, node)
            if key in self.split:  # one graph per outcome: this one's is asserted
                outcome = self.speculate_split(test, node, frame, key)
            elif not self.branch_is_relaxed(key):
                outcome = self.speculate(test, node, frame, "branch")
            elif ("branch", key) not in self.relaxed and self.loop_depths and _leaves_loop(node.body + node.orelse):
                # a break/continue of an unrolled loop cannot be a conditional node's output: the
                # outcome the warm-up saw more often is speculated (the other one fails an assert,
                # and after repeated failures the branch is relaxed and the signature stays eager)
                outcome = self.speculate(test, node, frame, "branch", majority=True)
            else:
                try:
                    return self.cond(node, test, frame)
                except Unsupported as exc:  # tell the JIT which branch: it can split it (jit/variants.py)
                    if exc.branch is None and exc.reason != "unprofiled-branch":
                        exc.branch = key
                    raise
        else:
            outcome = self.truth(test)
        self.exec_block(node.body if outcome else node.orelse, frame)

    def branch_is_relaxed(self, key):
        if ("branch", key) in self.relaxed:
            return True
        if self.profile is None:
            return False
        seen = self.profile.branch(key)
        return seen[0] > 0 and seen[1] > 0

    def speculate_split(self, test, node, frame, key):
        """A branch split into one graph per outcome: this graph asserts the outcome it was
        generated for (or, first, the one the profile saw more often); a call that fails the
        assert tries the graph of the other outcome (jit/variants.py)."""
        expect = self.split[key]
        if expect is None:
            seen = self.profile.branch(key) if self.profile is not None else (1, 0)
            expect = seen[0] >= seen[1]
        self.forced[key] = expect
        self.builder.assert_(self.one_truth(test), expect,
                             Assumption("branch", self.site, expect, relax=("split", key)))
        return expect

    def speculate(self, test, node, frame, kind, majority=False):
        key = site_key(frame.filename, node)
        cond = self.one_truth(test)
        seen = self.profile.branch(key) if self.profile is not None else (0, 0)
        if seen == (0, 0):
            raise Unsupported("unprofiled-branch", "condition never evaluated during warm-up", self.site)
        expect = seen[0] >= seen[1] if majority else seen[0] > 0
        self.builder.assert_(cond, expect, Assumption(kind, self.site, expect, relax=("branch", key)))
        return expect

    def one_truth(self, test):
        """The truth of a one-element graph value, as `if` takes it (more elements: NumPy's error)."""
        if test.size != 1:
            raise Unsupported("data-dependent-python", "truth value of an array with more than one element", self.site)
        return _truth_value(test)

    def exec_branch(self, body, frame):
        """One arm of a conditional node. The user's code raising there (`o.bias` of an object
        without one, `d["missing"]`) raises eagerly on every call that takes that arm, which is
        not the call the graph is generated for when it takes the other: Unsupported, so that the
        branch is split (one graph per outcome; that outcome's calls run eagerly and raise)."""
        try:
            self.exec_block(body, frame)
        except (Unsupported, _Return, _Break, _Continue, RecursionError):
            raise
        except Exception as exc:
            raise Unsupported("user-error", f"an arm of the branch raises {type(exc).__name__}: {exc} (it raises "
                                            "eagerly on the calls that take it)", self.site) from exc

    def cond(self, node, test, frame):
        """Both branches as a conditional node (after the profile saw both outcomes). The names
        either branch assigns, and the state either one writes (attributes of input objects,
        globals, closure cells), are the node's outputs."""
        tapes = list(self.builder.tapes)
        grad = CondGradient(self.builder, tapes, self.site) if tapes else None
        assigned = sorted((_assigned_names(node.body) | _assigned_names(node.orelse))
                          - frame.global_names - frame.nonlocal_names)  # those two are state
        pred = _truth_value(test)
        results = []
        outer_block = self.builder.block
        known = self.builder.view_ids()
        containers = self.container_snapshot(frame)  # lists/dicts/sets a branch may write into
        try:
            # written: {overlay key: (kind, target, name, value before the cond)} (state_write)
            with self.inside_node(frame) as written:
                for body in (node.body, node.orelse):
                    block = []
                    self.builder.block = block
                    if grad is not None:  # each branch records on a tape of its own (cond_grad.py)
                        self.builder.tapes = [grad.branch_tape()]
                    saved = dict(frame.locals)
                    self.exec_branch(body, frame)
                    results.append((block, {n: _bound(frame.locals.get(n, _MISSING)) for n in assigned},
                                    self.take_branch_state(written), containers.take()))
                    frame.locals.clear()
                    frame.locals.update(saved)
        finally:
            self.builder.block = outer_block
            self.builder.tapes = tapes
        self.builder.opaque_views(known)  # a branch's own views (`x[j % 3]`): not made again after a write
        self.set_site(node, frame)
        (then_block, then_vals, then_over, then_cont), (else_block, else_vals, else_over, else_cont) = results
        # (label, then value, else value, where the merged value goes)
        merges = [(_local_label(name), then_vals[name], else_vals[name], ("local", name)) for name in assigned]
        for key, (kind, target, name, before) in written.items():
            a, b = then_over.get(key, before), else_over[key]  # a key only `else` wrote: then-value `before`
            if kind == "box":
                label = f"Variable {target.var.name!r}" if isinstance(target, VarRef) else "an array written in place"
                merges.append((label, a, b, (kind, target, name)))
                continue
            if before is _MISSING and (a is _MISSING or b is _MISSING):
                if kind == "setattr" and isinstance(target, ObjRef) and not own_attribute(target.obj, name):
                    raise Unsupported("data-dependent-python", f"attribute {name!r} is set in one branch only, on an "
                                      "object without one of its own (eager leaves it unset)", self.site)
                before = self.read_state(kind, target, name)  # not written before the cond: the input
                a, b = (before if v is _MISSING else v for v in (a, b))
            label = f"{'attribute' if kind == 'setattr' else kind} {name!r}"
            merges.append((label, a, b, (kind, target, name)))
        structure, items = containers.merges(then_cont, else_cont, lambda c: _describe(c, frame), self.site)
        merges += items
        boxes = {id(w[1]) for _, w in written.items() if w[0] == "box"}  # their nodes are merged as "box"
        outs_then, outs_else, merged, same = [], [], [], []
        for label, a, b, dest in merges:
            if (a is _MISSING or b is _MISSING) and dest[0] == "local":  # a temporary of one branch
                frame.locals[dest[1]] = OneBranch(dest[1], self.site)
                continue
            if a is _MISSING or b is _MISSING:
                raise Unsupported("data-dependent-python", f"{label} is assigned in only one branch", self.site)
            if a is b:  # the same object after either branch (its node, if written, is merged as a box)
                same.append((dest, a))
                continue
            if dest[0] != "box" and (id(a) in boxes or id(b) in boxes):
                raise Unsupported("data-dependent-python", f"{label} is an array written in place in a branch and "
                                                           "another value in the other branch", self.site)
            originals = (a, b)
            pair = self.branch_pair(a, b)
            if pair is None:
                raise Unsupported("data-dependent-python", f"{label} is a Python value that depends on the branch "
                                  "(or differs in type between the branches)", self.site)
            a, b = pair
            if not isinstance(a, Sym):
                same.append((dest, a))
                continue
            if a.shape != b.shape or a.dtype != b.dtype:
                raise Unsupported("data-dependent-python", f"{label} differs in shape/dtype between branches",
                                  self.site)
            either = self.builder.either_key(a) or self.builder.either_key(b)
            if a.kind != b.kind:
                if {a.kind, b.kind} != {"array", "tensor"} or dest[0] != "local":
                    raise Unsupported("data-dependent-python", f"{label} is a {a.kind} after one branch and a "
                                                               f"{b.kind} after the other", self.site)
                either = site_key(frame.filename, node)  # x = seq[t] if teacher_forcing else prediction
            outs_then.append(a.node)
            outs_else.append(b.node)
            merged.append((dest, a if a.kind == "tensor" else b, originals, either))
        for container, contents in structure:  # the branches agree on these but for the merged items
            put(container, contents)
        for dest, value in same:
            self.branch_result(dest, value, frame)
        cond_node = self.builder.add(ir.Node(ir.COND, (pred.node,), {
            "then_nodes": then_block, "else_nodes": else_block, "then_outs": outs_then, "else_outs": outs_else}))
        results = []
        for i, (dest, proto, originals, either) in enumerate(merged):
            out = Sym(self.builder.add(ir.Node(ir.TUPLE_GET, (cond_node,), {"index": i}, proto.node.aval)), proto.kind)
            if either:
                self.builder.either[out.node.id] = either
            self.builder.merged(out, originals, _input_identity(originals[0]) != _input_identity(originals[1]),
                                site_key(frame.filename, node))  # (`return a` or `a * s`)
            results.append(out.node)
            # which object the name (item, attribute) refers to now depends on the branch: writing
            # through it, or writing what it might alias, cannot be modelled (see refresh_views)
            out.view = (OPAQUE, None)
            for pre in originals:
                if isinstance(pre, Sym):
                    self.builder.alias(pre, out)
            self.branch_result(dest, out, frame)
        if grad is not None:
            grad.finish(pred.node, [then_block, else_block], [outs_then, outs_else], results)

    @contextlib.contextmanager
    def inside_node(self, frame, loop=False):
        """While a conditional node's branches or a loop node's body are generated: yields the dict
        where writes of state made there are recorded (`state_write`, `branch_box_write`), with
        the node's frame and the first node id made inside it (`pure_depth` is how many)."""
        written = {}
        self.node_is_loop.append(loop)
        self.branch_frames.append(frame)
        self.cond_writes.append(written)
        self.branch_marks.append(next(ir._ids))  # nodes made from here on are the node's own
        try:
            yield written
        finally:
            self.branch_frames.pop()
            self.node_is_loop.pop()
            self.cond_writes.pop()
            self.branch_marks.pop()

    @property
    def pure_depth(self):
        """How many conditional or loop nodes are being generated around the current code."""
        return len(self.cond_writes)

    def container_snapshot(self, frame):
        """The lists, dicts and sets the code of a conditional or loop node may write into. An
        input list with appends pending stays so: the node's code cannot write it (container
        writes there are Unsupported), and it reads the appended values and the input's last
        items (`len`, negative indices) or makes the function's copy then, the same in either
        branch (a copy made before the node would guard the list's length and every item)."""
        return ContainerSnapshot([frame, *self.frames, *self.overlay.values(), *self.global_overlay.values(),
                                  *self.cell_overlay.values(), *self.shadows.values()], self.new_objects)

    def take_branch_state(self, written):
        """{overlay key: value} of the state written so far in this cond (a key the branch did not
        write reads as its value before the cond), then that state put back as before the cond."""
        values = {}
        for key, (kind, target, name, before) in written.items():
            if kind == "box":  # an array written in place or a Variable: its node is the state
                values[key] = Sym(target.node, before.kind)
                target.node = before.node
                for view, node in name or ():  # its views made before the cond read it as before again
                    view.node = node
                continue
            over, _ = self.state_overlay(kind, target, name)
            values[key] = over.get(key, _MISSING)
            if before is _MISSING:
                over.pop(key, None)
            else:
                over[key] = before
        return values

    def branch_pair(self, a, b):
        """The two branches' values of one name or piece of state as a pair the conditional node
        can select between: both Syms (a Python value becomes a constant: a number of the same
        Python type as a Python-number Sym, an array otherwise), or one Python value both
        branches agree on as (value, value); None when they are Python values that differ and
        cannot be graph values."""
        if not isinstance(a, Sym) and not isinstance(b, Sym):
            if a is b:
                return a, a
            if type(a) is not type(b):
                return None
            if type(a) in _PY_NUMBERS:
                if a == b:  # (NaN is not equal to itself: two constants)
                    return a, a
                return self.builder.constant(a, "py"), self.builder.constant(b, "py")
            try:
                return (a, a) if bool(a == b) else None
            except Exception:  # arrays and other values without a plain truth value
                return None
        proto = a if isinstance(a, Sym) else b
        pair = tuple(v if isinstance(v, Sym) else self.branch_constant(v, proto) for v in (a, b))
        return None if pair[0] is None or pair[1] is None else pair  # (`in` would compare Syms)

    def branch_constant(self, v, proto):
        if proto.kind == "py":  # a number of the Python type the Sym stands for, or None
            if type(v) in _PY_NUMBERS and _PY_NUMBERS[type(v)] == proto.dtype.kind:
                return self.builder.constant(v, "py")
            return None
        if type(v) in _PY_NUMBERS or isinstance(v, np.generic) and not (proto.kind == "array" and numpy_scalar(proto)):
            return None  # `s if s > 0 else 0.0`: eager's type (NEP 50's promotions too) depends on the branch
        return self.builder.constant(v if isinstance(v, np.generic) else np.asarray(v))

    def branch_result(self, dest, value, frame):
        if dest[0] == "local":
            frame.locals[dest[1]] = value
        elif dest[0] == "item":  # an element of a list/dict of the function (branch_containers.py)
            dest[1][dest[2]] = value
        elif dest[0] == "box":  # an array written in place or a Variable assigned (branch_box_write)
            self.write_box(dest[1], value)
        else:
            self.state_write(dest[0], dest[1], dest[2], value)

    def stmt_While(self, node, frame):
        key = site_key(frame.filename, node)
        iterations = peeled = 0  # peeled: trips whose test was a Python value (`err = np.inf` first)
        exit_ = loop_exit(node)
        while True:
            self.set_site(node, frame)
            if iterations == 0 and self.leaves_by_break(node, frame):
                return self.loop(node, frame)  # before the test: a draw in it would be made twice
            test = self.eval_test(node.test, frame)
            if isinstance(test, Sym):
                trips = self.profile.trips(key) if self.profile is not None else set()
                if (len(trips) > 1 or ("trip", key) in self.relaxed) and iterations == peeled:
                    return self.loop(node, frame)  # (the trips left after those peeled)
                if len(trips) != 1:
                    raise Unsupported("varying-trip-count" if trips else "unprofiled-branch",
                                      f"while loop on a graph value (trip counts seen: {sorted(trips)})", self.site)
                expected = next(iter(trips))
                go = iterations < expected
                cond = _truth_value(test)
                self.builder.assert_(cond, go, Assumption("trip_count", self.site, expected, relax=("trip", key)))
            else:
                go = self.truth(test)
                peeled += iterations == peeled
            if not go:
                break
            iterations += 1
            self.count_unroll()
            if self.iteration(node.body, frame, exit_) == "break":
                return
        self.exec_block(node.orelse, frame)

    def iteration(self, body, frame, exit_=None):
        """One unrolled trip through a loop body; "break" when it ended the loop. With a
        `continue` exit whose test the warm-up saw both ways, the statements after it are a
        conditional node on the test (speculating it would fail on every call it differs)."""
        self.loop_depths.append(self.pure_depth)
        try:
            if exit_ is not None and exit_.kind == "continue" and self.branch_is_relaxed(
                    site_key(frame.filename, exit_.node)):
                self.exit_body(body, exit_, frame)
            else:
                self.exec_block(body, frame)
        except _Break:
            return "break"
        except _Continue:
            pass
        finally:
            self.loop_depths.pop()
        return None

    def dynamic_range(self, node, frame):
        """(start, stop, step) when `node.iter` is range(...) with graph-valued bounds, else None."""
        call = node.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "range"
                and not call.keywords and 1 <= len(call.args) <= 3 and isinstance(node.target, ast.Name)):
            return None
        if self.load_name("range", frame, call.func) is not range:
            return None
        bounds = [self.eval(a, frame) for a in call.args]
        if not any(isinstance(b, Sym) for b in bounds):
            return bounds  # plain Python bounds: the caller unrolls
        if any(isinstance(b, Sym) and (b.kind != "py" or b.dtype.kind not in "iu") for b in bounds):
            raise Unsupported("data-dependent-python", "range() of a graph value that is not a Python int", self.site)
        start, stop, step = _range_args(bounds)
        if isinstance(step, Sym) or step == 0:  # (a negative one counts down: `range(n - 1, -1, -1)`)
            raise Unsupported("varying-trip-count", "range() with a graph-valued or zero step", self.site)
        return ("dynamic", start, stop, step)

    def stmt_For(self, node, frame):
        if self.generator_loop(node, frame, loop_exit(node)):  # over a user generator (generators.py)
            return
        bounds = self.dynamic_range(node, frame)
        if bounds is not None and bounds[0] == "dynamic":  # a trip count known only at run time
            return self.loop(node, frame, counter=(node.target.id,) + tuple(bounds[1:]))
        if bounds is not None and self.leaves_by_break(node, frame):
            start, stop, step = _range_args(bounds)
            if isinstance(stop, int) and isinstance(start, int) and isinstance(step, int) and step != 0:
                return self.loop(node, frame, counter=(node.target.id, start, stop, step))
        mark = len(self.materialized)
        iterable = range(*bounds) if bounds is not None else self.eval(node.iter, frame)
        if isinstance(iterable, ObjRef):  # elements the profiler saw vary become graph inputs
            items = list(self.materialize(iterable, self.site, site_key(frame.filename, node)))
        else:
            items = self.iterate_lazily(iterable)  # an iterator's items computed as they are pulled
        exit_ = loop_exit(node)
        sources = LoopSources(self, node.iter, frame, iterable, mark) if bounds is None else None
        for t, item in enumerate(items):
            self.count_unroll()
            sources and sources.check(t)
            self.assign(node.target, item, frame)
            if self.iteration(node.body, frame, exit_) == "break":
                return
        sources and sources.check(None)
        self.exec_block(node.orelse, frame)

    def exit_body(self, body, exit_, frame):
        """Run a loop body around its exit (`LoopExit`): the statements before the `if`, then
        the ones after it under a conditional node on whether the trip goes on. Returns that
        (a Python bool, held in the graph when the test is a graph value)."""
        self.exec_block(body[:exit_.index], frame)
        go = self.goes_on(exit_.node, frame)
        rest = body[exit_.index + 1:]
        if rest and go.node.op == ir.CONST:
            if go.node.params["value"]:
                self.exec_block(rest, frame)
        elif rest:
            self.cond(ast.copy_location(ast.If(ast.Constant(True), rest, []), exit_.node), go, frame)
        return go

    def leaves_by_break(self, node, frame):
        """Whether a loop is left by an `if <graph value>: break` that the warm-up saw taken (or
        whose speculation failed): as a loop node, whatever trip it ends on (unrolled, the trips
        it ran in the warm-up would each be an assumption)."""
        exit_ = loop_exit(node)
        if exit_ is None or exit_.kind != "break":
            return False
        key = site_key(frame.filename, exit_.node)
        if ("branch", key) in self.relaxed:
            return True
        return self.profile is not None and self.profile.branch(key)[0] > 0

    def count_unroll(self):
        self.unrolled += 1
        if self.unrolled > self.max_unroll:
            raise Unsupported("recursion-limit", f"more than {self.max_unroll} unrolled iterations", self.site)


def _local_label(name):
    """How a message names a local a conditional node merges (the generator's temporaries by
    the expression they hold)."""
    if name == RESULT:
        return "the returned value"
    if name.startswith(_IFEXP_PREFIX):
        return "the value of a conditional expression (`a if test else b`, `a and b`, `a or b`)"
    return repr(name)


_IFEXP_PREFIX = "_janus_like_ifexp_"


def _describe(container, frame):
    """How a message names a container of the function: by a local name bound to it."""
    kind = type(container).__name__
    f = frame
    while f is not None:
        for name, v in f.locals.items():
            if v is container:
                return f"{kind} {name!r}"
        f = f.enclosing
    return f"a {kind} of the function"


def _bound(value):
    """A local's value after a branch, _MISSING when it is unbound or bound in only one branch
    of an earlier conditional node."""
    return _MISSING if type(value) is OneBranch else value


def _input_identity(v):
    """Which object outside the call v is in eager code, where the graph's value of it is
    another object: an input's Tensor (a graph result is a new Tensor), an input's array written
    in place before (its node is the new value; the commit writes it into the input), or a view
    of such an array (as `outputs.spec` builds one). None for a value the call makes, and for an
    input's array as it came in, whose object the graph's nodes pass on as eager's."""
    if not isinstance(v, Sym) or v.kind not in ("array", "tensor"):
        return None
    if v.origin is not None:
        return ("slot", v.origin) if v.kind == "tensor" or v.dirty else None
    view, base = input_view(v), v
    while isinstance(base, Sym) and base.origin is None and base.view is not None:
        base = base.view[0]
    return view if view is not None and isinstance(base, Sym) and base.dirty else None
