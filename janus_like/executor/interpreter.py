"""The reference interpreter: the definition of what a graph means (about 40 lines).

Every fast path (the generated-code plan) is tested against it on every test graph.
"""
from __future__ import annotations

import numpy as np

from .. import backend, ir
from ..backend import device_operand
from ..ops.draws import resolve
from ..ops.registry import REGISTRY


class AssertFailed(Exception):
    """An assert node saw a value other than the one speculated on."""

    def __init__(self, assumption):
        super().__init__(assumption.describe() if assumption is not None else "assert failed")
        self.assumption = assumption


def run_nodes(nodes, env, slots, devices=None):
    for n in nodes:
        if n.errstate is not None:
            with np.errstate(**n.errstate):
                _run_node(n, env, slots, devices)
        else:
            _run_node(n, env, slots, devices)


def _run_node(n, env, slots, devices=None):
    op = n.op
    args = [env[i.id] if isinstance(i, ir.Node) else i for i in n.inputs]
    if op == ir.INPUT:
        env[n.id] = slots[n.params["slot"]]
    elif op == ir.CONST:
        env[n.id] = n.params["value"]
    elif op == ir.ASSERT:
        if bool(args[0]) is not n.params["expect"]:
            raise AssertFailed(n.params["assumption"])
    elif op == ir.TO_PY:
        env[n.id] = n.params["type"](args[0])
    elif op == ir.RANDOM:
        env[n.id] = getattr(np.random, n.params["method"])(*n.params["args"], **n.params["kwargs"])
    elif op == ir.COND:
        branch, outs = (("then_nodes", "then_outs") if args[0] else ("else_nodes", "else_outs"))
        run_nodes(n.params[branch], env, slots, devices)
        env[n.id] = tuple(env[o.id] if isinstance(o, ir.Node) else o for o in n.params[outs])
    elif op == ir.LOOP:
        values = args
        phs, cond = n.params["placeholders"], n.params["cond"]
        for _ in range(n.params["max_iter"]):
            for p, v in zip(phs, values):
                env[p.id] = v
            run_nodes(n.params["cond_nodes"], env, slots, devices)
            if not env[cond.id]:
                break
            run_nodes(n.params["body_nodes"], env, slots, devices)
            values = [env[o.id] for o in n.params["body_outs"]]
        else:
            raise RuntimeError(f"loop %{n.id} ran past {n.params['max_iter']} iterations")
        env[n.id] = tuple(values)
    elif op == ir.PY_OP:
        env[n.id] = n.params["fn"](*args)
    elif op == ir.TUPLE_GET:
        env[n.id] = args[0][n.params["index"]]
    else:
        params = resolve(n.params, slots) if op == "draw_of" else n.params  # its generator: an input?
        if devices and devices.get(n.id) == "gpu":  # see placement.py
            args = [device_operand(a) for a in args]
            env[n.id] = REGISTRY[op].impl(backend.gpu_module(), *args, **params)
        else:
            env[n.id] = REGISTRY[op].impl(np, *args, **params)


def interpret(graph: ir.Graph, slots, devices=None):
    """Run `graph` on input `slots`; returns the values of `graph.outputs`. `devices` (from
    `placement.place`) names the nodes that compute on a GPU."""
    env: dict = {}
    run_nodes(graph.nodes, env, slots, devices)
    return [env[o.id] if isinstance(o, ir.Node) else o for o in graph.outputs]
