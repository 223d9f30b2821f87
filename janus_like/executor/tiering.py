"""Choosing, per graph, between the NumPy plan and a Numba-compiled function (`native.py`).

Policies (`jit(native=...)`, or the JANUS_LIKE_NATIVE environment variable):

- "off": the NumPy plan only.
- "auto" (the default in reassociating mode, when Numba is installed): rent-or-buy. A graph
  keeps running as a plan until the time it has spent there reaches the estimated cost of
  compiling it natively (small when Numba's disk cache already holds it); then it is compiled
  once. Whatever the workload, the time lost to compiling is at most the time the plan had
  already cost, and long runs get the native speed. Graphs over `AUTO_MAX_NODES` are left to
  the plan (Numba's compile time grows faster than linearly with function size: minutes for
  a thousand nodes) unless an earlier process left them in the disk cache.
- "always": compile as soon as the graph first runs (benchmarks, long jobs known in advance),
  with the same size limit.

Adopting is measured, never assumed: the native function runs on the same inputs as the plan,
must agree with it (types, shapes, dtypes, and values within float32 reassociation tolerance),
and replaces it only when it is faster on those inputs. Every decision is kept as text in
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


def resolve_policy(native_opt, reassociate: bool) -> str:
    """The policy for a jit: the argument, else JANUS_LIKE_NATIVE, else "auto"; always "off"
    in exact mode (native code sums and rounds differently) or without Numba."""
    policy = native_opt if native_opt is not None else os.environ.get("JANUS_LIKE_NATIVE", "auto")
    if policy is True:
        policy = "always"
    elif policy is False:
        policy = "off"
    if policy not in POLICIES:
        raise ValueError(f"native= must be one of {POLICIES} (or True/False), got {policy!r}")
    if not reassociate or not native.available():
        return "off"
    return policy


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
        self.policy = policy
        self.run = None  # the adopted native function
        self.pending = policy != "off"
        self.note = "" if policy == "off" else "native: pending"
        self.compile_s = 0.0
        self._budget = None  # plan seconds after which "auto" compiles
        self._convert = None
        self.mismatches = 0

    def due(self, plan_runs: int, plan_s: float) -> bool:
        if plan_runs < 3 and self.policy == "auto":
            return False
        if self._budget is None:
            try:
                src = native.translate(self.graph)[0]
            except native.NativeUnsupported as exc:
                self._reject(f"unsupported: {exc}")
                return False
            except Exception as exc:  # a translator bug must never become the user's error: the plan runs
                self._reject(f"translation failed: {type(exc).__name__}: {exc}")
                return False
            nodes, cached = len(self.graph.nodes), _is_cached(src)
            if nodes > AUTO_MAX_NODES and not cached:
                self._reject(f"{nodes} nodes: over the limit of {AUTO_MAX_NODES} (compiling would take minutes)")
                return False
            self._budget = estimate_compile_s(nodes, cached)
        return self.policy == "always" or plan_s >= self._budget

    def wait_s(self, plan_s: float):
        """Plan seconds left before `due` holds ("auto", once its budget is known), or None."""
        if self.policy != "auto" or self._budget is None:
            return None
        return max(0.0, self._budget - plan_s)

    def adopt(self, plan, slots):
        """Compile, check against `plan` on `slots`, time both, keep the faster."""
        self.pending = False
        start = time.perf_counter()
        estimate = estimate_compile_s(len(self.graph.nodes), False)
        if estimate > 5:
            print(f"janus_like: compiling graph {self.graph.name} ({len(self.graph.nodes)} nodes) with Numba "
                  f"(up to ~{estimate:.0f} s, once; cached on disk)", file=sys.stderr, flush=True)
        try:
            run = native.compile_native(self.graph)
            got = run(slots)
        except native.NativeUnsupported as exc:
            return self._reject(f"unsupported: {exc}")
        except Exception as exc:  # Numba's typing errors, a stale cache, an assert on these inputs
            return self._reject(f"compile failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
        finally:
            self.compile_s = time.perf_counter() - start
        want = plan(slots)
        convert, why = _converters(got, want)
        if why:
            return self._reject(f"disagrees with the plan: {why}")
        run.dispatcher.disable_compile()  # other argument types later: the plan runs those calls
        t_plan, t_native = _time(plan, slots), _time(run, slots)
        if t_native > MIN_GAIN * t_plan:
            return self._reject(f"slower ({t_native * 1e6:.0f} µs vs {t_plan * 1e6:.0f} µs as plan)")
        self.run, self._convert = run, convert
        self.note = (f"native: on ({t_native * 1e6:.0f} µs vs {t_plan * 1e6:.0f} µs as plan; "
                     f"compiled in {self.compile_s:.1f} s)")

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


def _time(fn, slots, reps=5):
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn(slots)
        best = min(best, time.perf_counter() - t)
    return best


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
