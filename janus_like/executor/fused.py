"""One generated function per graph for the steady-state call: guards, plan, commit, result.

A graph's call used to go through four Python functions (the call path, the guard program, the
plan and the generated finish), each with its own frame and its own bookkeeping. `fuse` pastes
the three generated bodies into one function (on an RL policy evaluated once per environment
step this measured 0.2 µs of a 15 µs call: the frames were cheap; the guards' checks, the
result Tensor and the stats remain):

    def call(args):
        _fail = None                                    # (the last call's failure, untaken)
        t0 = _pc()
        try:
            s0 = args[0]
            if not (type(s0) is K0): return MISS        # a guard: the full path decides
            S = (s0, ...)
        except Exception:
            return MISS
        try:
            v3 = np.matmul(s1, s2)                      # the plan, its S[k] the guard's locals
            values = [v3]
        except Exception as _e:
            _fail = (args, _e)                          # an assert or an error: the full path
            return MISS                                 # reports it (without running it again)
        _slots = S
        _t0 = _wrap(values[0])                          # the finish, the same way: results
        s0._data = values[0]                            # built once, then the commit
        R = _t0
        e = _pc() - t0
        _runs += 1; _secs += e                          # this graph's runs and time
        _calls += 1; _calls_s += e                      # the JitFunction's graph calls
        return R

Nothing user-visible happens before the commit, so returning MISS and letting the full path
(`CompiledGraph.try_run`) take the call gives exactly what it gives without this function: the
same fallback, the same error, the same statistics. A run that failed leaves its exception in a
cell for the full path, which takes it (`Counts.failure`) instead of running the graph a second
time: a failed run's floating-point warnings and `np.seterrcall` calls happened twice before the
eager run, and its work was done twice. Graphs with no RNG state to save and a
compiled finish qualify. The body is the plan, or, once the native tier has adopted a function
for the graph, a call to it (`Tier.parts`): there the fused function replaced four Python
layers of argument handling, and a native RL policy call went from 8.2 to 5.7 µs (hand NumPy
9.7 µs). The slot values are the guard's locals (`s3`), not the tuple's items (`S[3]`).

The counts are closure variables (`nonlocal`), not attributes or dictionary items: their cells
are the graph's `Counts` and its JitFunction's, handed to every function fused for them, and
the owners read (and fold) them when asked (`CompiledGraph.runs`, `JitFunction.counters`).
Seven attribute and dictionary updates a call measured 0.7-1.1 µs of a 9.3 µs RL policy call;
four cell updates cost a fraction of that.
"""
from __future__ import annotations

import os
import re
import time
import types

from . import located

MISS = object()  # the call did not complete as a graph: take the full path



def keeps_last_slots() -> bool:
    """Whether a graph keeps its latest successful run's slots (`CompiledGraph.last_slots`, for
    the test suite's plan-against-interpreter checks: JANUS_LIKE_VERIFY). Otherwise it keeps
    none: the slots hold the call's arguments and the state it read, which eager code lets go
    when the call returns (a parameter array the step replaced is freed, a weak reference to
    it dies), and one set per cached graph would keep their memory."""
    return os.environ.get("JANUS_LIKE_VERIFY", "") not in ("", "0")

class Counts:
    """Calls and seconds counted in closure cells by fused functions (and `last`, the slots of
    the latest run; `failed`, (args, exception) of a run that failed, for the full path:
    `failure`): `take()` returns the counts so far and starts again from zero."""

    __slots__ = ("calls", "seconds", "last", "failed")

    def __init__(self):
        self.calls, self.seconds, self.last = types.CellType(0), types.CellType(0.0), types.CellType(None)
        self.failed = types.CellType(None)

    def failure(self, args):
        """The exception of the fused function's run on this very `args` tuple, which failed
        just before (None: it did not); taken once."""
        failed = self.failed.cell_contents
        if failed is None:
            return None
        self.failed.cell_contents = None
        return failed[1] if failed[0] is args else None

    def take(self):
        calls, seconds = self.calls.cell_contents, self.seconds.cell_contents
        if calls:
            self.calls.cell_contents, self.seconds.cell_contents = 0, 0.0
        return calls, seconds


_GUARD_EXIT = re.compile(r": return -?\d+$")
_NAMES = re.compile(r"s\d+")


def fuse(cg, body, deadline=None, own=False, saves=None, located_by=None, failures=True):
    """The fused call function for CompiledGraph `cg` running `body` (the plan's `parts`, or
    the adopted native function's from `Tier.parts`: lines, result expression, names), or None
    when a piece is missing (a general finish, the interpreter) or the generated namespaces
    would clash. With a `deadline` it returns MISS, at once, for every call once its graph's
    counted seconds reached it (the native tier's decision is due: CompiledGraph.body); without
    one, when the graph has a `trial` cell, once its runs reached the cell's count (a measurement
    against eager is due: jit/choice.py). `own`:
    the body is a plan with weight updates written in place (executor/blas.py), which it may
    write from here. `saves`: (lines that save RNG states after the guards, lines that put them
    back when the body fails, their names) for a graph that draws (`CompiledGraph._rng_saves`).
    `located_by`: the plan's (line sites, origin): the body reports the user's lines (located.py).
    `failures`: a failed run's exception is the full path's (`Counts.failure`); not for a body
    whose failure means something else (the native function's TypeError: `CompiledGraph.body`)."""
    pieces = [getattr(f, "parts", None) for f in (cg.guard, cg._finish)]
    if None in pieces or body is None:
        return None
    (guard_lines, guard_ret, guard_env), (finish_lines, finish_env) = pieces
    body_lines, body_ret, body_env = body
    env = {"MISS": MISS, "_pc": time.perf_counter}
    save_lines, restore_lines, save_env = saves or ((), (), {})
    for names in (body_env, guard_env, finish_env, save_env):
        for k, v in names.items():
            if k.startswith("__") or k in ("plan", "guard", "finish"):
                continue
            if k in env and env[k] is not v:
                return None
            env[k] = v
    if not finish_lines or not finish_lines[-1].startswith("return "):
        return None
    # the body and the finish read slot k as `S[k]` / `slots[k]`: here it is the guard's local
    slot_names = _NAMES.findall(guard_ret)

    def local(lines, tuple_name):
        pattern = re.compile(rf"\b{tuple_name}\[(\d+)\]")
        return [pattern.sub(lambda m: slot_names[int(m.group(1))], line) for line in lines]

    cells = {"_runs": cg.counts.calls, "_secs": cg.counts.seconds, "_slots": cg.counts.last, "_fail": cg.counts.failed}
    trial = getattr(cg, "trial", None) if deadline is None else None
    if trial is not None:  # the run count at which the JIT measures this graph against eager (jit/choice.py)
        cells["_trial_at"] = trial
    owner = cg.owner_counts
    if owner is not None:  # the JitFunction's graph calls, so that its __call__ need not count
        cells.update(_calls=owner.calls, _calls_s=owner.seconds)
    src = ["def call(args):", f"    nonlocal {', '.join(cells)}", "    _fail = None"]
    if deadline is not None:
        env["DEADLINE"] = deadline
        src.append("    if _secs >= DEADLINE: return MISS")
    if trial is not None:
        src.append("    if _runs >= _trial_at: return MISS")
    src.append("    t0 = _pc()")
    keep = keeps_last_slots()
    if own and keep:  # the last run's slots would hold the weights the plan may write in place (blas.py)
        src.append("    _slots = None")
    src.append("    try:")
    src += ["        " + _GUARD_EXIT.sub(": return MISS", line) for line in guard_lines]
    src += [f"        S = {guard_ret}", "    except Exception:", "        return MISS"]
    src += ["    " + line for line in local(save_lines, "S")]
    src.append("    try:")
    if own:
        src.append("        _own = True")
    body_at = len(src)
    src += ["    " + line for line in local(body_lines, "S")]
    src += [f"        values = {local([body_ret], 'S')[0]}", "    except Exception as _e:"]
    src += ["        " + line for line in local(restore_lines, "S")]
    src += ["        _fail = (args, _e)"] if failures else []
    src += ["        return MISS"] + ["    _slots = S"] * keep
    finish = local(finish_lines, "slots")
    src += ["    " + line for line in finish[:-1]]
    src += [f"    R = {finish[-1][len('return '):]}", "    e = _pc() - t0", "    _runs += 1", "    _secs += e"]
    if owner is not None:
        src += ["    _calls += 1", "    _calls_s += e"]
    src += ["    return R"]
    text = "\n".join(src) + "\n"
    # compiled inside a function that owns the names, so that `call` reads them from cells;
    # the function is then rebuilt over the owners' cells
    outer = "def _outer():\n    " + " = ".join(cells) + " = None\n" + "".join("    " + line + "\n" for line in src) + \
        "    return call\n"
    sites, origin = located_by or ({}, None)
    line_sites = located.sites_of_text(src, {body_at + i: site for i, site in sites.items()}, 2)
    exec(located.compile_at(outer, line_sites, origin, f"<janus_like call {cg.graph.name}>", env), env)
    code = env.pop("_outer")().__code__
    call = types.FunctionType(code, env, "call", None, tuple(cells[name] for name in code.co_freevars))
    call.source = text
    return call
