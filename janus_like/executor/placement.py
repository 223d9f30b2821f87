"""Device placement: which device (NumPy on the CPU, CuPy on a GPU) computes each node.

A graph runs where its inputs live. Nothing is stored on the nodes: placement is derived from
the graph, so passes that add or replace nodes cannot leave a stale device behind.

    INPUT       where the argument's array lived when the graph was generated (the guards check
                the array type, so a call with the array elsewhere takes another graph)
    CONST       where the captured array lives; 0-d NumPy values are neutral (CuPy accepts scalars)
    to_device   its `device` parameter: the explicit transfer node
    other ops   where their array operands live (an index array does not count). Operands on two devices is an error in eager
                code too (CuPy refuses NumPy arrays), so generation stops with `device-mismatch`
                and the eager call raises it
    Python values, asserts, conversions to Python numbers: no device

`place(graph)` returns {node id: "cpu" | "gpu"} for the nodes that compute on a GPU, and is
empty for an all-CPU graph (the common case, which then runs as the NumPy plan).
"""
from __future__ import annotations

import numpy as np

from .. import backend, ir

_NEUTRAL = {ir.ASSERT, ir.TO_PY, ir.PY_OP}
# indexing ops: the leading operands are data, the rest index arrays, which eager code passes to
# the array's own indexing as they are (host index arrays into device arrays included)
_INDEXED = {"getitem": 1, "getitem_grad": 2, "index_update": 2}


class DeviceMismatch(Exception):
    def __init__(self, node, devices):
        super().__init__(f"op '{node.op}' at {node.site or '?'} gets operands on {' and '.join(sorted(devices))}")
        self.node = node


def _own(n, devices):
    """The device a node computes on, from its operands' devices (None: a Python value)."""
    op = n.op
    if op == ir.INPUT:
        return n.params.get("device") or (None if n.aval is None or n.aval[0] == () else "cpu")
    if op == ir.CONST:
        v = n.params["value"]
        if isinstance(v, np.ndarray) and v.ndim == 0 or not hasattr(v, "shape") or isinstance(v, np.generic):
            return None
        return backend.device_of(v)
    if op == "to_device":
        return n.params["device"]
    if op in _NEUTRAL:
        return None
    if op == ir.RANDOM:
        return "cpu"
    operands = n.inputs[:_INDEXED[op]] if op in _INDEXED else n.inputs
    found = {devices.get(i.id) for i in operands if isinstance(i, ir.Node)} - {None}
    if op in (ir.COND, ir.LOOP):
        outs = n.params.get("then_outs", ()) + n.params.get("else_outs", ()) + tuple(n.params.get("body_outs", ()))
        found |= {devices.get(o.id) for o in outs if isinstance(o, ir.Node)} - {None}
    if len(found) > 1:
        raise DeviceMismatch(n, found)
    if found:
        return found.pop()
    return None if n.aval is not None and n.aval[0] == () else "cpu"


def _walk(nodes):
    """Every node, nested ones included, each after the nodes it reads."""
    for n in nodes:
        if n.op == ir.COND:
            yield from _walk(n.params["then_nodes"])
            yield from _walk(n.params["else_nodes"])
        elif n.op == ir.LOOP:
            yield from n.params["placeholders"]
            yield from _walk(n.params["cond_nodes"])
            yield from _walk(n.params["body_nodes"])
        yield n


def place(graph: ir.Graph) -> dict:
    """{node id: device} for every node (nested ones included) when any node is on a GPU, else
    {}. Raises DeviceMismatch for an op whose operands live on two devices."""
    if not any_gpu(graph):
        return {}
    devices: dict = {}
    loops = {p.id: (n, k) for n in _walk(graph.nodes) if n.op == ir.LOOP for k, p in enumerate(n.params["placeholders"])}
    for n in _walk(graph.nodes):
        if n.id in loops:  # a loop's carried value lives where its initial value does
            loop, k = loops[n.id]
            i = loop.inputs[k]
            devices[n.id] = devices.get(i.id) if isinstance(i, ir.Node) else None
        else:
            devices[n.id] = _own(n, devices)
    return devices


def any_gpu(graph: ir.Graph) -> bool:
    for n in _walk(graph.nodes):
        if n.op == ir.INPUT and n.params.get("device") == "gpu" or n.op == "to_device" and n.params["device"] == "gpu":
            return True
        if n.op == ir.CONST and backend.device_of(n.params["value"]) == "gpu":
            return True
    return False


def node_device(node) -> str | None:
    """The device of one node while its graph is being generated (walks its operands)."""
    if not backend._state["gpu_used"]:
        return None if node.aval is None or node.aval[0] == () else "cpu"
    devices: dict = {}
    stack = [node]
    while stack:  # iterative: an unrolled LSTM's chains are thousands of nodes deep
        n = stack[-1]
        pending = [i for i in n.inputs if isinstance(i, ir.Node) and i.id not in devices]
        if n.op in (ir.COND, ir.LOOP):  # the rare nested case: place the whole construct
            pending += [o for o in n.params.get("then_outs", ()) + n.params.get("else_outs", ())
                        + tuple(n.params.get("body_outs", ())) if isinstance(o, ir.Node) and o.id not in devices]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        if n.id not in devices:
            devices[n.id] = _own(n, devices)
    return devices[node.id]
