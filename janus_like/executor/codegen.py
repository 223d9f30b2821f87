"""The fast plan: a graph emitted as straight-line Python source and compiled once.

    def plan(S):
        v3 = S[2]
        v7 = np_matmul(v3, v5)
        if bool(v9) is not True: raise AF(A[0])
        return [v7, v12]

No per-node dispatch and no environment dict: node values are Python locals, kernels are bound
as globals of the generated function, and common ops call NumPy directly. Its behaviour is
checked against `interpreter.interpret` in the tests.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import ir
from ..ops.registry import REGISTRY
from .interpreter import AssertFailed

# ops whose implementation is exactly `xp.<fn>(*inputs)` with no params: call NumPy directly
_DIRECT = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "pow": "power",
           "neg": "negative", "exp": "exp", "log": "log", "tanh": "tanh", "sqrt": "sqrt", "abs": "abs",
           "maximum": "maximum", "minimum": "minimum", "where": "where", "matmul": "matmul", "dot": "dot",
           "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal",
           "ne": "not_equal", "sin": "sin", "cos": "cos", "sign": "sign", "logical_and": "logical_and",
           "logical_or": "logical_or", "logical_not": "logical_not"}


class _Emitter:
    def __init__(self):
        self.lines: list[str] = []
        self.globals: dict = {"np": np, "AF": AssertFailed, "bool": bool}
        self._kernels: dict = {}

    def const(self, value) -> str:
        if value is None or isinstance(value, (bool, str)):
            return repr(value)
        if type(value) is int:
            return repr(value)
        if type(value) is float and math.isfinite(value):
            return repr(value)
        name = f"C{len(self.globals)}"
        self.globals[name] = value
        return name

    def arg(self, i) -> str:
        return f"v{i.id}" if isinstance(i, ir.Node) else self.const(i)

    def kernel(self, n) -> str:
        if n.op in _DIRECT and not n.params:
            return f"np.{_DIRECT[n.op]}"
        op = REGISTRY[n.op]
        name = f"K{n.id}"
        self.globals[name] = functools.partial(op.impl, np, **n.params)
        return name

    def emit(self, nodes, indent):
        pad = " " * indent
        for n in nodes:
            args = ", ".join(self.arg(i) for i in n.inputs)
            v = f"v{n.id}"
            if n.op == ir.INPUT:
                self.lines.append(f"{pad}{v} = S[{n.params['slot']}]")
            elif n.op == ir.CONST:
                self.lines.append(f"{pad}{v} = {self.const(n.params['value'])}")
            elif n.op == ir.ASSERT:
                a = self.const(n.params["assumption"])
                self.lines.append(f"{pad}if bool({args}) is not {n.params['expect']}: raise AF({a})")
            elif n.op == ir.TO_PY:
                self.lines.append(f"{pad}{v} = {self.const(n.params['type'])}({args})")
            elif n.op == ir.RANDOM:
                fn = self.const(getattr(np.random, n.params["method"]))
                self.lines.append(f"{pad}{v} = {fn}(*{self.const(n.params['args'])}, **{self.const(n.params['kwargs'])})")
            elif n.op == ir.COND:
                self.lines.append(f"{pad}if {args}:")
                self.emit(n.params["then_nodes"], indent + 4)
                outs = ", ".join(self.arg(o) for o in n.params["then_outs"])
                self.lines.append(f"{pad}    {v} = ({outs}{',' if len(n.params['then_outs']) == 1 else ''})")
                self.lines.append(f"{pad}else:")
                self.emit(n.params["else_nodes"], indent + 4)
                outs = ", ".join(self.arg(o) for o in n.params["else_outs"])
                self.lines.append(f"{pad}    {v} = ({outs}{',' if len(n.params['else_outs']) == 1 else ''})")
            elif n.op == ir.LOOP:
                phs = n.params["placeholders"]
                names = ", ".join(f"v{p.id}" for p in phs) + ("," if len(phs) == 1 else "")
                self.lines.append(f"{pad}{names} = {args}{',' if len(phs) == 1 else ''}")
                self.lines.append(f"{pad}for _it{n.id} in range({n.params['max_iter']}):")
                self.emit(n.params["cond_nodes"], indent + 4)
                self.lines.append(f"{pad}    if not v{n.params['cond'].id}: break")
                self.emit(n.params["body_nodes"], indent + 4)
                outs = ", ".join(self.arg(o) for o in n.params["body_outs"])
                self.lines.append(f"{pad}    {names} = {outs}{',' if len(phs) == 1 else ''}")
                self.lines.append(f"{pad}else:")
                self.lines.append(f"{pad}    raise RuntimeError('loop ran past {n.params['max_iter']} iterations')")
                self.lines.append(f"{pad}v{n.id} = ({names})")
            elif n.op == ir.PY_OP:
                self.lines.append(f"{pad}{v} = {self.const(n.params['fn'])}({args})")
            elif n.op == ir.TUPLE_GET:
                self.lines.append(f"{pad}{v} = {args}[{n.params['index']}]")
            else:
                self.lines.append(f"{pad}{v} = {self.kernel(n)}({args})")


def compile_plan(graph: ir.Graph):
    """Compile `graph` to a Python function `plan(slots) -> list of output values`."""
    em = _Emitter()
    em.emit(graph.nodes, 4)
    outs = ", ".join(em.arg(o) for o in graph.outputs)
    src = "def plan(S):\n" + "\n".join(em.lines) + f"\n    return [{outs}]\n"
    code = compile(src, f"<janus_like plan {graph.name}>", "exec")
    exec(code, em.globals)
    plan = em.globals["plan"]
    plan.source = src
    return plan
