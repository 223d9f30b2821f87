"""The GPU plan: a graph with nodes on a GPU as straight-line Python source.

The reference interpreter runs a GPU graph one node at a time: a dictionary environment, a
dispatch on the op and a registry lookup per node, about 5 µs of Python on top of each CuPy
launch (the tiny MLP's 71-node step spent 0.24 ms a call there). The GPU plan is the
interpreter unrolled: each node becomes one line calling the same registry kernel with the same
arguments, so it computes exactly what the interpreter computes, kernel for kernel.

    v7 = GK7(v3, v5)                # REGISTRY["mul"].impl bound to CuPy and the node's params
    if bool(v9) is not True: raise AF(A9)
    v11 = GK11(v7, GIX4(v2))           # getitem with a host index array: its device copy

Two things differ from the interpreter, neither in its values:
- **Index arrays stay on the device.** A host index array given to a GPU indexing op (the row
  index of a cross-entropy, `np.arange(n)`, or a captured array of rows) is copied to the GPU by
  CuPy on every call, a synchronous copy. The plan keeps the copy (`DeviceIndex`) and compares,
  each call, the host array with the one it copied: only a different array is copied again.
- **Elementwise chains run as one kernel** (`gpu_fusion.py`, where CuPy can compile one).

A node on the CPU (a graph mixing devices) calls its kernel with NumPy, as in the interpreter.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import backend, ir
from ..backend import device_operand
from ..ops.draws import SlotRng
from ..ops.registry import REGISTRY
from . import gpu_fusion
from .interpreter import AssertFailed
from .placement import _INDEXED
from .plan_helpers import control_lines


class DeviceIndex:
    """The GPU copy of the host index arrays one operand receives: copied again only when the
    array differs (shape, dtype or any element) from the one copied last."""

    __slots__ = ("seen", "dev", "cp")

    def __init__(self, cp):
        self.cp, self.seen, self.dev = cp, None, None

    def __call__(self, host):
        if type(host) is not np.ndarray:  # not a host array after all: CuPy gets it as it is
            return host
        seen = self.seen
        if seen is None or host.shape != seen.shape or host.dtype != seen.dtype or not (host == seen).all():
            self.seen, self.dev = host.copy(), self.cp.asarray(host)
        return self.dev


def _host_index(node, devices) -> bool:
    """An index operand that holds a host integer or boolean array (not a 0-d one)."""
    if devices.get(node.id) == "gpu" or node.aval is None or len(node.aval[0]) < 1:
        return False
    return np.dtype(node.aval[1]).kind in "iub"


class _Emitter:
    def __init__(self, devices, cp):
        self.devices, self.cp = devices, cp
        self.lines: list[str] = []
        self.globals = {"np": np, "AF": AssertFailed, "GDV": device_operand}
        self._names: dict[int, str] = {}
        self.groups: dict = {}  # member id -> its gpu_fusion.GpuGroup

    def const(self, value, prefix="GC") -> str:
        name = self._names.get(id(value))
        if name is None or self.globals.get(name) is not value:
            name = f"{prefix}{len(self.globals)}"
            self.globals[name] = value
            self._names[id(value)] = name
        return name

    def arg(self, i) -> str:
        return f"v{i.id}" if isinstance(i, ir.Node) else self.const(i)

    def device_arg(self, i, index=False) -> str:
        """Operand i of a GPU node, as the interpreter hands it over (device_operand); `index`:
        an index operand of an indexing op (a host array there keeps its device copy)."""
        if not isinstance(i, ir.Node):
            return self.const(device_operand(i))
        if index and _host_index(i, self.devices):
            return f"{self.const(DeviceIndex(self.cp), 'GIX')}(v{i.id})"
        if self.devices.get(i.id) == "gpu" or i.aval is not None and len(i.aval[0]) >= 1:
            return f"v{i.id}"  # a device array, or an array that is no 0-d value: passed as it is
        return f"GDV(v{i.id})"

    def emit(self, nodes, indent):
        for n in nodes:
            group = self.groups.get(n.id)
            if group is not None:  # one kernel for the group, where its last op was
                if n is group.members[-1]:
                    self.lines.append(" " * indent + self._fused(group))
                continue
            if n.errstate is not None:
                self.lines.append(" " * indent + f"with np.errstate(**{self.const(n.errstate)}):")
                self._one(n, indent + 4)
            else:
                self._one(n, indent)

    def _fused(self, group) -> str:
        """CuPy ignores NumPy's error state, so the members' errstate needs no `with` here."""
        args = ", ".join(self.device_arg(a) for a in group.operands)
        outs = ", ".join(f"v{m.id}" for m in group.outputs)
        return f"{outs} = {self.const(group.kernel, 'GFK')}({args})"

    def _one(self, n, indent):
        pad, v = " " * indent, f"v{n.id}"
        args = ", ".join(self.arg(i) for i in n.inputs)
        op = n.op
        if op == ir.INPUT:
            self.lines.append(f"{pad}{v} = S[{n.params['slot']}]")
        elif op == ir.CONST:
            self.lines.append(f"{pad}{v} = {self.const(n.params['value'])}")
        elif op == ir.ASSERT:
            self.lines.append(f"{pad}if bool({args}) is not {n.params['expect']}: "
                              f"raise AF({self.const(n.params['assumption'])})")
        elif op == ir.TO_PY:
            self.lines.append(f"{pad}{v} = {self.const(n.params['type'])}({args})")
        elif op == ir.RANDOM:
            fn = self.const(getattr(np.random, n.params["method"]))
            self.lines.append(f"{pad}{v} = {fn}(*{self.const(n.params['args'])}, **{self.const(n.params['kwargs'])})")
        elif op in (ir.COND, ir.LOOP):
            control_lines(self, n, indent)
        elif op == ir.PY_OP:
            self.lines.append(f"{pad}{v} = {self.const(n.params['fn'])}({args})")
        elif op == ir.TUPLE_GET:
            self.lines.append(f"{pad}{v} = {args}[{n.params['index']}]")
        else:
            on_gpu = self.devices.get(n.id) == "gpu"
            params, extra = n.params, ""
            if params.get("rng").__class__ is SlotRng:  # a draw from an input's generator
                params, extra = {k: p for k, p in params.items() if k != "rng"}, f"rng=S[{params['rng'].index}]"
            kernel = functools.partial(REGISTRY[op].impl, self.cp if on_gpu else np, **params)
            if on_gpu:
                first_index = _INDEXED.get(op, len(n.inputs))
                args = ", ".join(self.device_arg(i, k >= first_index) for k, i in enumerate(n.inputs))
            args = ", ".join(a for a in (args, extra) if a)
            self.lines.append(f"{pad}{v} = {self.const(kernel, 'GK')}({args})")


def compile_gpu_plan(graph: ir.Graph, devices: dict, cp=None, fuse: bool = True):
    """`plan(slots) -> list of output values` for a graph with GPU nodes (`devices`, from
    placement.place), with the `parts` executor/fused.py pastes into a graph's call function.
    `fuse`: elementwise chains as one kernel each (gpu_fusion.py)."""
    em = _Emitter(devices, cp if cp is not None else backend.gpu_module())
    groups = gpu_fusion.fused_groups(graph, devices, em.cp) if fuse else []
    em.groups = {m.id: g for g in groups for m in g.members}
    em.emit(graph.nodes, 4)
    outs = ", ".join(em.arg(o) for o in graph.outputs)
    src = "def plan(S):\n" + "\n".join(em.lines) + f"\n    return [{outs}]\n"
    exec(compile(src, f"<janus_like gpu plan {graph.name}>", "exec"), em.globals)
    plan = em.globals["plan"]
    plan.source, plan.inplace, plan.donated, plan.fused = src, False, [], len(groups)
    plan.parts = (list(em.lines), f"[{outs}]", em.globals)
    return plan
