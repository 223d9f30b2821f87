"""Where a plan's values live and when its products run: memory planning (a dead, graph-owned
buffer receives an elementwise op's result through `out=`, so a steady-state step allocates
little) and the opt-in worker-thread schedule for large matrix products. `codegen.compile_plan`
emits the plan from these decisions."""
from __future__ import annotations

import math
import os

import numpy as np

from .. import ir

try:  # the ufunc np.clip comes down to for float arrays with both bounds (NumPy's _methods._clip)
    _CLIP = (np._core if hasattr(np, "_core") else np.core).umath.clip
except AttributeError:  # pragma: no cover
    _CLIP = None


def _clip_inline(n) -> bool:
    """clip of a NumPy float array with both bounds given as numbers: np.clip calls the clip
    ufunc with them (after checks that only matter for integer arrays or a missing bound)."""
    if n.op != "clip" or _CLIP is None or len(n.inputs) != 1 or not ir.numpy_typed(n.inputs[0]):
        return False
    x, lo, hi = n.inputs[0], n.params.get("lo"), n.params.get("hi")
    return (x.aval is not None and np.dtype(x.aval[1]).kind == "f" and len(x.aval[0]) >= 1
            and all(type(b) in (int, float) for b in (lo, hi)))


def _known(n):
    """The static shape of node n when every dimension is a known int, else None."""
    if not isinstance(n, ir.Node) or n.aval is None or not all(type(d) is int for d in n.aval[0]):
        return None
    return tuple(n.aval[0])


# ufuncs that can write into a dead operand's buffer; exact: same kernel, same dtype, same shape
_INPLACE = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "maximum": "maximum",
            "minimum": "minimum", "neg": "negative", "exp": "exp", "log": "log", "tanh": "tanh", "sqrt": "sqrt",
            "abs": "abs", "sin": "sin", "cos": "cos", "square": "square"}
# ops whose result is always a new buffer owned by the graph (never a view of, or identical to,
# an input): only such values may be overwritten once dead
_FRESH = set(_INPLACE) | {"matmul", "dot", "tensordot", "einsum", "concatenate", "zeros_like", "ones_like",
                          "full_like", "copy", "index_update", "index_add", "getitem_grad", "sigmoid", "relu", "clip",
                          "where", "pow", "cast"}

# ops that write into a copy of their first operand, or into its buffer when it is dead and the
# graph's own (a loop writing `ret[t] = g` then fills one array instead of copying it every step)
_INDEXED = ("index_add", "index_update")

# ops whose result never shares memory with an operand (any other op may return a view of one)
COPYING = _FRESH | {"sum", "mean", "max", "min", "argmax", "argmin", ir.ASSERT, ir.TO_PY, ir.PY_OP}


def _refs_of(n):
    refs = [i for i in n.inputs if isinstance(i, ir.Node)]
    if n.op in (ir.COND, ir.LOOP):  # values used inside a block count as used here
        inner = [m for b in ir.BLOCKS for m in n.params.get(b, [])]
        refs += [i for m in inner for i in m.inputs if isinstance(i, ir.Node)]
        refs += [o for k in ("then_outs", "else_outs", "body_outs") for o in n.params.get(k, []) if isinstance(o, ir.Node)]
    return refs


ASYNC_MACS = 2_000_000  # products at least this big may run on a worker thread (NumPy drops the GIL)
ASYNC_GAP = 8  # ... when at least this many nodes run before the product is needed


def plan_async(graph: ir.Graph) -> dict:
    """Inter-op parallelism with a cost rule: a large matrix product whose result is not needed
    for a while runs on a worker thread, overlapping the nodes in between (2 cores: the BLAS
    call on one, the rest of the graph on the other). Returns {node id: position of first use}."""
    if (os.cpu_count() or 1) < 2:
        return {}
    first_use: dict = {}
    end = len(graph.nodes)
    for pos, n in enumerate(graph.nodes):
        for r in _refs_of(n):
            first_use.setdefault(r.id, pos)
    out = {}
    for pos, n in enumerate(graph.nodes):
        if n.op not in ("matmul", "dot") or len(n.inputs) != 2 or n.errstate is not None:
            continue
        a, b = n.inputs
        if not (isinstance(a, ir.Node) and isinstance(b, ir.Node) and a.aval and b.aval
                and len(a.aval[0]) == 2 and len(b.aval[0]) == 2):
            continue
        macs = a.aval[0][0] * a.aval[0][1] * b.aval[0][1]
        use = first_use.get(n.id, end)
        if macs >= ASYNC_MACS and use - pos > ASYNC_GAP:
            out[n.id] = use
    return out


# Below this many elements `out=` costs more than it saves: on a (2,) float32 array
# np.add(a, b, out=a) took ~1.2 us against ~0.5 us without (NumPy 2.4; even at 64 elements
# the two are level, and from ~1000 on out= wins by skipping the allocation)
REUSE_MIN_ELEMENTS = 64


def plan_reuse(graph: ir.Graph, busy_until=None, donated=()) -> dict:
    """Memory planning: node ids whose first operand is a dead, graph-owned buffer of the result's
    exact shape and dtype, so the op can run in place (`np.add(a, b, out=a)`). `busy_until` holds
    node ids -> positions until which a value is still read (by a product on a worker thread).
    `donated`: ids of inputs whose buffers count as the graph's (passes/donate.py; the plan
    writes them only when its write region allows it, executor/donation.py)."""
    last_use: dict = dict(busy_until or {})
    outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    for pos, n in enumerate(graph.nodes):
        for r in _refs_of(n):
            last_use[r.id] = max(pos, last_use.get(r.id, -1))
    # a buffer that some node may hold a view of (getitem, transpose, reshape, ...) stays untouched
    viewed = {i.id for n in graph.all_nodes() if n.op not in COPYING for i in n.inputs if isinstance(i, ir.Node)}
    # a conditional's (or loop's) result may be an outer value itself (`h0 = h1` in one branch, a
    # body that returns a value unchanged): that value's buffer lives as long as the result
    viewed |= {o.id for n in graph.all_nodes() if n.op in (ir.COND, ir.LOOP)
               for k in ("then_outs", "else_outs", "body_outs") for o in n.params.get(k, ()) if isinstance(o, ir.Node)}
    reuse: dict = {}  # node id -> index of the operand whose buffer receives the result
    taken = set()
    for pos, n in enumerate(graph.nodes):
        indexed = n.op in _INDEXED  # x with v written/added at an index: into x's own buffer, no out=
        if (n.op not in _INPLACE and not indexed and not _clip_inline(n)) or not n.inputs \
                or n.aval is None or len(n.aval[0]) == 0:
            continue
        shape = _known(n)
        if shape is not None and math.prod(shape) < REUSE_MIN_ELEMENTS and not indexed:
            continue  # a tiny result: allocating it is cheaper than NumPy's out= path
        for k, a in enumerate(n.inputs[:1] if indexed else n.inputs):  # a ufunc: any operand
            if not (isinstance(a, ir.Node) and (a.op in _FRESH or (a.id in donated and n.op != "index_update"))
                    and a.aval is not None):
                continue
            if a.id in outputs or a.id in taken or last_use.get(a.id) != pos \
                    or (a.id in viewed and a.id not in donated):  # (a donated array's views are dead by now)
                continue
            if tuple(a.aval[0]) != tuple(n.aval[0]) or np.dtype(a.aval[1]) != np.dtype(n.aval[1]):
                continue
            if sum(1 for i in n.inputs if i is a) > 1:
                continue
            reuse[n.id] = k
            taken.add(a.id)
            break
    return reuse


_POOL = []


def _pool():
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="janus_like"))
    return _POOL[0]
