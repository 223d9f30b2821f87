"""A weight update `w - a @ b` written into w's own buffer by one BLAS call, when no one can see w.

SGD's update of a weight matrix is a product and a subtraction, `w - lr * (xᵀ @ dz)`: the
plan computes the product into a new array, subtracts w from it there, and commits that array
as the Variable's value. One GEMM with beta = 1, C = w, alpha = -1 does both in w's memory:
the pass over a new (784, 256) product and the read of w in the subtraction disappear, and the
weight stays at one address from step to step (the MLP step measured 0.944-0.948 of its time,
in one process against the plan it replaces).

Eager code rebinds the Variable to a new array (`assign_sub`); the old one is unchanged for
whoever holds it. Writing into it is therefore the same only when nothing but the Variable, the
executor's slot tuple and the plan's locals refer to the array, which `writable` checks by its
reference count before the plan writes (`PRIVATE_REFS`, measured at import on the same chain of
references: an attribute, a guard local, the slot tuple, a plan local, this function's
parameter). A view, a user's name, a weak reference, a base array, a read-only array or NumPy
set to raise floating-point errors (the subtraction would raise them, BLAS does not) each keep
the plan's ordinary product and subtraction. The plan places these updates after every other
node (`passes/inplace.py`), so nothing can fail once a weight was written, and only the fused
call function, which owns the slots (`_own`), lets them write.

With alpha = -1 and beta = 1 the result has the bits of the product then the subtraction when
the product's inner dimension fits one of OpenBLAS's blocks (a batch of up to a few hundred
rows); longer ones add w in before the last blocks, a reassociation, so the pass runs only for
graphs that may reassociate.

The BLAS is NumPy's own (its OpenBLAS, looked up through NumPy's extension module with
ctypes); `GEMM` is None where it is not found (another BLAS), or where a one-time check of its
result against np.matmul fails, and then every update keeps the plan's two ops.
"""
from __future__ import annotations

import ctypes
import os
import sys
import types
import weakref

import numpy as np

from .tiering import fp_errors_raise

_ROW, _COL = 101, 102  # CblasRowMajor, CblasColMajor
_NO, _TRANS = 111, 112  # CblasNoTrans, CblasTrans
_getrefcount = sys.getrefcount
_weakrefs = weakref.getweakrefcount


def _bind():
    """{dtype: gemm function} from NumPy's BLAS, or None."""
    if os.environ.get("JANUS_LIKE_INPLACE", "") == "0" or sys.implementation.name != "cpython":
        return None
    try:
        from numpy._core import _multiarray_umath as module
        lib = ctypes.CDLL(module.__file__)
    except (ImportError, OSError):
        return None
    for prefix, suffix, int_t in (("scipy_cblas_", "64_", ctypes.c_int64), ("cblas_", "64_", ctypes.c_int64),
                                  ("scipy_cblas_", "", ctypes.c_int), ("cblas_", "", ctypes.c_int)):
        try:
            fns = {np.dtype(np.float32): getattr(lib, f"{prefix}sgemm{suffix}"),
                   np.dtype(np.float64): getattr(lib, f"{prefix}dgemm{suffix}")}
        except AttributeError:
            continue
        for dt, fn in fns.items():
            real = ctypes.c_float if dt == np.float32 else ctypes.c_double
            p = ctypes.c_void_p
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_t, int_t, int_t, real, p, int_t, p, int_t,
                           real, p, int_t]
            fn.restype = None
        return fns
    return None


def _layout(a):
    """(transpose flag, leading dimension) of a 2-D operand for a row-major GEMM, or None when
    BLAS cannot read it in place (NumPy's matmul then copies or loops, and so does the plan)."""
    item = a.itemsize
    s0, s1 = a.strides
    if s1 == item and s0 >= max(1, a.shape[1]) * item and s0 % item == 0:
        return _NO, s0 // item
    if s0 == item and s1 >= max(1, a.shape[0]) * item and s1 % item == 0:
        return _TRANS, s1 // item
    return None


def writable(w, a, b) -> bool:
    """True when `gemm_sub(w, a, b)` may write w: only the executor refers to w (the first
    check: no reference may be taken before it), and BLAS can take the three as they are."""
    if _getrefcount(w) != PRIVATE_REFS or _weakrefs(w) or w.base is not None or GEMM is None:
        return False
    flags = w.flags
    if not (flags.writeable and flags.c_contiguous) or w.dtype not in GEMM or a.dtype != w.dtype \
            or b.dtype != w.dtype or fp_errors_raise():
        return False
    (m, k), (k2, n) = a.shape, b.shape
    return w.shape == (m, n) and k == k2 and m * n * k > 0 and _layout(a) is not None and _layout(b) is not None


def gemm_sub(w, a, b, scale=1.0):
    """w -= scale * (a @ b) in w's buffer, for operands `writable` accepted; returns w."""
    return _gemm_sub(GEMM, w, a, b, scale)


def _gemm_sub(fns, w, a, b, scale=1.0):
    """gemm_sub through the GEMM functions `fns` ({dtype: function})."""
    (m, k), n = a.shape, b.shape[1]
    ta, lda = _layout(a)
    tb, ldb = _layout(b)
    fns[w.dtype](_ROW, ta, tb, m, n, k, -float(scale), a.ctypes.data, lda, b.ctypes.data, ldb, 1.0, w.ctypes.data, n)
    return w


def planned_updates(graph):
    """(the update nodes of `graph.inplace`, the ids of every node they replace), or empty when
    they are not the graph's last nodes (the buffer plan would count their operands dead too
    early)."""
    updates = [n for n in graph.nodes if n.id in graph.inplace]
    replaced = {n.id for n in updates} | {m.id for n in updates for m in graph.inplace[n.id][2]}
    if {n.id for n in graph.nodes[len(graph.nodes) - len(replaced):]} != replaced:
        return [], set()
    return updates, replaced


def emit_updates(em, reuse):
    """The plan's lines for the weight updates of passes/inplace.py (`em.updates`, the last
    nodes), written by codegen's emitter `em`: the plan's locals that may be views of a weight
    dropped (each would count as someone else seeing it); whether each update may be written
    into its weight (only when the fused call runs the plan, `_own`); the others' ordinary
    product, scaling and subtraction; then the writes, so that nothing which can fail runs after
    the first write.

        v49 = None                                   # w2's transpose from the backward pass
        _w61 = _own and WRITABLE(v3, v58, v76)
        if not _w61:
            v60 = NP_matmul(v58, v76)
            v61 = NP_subtract(v3, v60, out=OUT(v60, v3))
        if _w61: v61 = GEMM_SUB(v3, v58, v76)
    """
    from .. import ir
    from .buffers import COPYING, _refs_of

    graph, updates = em.graph, em.updates
    em.globals.update(WRITABLE=writable, GEMM_SUB=gemm_sub)
    needed = set(em.outputs)
    for n in updates:
        product, scale, _ = graph.inplace[n.id]
        needed |= {i.id for i in (n.inputs[0], *product.inputs, scale) if isinstance(i, ir.Node)}
    views = {n.inputs[0].id for n in updates}
    grew = True
    while grew:
        grew = False
        for m in graph.all_nodes():
            if m.id not in views and m.op not in COPYING and any(i.id in views for i in _refs_of(m)):
                views.add(m.id)
                grew = True
    drop = sorted(views - needed - em.replaced)
    if drop:
        em.lines.append("    " + " = ".join(f"v{i}" for i in drop) + " = None")
    writes = []
    for n in updates:
        product, scale, _ = graph.inplace[n.id]
        args = ", ".join(em.arg(x) for x in (n.inputs[0], *product.inputs))
        writes.append(f"    if _w{n.id}: v{n.id} = GEMM_SUB({args}{'' if scale is None else ', ' + em.arg(scale)})")
        em.lines.append(f"    _w{n.id} = _own and WRITABLE({args})")
    for n in updates:
        em.lines.append(f"    if not _w{n.id}:")
        for m in graph.inplace[n.id][2]:
            em._emit_one(m, 8, reuse)
        em._emit_one(n, 8, reuse)
    em.lines += writes


def _count(w):
    return _getrefcount(w)


def _private_refs() -> int:
    """The reference count `writable` sees for an array only the executor holds: the chain of
    the fused call function (executor/fused.py) rebuilt here, one reference per link."""
    holder = types.SimpleNamespace(_data=np.empty(1))
    s4 = holder._data  # the guard's local
    S = (s4,)  # the slot tuple
    v3 = S[0]  # the plan's local
    return _count(v3)


def _checked(fns):
    """`fns` when a small product through them has np.matmul's values, else None."""
    if fns is None:
        return None
    rng = np.random.default_rng(0)
    for dt in fns:
        a, b = rng.standard_normal((5, 3)).astype(dt), rng.standard_normal((4, 5)).astype(dt)
        w = rng.standard_normal((3, 4)).astype(dt)
        want = w - a.T @ b.T
        if _gemm_sub(fns, w, a.T, b.T) is not w or not np.allclose(w, want, rtol=1e-5, atol=1e-6):
            return None
    return fns


GEMM = _checked(_bind())
PRIVATE_REFS = _private_refs()
