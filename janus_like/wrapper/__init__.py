"""The transparent wrapper: run an unmodified script; its hot functions get jitted on their own.

Input: a Python script (plain NumPy or janus_like) and its argv. Output: the script's own
effects, unchanged (same stdout, same final state), plus a `Run` record for reports.

    rewrite   (load time)  each top-level function and method gets a counting prologue
    runtime   (run time)   hot + looks like array code -> janus_like.jit(clean copy);
                           hot otherwise -> the prologue is removed (clean code swapped back)
    importer               the same for modules imported from the script's own directory

    >>> import janus_like
    >>> g = janus_like.run_path("examples/char_rnn_numpy.py", report="out/")  # doctest: +SKIP
    >>> g.run.functions()[0].jf.stats()["graph_calls"] > 0                   # doctest: +SKIP
    True
"""
from __future__ import annotations

import builtins
import importlib.machinery
import os
import sys
import time
import types
from dataclasses import dataclass, field

from .importer import ImportHook, compile_rewritten
from .rewrite import RT
from .runtime import HotFunction, Runtime

DEFAULT_HOT_AFTER = 2


@dataclass
class Run:
    """What happened in one wrapped run (input to `janus_like.report`)."""

    path: str
    argv: list
    jit: bool
    options: dict
    runtime: Runtime | None
    registry_start: int
    t_start: float
    t_end: float = 0.0
    started_at: float = field(default_factory=time.time)
    exit_status: object = None  # None (ran to the end), an int from SystemExit, or "exception"
    error: str | None = None

    @property
    def wall_s(self) -> float:
        return self.t_end - self.t_start

    def functions(self) -> list:
        """The HotFunctions the wrapper created, in the order they became hot."""
        return list(self.runtime.hot_functions) if self.runtime else []

    def user_jits(self) -> list:
        """JitFunctions the script created itself (`janus_like.jit(...)` in its own code)."""
        from ..jit.function import _REGISTRY

        mine = {id(h.jf) for h in self.functions()}
        return [j for j in _REGISTRY[self.registry_start:] if id(j) not in mine]


class ScriptGlobals(dict):
    """The script's final globals, like `runpy.run_path` returns; `.run` is the `Run` record."""

    run: Run


def run_path(path, argv=None, *, report=None, warmup: int = 3, hot_after: int = DEFAULT_HOT_AFTER,
             include=("*",), exclude=(), jit: bool = True, demote_after: int = 5):
    """Run the script at `path` as `__main__` (like `runpy.run_path`), jitting its hot functions.

    `sys.argv` is `[path] + argv` and the script's directory is first on `sys.path` while it
    runs; both are restored afterwards. `include`/`exclude` are glob patterns on function
    qualnames (`lossFun`, `Model.forward`). `jit=False` runs it untouched, for comparison.
    `report=DIR` writes report.json, report.html, trace.json and graph drawings to DIR (also
    when the script raises). Returns the script's globals (a dict with a `.run` attribute).
    """
    from ..jit.function import _REGISTRY

    argv = [str(a) for a in (argv or [])]
    include = tuple(include) if include else ("*",)
    exclude = tuple(exclude or ())
    filename = os.path.abspath(path)
    with open(filename, "rb") as f:
        import importlib.util

        source = importlib.util.decode_source(f.read())
    options = dict(warmup=warmup, hot_after=hot_after, include=list(include), exclude=list(exclude))
    rt = Runtime(warmup=warmup, hot_after=hot_after, demote_after=demote_after) if jit else None
    if rt is not None:
        code = compile_rewritten(source, filename, "__main__", rt, include, exclude)
        hook = ImportHook(os.path.dirname(filename), rt, include, exclude)
    else:
        code = compile(source, filename, "exec", dont_inherit=True)
        hook = None

    module = types.ModuleType("__main__")
    # the globals `python script.py` gives (`__builtins__` the module, not exec's dict of it)
    module.__dict__.update(__file__=filename, __cached__=None, __package__=None, __spec__=None, __annotations__={},
                           __builtins__=builtins, __loader__=importlib.machinery.SourceFileLoader("__main__", filename))
    if rt is not None:
        module.__dict__[RT] = rt
    run = Run(path, argv, jit, options, rt, len(_REGISTRY), time.perf_counter())
    saved_argv, saved_path, saved_main = sys.argv, list(sys.path), sys.modules.get("__main__")
    modules_before = set(sys.modules)
    sys.argv = [str(path)] + argv
    sys.path.insert(0, os.path.dirname(filename))
    sys.modules["__main__"] = module
    if hook is not None:
        hook.install()
    try:
        exec(code, module.__dict__)
    except SystemExit as exc:
        run.exit_status = exc.code if isinstance(exc.code, int) or exc.code is None else 1
        raise
    except BaseException as exc:
        run.exit_status, run.error = "exception", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        run.t_end = time.perf_counter()
        if hook is not None:
            hook.uninstall()
        sys.argv, sys.path[:] = saved_argv, saved_path
        _forget_local_modules(set(sys.modules) - modules_before, os.path.dirname(filename))
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
        else:
            sys.modules.pop("__main__", None)
        global _last_run
        _last_run = run
        if report is not None:
            from ..report import write_report

            write_report(run, report)
    result = ScriptGlobals((k, v) for k, v in module.__dict__.items() if k != RT)
    result.run = run
    return result


def _forget_local_modules(names, root):
    """Modules the script imported from its own directory are dropped from `sys.modules`, so
    the next run in this process imports (and rewrites) them afresh, as a new interpreter would."""
    root = os.path.realpath(root) + os.sep
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None) or ""
        if file and os.path.realpath(file).startswith(root):
            sys.modules.pop(name, None)


_last_run: Run | None = None


def last_run() -> Run | None:
    """The `Run` of the most recent `run_path` call in this process (also when it raised)."""
    return _last_run


__all__ = ["run_path", "last_run", "Run", "HotFunction", "Runtime", "DEFAULT_HOT_AFTER"]
