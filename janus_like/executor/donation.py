"""The plan's write region: state arrays (passes/donate.py) overwritten by the elementwise ops
that read them last, and the region's other results in buffers allocated before its first write.

    _st = _own and FP_QUIET() and PRIVATE(v60) and PRIVATE(v61) and CONTIG(v59, v60, v61)
    if _st: _b0 = EMPTY((784, 256), F32); _b1 = EMPTY((784, 256), F32)
    else: _b0 = _b1 = None
    v62 = np.multiply(C24, v60, out=v60 if _st else None)      # m's buffer: m *= beta1
    v63 = np.multiply(C25, v59, out=_b0)                       # (1 - beta1) * g
    v64 = np.add(v62, v63, out=OUT(v62, v63))                  # m += ..., in m's buffer
    ...

`_st` says whether this call writes: only from the fused call function, which owns the slots
(`_own`); only when no floating-point error can raise an exception (`FP_QUIET`: no NumPy error
mode `raise`, `call` or `log`, and no warnings filter turning a RuntimeWarning into an error);
only for arrays nothing but the executor refers to (`PRIVATE`, executor/blas.py's reference
count: a user's name for the array, a view or a weak reference keeps it as it was); and only
when the region's array operands of two or more dimensions that come from before it are
C-contiguous (`CONTIG`). Then every result in the region is C-ordered, as the buffers are, and
as eager's results would be. With `_st` false the region runs as before the writes existed:
every `out=` is None, and each op allocates its result.

Nothing in the region can fail once `_st` holds: its ops are ufuncs of static shapes whose
floating-point errors do not raise, and its results go into buffers that exist already (the
dead operands' buffers, by the memory plan, or the `_b` buffers), so no allocation can raise
MemoryError after the first write. The `_b` buffers are shared by values whose lifetimes do
not overlap (one per live value of each shape and dtype), so the region touches about as much
memory as the ops' own allocations would. A KeyboardInterrupt between two writes still stops
the plan there, as it stops eager code between two assignments.
"""
from __future__ import annotations

import sys
import warnings
import weakref

import numpy as np

from .. import ir
from ..passes.order import refs
from .buffers import _INPLACE, _known
from .tiering import _FP_STATE

_getrefcount = sys.getrefcount
_weakrefs = weakref.getweakrefcount
_RAISING_MODES = ("raise", "call", "log")
_fp_seen = [object(), (False, True)]  # (state object, (no mode raises, a mode warns))


def fp_quiet() -> bool:
    """True when no floating-point error can raise: NumPy's error modes (read again only when
    the error state object changed, as tiering.fp_errors_raise does) and, where a mode warns,
    the warnings filters (read every call: a plain list, mutated in place)."""
    state = _FP_STATE.get() if _FP_STATE is not None else None
    if state is None or state is not _fp_seen[0]:
        modes = np.geterr().values()
        _fp_seen[0] = state if state is not None else object()
        _fp_seen[1] = (not any(m in _RAISING_MODES for m in modes), "warn" in modes)
    quiet, warns = _fp_seen[1]
    if quiet and warns:
        return not any(f[0] == "error" and issubclass(RuntimeWarning, f[2]) for f in warnings.filters)
    return quiet


def private(x) -> bool:
    """Only the executor refers to array x (the chain blas.PRIVATE_REFS counts), and it may be
    written as it is."""
    from .blas import PRIVATE_REFS

    if _getrefcount(x) != PRIVATE_REFS or _weakrefs(x) or x.base is not None:
        return False
    return x.flags.writeable


def contiguous(*arrays) -> bool:
    return all(a.flags.c_contiguous for a in arrays)


class Region:
    """The write region of a plan: `start` (position in graph.nodes), `writers` (node id -> the
    donated input it writes), `buffers` (node id -> `_b` name), `shapes` (`_b` name -> (shape,
    dtype)), `contiguous` (ids of the values from before the region that must be C-ordered),
    `views` (ids of the values that may be views of a donated array, all dead by the region:
    their locals are dropped before the reference counts are read)."""

    def __init__(self, start, writers, buffers, shapes, contiguous_ids, views):
        self.start, self.writers, self.buffers, self.shapes = start, writers, buffers, shapes
        self.contiguous, self.views = contiguous_ids, views


def plan_with_region(graph, busy, reuse, skip, blocks=()):
    """(the memory plan, the write region or None) for `graph` with its donated arrays
    (`reuse`: the plan without them; `busy`, `skip`, `blocks`: as for plan_reuse and
    plan_region). A donation whose views are read in the region is dropped, and the rest
    planned again."""
    from .buffers import plan_reuse

    donated = set(graph.donated)
    while donated:
        planned = plan_reuse(graph, busy, donated)
        region, late = plan_region(graph, planned, donated, skip, blocks)
        if region is not None:
            return planned, region
        if not late:
            break
        donated -= late
    return reuse, None


def plan_region(graph, reuse, donated, skip, blocks=()):
    """(the write region of `graph` under memory plan `reuse` (node id -> operand index) with
    `donated` input ids reusable, the donated ids whose views are read in the region or after
    it), the region None when no donated buffer is written, or a view of one lives into the
    region, or a node from the first write on is not an elementwise ufunc the region may run
    (`skip`: ids the emitter writes in another form). `blocks`: (first, last) positions of
    fused groups (executor/fusion.py), which run as one call: a region starting inside one
    starts at its first node."""
    from ..passes.donate import _region_op, view_closure
    from .buffers import COPYING

    writers = {n.id: n.inputs[reuse[n.id]].id for n in graph.nodes
               if n.id in reuse and n.inputs[reuse[n.id]].id in donated}
    if not writers:
        return None, set()
    start = next(pos for pos, n in enumerate(graph.nodes) if n.id in writers)
    start = next((first for first, last in blocks if first <= start <= last), start)
    region = graph.nodes[start:]
    if any(not _region_op(n) or n.id in skip for n in region):
        return None, set()
    inside = {n.id for n in region}
    outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    views, late = set(), set()
    for x in set(writers.values()):
        vx = view_closure(graph, x, COPYING)
        if vx & (inside | outputs) or any(i.id in vx for n in region for i in refs(n)):
            late.add(x)
        views |= vx
    if late:
        return None, late
    last_use: dict = {}
    for pos, n in enumerate(region):
        for i in n.inputs:
            if isinstance(i, ir.Node):
                last_use[i.id] = pos
    holder: dict = {}  # value id -> the `_b` buffer it lives in
    free: dict = {}  # (shape, dtype) -> `_b` names no live value holds
    buffers, shapes = {}, {}
    for pos, n in enumerate(region):
        if n.id in reuse:
            source = n.inputs[reuse[n.id]].id
            if source in holder:
                holder[n.id] = holder.pop(source)
        else:
            key = (_known(n), np.dtype(n.aval[1]))
            name = free[key].pop() if free.get(key) else f"_b{len(shapes)}"
            shapes[name] = key
            buffers[n.id] = holder[n.id] = name
        for i in {i.id for i in n.inputs if isinstance(i, ir.Node)}:
            if last_use.get(i) == pos and i not in outputs and i in holder:
                name = holder.pop(i)
                free.setdefault(shapes[name], []).append(name)
    contiguous_ids = sorted({i.id for n in region for i in n.inputs if isinstance(i, ir.Node)
                             and i.id not in inside and i.aval is not None and len(i.aval[0]) >= 2}
                            | {x for x in writers.values()})
    return Region(start, writers, buffers, shapes, contiguous_ids, sorted(views)), set()


def header(em, region) -> list[str]:
    """The region's first lines: the `_st` decision and the `_b` buffers."""
    em.globals.update(FP_QUIET=fp_quiet, PRIVATE=private, CONTIG=contiguous, EMPTY=np.empty)
    donated = sorted(set(region.writers.values()))
    checks = ["_own", "FP_QUIET()"] + [f"PRIVATE(v{x})" for x in donated]
    checks.append(f"CONTIG({', '.join(f'v{i}' for i in region.contiguous)})")
    lines = [f"    {' = '.join(f'v{i}' for i in region.views)} = None"] if region.views else []
    lines.append(f"    _st = {' and '.join(checks)}")
    if region.shapes:
        made = "; ".join(f"{name} = EMPTY({shape!r}, {em.const(dt)})" for name, (shape, dt) in region.shapes.items())
        lines += [f"    if _st: {made}", f"    else: {' = '.join(region.shapes)} = None"]
    return lines


def ufunc_line(em, n, region, out) -> str:
    """Node n of the region as its ufunc into `out` (a `_b` buffer, or a reused operand's)."""
    target = region.buffers.get(n.id, out)
    if n.id in region.writers:
        target = f"{out} if _st else None"
    return f"    v{n.id} = np.{_INPLACE[n.op]}({em.ufunc_args(n)}, out={target})"


def emit_node(em, n, reuse) -> bool:
    """Emit region node n (a writer or one with a `_b` buffer) for emitter `em` under memory
    plan `reuse`; False for any other node."""
    region = em.region
    if n.id not in region.buffers and n.id not in region.writers:
        return False
    target = em.arg(n.inputs[reuse[n.id]]) if n.id in reuse else None
    other = [i for k, i in enumerate(n.inputs) if n.id in reuse and k != reuse[n.id]
             and isinstance(i, ir.Node) and i.aval is not None and len(i.aval[0]) > 1]
    em.lines.append(ufunc_line(em, n, region, f"OUT({target}, {em.arg(other[0])})" if other else target))
    return True
