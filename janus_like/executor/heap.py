"""Keeping freed memory in the process heap between training steps (glibc's malloc).

A training step allocates and frees tens of MB of temporaries. glibc's malloc returns the top of
its heap to the operating system when more than its trim threshold is free there; the threshold
adapts to at most twice the largest block freed so far (~10 MB for the ResNet benchmark, whose
largest temporaries are 4.7 MB). A step that frees more than that at once hands the memory back,
and the next step faults every page in again: the ResNet step took ~990 minor page faults
(about 4 MB zeroed by the kernel) per step, hand NumPy's none, although only because its
allocation order happened to keep the heap top in use. A change elsewhere in the process moved
the faults to the hand-written step (5,974 per step in one experiment with a buffer pool).

So when the JIT compiles a graph it asks malloc, once per process and again only for a larger
graph, to keep up to twice the graph's intermediate values free in the heap:

    mallopt(M_MMAP_THRESHOLD, 32 MiB)      blocks below it come from the heap, not from mmap
    mallopt(M_TRIM_THRESHOLD, max(128 MiB, 2 x graph bytes), at most 1 GiB)

Setting either turns off malloc's own adaptation, so both are set (32 MiB is the largest mmap
threshold glibc accepts: larger arrays are still mapped and unmapped per allocation). Measured
in one process running the ResNet step: 990 -> 0.1 minor faults per step (105 MiB kept: 27).
The cost is resident memory: up to the trim threshold stays with the process after the arrays
are freed, as it would in a framework's own caching allocator.

JANUS_LIKE_HEAP=os leaves malloc's settings alone. Only glibc has `mallopt`; elsewhere (macOS,
musl) nothing is done.
"""
from __future__ import annotations

import ctypes
import math
import os

import numpy as np

from .. import ir
from .buffers import _known

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
MMAP_THRESHOLD = 32 << 20
TRIM_MIN, TRIM_MAX = 128 << 20, 1 << 30
_kept = [0]  # the trim threshold set so far (0: none)
_mallopt = []  # [function or None], looked up once


def _lookup():
    if not _mallopt:
        try:
            libc = ctypes.CDLL(None)
            libc.gnu_get_libc_version  # glibc's mallopt takes these parameter numbers
            f = libc.mallopt
            f.argtypes, f.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        except (OSError, AttributeError):
            f = None
        _mallopt.append(f)
    return _mallopt[0]


def graph_bytes(graph: ir.Graph) -> int:
    """Bytes of the graph's computed values of static shape (inputs and constants excluded)."""
    total = 0
    for n in graph.all_nodes():
        shape = _known(n)
        if shape is not None and n.op not in (ir.INPUT, ir.CONST):
            total += math.prod(shape) * np.dtype(n.aval[1]).itemsize
    return total


def keep_for(nbytes: int) -> int:
    """Keep at least max(TRIM_MIN, 2 * nbytes) (at most TRIM_MAX) of freed memory in the heap;
    returns the trim threshold in force (0 when malloc is left alone)."""
    if os.environ.get("JANUS_LIKE_HEAP", "").lower() == "os":
        return _kept[0]
    want = min(max(TRIM_MIN, 2 * nbytes), TRIM_MAX)
    if want <= _kept[0]:
        return _kept[0]
    f = _lookup()
    if f is None:
        return 0
    if not _kept[0] and not f(M_MMAP_THRESHOLD, MMAP_THRESHOLD):
        return 0
    if f(M_TRIM_THRESHOLD, want):
        _kept[0] = want
    return _kept[0]


def kept() -> int:
    """The trim threshold this process set (0: malloc's own policy)."""
    return _kept[0]
