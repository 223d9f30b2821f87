"""Errors that teach: every op failure names the op, the operands and the user's source line.

`user_site()` walks the Python stack outward past janus_like's own frames (and NumPy's) to find
the line of user code that asked for the op, so a message can say
"cannot broadcast shapes (3, 4) and (5,) in `x + b` at model.py:18".
"""
from __future__ import annotations

import linecache
import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_SKIP_DIRS = (_PKG_DIR,)


class JanusError(Exception):
    """Base class of errors raised by janus_like itself."""


class OpError(JanusError):
    """An op could not run on its operands. Subclasses also derive from the matching builtin
    exception (ValueError, TypeError, IndexError) so code that catches NumPy's errors still works."""


class ShapeError(OpError, ValueError):
    pass


class OpValueError(OpError, ValueError):
    pass


class OpTypeError(OpError, TypeError):
    pass


class OpIndexError(OpError, IndexError):
    pass


class GradientError(JanusError, ValueError):
    """Bad use of a GradientTape (non-scalar target, reused non-persistent tape, ...)."""


def _skip(filename: str) -> bool:
    if filename.startswith(_SKIP_DIRS) or filename.startswith("<janus"):
        return True
    return f"{os.sep}numpy{os.sep}" in filename


def user_site(depth: int = 2):
    """(filename, lineno, source text) of the innermost frame that is user code, or None."""
    frame = sys._getframe(depth)
    while frame is not None:
        fn = frame.f_code.co_filename
        if not _skip(fn):
            line = linecache.getline(fn, frame.f_lineno).strip()
            return fn, frame.f_lineno, line
        frame = frame.f_back
    return None


def format_site(site) -> str:
    if site is None:
        return ""
    fn, lineno, line = site
    where = f"{os.path.basename(fn)}:{lineno}"
    return f" in `{line}` at {where}" if line else f" at {where}"


def describe(value) -> str:
    """Short description of an operand: f32[3,4], a Python scalar, or a type name."""
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{dtype}{list(shape)}".replace(" ", "")
    if isinstance(value, (int, float, complex, bool)):
        return f"{type(value).__name__} {value!r}"
    return type(value).__name__


_BY_BUILTIN = ((IndexError, OpIndexError), (TypeError, OpTypeError), (ValueError, OpValueError))


def op_error(op_name: str, operands, exc: BaseException) -> OpError:
    """Turn an exception from an op's array implementation into a teaching error."""
    site = format_site(user_site(3))
    shapes = [tuple(o.shape) for o in operands if hasattr(o, "shape")]
    text = str(exc)
    if "broadcast" in text and len(shapes) >= 2:
        shown = " and ".join(str(s) for s in shapes)
        return ShapeError(f"cannot broadcast shapes {shown} in op '{op_name}'{site}")
    if isinstance(exc, ValueError) and ("mismatch" in text or "shape" in text or "aligned" in text):
        kind = ShapeError
    else:
        kind = next((k for base, k in _BY_BUILTIN if isinstance(exc, base)), OpError)
    operand_text = ", ".join(describe(o) for o in operands)
    return kind(f"op '{op_name}' failed on ({operand_text}){site}: {text}")
