"""Speculation is named data: every assumption a graph makes, and every reason a call ran eagerly.

An `Assumption` has a kind, the source line (or input path) it came from, the value it expects,
and a relaxation key the generator understands. A `Fallback` names why a call or a signature ran
eagerly, with an explanation and a hint, from the table `REASONS`.
"""
from __future__ import annotations

import os
import sysconfig
import traceback
from dataclasses import dataclass, field

KINDS = {
    "arity": "the number of positional arguments passed (a default fills the rest)",
    "type": "the Python type of an input",
    "shape": "the shape, dtype and device of an input array",
    "value": "the value of a Python scalar read by the function",
    "identity": "which object (function, class, module) a name refers to",
    "length": "the length of a list or tuple that is iterated or indexed",
    "keys": "the keys of a dict that is iterated",
    "alias": "which inputs are the same object",
    "writeable": "an array the call writes in place is not read-only",
    "layout": "an array the call writes in place is C-ordered (another layout gets a graph of its own)",
    "contains": "the result of an `in` test on an input container",
    "branch": "the outcome of an `if` on a value computed in the graph",
    "trip_count": "the number of iterations of a `while` loop on a graph value",
    "recursion": "a value inside a recursion region's tree walk (an int index, a gradient eager gives)",
    "pick": "which argument min()/max() of Python numbers and graph values gives",
    "finite": "float64 scalars computed as Python floats stayed finite (NumPy would have warned)",
}


# what a Python int argument's type check expects: the graph holds the int as an int64
INT64_RANGE = "int (in int64's range)"


@dataclass(eq=False)
class Assumption:
    kind: str
    site: str
    expected: object
    path: str = ""
    relax: tuple | None = None  # what the generator changes when this keeps failing
    failures: int = 0

    @property
    def splits(self) -> bool:
        """Whether it asserts one outcome of a split branch or min/max (jit/variants.py): another
        graph of the signature may take a call that fails it."""
        return self.relax is not None and self.relax[0] == "split"

    def describe(self) -> str:
        where = f"{self.path} " if self.path else ""
        return f"{self.kind}: {where}expected {_short(self.expected)} ({self.site})"

    def failure_text(self, got=None) -> str:
        tail = f", got {_short(got)}" if got is not None else ""
        return f"assumption failed at {self.site}: {self.kind} of {self.path or 'value'} expected {_short(self.expected)}{tail}"


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Reason:
    id: str
    explanation: str
    hint: str


REASONS = {r.id: r for r in [
    Reason("unsupported-syntax", "the function uses Python syntax the graph generator does not convert",
           "move that code into a helper that is not called from the hot function, or leave it eager"),
    Reason("generator", "the function is a generator (yield) or coroutine", "generators always run eagerly"),
    Reason("try", "an exception a `try`'s handler catches: raised while generating the body (that call runs "
           "eagerly, a later one generates again), caught each time the warm-up entered the `try`, or caught at "
           "run time more than `regen_after` times; or `except*`",
           "move the try/except outside the jitted function, or keep exceptions out of the hot path"),
    Reason("unsupported-call", "a call to a function with no graph equivalent (C extension, I/O, unknown library)",
           "call it outside the jitted function, or pass its result in as an argument"),
    Reason("no-source", "the Python source of a called function is not available", "define it in a .py file"),
    Reason("object-construction", "the function creates instances of user classes",
           "create objects outside the hot function"),
    Reason("view-write", "an in-place write to an array whose aliasing the graph cannot model (a reshaped or "
           "transposed view, or a name bound to different arrays by a branch or a loop)",
           "write through basic indexing (a[i] = ...) or rebind the name (x = x + y instead of x += y)"),
    Reason("data-dependent-python", "a Python-level value depends on array contents in a way that cannot be speculated",
           "keep the value as an array, or compute it outside the function"),
    Reason("varying-trip-count", "a loop whose trip count is a graph value could not become a loop node",
           "keep loop variables' types, shapes and dtypes fixed (an array that becomes a Tensor in the "
           "loop changes type), leave it through one `if ...: break` or `continue` at the body's top "
           "level, and, when differentiating through it, avoid break, nested control flow and random draws "
           "in its body"),
    Reason("unprofiled-branch", "a branch on a graph value was never reached during the profiled warm-up calls",
           "increase warmup= so the profiler sees that code"),
    Reason("device-mismatch", "an op gets arrays on two devices (CPU and GPU); eager code raises there too",
           "move values with .to('gpu') / .to('cpu') before combining them"),
    Reason("op-error", "an op would fail on the speculated shapes", "the eager call reports the error"),
    Reason("user-error", "the function raises an exception on these inputs", "the eager call reports it"),
    Reason("max-graphs", "the signature cache is full (max_graphs reached), or past 8 graphs fewer than half "
           "of them ran twice", "raise max_graphs= or make shapes static"),
    Reason("recursion-limit", "recursion or unrolling went deeper than the generator's limit",
           "the generator unrolls at most 20,000 iterations and inlines 400 calls deep; "
           "restructure the recursion or leave that function eager"),
    Reason("kwargs", "keyword arguments that are not simple values", "pass arrays positionally"),
    Reason("internal-error", "the graph generator failed on this code, or its graph raised where eager did not "
                             "(a janus_like bug)",
           "please report it with JANUS_LIKE_DEBUG=1 output; the function runs eagerly meanwhile"),
    Reason("assumption", "a speculated assumption did not hold for this call", "see the assumption's site"),
    Reason("under-tape", "the jitted function was called while an eager GradientTape was recording",
           "jit the whole training step (tape included) instead of a function called inside the tape"),
    Reason("data-dependent-shape", "an op's result has as many items as the data says (`x[mask]`), and the code "
           "depends on that count in a way a graph of unknown sizes cannot express (a Python list of its items, "
           "`.size`, a loop over its rows)", "keep the count in array ops (`len()`, `.sum()`, `.mean()`), or write "
           "it as `np.where(mask, x, 0)` with a count"),
    Reason("shape-dependent", "the function's Python code depends on a dimension that varies between calls",
           "each size gets its own graph (up to max_graphs)"),
    Reason("disabled", "JANUS_LIKE_DISABLE=1 is set", "unset it to enable the JIT"),
    Reason("growing-container", "a list or dict the function reads has another length on call after call (a log "
           "it appends to and reads back), and no graph specialized on a length ran twice",
           "read back its length and last items only (len(history), history[-2], history[-5:]), "
           "or keep the running statistic in a number"),
]}


@dataclass(eq=False)
class Fallback:
    reason: str
    detail: str
    site: str = ""
    count: int = 1
    extra: dict = field(default_factory=dict)

    def describe(self) -> str:
        r = REASONS.get(self.reason)
        where = f" at {self.site}" if self.site else ""
        text = f"[{self.reason}]{where}: {self.detail}"
        if r is not None:
            text += f" — {r.explanation}. Hint: {r.hint}."
        return text


def user_site(exc: BaseException) -> str:
    """`file.py:line` of the innermost frame of exc's traceback in the user's code (outside
    janus_like and installed packages), or ""."""
    skip = tuple({os.path.dirname(os.path.dirname(os.path.abspath(__file__))), sysconfig.get_paths()["stdlib"],
                  sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    site = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if not os.path.abspath(frame.filename).startswith(skip):
            site = f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return site
