"""The traceback of an exception that leaves a jitted function: the user's frames, as eagerly.

A user's error reaches the caller through the JIT's call path (`__call__`, `_dispatch`, the
fallback, `_eager`, `_plain`: five frames between the caller's line and the function's), so a
printed traceback, `traceback.extract_tb` and a logger's `exc_info` showed janus_like's frames
where eager shows none. `JitFunction.__call__` hands every exception to `trim` and re-raises it
with a bare `raise`, which adds no frame: the traceback goes from the caller's line into the
function's, as eager's does.

janus_like frames followed by the user's are cut (and, under `janus-like run`, the prologue
frames that forwarded a call to the JIT: the command prints an uncaught exception's traceback
the same way). An exception raised in janus_like's own code (a defect; `JANUS_LIKE_DEBUG`'s
`RuntimeError`) keeps the frames where it was raised: they are the report. Inside the
function, the stack itself still has janus_like's frames (`sys._getframe(1)`,
`warnings.warn(..., stacklevel=2)`, `traceback.print_stack()`).
"""
from __future__ import annotations

import os
import types

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# the code of the JIT's functions that call the user's function (jit/function.py registers them)
CALLS: set = set()


def _ours(tb) -> bool:
    filename = tb.tb_frame.f_code.co_filename
    return filename.startswith(PACKAGE) or filename.startswith("<frozen importlib._bootstrap")


def user_traceback(tb):
    """Traceback chain `tb` without janus_like's frames that lead to the user's code (and the
    wrapper's prologue frames that forwarded a call into janus_like); a trailing run of
    janus_like frames (where an exception of janus_like's own was raised) is kept."""
    from ..wrapper.rewrite import RT  # the name the prologues read (imported here: only on the way out)

    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    last_user = max((k for k, e in enumerate(entries) if not _ours(e)), default=-1)
    if last_user < 0 and entries and entries[-1].tb_frame.f_code in CALLS:  # the call of the user's
        return None  # function itself raised (a wrong number of arguments): eager's has no frame of it
    kept = [e for k, e in enumerate(entries)
            if k > last_user or not (_ours(e) or (k + 1 < len(entries) and _ours(entries[k + 1])
                                                  and RT in e.tb_frame.f_code.co_names))]
    if len(kept) == len(entries):
        return entries[0] if entries else None
    out = None
    for e in reversed(kept):
        out = types.TracebackType(out, e.tb_frame, e.tb_lasti, e.tb_lineno)
    return out


def trim(exc: BaseException) -> None:
    """`exc`'s traceback as the user's code would have it (`user_traceback`)."""
    if exc.__traceback__ is not None and not os.environ.get("JANUS_LIKE_DEBUG"):
        exc.__traceback__ = user_traceback(exc.__traceback__)
