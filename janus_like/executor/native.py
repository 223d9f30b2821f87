"""Whole-graph native compilation with Numba (optional): one machine-code function per graph.

A graph of many tiny ops (a batch-1 MLP, a tree walked node by node, a char-RNN step) spends its
time in NumPy's per-call dispatch, not in arithmetic. Here the whole graph becomes one Python
function in the subset Numba compiles, so every op is a native loop with no interpreter between
them:

    def native(s0, s1, s4):
        v4 = s0 @ s4
        v6 = np.add(v4, s1)
        v7 = np.tanh(v6)
        if bool(v7[0, 0] > np.float32(0.0)) != True: raise NativeAssert(0)
        return (v7, ...)

Not a drop-in replacement for the NumPy plan, so it is only *chosen*, per graph, by
`NativeCandidate` in `executor/__init__.py`: after the graph has run as a plan a few times, the
native function is compiled, run on the same inputs as the plan, compared with it (shapes,
dtypes, values within float32 reassociation tolerance) and timed against it; it replaces the plan
only when it agrees and is faster. Differences it may have, and why they are acceptable in
reassociating mode only: sums accumulate in another order than NumPy's pairwise sums, and
transcendental functions come from another math library (ulp-level). No floating-point
warnings are raised (calls made under `np.seterr(..., 'raise')` use the plan).

`translate(graph)` (the translator itself is `native_translate.py`) raises `NativeUnsupported`
(with the op) for what the subset lacks: loops and conditionals, Python objects, RNG draws,
batched (3-D) products, most advanced-index writes.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import types

import numpy as np

from .. import ir
from .native_translate import NativeUnsupported, _Translator

__all__ = ["NativeAssert", "NativeUnsupported", "as_scalar", "available", "cache_dir", "compile_native", "translate"]


class NativeAssert(Exception):
    """Raised inside native code when assert node number args[0] fails."""


# the generated module's header: names its source refers to, importable so Numba's cache can
# reload a compiled graph in a later process
_HEADER = ("import numpy as np\n"
           "from janus_like.executor.native import NativeAssert\n"
           "from janus_like.executor.native_kernels import red_rows, take2, scatter2, scatter_rows, cumsum_rows\n\n\n")


def as_scalar(a):
    """One type for 0-d arrays and scalars (they compute alike): a 0-d array's element."""
    return a[()] if type(a) is np.ndarray and a.ndim == 0 else a


def available() -> bool:
    """Whether Numba is installed (without importing it: that takes ~0.5 s, paid only when a
    graph is actually compiled)."""
    return importlib.util.find_spec("numba") is not None


def translate(graph: ir.Graph):
    """(module source, parameter sources, assumptions) of the native function for `graph`."""
    for n in graph.all_nodes():
        if n.op in (ir.COND, ir.LOOP, ir.RANDOM, ir.TUPLE_GET, ir.LOOP_VAR) or n.op == "random_uniform":
            raise NativeUnsupported(f"op '{n.op}'")
    tr = _Translator(graph)
    return _HEADER + tr.emit_graph(), tr.arg_slots, tr.asserts


def cache_dir() -> str:
    """Where generated modules (and Numba's compiled code next to them) are kept:
    $JANUS_LIKE_CACHE_DIR, else ~/.cache/janus_like/native."""
    return os.environ.get("JANUS_LIKE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "janus_like",
                                                                 "native")


def _load(src: str):
    """The module for `src`, written once under its content hash (an unchanged file keeps
    Numba's on-disk cache valid, so a later process loads machine code instead of compiling)."""
    digest = hashlib.sha256(src.encode()).hexdigest()[:20]
    name = f"jl_native_{digest}"
    path = os.path.join(cache_dir(), name + ".py")
    try:
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(src)
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # Numba's cache finds the function through its module
        spec.loader.exec_module(module)
        return module, True
    except OSError:  # no writable cache: compile from memory, without the disk cache
        module = types.ModuleType(name)
        exec(compile(src, f"<janus_like native {digest}>", "exec"), module.__dict__)
        return module, False


def compile_native(graph: ir.Graph):
    """A callable `run(slots) -> list of outputs` (raising AssertFailed like the plan), compiled
    with Numba on its first call. Raises NativeUnsupported for graphs outside the subset."""
    import numba

    from .interpreter import AssertFailed

    src, arg_slots, asserts = translate(graph)
    module, on_disk = _load(src)
    fn = numba.njit(module.native, boundscheck=True, error_model="numpy", nogil=True, cache=on_disk)
    getters = list(arg_slots)
    outputs = graph.outputs
    literal = [None if isinstance(o, ir.Node) else o for o in outputs]
    all_nodes = all(isinstance(o, ir.Node) for o in outputs)

    def run(slots):
        args = [as_scalar(slots[v]) if k == "slot" else v for k, v in getters]
        try:
            values = fn(*args)
        except NativeAssert as exc:
            raise AssertFailed(asserts[exc.args[0]]) from None
        if all_nodes:
            return list(values)
        it = iter(values)
        return [next(it) if isinstance(o, ir.Node) else lit for o, lit in zip(outputs, literal)]

    run.source = src
    run.dispatcher = fn
    run.getters, run.all_nodes = getters, all_nodes  # for the fused call (Tier.parts)
    return run
