"""Executor: runs a generated graph as one transaction.

Input: a `GeneratedGraph` (IR + input program + outputs) and the call's arguments. Output: the
call's result with all state committed, or a named failure with nothing changed.

    guards (input program) -> plan (all nodes, asserts included) -> commit + effects -> result

The graph computes on values only; no user-visible state changes until the last node has
succeeded. On an assert failure or any exception the NumPy global RNG (and any explicit
Generator the graph draws from) is restored, and the caller re-runs the call eagerly.
"""
from __future__ import annotations

import time
import types

from .. import ir
from ..ops.draws import GAUSS_FREE, SlotRng, global_state, restore, restore_global, state_of
from .codegen import compile_plan
from .fused import MISS, Counts, fuse, keeps_last_slots
from .gpu_plan import compile_gpu_plan
from .heap import graph_bytes, keep_for
from .interpreter import AssertFailed, interpret
from .placement import place
from .tiering import Tier, fp_errors_raise

OK, GUARD_FAILED, ASSERT_FAILED, RAISED = "ok", "guard", "assert", "raised"
INLINE_PLAN_LINES = 200  # plans up to this many lines are pasted into the fused call function


class CompiledGraph:
    def __init__(self, gen, mode: str = "plan", native: str = "off", owner_counts=None, trial_at=None):
        self.gen = gen
        # the caller's fused.Counts: the fused function counts its graph calls there itself
        self.owner_counts = owner_counts
        self.graph = gen.graph
        self.guard = gen.guard
        self.outputs = gen.outputs
        self.assumptions = gen.assumptions
        # it asserts an outcome of a split branch or min/max (jit/variants.py): another graph of
        # its signature takes the calls of the other outcome
        self.splits = any(a.splits for a in gen.assumptions)
        # A graph with GPU nodes runs the registry's kernels with CuPy, as the GPU plan
        # (gpu_plan.py: the interpreter unrolled); the NumPy plan and the native tier are CPU code.
        self.devices = place(gen.graph)
        self.mode = mode
        if self.devices:
            self.plan = compile_gpu_plan(gen.graph, self.devices) if mode == "plan" else None
        else:
            self.plan = compile_plan(gen.graph) if mode == "plan" else None
            if self.plan is not None and self.plan.assumption is not None:  # the plan's own (floats.py)
                self.assumptions = self.assumptions + [self.plan.assumption]
            keep_for(graph_bytes(gen.graph))  # freed temporaries stay in the heap for the next call (heap.py)
        self.tier = Tier(gen.graph, native if self.plan is not None and not self.devices else "off")
        self.uses_rng = gen.uses_rng
        # its global draws leave the legacy Gaussian cache alone: the RNG's state is saved cheaply
        self.gauss_free = all(n.params["method"] in GAUSS_FREE for n in gen.graph.all_nodes()
                              if n.op == ir.RANDOM or (n.op == "draw_of" and n.params["rng"] is None))
        rngs = {id(n.params["rng"]): n.params["rng"] for n in gen.graph.all_nodes()
                if n.op in ("random_uniform", "draw_of") and n.params["rng"] is not None}.values()
        # the Generators it draws from: fixed objects, and those read from input slots (SlotRng)
        self.generators = [g for g in rngs if g.__class__ is not SlotRng]
        self.generator_slots = sorted({g.index for g in rngs if g.__class__ is SlotRng})
        self.counts = Counts()  # runs, seconds and slots of the fused function's calls
        self._keep_slots = keeps_last_slots()
        self._runs = 0  # the others' (try_run)
        self._time_s = 0.0
        self.last_s = 0.0  # try_run's last successful run, guards to result
        self._finish = gen.outputs.compile_finish()  # None when there are effects (the general finish)
        self._direct = self.plan is not None and not self.tier.pending  # no native tier to consult
        # the run count at which the caller measures the graph against eager (jit/choice.py), in a
        # cell the fused function reads (None: never); `choice`: the caller's record of that
        self.trial = None if trial_at is None else types.CellType(trial_at)
        self.choice = None
        self.fast = self._fused() if self._direct else None

    @property
    def runs(self) -> int:
        return self._runs + self.counts.calls.cell_contents

    @property
    def time_s(self) -> float:
        return self._time_s + self.counts.seconds.cell_contents

    @property
    def last_slots(self):
        """The slots of the latest successful run, for plan-vs-interpreter checks; kept only
        under JANUS_LIKE_VERIFY (fused.keeps_last_slots), else None."""
        return self.counts.last.cell_contents

    def _fused(self, deadline=None):
        """Guards + plan (or the adopted native function) + commit as one function
        (executor/fused.py), saving the RNG states a drawing graph uses after the guards and
        putting them back when the run fails, as `try_run` does. `deadline`: the plan's, while
        the native tier waits (see `body`)."""
        saves = self._rng_saves()
        if self.tier.run is not None:
            return fuse(self, self.tier.parts(), saves=saves, failures=False)  # (its TypeError: a mismatch, `body`)
        if len(self.plan.parts[0]) > INLINE_PLAN_LINES:
            # a long plan is called, not pasted: compiling its text a second time cost as much
            # as its first compile (14 ms of the LSTM step's first call), a frame ~0.1 µs a call
            return fuse(self, ([], "PLAN(S, True)" if self.plan.inplace else "PLAN(S)", {"PLAN": self.plan}),
                        deadline, self.plan.inplace, saves)
        return fuse(self, self.plan.parts, deadline, self.plan.inplace, saves,
                    (getattr(self.plan, "sites", {}), getattr(self.plan, "origin", None)))  # (the GPU plan: none)

    def _rng_saves(self):
        """The fused function's lines that save and restore this graph's RNG states (None: it
        draws from none); a policy step drawing its action (`np.random.choice(3, p=p)`) took
        the full path's ~1.3 µs more a call before."""
        if not (self.uses_rng or self.generators or self.generator_slots):
            return None
        save, back = [], []
        if self.uses_rng:
            save.append(f"_saved = _GLOBAL_STATE({self.gauss_free})")
            back.append("_RESTORE_GLOBAL(_saved)")
        if self.generators or self.generator_slots:  # (S[k]: the fused function's guard locals)
            gens = "(" + "".join(f"{g}, " for g in [f"_GENERATORS[{i}]" for i in range(len(self.generators))]
                                 + [f"S[{k}]" for k in self.generator_slots]) + ")"
            save.append(f"_states = [_STATE_OF(g) for g in {gens}]")
            back.append(f"for g, s in zip({gens}, _states): _RESTORE(g, s)")
        return save, back, {"_GLOBAL_STATE": global_state, "_RESTORE_GLOBAL": restore_global, "_STATE_OF": state_of,
                            "_RESTORE": restore, "_GENERATORS": self.generators}

    def body(self, slots):
        tier = self.tier
        if tier.run is not None and not fp_errors_raise():
            try:
                return tier(slots)
            except TypeError:  # argument types the native function was not compiled for
                tier.mismatch()
                if tier.run is None:  # given up: the plan from now on
                    self._direct = True
                    self.fast = self._fused()
        elif tier.pending:
            if tier.due(self.runs, self.time_s):
                self._adopt_keeping_rngs(tier, slots)
                if tier.plan is not None and tier.plan is not self.plan:  # fused elementwise groups from now on
                    self.plan, self.fast = tier.plan, None
                if tier.run is not None:  # native from now on, called from the fused function
                    self.fast = self._fused()
            if tier.run is None and not tier.pending:  # the plan stays (the translation or the
                self._direct = True  # compiled function was rejected): no tier to consult from now on
                self.fast = self._fused()
            elif tier.pending and self.fast is None and (wait := tier.wait_s(self.time_s)) is not None:
                # until the tier's decision is due, the fused function runs the plan (and may
                # write weight updates in place); past that plan time it hands calls back here
                self.fast = self._fused(deadline=self.counts.seconds.cell_contents + wait)
        if self.plan is not None:
            return self.plan(slots)
        return interpret(self.graph, slots, self.devices)

    def try_run(self, args, keep=False):
        """(status, payload): OK -> result; GUARD_FAILED -> assumption index (-1: a read raised);
        ASSERT_FAILED -> Assumption; RAISED -> exception. A run on these very `args` that failed
        just before (in the fused function, or here with `keep`: the full path comes next) is
        not run again: its failure is the result (a failed run's floating-point warnings and
        `np.seterrcall` calls showed twice before eager's, and its work was done twice)."""
        start = time.perf_counter()
        failed = self.counts.failure(args)
        if failed is not None:
            return (ASSERT_FAILED, failed.assumption) if isinstance(failed, AssertFailed) else (RAISED, failed)
        slots = self.guard(args)
        if slots.__class__ is int:
            return GUARD_FAILED, slots
        saved = global_state(self.gauss_free) if self.uses_rng else None
        gens = self.generators + [slots[k] for k in self.generator_slots] if self.generator_slots else self.generators
        saved_gens = [state_of(g) for g in gens] if gens else ()
        try:
            values = self.plan(slots) if self._direct else self.body(slots)
            prepared = self.outputs.prepare_effects(values, slots) if self.outputs.effects else []
        except Exception as exc:  # an assert, or an error (the eager re-run reports the user's error exactly)
            self._restore(saved, gens, saved_gens)
            if keep:
                self.counts.failed.cell_contents = (args, exc)
            return (ASSERT_FAILED, exc.assumption) if isinstance(exc, AssertFailed) else (RAISED, exc)
        if self._keep_slots:
            self.counts.last.cell_contents = slots
        result = self._finish(values, slots) if self._finish is not None else self.outputs.finish(values, slots, prepared)
        self._runs += 1
        self.last_s = elapsed = time.perf_counter() - start
        self._time_s += elapsed
        return OK, result

    def _adopt_keeping_rngs(self, tier, slots):
        """The tier runs the plan and its candidates on this call's slots to compare and time
        them: a graph that draws would advance the user's generators (and NumPy's global one)
        each time, so the call itself, run after, would draw other numbers than eager. Their
        states are put back after."""
        saved = global_state(self.gauss_free) if self.uses_rng else None
        gens = self.generators + [slots[k] for k in self.generator_slots] if self.generator_slots else self.generators
        saved_gens = [state_of(g) for g in gens]
        try:
            tier.adopt(self.plan, slots, rewind=lambda: self._restore(saved, gens, saved_gens))
        finally:
            self._restore(saved, gens, saved_gens)

    def _restore(self, saved, gens, saved_gens):
        if saved is not None:
            restore_global(saved)
        for g, state in zip(gens, saved_gens):
            restore(g, state)


__all__ = ["CompiledGraph", "Counts", "fp_errors_raise", "AssertFailed", "interpret", "compile_plan", "MISS", "OK", "GUARD_FAILED", "ASSERT_FAILED",
           "RAISED", "ir"]
