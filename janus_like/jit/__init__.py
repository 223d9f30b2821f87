"""jit: the user-facing speculative JIT (decorator, stats, explain).

Input: a Python function (or method / callable object). Output: a `JitFunction` that profiles,
generates graphs (graphgen), runs them (executor) and falls back to eager on any failed
assumption, so its results always equal eager execution.
"""
from .assumptions import REASONS, Assumption, Fallback  # noqa: F401
from .explain import explain  # noqa: F401
from .function import JitFunction, jit  # noqa: F401


def run_path(path, argv=None, *, report=None, **options):
    from ..wrapper import run_path as _run_path

    return _run_path(path, argv, report=report, **options)
