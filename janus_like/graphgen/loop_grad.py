"""Gradients through loop nodes: reverse-mode differentiation of a loop whose trip count is
known only at run time.

Inside a GradientTape, a loop node's body is generated with a tape of its own (watching the
carried values and whatever the outer tapes watch), and the forward loop saves each
iteration's carried values on a stack (a Python list created fresh on every run of the graph,
so an abandoned run leaves nothing behind). When the outer tape's gradient reaches the loop, it
emits a second loop node that runs the iterations backwards:

    i = len(stack) - 1;  dc = cotangents of the loop's results;  acc = gradients so far
    while i >= 0:
        carried = stack[i];  recompute the body from it (the forward nodes, cloned)
        dc, acc = body tape's vjp rules applied to (dc, acc);  i -= 1

The backward body is built from the same registry vjp rules as everywhere else and accumulates
in the order the eager tape does (last iteration first, each body's entries in reverse), so the
result is the eager result. A zero-trip run is asserted away (eager gives no gradient at all
then, not zeros). Bodies with nested control flow or random draws stay eager (recomputing a draw
would change the stream).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import ir
from ..ops import api as F
from .values import Sym, Unsupported

OBJECT = np.dtype(object)
from .tape import LOOP_GRAD, SymbolicTape, _acc, backward_entries, recompute


def _new_stack():
    return []


def _push(stack, *values):
    stack.append(values)
    return stack


def _last_index(stack):
    return len(stack) - 1


class LoopGradient:
    """What the backward loop needs: the body's tape, nodes, placeholders and outputs, and the
    forward loop's results and stack."""

    def __init__(self, builder, tapes, site):
        self.builder = builder
        self.site = site
        self.tape = SymbolicTape(builder, persistent=True, watch_accessed_variables=True)
        for outer in tapes:
            self.tape.watched |= outer.watched

    def watch_carried(self, placeholders, kinds):
        for ph, kind in zip(placeholders, kinds):
            if kind != "py" and np.dtype(ph.aval[1]).kind == "f":
                self.tape.watched.add(ph)

    def check_body(self, body_nodes):
        for n in body_nodes:
            if n.op in (ir.COND, ir.LOOP, ir.RANDOM):
                raise Unsupported("varying-trip-count", "a loop with a graph-valued trip count inside a "
                                  "GradientTape whose body has nested control flow or random draws", self.site)

    def add_stack(self, placeholders, body_nodes, outs, inputs):
        """Carry a stack through the forward loop; each iteration pushes its carried values."""
        stack = self.builder.add(ir.Node(ir.PY_OP, (), {"fn": _new_stack}, ((), OBJECT)))
        stack_ph = ir.Node(ir.LOOP_VAR, (), {"name": "<stack>"}, ((), OBJECT), self.site)
        saved = list(placeholders)
        push = ir.Node(ir.PY_OP, (stack_ph, *saved), {"fn": _push}, ((), OBJECT), self.site)
        body_nodes.append(push)
        placeholders.append(stack_ph)
        outs.append(push)
        inputs.append(stack)
        self.saved = saved
        self.body_nodes = list(body_nodes)
        self.push = push

    def finish(self, loop, carried, results, stack_index, tapes):
        """Record the loop on the outer tapes it matters to; assert at least one iteration."""
        self.results = results  # TUPLE_GET nodes of the carried values, in carried order
        self.carried_outs = loop.params["body_outs"][:len(carried)]
        self.carried_in = [v for _, v in carried]
        self.stack = self.builder.add(ir.Node(ir.TUPLE_GET, (loop,), {"index": stack_index}, ((), OBJECT)))
        self.local = local = {m.id for m in self.body_nodes} | {p.id for p in self.saved}  # iteration values
        keys = {k for _, keys, _, _, _, _ in self.tape.entries for k in keys if k is not None}
        outside = {k for k in keys if not (isinstance(k, ir.Node) and k.id in local)}
        carried_keys = {v.node for v in self.carried_in}
        relevant = [outer for outer in tapes if (outside | carried_keys) & outer.watched
                    or (outer.watch_vars and any(isinstance(k, tuple) for k in outside))]
        if not self.tape.entries or not relevant:
            return
        from ..jit.assumptions import Assumption

        last = Sym(self.builder.add(ir.Node(ir.PY_OP, (self.stack,), {"fn": _last_index}, ((), np.dtype(np.int64)))),
                   "py")
        ran = self.builder.py_op(operator.ge, last, 0)
        self.builder.assert_(ran, True, Assumption("trip_count", self.site, "at least one iteration"))
        self.last = last
        for outer in relevant:
            outer.entries.append((LOOP_GRAD, self))
            outer.watched.update(results)

    # ---------------------------------------------------------------- backward
    def backward(self, grads, acc):
        """Emit the backward loop at the current point of the outer backward pass. `grads` maps
        tape keys to gradient Syms; updated in place through `acc` (the outer accumulator)."""
        b = self.builder
        if b.tapes:  # another tape records this backward pass (a gradient of a gradient)
            raise Unsupported("varying-trip-count", "a higher-order gradient through a loop whose trip count is "
                                                    "a graph value", self.site)
        local = self.local
        diff = [j for j, ph in enumerate(self.saved[:len(self.results)])
                if ph in self.tape.watched]
        seeds = [grads.get(self.results[j]) for j in diff]
        if all(s is None for s in seeds):
            return
        closure, snap_of = [], {}
        for _, keys, snaps, _, _, _ in self.tape.entries:
            for k, s in zip(keys, snaps):
                if k is not None and not (isinstance(k, ir.Node) and k.id in local) and k not in snap_of:
                    snap_of[k] = s
                    closure.append(k)
        dc0 = [s if s is not None else F.zeros_like(Sym(self.results[j], "tensor"))
               for j, s in zip(diff, seeds)]
        acc0 = [grads[k] if k in grads else F.zeros_like(snap_of[k]) for k in closure]
        init = [self.last] + dc0 + acc0
        phs = [ir.Node(ir.LOOP_VAR, (), {"name": "<i>"}, ((), np.dtype(np.int64)), self.site)]
        phs += [ir.Node(ir.LOOP_VAR, (), {"name": f"<d{j}>"}, s.node.aval, self.site) for j, s in zip(diff, dc0)]
        phs += [ir.Node(ir.LOOP_VAR, (), {"name": "<acc>"}, a.node.aval, self.site) for a in acc0]
        outer_block, outer_tapes = b.block, b.tapes
        cond_block, body_block = [], []
        b.tapes = []
        try:
            b.block = cond_block
            test = b.py_op(operator.ge, Sym(phs[0], "py"), 0)
            b.block = body_block
            outs = self._reverse_iteration(phs, diff, closure, len(dc0))
        finally:
            b.block, b.tapes = outer_block, outer_tapes
        loop = b.add(ir.Node(ir.LOOP, tuple(x.node if isinstance(x, Sym) else x for x in init), {
            "placeholders": phs, "cond_nodes": cond_block, "cond": test.node, "body_nodes": body_block,
            "body_outs": outs, "max_iter": 2 ** 62}))
        for pos, ph in enumerate(phs[1:], start=1):
            out = Sym(b.add(ir.Node(ir.TUPLE_GET, (loop,), {"index": pos}, ph.aval)), "tensor")
            if pos <= len(dc0):
                k = self.carried_in[diff[pos - 1]].node
                acc(grads, k, out)
            else:
                grads[closure[pos - 1 - len(dc0)]] = out  # started from grads[k]: replace

    def _reverse_iteration(self, phs, diff, closure, n_dc):
        b = self.builder
        i = Sym(phs[0], "py")
        values = b.add(ir.Node(ir.PY_OP, (self.stack, phs[0]), {"fn": operator.getitem}, ((), OBJECT)))
        clone = {}
        for j, ph in enumerate(self.saved):
            clone[ph.id] = b.add(ir.Node(ir.TUPLE_GET, (values,), {"index": j}, ph.aval))
        mapped = recompute(b, [m for m in self.body_nodes if m is not self.push], clone)

        local: dict = {}
        for pos, j in enumerate(diff):  # seeds: the cotangents of this iteration's results
            _acc(local, mapped(self.carried_outs[j]), Sym(phs[1 + pos], "tensor"))
        for pos, k in enumerate(closure):
            local[mapped(k)] = Sym(phs[1 + n_dc + pos], "tensor")
        backward_entries(self.tape.entries, local, mapped)
        outs = [b.py_op(operator.sub, i, 1).node]
        for j in diff:
            g = local.get(clone[self.saved[j].id])
            ph = self.saved[j]
            outs.append(_as(g, ph) if g is not None else F.zeros_like(Sym(clone[ph.id], "tensor")).node)
        for pos, k in enumerate(closure):
            outs.append(_as(local[mapped(k)], phs[1 + n_dc + pos]))
        return outs


def _as(g, like):
    """A gradient node with exactly the carried value's type (a loop carries fixed types)."""
    node = g.node
    if node.aval != like.aval:
        if np.dtype(node.aval[1]) != np.dtype(like.aval[1]):
            g = F.cast(g, like.aval[1])
        if tuple(g.node.aval[0]) != tuple(like.aval[0]):
            g = F.broadcast_to(g, like.aval[0])
        node = g.node
    return node

