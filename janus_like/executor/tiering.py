"""Choosing, per graph, between the NumPy plan and what Numba compiles from it.

Two candidates, tried in this order, each once its stage is due:

1. the plan with its elementwise groups fused into Numba loops (`fusion.py`): a second or so
   to compile, bit for bit the plan's values;
2. the whole graph as one native function (`native.py`): seconds to minutes, values within
   float32 reassociation tolerance (reassociating mode only).

An adopted fused plan replaces the plan, and the native function is then measured against it.

Policies (`jit(native=...)`, or the JANUS_LIKE_NATIVE environment variable):

- "off": the NumPy plan only.
- "auto" (the default in reassociating mode, when Numba is installed): rent-or-buy. A graph
  keeps running as a plan until the time it has spent there reaches the estimated cost of
  compiling the next candidate (and those before it; small when Numba's disk cache already
  holds it); then it is compiled once. Whatever the workload, the time lost to compiling is
  at most the time the plan had already cost, and long runs get the native speed. Graphs over
  `AUTO_MAX_NODES` are left to the plan (Numba's compile time grows faster than linearly with
  function size: minutes for a thousand nodes) unless an earlier process left them in the
  disk cache.
- "always": compile as soon as the graph first runs (benchmarks, long jobs known in advance),
  with the same size limit.

In exact mode (`reassociate=False`) an explicit `native=` makes these "auto-exact" and
"always-exact": the fused plan only.

Adopting is measured, never assumed: a candidate runs on the same inputs as the plan, must
agree with it (the fused plan bit for bit; the native function in types, shapes, dtypes, and
values within float32 reassociation tolerance), and replaces it only when it is faster on those
inputs (by MIN_GAIN). Every decision is kept as text in
`note` for `explain()` and the reports.
"""
from __future__ import annotations

import glob
import hashlib
import os
import sys
import time

import numpy as np

from .. import ir
from . import native

try:  # NumPy 2 keeps the floating-point error state in a context variable: a new state is a new object
    from numpy._core.umath import _extobj_contextvar as _FP_STATE
except ImportError:  # pragma: no cover - other NumPy versions: ask every time
    _FP_STATE = None
_fp_seen = [object(), False]  # (state object, whether some error raises under it)


def fp_errors_raise() -> bool:
    """True when some floating-point error is set to raise (np.seterr / np.errstate). Native
    code raises none, so such calls run the plan. np.geterr() costs ~1 us; this asks it only
    when the state object changed."""
    if _FP_STATE is None:
        return "raise" in np.geterr().values()
    state = _FP_STATE.get()
    if state is not _fp_seen[0]:
        _fp_seen[0], _fp_seen[1] = state, "raise" in np.geterr().values()
    return _fp_seen[1]


POLICIES = ("off", "auto", "always")
AUTO_MAX_NODES = 600
MIN_GAIN = 0.9  # native must take at most this fraction of the plan's time
# compiling a plan's fused groups: importing Numba, and at most this per group (~0.1-0.3 s
# measured for an Adam update's loop; groups of one structure share a kernel)
FUSION_S, FUSION_GROUP_S = 0.6, 0.3


def resolve_policy(native_opt, reassociate: bool) -> str:
    """The policy for a jit: the argument, else JANUS_LIKE_NATIVE, else "auto"; "off" without
    Numba. In exact mode the whole-graph native function (which sums and rounds differently)
    is never a candidate, and the fused elementwise groups (bit for bit the plan's values) only
    when `native` is given: the policy is then "auto-exact" or "always-exact"."""
    explicit = native_opt is not None
    policy = native_opt if explicit else os.environ.get("JANUS_LIKE_NATIVE", "auto")
    if policy is True:
        policy = "always"
    elif policy is False:
        policy = "off"
    if policy not in POLICIES:
        raise ValueError(f"native= must be one of {POLICIES} (or True/False), got {policy!r}")
    if not native.available() or (not reassociate and not explicit):
        return "off"
    return policy if reassociate or policy == "off" else f"{policy}-exact"


def estimate_compile_s(nodes: int, cached: bool) -> float:
    """Seconds to compile a graph of `nodes` nodes (fitted on this project's benchmark graphs:
    70 nodes ~3 s, 329 ~36 s, 1,183 ~10 min); ~0.6 s when Numba's disk cache has it."""
    if cached:
        return 0.6
    return 2.0 + 0.03 * nodes + 4.5e-4 * nodes * nodes


def _is_cached(src: str) -> bool:
    digest = hashlib.sha256(src.encode()).hexdigest()[:20]
    return bool(glob.glob(os.path.join(native.cache_dir(), "__pycache__", f"jl_native_{digest}*.nbi")))


class Tier:
    """The native state of one compiled graph."""

    def __init__(self, graph: ir.Graph, policy: str):
        self.graph = graph
        self.policy, _, exact = policy.partition("-")
        self.exact = bool(exact)  # bit-exact candidates only (`resolve_policy`)
        policy = self.policy
        self.run = None  # the adopted native function
        self.pending = policy != "off"
        self.note = "" if policy == "off" else "native: pending"
        self.compile_s = 0.0
        self._budget = None  # plan seconds after which "auto" compiles
        self._convert = None
        self.mismatches = 0
        self.plan = None  # the adopted plan with fused elementwise groups (executor/fusion.py)
        self._stages = []  # the candidates left: (name, compile seconds) (`_estimate`)
        self._why = []  # why candidates were not used

    def due(self, plan_runs: int, plan_s: float) -> bool:
        if plan_runs < 3 and self.policy == "auto":
            return False
        if self._budget is None:
            self._budget = self._estimate()
            if self._budget is None:
                return False
        return self.policy == "always" or plan_s >= self._budget

    def _estimate(self):
        """Plan seconds after which the first candidate is compiled, with the candidates in
        `_stages` as (name, compile seconds): the plan with fused elementwise groups
        (executor/fusion.py, when it has any; a second or so), then the whole-graph native
        function (when the translator takes the graph; seconds to minutes), each due once the
        plan time reaches the compile seconds of it and of the stages before it. None, and
        the reasons noted, when there is neither."""
        from .fusion import fusable_groups

        why = self._why
        try:
            if groups := len(fusable_groups(self.graph)):
                self._stages.append(("fused", FUSION_S + FUSION_GROUP_S * groups))
        except Exception as exc:  # a bug must never become the user's error: the plan runs
            why.append(f"fusion failed: {type(exc).__name__}: {exc}")
        if self.exact:
            why.append("unsupported: reassociate=False (whole-graph native code rounds differently)")
        else:
            self._native_stage(why)
        if not self._stages:
            self._reject("; ".join(why))
            return None
        return self._stages[0][1]

    def _native_stage(self, why):
        try:
            src = native.translate(self.graph)[0]
        except native.NativeUnsupported as exc:
            return why.append(f"unsupported: {exc}")
        except Exception as exc:  # as for the fusion
            return why.append(f"translation failed: {type(exc).__name__}: {exc}")
        nodes, cached = len(self.graph.nodes), _is_cached(src)
        if nodes > AUTO_MAX_NODES and not cached:
            return why.append(f"{nodes} nodes: over the limit of {AUTO_MAX_NODES} (compiling would take minutes)")
        self._stages.append(("native", estimate_compile_s(nodes, cached)))

    def wait_s(self, plan_s: float):
        """Plan seconds left before `due` holds ("auto", once its budget is known), or None."""
        if self.policy != "auto" or self._budget is None:
            return None
        return max(0.0, self._budget - plan_s)

    def adopt(self, plan, slots, rewind=None):
        """Compile the next candidate (`_estimate`), check it against `plan` on `slots`, time
        both, keep the faster: the native function (`run`) or the plan with fused groups
        (`plan`, which the next candidate is then measured against). `rewind()` puts back the
        RNG states the candidate's run advanced, before the plan's run it is compared with
        (CompiledGraph: a graph that draws)."""
        if self._budget is None:  # (called before `due`)
            self._budget = self._estimate()
            if self._budget is None:
                return None
        name, _seconds = self._stages.pop(0)
        self.pending = bool(self._stages)
        start = time.perf_counter()
        candidate = self._native_candidate if name == "native" else self._fused_candidate
        found = candidate(plan, slots, rewind or _nothing)
        self.compile_s += time.perf_counter() - start
        t_plan = _time(plan, slots)
        if found is not None and found[0] <= MIN_GAIN * t_plan:
            t, chosen = found
            done = f"{t * 1e6:.0f} µs vs {t_plan * 1e6:.0f} µs as plan; compiled in {self.compile_s:.1f} s"
            if name == "native":
                self.run, self._convert = chosen
                self.pending = False
                self.note = f"native: on ({done})"
            else:
                self.plan = chosen
                groups = f"{chosen.fused} group{'s' * (chosen.fused > 1)}"
                self.note = f"native: fused elementwise kernels, {groups} ({done})"
        elif found is not None:
            kind = "native" if name == "native" else "fused plan"
            self._why.append(f"{kind} slower ({found[0] * 1e6:.0f} µs vs {t_plan * 1e6:.0f} µs as plan)")
        if self._stages:
            self._budget += self._stages[0][1]
        elif self.plan is None and self.run is None:
            self._reject("; ".join(self._why))
        elif self.plan is not None and self._why:
            self.note += f"; whole-graph native not used ({'; '.join(self._why)})"

    def _native_candidate(self, plan, slots, rewind):
        """(seconds a run, (function, output converters)), or None with the reason noted."""
        why = self._why
        estimate = estimate_compile_s(len(self.graph.nodes), False)
        if estimate > 5:
            print(f"janus_like: compiling graph {self.graph.name} ({len(self.graph.nodes)} nodes) with Numba "
                  f"(up to ~{estimate:.0f} s, once; cached on disk)", file=sys.stderr, flush=True)
        try:
            run = native.compile_native(self.graph)
            got = run(slots)
        except native.NativeUnsupported as exc:
            return why.append(f"unsupported: {exc}")
        except Exception as exc:  # Numba's typing errors, a stale cache, an assert on these inputs
            return why.append(f"compile failed: {_first_line(exc)}")
        rewind()  # (the plan draws the numbers the candidate drew)
        convert, problem = _converters(got, plan(slots))
        if problem:
            return why.append(f"disagrees with the plan: {problem}")
        run.dispatcher.disable_compile()  # other argument types later: the plan runs those calls
        return _time(run, slots), (run, convert)

    def _fused_candidate(self, plan, slots, rewind):
        """(seconds a run, the plan with fused groups), or None with the reason noted."""
        from .codegen import compile_plan

        why = self._why
        try:
            fused = compile_plan(self.graph, fuse=True)
            got = fused(slots)
        except Exception as exc:  # as for the native function: the plan stays
            return why.append(f"fusion failed: {_first_line(exc)}")
        rewind()
        problem = _identical(got, plan(slots))
        if problem:
            return why.append(f"fused plan disagrees with the plan: {problem}")
        return _time(fused, slots), fused

    def __call__(self, slots):
        values = self.run(slots)
        for i, c in self._convert:
            values[i] = c(values[i])
        return values

    def parts(self):
        """The native call as a body for the fused call function (executor/fused.py): (lines,
        result expression, names), or None where the outputs are not all nodes. The adopted
        function is called with the slots directly (what `run` does per call; only a slot the
        guards do not fix to an array with axes goes through `native.as_scalar`). A raise of
        any kind there, from the dispatcher (other argument types: compilation is disabled) or
        from an assert, makes the fused function miss, and the full path decides as before; so
        does an FP error state that raises, which native code would not honour."""
        run = self.run
        if run is None or not run.all_nodes:
            return None
        ranked = {n.params["slot"] for n in self.graph.nodes
                  if n.op == ir.INPUT and n.aval is not None and len(n.aval[0]) > 0}
        env = {"NATIVE": run.dispatcher, "FP_RAISE": fp_errors_raise, "_SCALAR": native.as_scalar}
        args = []
        for k, (kind, v) in enumerate(run.getters):
            if kind == "slot":
                args.append(f"S[{v}]" if v in ranked else f"_SCALAR(S[{v}])")
            else:
                env[f"NA{k}"] = v
                args.append(f"NA{k}")
        convert = dict(self._convert)
        outs = []
        for i in range(len(self.graph.outputs)):
            if i in convert:
                env[f"NC{i}"] = convert[i]
                outs.append(f"NC{i}(out[{i}])")
            else:
                outs.append(f"out[{i}]")
        lines = ["    if FP_RAISE(): return MISS", f"    out = NATIVE({', '.join(args)})"]
        return lines, f"[{', '.join(outs)}]", env

    def mismatch(self):
        """A call whose argument types the native function was not compiled for ran as a plan;
        when that keeps happening, stop trying (each try costs a dispatch error)."""
        self.mismatches += 1
        if self.mismatches >= 10:
            self.run = None
            self._reject("argument types vary between calls")

    def _reject(self, why):
        self.pending = False
        self.note = f"native: not used ({why})"
        return None


def _first_line(exc) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def _nothing():
    pass


def _time(fn, slots, reps=5):
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn(slots)
        best = min(best, time.perf_counter() - t)
    return best


def _identical(got, want):
    """None when the fused plan's outputs are the plan's, bit for bit (NaNs equal), else what
    differs: its kernels compute the same correctly rounded operations in the same dtypes."""
    if len(got) != len(want):
        return f"{len(got)} outputs vs {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if type(g) is not type(w):
            return f"output {i} is {type(g).__name__}, plan gives {type(w).__name__}"
        if isinstance(w, (np.ndarray, np.generic)):
            if g.shape != w.shape or g.dtype != w.dtype:
                return f"output {i}: {g.dtype}{list(g.shape)} vs {w.dtype}{list(w.shape)}"
            if not np.array_equal(g, w, equal_nan=w.dtype.kind in "fc"):
                return f"output {i} differs"
        elif g is not w and g != w and not (g != g and w != w):
            return f"output {i}: {g!r} vs {w!r}"
    return None


def _converters(got, want):
    """([(output index, converter)], problem or None): native outputs turned into the plan's
    Python types (Numba returns a float32 scalar as a Python float), after checking shapes,
    dtypes and values."""
    if len(got) != len(want):
        return None, f"{len(got)} outputs vs {len(want)}"
    convert = []
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, np.ndarray):
            if not isinstance(g, np.ndarray):
                convert.append((i, lambda v, dt=w.dtype: np.asarray(v, dt)))
                g = np.asarray(g, w.dtype)
        elif isinstance(w, (np.generic, bool, int, float)):
            if type(g) is not type(w):
                convert.append((i, type(w)))
                g = type(w)(g)
        elif g is not w and g != w:
            return None, f"output {i} is {type(g).__name__}, plan gives {type(w).__name__}"
        if isinstance(w, (np.ndarray, np.generic)):
            if np.shape(g) != np.shape(w) or np.asarray(g).dtype != np.asarray(w).dtype:
                return None, (f"output {i}: {np.asarray(g).dtype}{list(np.shape(g))} vs "
                              f"{np.asarray(w).dtype}{list(np.shape(w))}")
            a, b = np.asarray(g), np.asarray(w)
            if b.dtype.kind in "fc":
                scale = float(np.max(np.abs(b[np.isfinite(b)]), initial=1.0))
                if not np.allclose(a, b, rtol=1e-3, atol=1e-5 * scale, equal_nan=True):
                    return None, f"output {i} differs by up to {float(np.nanmax(np.abs(a - b))):.3g}"
            elif not np.array_equal(a, b):
                return None, f"output {i} differs"
        elif g != w:
            return None, f"output {i}: {g!r} vs {w!r}"
    return convert, None
