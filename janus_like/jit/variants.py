"""One graph per outcome of a branch that cannot be a conditional node (a mixin of
`function.JitFunction`).

A branch on a graph value whose two outcomes both occur becomes a conditional node. Some
branches cannot be one: `if step % 100 == 0: history.append(loss); print(...)` writes a list
and prints, which a conditional node cannot hold, and a Python value that differs between the
branches cannot be merged. Such a branch is *split*: each graph of the signature asserts one
outcome and is straight-line code for it; a call that fails a split assert tries the signature's
other graphs, and when none takes the call, a graph for the outcomes the call takes is generated
(at most MAX_VARIANTS a signature). So a training step that logs every 100 steps runs as two
graphs instead of eagerly. An outcome whose graph cannot be generated runs eagerly on the calls
that take it; the others keep their graphs.
"""
from __future__ import annotations

import os

from .. import executor as ex
from .assumptions import Fallback

MAX_SPLITS = 3  # branches split per signature
MAX_VARIANTS = 8  # graphs per signature made by splitting


def is_split(assumption) -> bool:
    """Whether a failed assert is a split branch's (the call may suit another graph)."""
    return getattr(assumption, "splits", False)


class VariantsMixin:
    def _split(self, entry, exc) -> bool:
        """Generating failed because of the conditional node of branch `exc.branch`: generate
        that branch (or two-argument `min`/`max`, py_numbers.speculate_pick) once per outcome from
        the next call on. False when it cannot be split."""
        key = exc.branch
        if key is None or key in entry.split or len(entry.split) >= MAX_SPLITS:
            return False
        entry.split[key] = None
        entry.relaxed.discard(("branch", key))
        self._log("regen", f"branch at {exc.site} cannot be a conditional node ({exc.detail}): one graph per outcome")
        return True

    def _takes_over(self, hot, g) -> bool:
        """Whether graph g, which took a call the hot graph missed, is tried first from now on.
        Yes, unless the hot graph asserts a split outcome: then only when g took the previous
        call the hot graph missed too, and the hot graph took none since (a branch predictor's
        hysteresis; `_pending` remembers the first). A clip that binds one step in four then
        costs one miss in four (the step of the other outcome), not two (that step and the one
        after)."""
        if not hot.splits:
            return True
        mark = (g, hot.runs)
        if self._pending == mark:
            self._pending = None
            return True
        self._pending = mark
        return False

    def _variant_failed(self, entry, exc, forced) -> bool:
        """Generating the graph for some outcomes of the split branches failed: those outcomes
        run eagerly. When it was the signature's first graph, the next call's generation takes
        another outcome of one branch. False when no split outcome was involved, or every such
        other outcome failed too (the signature then runs eagerly)."""
        chosen = forced if forced is not None else getattr(exc, "forced", None)
        if not chosen:
            return False
        entry.split_failed.add(frozenset(chosen.items()))
        if forced is not None:
            return True
        for key, outcome in chosen.items():
            other = {**chosen, key: not outcome}
            if frozenset(other.items()) not in entry.split_failed:
                entry.split.update(other)
                return True
        return False

    def _other_outcome(self, entry, misses, args, guard_failure=None):
        """Every graph of the signature failed a split branch's assert or a guard: the graph for
        the outcomes this call takes (each miss names one), generated unless it exists, failed to
        generate, or the signature has its MAX_VARIANTS graphs; else eagerly. When the graph for
        those outcomes exists and its guard rejected the call (`guard_failure`: a step counter's
        value), that counts as the guard failure it is: the value relaxes as it would without
        the split, and the graph made after it takes the call."""
        g, assumption = misses[0]
        forced = dict(g.gen.forced)
        for _ in range(len(entry.split)):
            forced[assumption.relax[1]] = not assumption.expected
            twins = [h for h in entry.graphs if h.gen.forced == forced]
            if guard_failure is not None and guard_failure[0] in twins:
                self.counters["guard_failures"] += 1
                if self._guard_failed(entry, *guard_failure, args):
                    return self._eager(args)  # (counted) until the value has failed regen_after times
                twins, guard_failure = [], None  # relaxed, its graphs dropped; or a new structure
            if (frozenset(forced.items()) in entry.split_failed or len(entry.graphs) >= MAX_VARIANTS
                    or twins or self._cache_full() is not None):
                break
            try:
                new = self._generate(entry, args, forced)
            except Exception as exc:  # as in _dispatch: eager decides whose error it is
                if os.environ.get("JANUS_LIKE_DEBUG"):
                    raise
                return self._generation_raised(entry, exc, args)
            if new is None:  # could not be generated: recorded in split_failed
                return self._eager(args)
            status, payload = new.try_run(args)
            if status == ex.ASSERT_FAILED and is_split(payload):
                assumption = payload  # another split branch goes the other way too: flip it as well
                continue
            return self._first_run(entry, new, args, status, payload)
        self.counters["fallbacks"] += 1
        self._note(Fallback("assumption", f"{assumption.failure_text()} (no graph for this call's outcomes)",
                            assumption.site))
        return self._eager(args)
