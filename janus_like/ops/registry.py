"""The single op registry and the one dispatch point, `bind`.

An `Op` holds, on adjacent lines of its registration: the array implementation (called as
`impl(xp, *arrays, **params)` with `xp` NumPy or CuPy), the shape/dtype rule, the
vector-Jacobian rule (written with ops, so it runs on the tape *and* inside a graph) and the
elementwise flag used by fusion. Eager mode, the tape, the graph generator, symbolic autodiff
and the executor all read this table.

`bind(op, *args, **params)` is how everything applies an op. Eagerly it unwraps tensors,
calls the implementation and records on active tapes; while the graph generator is building
(`set_builder`), any symbolic operand makes it emit a graph node instead.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import backend
from ..errors import op_error


@dataclass(eq=False)
class Op:
    name: str
    impl: Callable
    shape: Callable | None = None  # (avals, **params) -> Aval | tuple[Aval]; None = abstract eval
    vjp: Callable | None = None  # (g, out, *inputs, **params) -> tuple of cotangents (or None)
    elementwise: bool = False
    nout: int = 1  # >1: impl returns a tuple
    stateful: bool = False  # consumes hidden state (RNG): never CSE'd or folded
    doc: str = ""
    raises: bool = False  # may raise on some values (a singular matrix): kept though unused (passes/dce.py)
    kernel: Callable = field(init=False, repr=False)
    # the vjp on NumPy arrays, for an eager backward no tape records (ops/eager_vjp.py)
    eager_vjp: Callable | None = field(default=None, init=False, repr=False)

    def __post_init__(self):
        impl = self.impl
        self.kernel = lambda *arrays, **params: impl(np, *arrays, **params)

    @property
    def differentiable(self) -> bool:
        return self.vjp is not None

    def __repr__(self):
        return f"Op({self.name})"


REGISTRY: dict[str, Op] = {}


class _Ops:
    """Attribute access to registered ops: `P.add`, `P.matmul` (plain instance attributes, set at
    registration, so the lookup on every eager op is a dict hit, not a Python call)."""

    def __getattr__(self, name):  # only reached for names that were never registered
        raise AttributeError(f"no op named {name!r}")


P = _Ops()


def register(name, impl, *, shape=None, vjp=None, elementwise=False, nout=1, stateful=False, doc="", raises=False):
    if name in REGISTRY:
        raise ValueError(f"op {name!r} registered twice")
    op = Op(name, impl, shape, vjp, elementwise, nout, stateful, doc, raises)
    REGISTRY[name] = op
    P.__dict__[name] = op
    return op


# ---------------------------------------------------------------- dispatch

_builder = [None]  # the graph builder in charge while generating, else None
_tapes: list = []  # active GradientTapes, innermost last (managed by autodiff)
# While the eager backward pass applies one op's vector-Jacobian rule: which of the op's inputs
# need a cotangent (a tuple of bools), or None for all of them (and always inside a graph, whose
# dead-code pass drops what is unused).
_wanted: list = [None]


def wants(i: int) -> bool:
    """Whether the vector-Jacobian rule being applied must compute input i's cotangent: a rule
    may return None for an input that is not wanted instead of computing it."""
    w = _wanted[0]
    return w is None or w[i]


def set_builder(builder):
    """Install (or with None remove) the graph builder; returns the previous one."""
    old = _builder[0]
    _builder[0] = builder
    return old


def bind(op: Op, *args, **params):
    builder = _builder[0]
    if builder is not None and (op.stateful or builder.claims(args)) and _generating_here(builder):
        return builder.emit(op, args, params)  # a graph is being generated: emit a node
    return eager_bind(op, args, params)


def _generating_here(builder) -> bool:
    """The builder is this thread's (another thread's eager draw while a graph is generated is
    not one of its nodes)."""
    return getattr(builder, "thread", None) in (None, threading.get_ident())


def eager_bind(op: Op, args, params):
    arrays = [a._data if isinstance(a, Tensor) else a for a in args]
    xp = backend.array_module(*arrays) if backend._state["gpu_used"] else np
    if xp is not np:  # a 0-d NumPy array (NumPy makes one of `np.float64(x) != t`) as the scalar
        arrays = [backend.device_operand(a) for a in arrays]  # it is, as graphs hand it over (interpreter.py)
    try:
        out = op.impl(xp, *arrays, **params)
    except Exception as exc:  # teach: name the op, the operands and the user's line
        raise op_error(op.name, arrays, exc) from exc
    if op.nout == 1:
        result = _wrap(out)
        outs = (result,)
    else:
        result = outs = tuple(_wrap(o) for o in out)
    if _tapes and op.vjp is not None:
        for tape in _tapes:
            tape._record(op, args, params, outs)
    return result


# Filled in by janus_like.tensor once Tensor exists (tensor imports this module, not vice versa);
# a module global instead of an import inside eager_bind saves ~1 µs per op.
Tensor = _wrap = None


def _install_tensor_type(tensor_cls, wrap):
    global Tensor, _wrap
    Tensor, _wrap = tensor_cls, wrap
