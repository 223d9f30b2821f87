"""Elementwise fusion: a chain of elementwise ops on one shape as one Numba loop (optional).

An optimizer's update is a dozen elementwise ops per weight. The NumPy plan makes a pass over
memory for each: Adam on a 200 K-element weight reads and writes ~14 arrays of 800 KB where the
arithmetic needs four reads and three writes. Here such a chain becomes one loop that loads each
operand once, keeps every intermediate in a register and stores only what is read later:

    def kernel(a0, a1, a2, a3, s0, s1):      # g, m, v, w; the bias corrections
        ...
        for i in range(n):
            x0 = a0[i]; x1 = a1[i]; x2 = a2[i]; x3 = a3[i]
            t0 = np.float32(0.9) * x1 + np.float32(0.1) * x0       # one op per line, in fact
            ...
            a1[i] = t0; a2[i] = t1; a3[i] = t5                     # m, v, w written in place

The plan calls it where the chain was (`executor/codegen.py`), in place of the chain's lines,
when no floating-point error may raise and its array operands are C-contiguous; otherwise the
chain's own NumPy lines run:

    if _fq and CONTIG(v59, v60, v61, v3):
        _k60 = v60 if _st else v60.copy(); ...
        FK0(v59, _k60, _k61, _k3, float(v73), float(v76))
        v64 = _k60; v68 = _k61; v83 = _k3
    else:
        v62 = NP_multiply(C26, v60, out=...)   # the unfused lines
        ...

A result the chain writes into a donated state array (passes/donate.py) goes into that array
when the write region writes (`_st`), else into a copy of it: the loop reads an element before
writing it, so reading and writing one array is safe, and LLVM vectorizes it (two different
arrays that overlap would make it take the scalar loop). Other results go into new arrays.

Same values as NumPy: each op casts its operands to its result dtype and computes in it, as the
ufunc loop NumPy picks does, and add, subtract, multiply, divide, negative, sqrt and abs are
correctly rounded in IEEE arithmetic, with no contraction into fused multiply-adds (no fastmath).
So the fused loop gives the same bits as the chain. What differs: no floating-point warnings
(a divide by zero gives inf silently; a raising error state runs the NumPy lines). A chain is
used only through the native tier (executor/tiering.py), which compiles the fused plan, checks
it against the plan and keeps it only when it is faster.

A group is a set of such ops of one static shape (at least MIN_ELEMENTS elements) connected
through operands of that shape; other operands are 0-d values or Python numbers. The plan runs
the group where its last op was: no op outside the group may read one of its values before
that point (`find_groups` checks it when it grows a group), and `reorder` moves the group's ops
together there, so that the memory plan sees the order the plan runs.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import ir
from ..passes.order import refs
from .buffers import _known

MIN_ELEMENTS = 1024
# op -> the expression of one element, from its operands' expressions (already cast)
OPS = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "div": "{} / {}", "neg": "-{}",
       "sqrt": "np.sqrt({})", "abs": "np.abs({})"}
_DTYPES = {np.dtype(np.float32): "np.float32", np.dtype(np.float64): "np.float64"}


class Group:
    """Nodes `members` (in plan order) of one `shape` and the kernel that runs them: `arrays`
    (external operands of that shape), `scalars` (external 0-d operands), `outputs` (members
    read after the group or returned), `source` (the kernel's module source, the same for
    chains of the same structure)."""

    def __init__(self, members):
        self.members = members
        self.shape = _known(members[0])
        self.arrays, self.scalars, self.outputs = [], [], []
        self.source = ""
        self.name = ""  # the kernel's global in the plan
        self.into = {}  # output id -> the donated array (its INPUT id) the result goes into

    @property
    def fresh(self) -> list:
        """The outputs that go into new arrays (the kernel's `o` parameters)."""
        return [m for m in self.outputs if m.id not in self.into]


def _dtype(n):
    return np.dtype(n.aval[1]) if n.aval is not None else None


def _member(n, skip) -> bool:
    """Node n may be fused: an op of OPS of a static float shape of MIN_ELEMENTS or more, whose
    operands are arrays of its shape (float or bool), 0-d floats or finite Python numbers."""
    if n.op not in OPS or n.params or n.errstate is not None or n.id in skip or _dtype(n) not in _DTYPES:
        return False
    shape = _known(n)
    if not shape or math.prod(shape) < MIN_ELEMENTS:
        return False
    for i in n.inputs:
        if isinstance(i, ir.Node):
            if not ir.numpy_typed(i) and not (i.aval is not None and i.aval[0] == ()):
                return False
            if _known(i) == shape and _dtype(i).kind in "fb":
                continue
            if _known(i) == () and _dtype(i).kind == "f":
                continue
            return False
        if type(i) not in (int, float) or not math.isfinite(i) or (type(i) is int and abs(i) > 2 ** 24):
            return False
    return True


def fusable_groups(graph: ir.Graph) -> list[Group]:
    """The groups `compile_plan(graph, fuse=True)` runs as kernels: those of `find_groups`,
    less the nodes the plan emits in another form, in a graph of static shapes."""
    from . import blas, rows, scalars

    if graph.polymorphic:
        return []
    read = scalars.readers(graph)
    _packed, unread = scalars.packed_numbers(graph, read)
    sparse, skip = rows.sparse_updates(graph, read)
    replaced = blas.planned_updates(graph)[1]
    return find_groups(graph, unread | skip | set(sparse) | replaced | scalars.scalar_pairs(graph, read))


def find_groups(graph: ir.Graph, skip=frozenset(), member=None) -> list[Group]:
    """The fusable groups of two or more ops among `graph`'s top-level nodes (`skip`: ids the
    plan emits in another form), each valid where its last op is. `member(node)`: whether a node
    may join a group (default `_member`, the Numba loops' rule; gpu_fusion.py has its own)."""
    if member is None:
        member = lambda n: _member(n, skip)  # noqa: E731
    pos = {n.id: k for k, n in enumerate(graph.nodes)}
    users: dict = {}
    for n in graph.nodes:
        for i in set(x.id for x in refs(n)):
            users.setdefault(i, []).append(pos[n.id])
    group_of: dict = {}  # member id -> its group (a list of nodes)
    for n in graph.nodes:
        if not member(n):
            continue
        here = pos[n.id]
        candidates = []  # the groups of n's inputs of n's shape
        for i in n.inputs:
            g = group_of.get(i.id) if isinstance(i, ir.Node) and _known(i) == _known(n) else None
            if g is not None and all(g is not c for c in candidates):
                candidates.append(g)
        # every reader of a member outside the group must come after the group (its last op, n):
        # drop the input groups read from outside before n until the rest hold (dropping one
        # group makes its readers external to the others, never the reverse)
        while True:
            ids = {n.id} | {m.id for g in candidates for m in g}
            kept = [g for g in candidates
                    if not any(u < here and graph.nodes[u].id not in ids for m in g for u in users.get(m.id, ()))]
            if len(kept) == len(candidates):
                break
            candidates = kept
        joined = sorted([n, *(m for g in candidates for m in g)], key=lambda m: pos[m.id])
        for m in joined:
            group_of[m.id] = joined
    groups, seen = [], set()
    for n in graph.nodes:
        g = group_of.get(n.id)
        if g is not None and id(g) not in seen:
            seen.add(id(g))
            if len(g) >= 2:
                groups.append(Group(g))
    return groups


def reordered(graph: ir.Graph):
    """(graph with its fusable groups' ops together, each where its last op was, so that the
    memory plan sees the order the plan runs; the groups)."""
    groups = fusable_groups(graph)
    return (dataclasses.replace(graph, nodes=reorder(graph, groups)) if groups else graph), groups


def blocks(graph: ir.Graph, groups) -> list:
    """(first, last) positions of each group in reordered `graph` (donation.plan_region)."""
    where = {n.id: k for k, n in enumerate(graph.nodes)}
    return [(where[g.members[0].id], where[g.members[-1].id]) for g in groups]


def reorder(graph: ir.Graph, groups) -> list:
    """graph.nodes with each group's members moved together, just before its last member."""
    moved = {m.id: g for g in groups for m in g.members[:-1]}
    last = {g.members[-1].id: g for g in groups}
    order = []
    for n in graph.nodes:
        if n.id in moved:
            continue
        if n.id in last:
            order += last[n.id].members
        else:
            order.append(n)
    return order


def boundary(members, outputs, users) -> tuple[list, list]:
    """(the nodes `members` read that are not members, in the order first read; the members
    read by a node outside them or returned). `outputs`: the graph's output ids; `users`: node
    id -> ids of its top-level readers. (The Numba loops' groups and gpu_fusion.py's.)"""
    ids = {m.id for m in members}
    operands = []
    for m in members:
        for i in m.inputs:
            if isinstance(i, ir.Node) and i.id not in ids and all(x is not i for x in operands):
                operands.append(i)
    return operands, [m for m in members if m.id in outputs or any(u not in ids for u in users.get(m.id, ()))]


def plan_kernel(group: Group, outputs: set, users: dict, writers: dict, reuse: dict) -> None:
    """Fill in `group`'s operands, outputs and kernel source. `outputs`: the graph's output ids;
    `users`: node id -> ids of its top-level readers; `writers`: node id -> the donated INPUT
    id it writes (the write region's); `reuse`: the memory plan (node id -> the operand whose
    buffer it takes)."""
    operands, group.outputs = boundary(group.members, outputs, users)
    group.arrays = [i for i in operands if _known(i) == group.shape]
    group.scalars = [i for i in operands if _known(i) != group.shape]
    group.into = _into(group, {m.id for m in group.members}, writers, reuse)
    group.source = _source(group)


def _into(group, ids, writers, reuse) -> dict:
    """output id -> the donated array it is written into: a donated array whose writer (its last
    reader) is in the group is dead after it, and takes the output its buffer passes to in the
    memory plan (m's new value for Adam's `0.9 * m`), else another output of its dtype."""
    taken: dict = {}
    outs = {m.id for m in group.outputs}
    by_id = {m.id: m for m in group.members}
    for w, x in writers.items():
        if w not in ids or not any(a.id == x for a in group.arrays):
            continue
        node = w
        while node not in outs:  # the member that takes node's buffer next
            node = next((m.id for m in group.members if reuse.get(m.id) is not None
                         and m.inputs[reuse[m.id]] is by_id[node]), None)
            if node is None:
                break
        if node is None or node in taken:
            x_dtype = _dtype(next(a for a in group.arrays if a.id == x))
            node = next((m.id for m in group.outputs if m.id not in taken and _dtype(m) == x_dtype), None)
        if node is not None:
            taken[node] = x
    return taken


def _source(group: Group) -> str:
    fresh = group.fresh
    params = [f"a{k}" for k in range(len(group.arrays))] + [f"s{k}" for k in range(len(group.scalars))] \
        + [f"o{k}" for k in range(len(fresh))]
    lines = [f"def kernel({', '.join(params)}):"]
    lines += [f"    {p} = {p}.reshape(-1)" for p in params if p[0] in "ao"]
    lines.append("    for i in range(a0.size):")
    lines.append("        " + "; ".join(f"x{k} = a{k}[i]" for k in range(len(group.arrays))))
    local = {a.id: f"x{k}" for k, a in enumerate(group.arrays)}
    local.update((s.id, f"s{k}") for k, s in enumerate(group.scalars))
    for k, m in enumerate(group.members):
        cast = _DTYPES[_dtype(m)]
        args = []
        for i in m.inputs:
            if isinstance(i, ir.Node):
                same = _dtype(i) == _dtype(m) and i.id in local and local[i.id][0] in "xt"
                args.append(local[i.id] if same else f"{cast}({local[i.id]})")
            else:
                args.append(f"{cast}({i!r})")
        local[m.id] = f"t{k}"
        lines.append(f"        t{k} = {OPS[m.op].format(*args)}")  # of dtype `cast`, as its operands
    stores = []
    for m in group.outputs:
        if m.id in group.into:
            k = next(k for k, a in enumerate(group.arrays) if a.id == group.into[m.id])
            stores.append(f"a{k}[i] = {local[m.id]}")
        else:
            stores.append(f"o{fresh.index(m)}[i] = {local[m.id]}")
    lines.append("        " + "; ".join(stores))
    return "import numpy as np\n\n\n" + "\n".join(lines) + "\n"


def compile_kernels(groups) -> dict:
    """source -> Numba dispatcher, each compiled for the groups' argument types (C-ordered
    arrays of their dtypes and ranks, float scalars) before the plan first runs."""
    import numba

    from .native import _load

    kernels: dict = {}
    for g in groups:
        fn = kernels.get(g.source)
        if fn is None:
            module, on_disk = _load(g.source)
            fn = kernels[g.source] = numba.njit(module.kernel, error_model="numpy", nogil=True, cache=on_disk)
        sig = tuple(numba.types.Array(numba.from_dtype(_dtype(a)), len(g.shape), "C") for a in g.arrays + g.fresh)
        fn.compile(sig[:len(g.arrays)] + (numba.float64,) * len(g.scalars) + sig[len(g.arrays):])
    for fn in kernels.values():
        fn.disable_compile()  # other argument types run the NumPy lines (`fusable`)
    return kernels


def emit(em, group, indent, reuse) -> list[str]:
    """The plan lines for `group`: the kernel call when `_fq` (no floating-point error raises)
    and its array operands are C-ordered, else the chain's own lines (under memory plan
    `reuse`, as emitter `em` writes them)."""
    saved, em.lines = em.lines, []
    for m in group.members:
        em._emit_one(m, indent, reuse)
    member_lines, em.lines = em.lines, saved
    pad = " " * indent
    arrays = ", ".join(em.arg(a) for a in group.arrays)
    lines = [f"{pad}if _fq and FUSABLE({arrays}):"]
    written = set(group.into.values())  # donated: the array itself when the region writes, else a copy
    lines += [f"{pad}    _k{a.id} = {em.arg(a)} if _st else {em.arg(a)}.copy()"
              for a in group.arrays if a.id in written]
    lines += [f"{pad}    v{m.id} = EMPTY({group.shape!r}, {em.const(_dtype(m))})" for m in group.fresh]
    call = [f"_k{a.id}" if a.id in written else em.arg(a) for a in group.arrays]
    call += [f"float({em.arg(s)})" for s in group.scalars] + [f"v{m.id}" for m in group.fresh]
    lines.append(f"{pad}    {group.name}({', '.join(call)})")
    for m in group.outputs:
        if m.id in group.into:
            lines.append(f"{pad}    v{m.id} = _k{group.into[m.id]}")
    lines.append(f"{pad}else:")
    lines += ["    " + line for line in member_lines]
    return lines


def fusable(*arrays) -> bool:
    """The arrays have the type the kernels were compiled for (C-ordered, writeable, aligned;
    dtypes and ranks are the guards'): a call cannot fail in Numba's dispatch."""
    for a in arrays:
        flags = a.flags
        if not (flags.c_contiguous and flags.writeable and flags.aligned):
            return False
    return True


def prepare(em, groups, writers, reuse) -> None:
    """Plan and compile `groups`' kernels for emitter `em` (`writers`: the write region's;
    `reuse`: the memory plan) and bind what their lines use."""
    from .donation import fp_quiet

    users = {k: [u.id for u in v] for k, v in em.users.items()}
    for g in groups:
        plan_kernel(g, em.outputs, users, writers, reuse)
    kernels = compile_kernels(groups)
    names = {}
    for g in groups:
        g.name = names.setdefault(g.source, f"FK{len(names)}")
        em.globals[g.name] = kernels[g.source]
    em.globals.update(FP_QUIET=fp_quiet, FUSABLE=fusable, EMPTY=np.empty)
    em.groups = {m.id: g for g in groups for m in g.members}
    em.lines.append("    _fq = FP_QUIET()")
