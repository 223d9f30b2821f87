"""The run-time half of a recursion region (graphgen/recursion.py makes the other half).

A `Region` holds the generated forward function of a self-recursive user function (its host
code kept as Python, each array operation a registry kernel) and one generated backward function
per return site. A forward run appends one record per call (the return site taken, every value
that site's backward reads, the record indices of its recursive calls), children before their
parent, so the backward pass walks the records last to first: each record's cotangent is known
(from its parent) before it is processed, and the per-op rules run in the eager tape's reverse
order. Contributions to the captured arrays are summed at the end, three ways:

* rows gathered by a Python int (`emb[node.word]`): one `np.add.at` of every row's cotangent
  (`indexing.scatter_add`, its faster forms with add.at's bits);
* a vector times a captured matrix (`x @ w`): one matrix product of the stacked vectors and their
  cotangents (the per-call outer products summed in another order: floating-point
  reassociation, as the graph passes' gradient folding);
* anything else: summed in the order eager's tape would sum it.

A region may also have a batched form (ops/recursion_batch.py: the calls of one height of the
tree run as one call on stacked values); which form runs a tree is chosen by measured cost
(`_Choice`).

Two ops reach it from a graph: `recursion(root, *arrays, region)` and
`recursion_grad(g, out, root, *arrays, region, index)`, the cotangent of `arrays[index]` (the
first one to run computes them all for this forward run). A value the generation did not
assume (a non-int index, an array where the forward expected a host value) raises `AssertFailed`:
the call runs eagerly.
"""
from __future__ import annotations

import re
import time

import numpy as np

from .indexing import scatter_add
from .registry import REGISTRY, register


class Mismatch(Exception):
    """Raised by generated region code; the executor turns it into an assert failure."""


class Region:
    """One staged recursive function: `forward(root, arrays)`, then `grads(g, index)`."""

    def __init__(self, name, site, make_forward, backwards, aval, kind, float_arrays, elems=None):
        self.name, self.site = name, site
        self.make_forward = make_forward  # (arrays, records) -> fwd(root) -> (value, record index)
        self.backwards = backwards  # per return site: (rec, g, cot, acc, arrays) -> None
        self.kind = kind  # "tensor" or "array": what eager's calls return (a tuple of them: `elems`)
        # elems: None, or the (shape, dtype) of each item of the tuple every call returns; the
        # node's value is then the items raveled one after the other (the graph slices them)
        self.elems = elems
        if elems is None:
            self.aval = aval  # (shape, dtype) every call returns
        else:
            sizes = [int(np.prod(shape, dtype=np.int64)) for shape, _ in elems]
            self.bounds = np.cumsum([0] + sizes).tolist()
            self.aval = ((self.bounds[-1],), elems[0][1])
        self.float_arrays = float_arrays  # indices of the captured arrays that take gradients
        self._records = None
        self._arrays = None
        self._run = 0
        self._grads_run = -1
        self._grads = None
        self.batched = None  # the batched form (ops/recursion_batch.py), where the region has one
        self.batch_reason = None  # else why not
        self.form = None  # "batched" or "call" to force a form; None: the cheaper by measured cost
        self.choice = _Choice()
        self._batched = False  # the form of the last run
        self.source = ""  # the generated code, for reading (graphgen/region_code.py sets it)
        self.batch_source = ""  # the batched form's

    def __repr__(self):
        return f"Region({self.name})"

    def describe(self):
        """One line for explain(): which form ran the trees, or why there is no batched one."""
        if self.batched is None:
            return f"recursion region {self.name}: call by call ({self.batch_reason})"
        runs = self.choice.runs
        return f"recursion region {self.name}: {runs[True]} trees batched by height, {runs[False]} call by call"

    def forward(self, root, arrays):
        self.choice.flush()
        records = []
        start = time.perf_counter()
        batched = False
        try:
            if self.batched is not None and self.form != "call":
                walked = self.batched.walk(root)
                groups = len(walked[1])
                batched = self.form == "batched" or self.choice.batched(len(walked[0]), groups)
            if batched:
                value, records = self.batched.forward(walked, arrays)
                if self.elems is None:
                    value = value[0]
            else:
                value, _ = self.make_forward(arrays, records)(root)
        except Mismatch as exc:
            raise _failed(self, str(exc)) from None
        if self.batched is not None:
            self.choice.start(batched, groups if batched else len(records), time.perf_counter() - start)
        self._batched = batched
        self._records, self._arrays = records, arrays
        self._run += 1
        if self.elems is not None:
            return np.concatenate([np.ravel(v) for v in value])
        return value

    def forget(self):
        """Drop the last run's records (a trial run's, at generation) and its measurement."""
        self._records = self._arrays = None
        self.choice.drop()
        self._run += 1

    @property
    def row_arrays(self) -> set:
        """The captured arrays whose gradient is gathered rows only in both forms' code (an
        embedding read one row per leaf): `sparse_grad` may give their `_Rows`."""
        uses: dict = {}
        for kind, j in re.findall(r"acc\.(rows|plain|xs)\[(\d+)\]", self.source + self.batch_source):
            uses.setdefault(int(j), set()).add(kind)
        return {j for j, kinds in uses.items() if kinds == {"rows"}}

    def grads(self, g, index):
        out = self.sparse_grad(g, index)
        if type(out) is _Rows:
            out = self._grads[index] = out.dense()
        return out

    def sparse_grad(self, g, index):
        """The gradient of captured array `index`, or (an array the run only gathered rows of,
        an embedding) its `_Rows`: the rows and their indices, not yet added into zeros."""
        if self._grads_run != self._run:
            self._grads = self._backward(g)
            self._grads_run = self._run
        out = self._grads[index]
        if out is None:  # eager's tape gives None here (e.g. a one-leaf tree never reads `w`)
            raise _failed(self, f"a gradient for captured array {index}")
        return out

    def _backward(self, g):
        records, arrays = self._records, self._arrays
        if self.elems is None:
            g_items = g
        else:
            b = self.bounds
            g_items = [g[b[k]:b[k + 1]].reshape(shape) for k, (shape, _) in enumerate(self.elems)]
        start = time.perf_counter()
        acc = _Accumulators(len(arrays), self._batched)
        if self._batched:
            self.batched.backward(records, [g] if self.elems is None else g_items, acc, arrays)
            totals = self._totals(acc, arrays)
        else:
            totals = self._call_by_call(records, g_items, acc, arrays)
        self.choice.add(time.perf_counter() - start)
        return totals

    def _call_by_call(self, records, g_items, acc, arrays):
        cot = [None] * len(records)
        cot[-1] = g_items
        backwards = self.backwards
        for i in range(len(records) - 1, -1, -1):
            gi = cot[i]
            if gi is not None:
                rec = records[i]
                backwards[rec[0]](rec, gi, cot, acc, arrays)
        return self._totals(acc, arrays)

    def _totals(self, acc, arrays):
        return [(acc.rows_only(j, arrays[j]) or acc.total(j, arrays[j])) if j in self.float_arrays else None
                for j in range(len(arrays))]


class _Choice:
    """Which form of a batched region runs a tree. Measured, as the region runs: the time of a
    run (forward and backward) per call in the per-call form and per (height, site) group in
    the batched form. The first runs alternate between the forms; then a tree runs batched when
    its groups times the batched cost is below its calls times the per-call cost (a chain, one
    call per height, runs call by call when the batched form's per-group overhead outweighs)."""

    SAMPLES = 5  # runs measured in each form before choosing; the latest ones decide

    def __init__(self):
        self.costs = {True: [], False: []}
        self.runs = {True: 0, False: 0}  # runs batched, call by call
        self.pending = None  # [form, units, seconds] of the run whose backward has not run yet

    def batched(self, calls, groups):
        per_group, per_call = self.costs[True], self.costs[False]
        if len(per_group) < self.SAMPLES or len(per_call) < self.SAMPLES:
            return len(per_group) <= len(per_call)
        return groups * sorted(per_group)[len(per_group) // 2] < calls * sorted(per_call)[len(per_call) // 2]

    def start(self, batched, units, seconds):
        self.pending = [batched, units, seconds]
        self.runs[batched] += 1

    def add(self, seconds):
        if self.pending is not None:
            self.pending[2] += seconds
            self.flush()

    def drop(self):
        if self.pending is not None:
            self.runs[self.pending[0]] -= 1
            self.pending = None

    def flush(self):
        if self.pending is not None:
            batched, units, seconds = self.pending
            costs = self.costs[batched]
            costs.append(seconds / max(units, 1))
            if len(costs) > 2 * self.SAMPLES - 1:
                del costs[0]
            self.pending = None


def set_cotangent(cot, i, k, n, value):
    """Item k of record i's cotangent (a call returning a tuple of n arrays)."""
    c = cot[i]
    if c is None:
        c = cot[i] = [None] * n
    c[k] = value


class _Accumulators:
    """Per captured array: plain contributions (in order), gathered rows, folded products."""

    __slots__ = ("plain", "rows", "rows_at", "xs", "gs", "join", "seen")

    def __init__(self, n, batched=False):
        self.join = np.concatenate if batched else np.stack  # blocks of calls, or one call's values
        self.seen = {}  # the values joined so far, by the ids of their parts (see `joined`)
        self.plain = [[] for _ in range(n)]
        self.rows = [[] for _ in range(n)]
        self.rows_at = [[] for _ in range(n)]
        self.xs = [[] for _ in range(n)]
        self.gs = [[] for _ in range(n)]

    def total(self, j, array):
        parts = []
        if self.plain[j] and self.join is np.concatenate:  # blocks of calls' rows: one sum over all
            parts.append(np.add.reduce(self.joined(self.plain[j]), 0))
        elif self.plain[j]:
            total = self.plain[j][0]
            for c in self.plain[j][1:]:
                total = total + c
            parts.append(total)
        if self.xs[j]:
            parts.append(np.matmul(self.joined(self.xs[j]).T, self.joined(self.gs[j])).astype(array.dtype, copy=False))
        if self.rows[j]:
            parts.append(self._rows(j, array).dense())
        if not parts:
            return None
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        return total

    def rows_only(self, j, array):
        """`_Rows` when array j's gradient is gathered rows only (what `total` adds into zeros),
        in its own dtype; else None."""
        rows = self.rows[j]
        if self.plain[j] or self.xs[j] or not rows or rows[0].dtype != array.dtype:
            return None
        return self._rows(j, array)

    def _rows(self, j, array):
        at = self.rows_at[j]  # ints, or (batched) arrays of them
        return _Rows(np.asarray(self.join(at) if self.join is np.concatenate else at, np.intp),
                     self.join(self.rows[j]), array, self.rows[j][0].dtype)

    def joined(self, values):
        """`join(values)`, computed once for the same values (a bias's cotangents are the folded
        product's `gs`)."""
        key = tuple(map(id, values))  # the lists hold the values, so their ids stay theirs meanwhile
        out = self.seen.get(key)
        if out is None:
            out = self.seen[key] = self.join(values)
        return out


class _Rows:
    """A gradient that is zeros but for rows added at `idx` (add.at's order); `dense()` makes it."""

    __slots__ = ("idx", "rows", "array", "dtype")

    def __init__(self, idx, rows, array, dtype=None):
        self.idx, self.rows, self.array = idx, rows, array
        self.dtype = rows.dtype if dtype is None else dtype  # of the zeros: the first row's

    def dense(self):
        dense = np.zeros(self.array.shape, self.dtype)
        scatter_add(dense, self.idx, self.rows)
        return dense


def _failed(region, what):
    from ..executor.interpreter import AssertFailed
    from ..jit.assumptions import Assumption

    return AssertFailed(Assumption("recursion", region.site, what, region.name))


def _forward(xp, root, *arrays, region):
    return region.forward(root, arrays)


def _grad(xp, g, out, root, *arrays, region, index):
    return region.grads(g, index)


def _vjp(g, out, root, *arrays, region):
    """In a graph (the only place a region runs): one `recursion_grad` node per float array."""
    from .registry import _builder

    emit = _builder[0].emit
    grad = REGISTRY["recursion_grad"]
    return (None,) + tuple(
        emit(grad, (g, out, root) + arrays, {"region": region, "index": j}, aval=(tuple(a.shape), a.dtype))
        if j in region.float_arrays else None for j, a in enumerate(arrays))


register("recursion", _forward, shape=lambda *a, region, **k: region.aval, vjp=_vjp,
         doc="a staged self-recursive function over a tree of Python objects (see ops/recursion.py)")
register("recursion_grad", _grad, shape=lambda *a, region, index, **k: None,
         doc="the cotangent of a recursion region's captured array `index`")
