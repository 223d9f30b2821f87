"""Gradients through conditional nodes: reverse-mode differentiation of an `if` on a graph value
whose outcome varies between calls.

Inside a GradientTape each branch is generated with a tape of its own (watching what the outer
tapes watch). When the outer tape's gradient reaches the conditional, a second conditional on
the same predicate runs the backward pass of the branch that ran:

    cond(pred):  then: recompute the then-branch (its nodes, cloned), apply its tape's vjp rules
                 else: the same for the else-branch
    outputs: the updated gradient of every value from outside the branches that either branch
             differentiates (its accumulated gradient passes through a branch that does not)

Each branch starts from the gradients accumulated so far and adds its contributions in the
order the eager tape does (its entries in reverse), so results are eager's bit for bit. Where
that cannot be guaranteed the generator keeps the signature eager with a named reason:

- a value only one branch differentiates and that has no gradient yet (eager would return None
  after the other branch, the graph would need zeros);
- a branch passing a differentiated outer value through unchanged while that value also has
  gradient from elsewhere (eager interleaves the two sums, the graph adds them in one go), unless
  the JIT reassociates (its default), where that reordering is the documented kind;
- branches with random draws (recomputing would draw again) or nested conditionals/loops;
- a gradient of a gradient through the conditional.
"""
from __future__ import annotations

from .. import ir
from ..ops import api as F
from .tape import COND_GRAD, SymbolicTape, _acc, backward_entries, recompute
from .values import Sym, Unsupported

_REASON = "data-dependent-python"


class CondGradient:
    def __init__(self, builder, tapes, site):
        self.builder = builder
        self.site = site
        self.tapes = []
        self.outer = list(tapes)
        self.maybe_none: dict = {}  # keys only one branch differentiates -> their backward output

    def branch_tape(self):
        """A tape for the next branch, watching what the outer tapes watch."""
        tape = SymbolicTape(self.builder, persistent=True, watch_accessed_variables=any(t.watch_vars for t in self.outer))
        for outer in self.outer:
            tape.watched |= outer.watched
        self.tapes.append(tape)
        return tape

    def finish(self, pred, blocks, outs, results):
        """Record the conditional on the outer tapes it matters to. `blocks`/`outs`: each
        branch's nodes and output nodes; `results`: the TUPLE_GET nodes of the outputs."""
        self.pred, self.blocks, self.outs, self.results = pred, blocks, outs, results
        self.local = [{m.id for m in block} for block in blocks]
        closure = []
        for b, tape in enumerate(self.tapes):
            if any(len(entry) != 6 for entry in tape.entries):  # a nested loop or conditional node's entry
                raise Unsupported(_REASON, "a branch inside a GradientTape with nested control flow or "
                                           "random draws", self.site)
            for _, keys, _, _, _, _ in tape.entries:
                for k in keys:
                    if k is not None and not (isinstance(k, ir.Node) and k.id in self.local[b]) and k not in closure:
                        closure.append(k)
        watched_outs = []
        for b, branch_outs in enumerate(outs):  # outer values a branch returns unchanged
            for o in branch_outs:
                if isinstance(o, ir.Node) and o.id not in self.local[b] and o not in closure:
                    if any(o in t.watched for t in self.outer):
                        watched_outs.append(o)
        self.closure = closure + [o for o in watched_outs if o not in closure]
        if not any(t.entries for t in self.tapes) and not watched_outs:
            return
        relevant = [t for t in self.outer if set(self.closure) & t.watched
                    or (t.watch_vars and any(isinstance(k, tuple) for k in self.closure))]
        if not relevant:
            return
        for b, block in enumerate(blocks):
            for m in block:
                if m.op in (ir.COND, ir.LOOP, ir.RANDOM):
                    raise Unsupported(_REASON, "a branch inside a GradientTape with nested control flow or "
                                               "random draws", self.site)
        for outer in relevant:
            outer.entries.append((COND_GRAD, self))
            outer.watched.update(results)
            outer.watched.update(k for k in self.closure if isinstance(k, tuple))

    # ---------------------------------------------------------------- backward
    def backward(self, grads, acc):
        b = self.builder
        if b.tapes:
            raise Unsupported(_REASON, "a higher-order gradient through a branch whose outcome varies", self.site)
        seeds = [grads.get(r) for r in self.results]
        if all(s is None for s in seeds):
            return
        start = {k: grads.get(k) for k in self.closure}
        outer_block, outer_tapes = b.block, b.tapes
        b.tapes = []
        branch_blocks, branch_outs = [], []
        try:
            for br in range(2):
                block = []
                b.block = block
                branch_outs.append(self._branch(br, seeds, start))
                branch_blocks.append(block)
        finally:
            b.block, b.tapes = outer_block, outer_tapes
        self.maybe_none = {}
        for k in self.closure:  # only one branch differentiates k, which has no gradient yet
            if start[k] is None and (branch_outs[0][k] is None) != (branch_outs[1][k] is None):
                empty = 0 if branch_outs[0][k] is None else 1
                b.block = branch_blocks[empty]
                try:  # -0.0 is the exact additive identity: -0.0 + g is g, bit for bit
                    branch_outs[empty][k] = F.neg(F.zeros_like(self._snap(k)))
                finally:
                    b.block = outer_block
                self.maybe_none[k] = None
            elif start[k] is not None and start[k].node.id in b.maybe_none_grads and not all(
                    branch_outs[br][k] is not None and branch_outs[br][k] is not start[k] for br in (0, 1)):
                # k's gradient so far is None after some outcomes of a later conditional (its
                # backward ran first), and a branch here adds nothing to it: still maybe None
                self.maybe_none[k] = None
        keys = [k for k in self.closure if branch_outs[0][k] is not None]
        if not keys:
            return
        then_outs = [branch_outs[0][k].node for k in keys]
        else_outs = [branch_outs[1][k].node for k in keys]
        for t, e in zip(then_outs, else_outs):
            if t.aval != e.aval:
                raise Unsupported(_REASON, "the branches' gradients differ in shape or dtype", self.site)
        node = b.add(ir.Node(ir.COND, (self.pred,), {
            "then_nodes": branch_blocks[0], "else_nodes": branch_blocks[1],
            "then_outs": then_outs, "else_outs": else_outs}))
        for i, k in enumerate(keys):
            grads[k] = Sym(b.add(ir.Node(ir.TUPLE_GET, (node,), {"index": i}, then_outs[i].aval)), "tensor")
            if k in self.maybe_none:
                self.maybe_none[k] = grads[k]
                b.maybe_none_grads.add(grads[k].node.id)

    def check_connected(self, grads):
        """After the whole backward pass: a value only one branch differentiated must have gradient
        from elsewhere too, else eager returns None after the other branch (the graph, -0.0s)."""
        for k, g in self.maybe_none.items():
            if grads.get(k) is g:
                raise Unsupported(_REASON, "a value only one branch differentiates and nothing else does "
                                           "(eager gives no gradient after the other branch)", self.site)

    def _snap(self, k):
        """A value node for key k visible outside the branches (its snapshot when recorded)."""
        if isinstance(k, ir.Node):
            return Sym(k, "tensor")
        for tape in self.tapes:
            for _, keys, snaps, _, _, _ in tape.entries:
                for kk, s in zip(keys, snaps):
                    if kk == k:
                        return Sym(s.node, "tensor")
        raise Unsupported(_REASON, "a gradient key without a value", self.site)

    def _branch(self, br, seeds, start):
        """Recompute branch `br` and run its tape backwards; {closure key: gradient Sym or None}."""
        b = self.builder
        mapped = recompute(b, self.blocks[br], {})
        local = {mapped(k): g for k, g in start.items() if g is not None}
        for j, seed in enumerate(seeds):
            out = self.outs[br][j]
            if seed is None or not isinstance(out, ir.Node):
                continue
            key = mapped(out)
            if out.id not in self.local[br] and start.get(out) is not None and not b.reassociate:
                raise Unsupported(_REASON, "a branch returns a differentiated value unchanged that also has "
                                           "gradient from elsewhere", self.site)
            _acc(local, key, seed)
        backward_entries(self.tapes[br].entries, local, mapped)
        return {k: local.get(mapped(k)) for k in self.closure}

