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
import os

import numpy as np

from .. import ir
from ..ops.indexing import build_index, index_source, rows_by_product, scatter_add
from ..ops.primitives import _ONE, filled, sigmoid_one_buffer as _sigmoid, sum_to_axes
from ..ops.registry import REGISTRY
from .buffers import _CLIP, _INPLACE, _clip_inline, _known, _pool, plan_async, plan_reuse
from .interpreter import AssertFailed
from .plan_helpers import (PY_FORMS, _broadcast_copy, _in_dtype, _mean, _mean_axes, bind_numpy, c_ordered,
                           control_lines, copy_is_exact, draw_call, filled_call, out_buffer, python_number)
from . import blas, donation, floats, fusion, located, ranked, rows, scalars

# ops whose implementation is exactly `xp.<fn>(*inputs)` with no params: call NumPy directly
_DIRECT = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "pow": "power",
           "neg": "negative", "exp": "exp", "log": "log", "tanh": "tanh", "sqrt": "sqrt", "abs": "abs",
           "maximum": "maximum", "minimum": "minimum", "where": "where", "matmul": "matmul", "dot": "dot",
           "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal",
           "ne": "not_equal", "sin": "sin", "cos": "cos", "sign": "sign", "logical_and": "logical_and",
           "logical_or": "logical_or", "logical_not": "logical_not"}
_DIRECT.update((name, name) for name in ("square",  # ops/more_math.py: each op is the NumPy ufunc of its name
    "floor", "ceil", "rint", "isnan", "isinf", "isfinite", "floor_divide", "remainder", "log1p", "expm1", "log2",
    "log10", "reciprocal", "arctan", "sinh", "cosh", "logaddexp", "tan", "arcsin", "arccos", "arctan2", "hypot",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"))

# binary ufuncs whose Python-number operand is passed as a 0-d array (`_Emitter.ufunc_args`)
_SCALAR_OPS = {"add", "sub", "mul", "div", "maximum", "minimum"}

# reductions whose array method is exactly `ufunc.reduce(a, axis, dtype, out, keepdims)`
_REDUCE = {"sum": "add", "max": "maximum", "min": "minimum"}
_KEEP_LAYOUT = ".copy(order='K')"  # a copy written in place, laid out as eager's array it stands for


class _Emitter:
    def __init__(self, static_shapes=True):
        self.static_shapes = static_shapes  # avals are the run-time shapes (not a polymorphic graph)
        self.lines: list[str] = []
        self.globals: dict = {"np": np, "AF": AssertFailed, "bool": bool, "SUM_TO_AXES": sum_to_axes, "MEAN": _mean,
                              "SCATTER_ADD": scatter_add, "BUILD_INDEX": build_index,
                              "ROWS_BY_PRODUCT": rows_by_product, "CLIP": _CLIP,
                              "BCAST": _broadcast_copy, "OUT": out_buffer, "SIGMOID": _sigmoid}
        self.outputs: set = set()  # ids of the graph's outputs
        self.users: dict = {}  # node id -> its top-level readers (scalars.readers); empty: no copies
        self._kernels: dict = {}
        self._zero_d: dict = {}  # (dtype, number) -> name of its 0-d array
        self.scalar_nodes: set = set()  # one-element values held as NumPy scalars (scalars.scalar_pairs)
        self.packed, self.unread, self.rows = {}, set(), {}  # scalars.packed_numbers, rows.sparse_updates
        # weight updates written in place (blas.py): the update nodes, and every node they replace
        self.updates, self.replaced = [], set()
        self.region = None  # the write region of donated state arrays (donation.py), or None
        self.groups = {}  # member id -> its fused elementwise group (fusion.py)
        self.floats = None  # float64 scalars held as Python floats (floats.py), or None
        self.sites: dict = {}  # line index -> the user's "file.py:12" it computes (located.py)

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

    def ufunc_args(self, n) -> str:
        """The operands of a binary ufunc node, a Python number among them passed as a 0-d array
        of the other operand's float dtype (`np.subtract(ONE, v)`, not `np.subtract(1, v)`):
        NumPy picks the same loop and casts the number to the same value, but converts it at
        every call, which made `1 - x` on a (16, 128) float32 array ~2x as slow as `x * x`.
        Only when the result has that dtype and the number is finite in it (NumPy 1.x promotes
        an array by a Python number that does not fit its dtype; the guard keeps that). Two
        array operands go through `_leading_ones`."""
        arrays = [i for i in n.inputs if isinstance(i, ir.Node)]
        if n.op not in _SCALAR_OPS or n.params or len(n.inputs) != 2:
            return ", ".join(self.arg(i) for i in n.inputs)
        if len(arrays) == 2:
            return ", ".join(self._leading_ones(i, n) for i in arrays)
        if len(arrays) != 1 or not ir.numpy_typed(arrays[0]) or arrays[0].aval is None or not arrays[0].aval[0] \
                or n.aval is None or np.dtype(arrays[0].aval[1]) != np.dtype(n.aval[1]) \
                or np.dtype(n.aval[1]) not in _ONE:
            return ", ".join(self.arg(i) for i in n.inputs)
        dt = np.dtype(n.aval[1])
        number = next(i for i in n.inputs if not isinstance(i, ir.Node))
        if n.op in ("maximum", "minimum") and self.static_shapes and _known(arrays[0]) == _known(n) \
                and _in_dtype(number, dt) is not None and c_ordered(arrays[0]) \
                and (full := filled(_known(n), dt, number)) is not None:
            # the number as a full array: maximum/minimum's vector loop (ops/primitives.filled); a
            # C-ordered one, so only for an operand that is (the result keeps the operands' order)
            return ", ".join(self.arg(i) if isinstance(i, ir.Node) else self.const(full) for i in n.inputs)
        return ", ".join(self.arg(i) if isinstance(i, ir.Node) else self.zero_d(i, dt) for i in n.inputs)

    def _leading_ones(self, x, n) -> str:
        """Operand x of binary ufunc node n, given the leading unit axes it broadcasts to when
        that is its whole broadcast (`b[None]` for a (32,) bias added to a (1, 32) row): equal
        shapes take NumPy's fast loop, a broadcast its general iterator (0.41 against 0.99 us on
        (1, 32) float32; the view costs 0.1). The same values either way. A 0-d operand is on the
        fast loop already."""
        shape, out = (_known(x), _known(n)) if self.static_shapes else (None, None)
        if not shape or out is None or not ir.numpy_typed(x) or len(shape) >= len(out) \
                or out != (1,) * (len(out) - len(shape)) + shape:
            return self.arg(x)
        return f"{self.arg(x)}[{', '.join(['None'] * (len(out) - len(shape)))}]"

    def zero_d(self, value, dt) -> str:
        """A Python int or float as a named 0-d array of float dtype dt, or the literal when its
        value in dt is not finite or (an int) not exact."""
        a = _in_dtype(value, dt)
        if a is None:
            return self.arg(value)
        key = (dt.str, value, math.copysign(1.0, value) if type(value) is float else 0)  # -0.0 is not 0.0 here
        name = self._zero_d.get(key)
        if name is None:
            a.flags.writeable = False  # shared by every call of the plan
            name = self._zero_d[key] = self.const(a)
        return name

    def kernel(self, n) -> str:
        if n.op in _DIRECT and (not n.params or n.params == {"ufunc": True}):  # (np.power itself)
            return f"np.{_DIRECT[n.op]}"
        op = REGISTRY[n.op]
        name = f"K{n.id}"
        self.globals[name] = functools.partial(op.impl, np, **n.params)
        return name

    def index_code(self, template, operands) -> str:
        return index_source(template, lambda k: self.arg(operands[k]), self.const)

    def inline(self, n) -> str | None:
        """A Python expression for common ops (no call through the registry), or None."""
        x = n.inputs[0] if n.inputs else None
        array_in = isinstance(x, ir.Node) and x.aval is not None and len(x.aval[0]) >= 1
        one = scalars.operator(self, n) or scalars.reduce(self, n)  # values of one element
        if one is not None:
            return one
        if n.id in self.packed:
            return scalars.pack(self, n)
        if n.op == "draw_of":
            return draw_call(self, n)
        if n.op == "pow" and not n.params and len(n.inputs) == 2 and array_in and ir.numpy_typed(x) \
                and python_number(n.inputs[1]):  # the operator, as eager and the kernel (ops/primitives._power)
            return f"({self.arg(x)} ** {self.arg(n.inputs[1])})"  # (rank 0: np.power, an explicit call's)
        if n.op == "numpy_call":  # NumPy's own function (ops/library.py), called directly
            return filled_call(self, n, self.const(n.params["fn"]))
        if n.op == "getitem" and array_in:
            idx = scalars.index(self, x, n.params["index"], n.inputs[1:])
            if idx is not None:
                return f"{self.arg(x)}[{idx}][None]"
            return f"{self.arg(x)}[{self.index_code(n.params['index'], n.inputs[1:])}]"
        if n.op == "transpose" and array_in:
            axes = n.params.get("axes")
            return f"{self.arg(x)}.transpose({'' if axes is None else self.const(tuple(axes))})"
        if n.op == "reshape" and isinstance(x, ir.Node):
            if ir.numpy_typed(x):  # the method: np.reshape is a Python-level wrapper around it
                return f"{self.arg(x)}.reshape({self.const(tuple(n.params['shape']))})"
            return f"np.reshape({self.arg(x)}, {self.const(tuple(n.params['shape']))})"
        if n.op == "concatenate" and n.inputs and all(ir.numpy_typed(i) for i in n.inputs):
            parts = ", ".join(self.arg(i) for i in n.inputs)
            return f"np.concatenate(({parts},), axis={self.const(n.params.get('axis', 0))})"
        if n.op == "cumsum" and array_in and ir.numpy_typed(x) and np.dtype(x.aval[1]).kind == "f" \
                and n.params.get("axis", 0) is not None and n.params.get("dtype") is None:
            # what np.cumsum does for floats, without its Python wrapper (see ops/scans.py)
            return f"np.add.accumulate({self.arg(x)}, {self.const(n.params.get('axis', 0))})"
        if _clip_inline(n):
            return f"CLIP({self.arg(x)}, {self.const(n.params['lo'])}, {self.const(n.params['hi'])})"
        if n.op == "cast" and array_in:
            return f"{self.arg(x)}.astype({self.const(n.params['dtype'])})"
        shaped = _known(n) if self.static_shapes else None
        if n.op == "relu" and shaped is not None and array_in and ir.numpy_typed(x) and np.dtype(x.aval[1]) in _ONE \
                and (zeros := filled(shaped, x.aval[1], 0)) is not None:  # maximum's vector loop (ops/primitives.py)
            return f"np.maximum({self.arg(x)}, {self.const(zeros)})"
        if n.op == "sigmoid" and shaped is not None and array_in and ir.numpy_typed(x) \
                and np.dtype(x.aval[1]).kind == "f":
            return f"SIGMOID({self.arg(x)})"
        if n.op in ("ones_like", "zeros_like") and shaped is not None and ir.numpy_typed(x) and c_ordered(x):
            # np.ones_like is a Python function around np.empty_like + copyto; the shape is known
            # (and the order, C: np.zeros_like of a Fortran-ordered x is Fortran-ordered)
            return f"np.{n.op[:-5]}({self.const(shaped)}, {self.const(np.dtype(n.aval[1]))})"
        if n.op in ("broadcast_like", "broadcast_to") and shaped is not None and isinstance(x, ir.Node):
            if x.aval is not None and x.aval[0] == () and ir.numpy_typed(x) and int(np.prod(shaped)) <= 4096 \
                    and copy_is_exact(n, self.users):  # (`b.T * 2` of the view is C-ordered, of a copy not)
                # a scalar spread over a small shape: np.full costs a fraction of broadcast_to
                return f"np.full({self.const(shaped)}, {self.arg(x)}, {self.const(np.dtype(x.aval[1]))})"
            if self._copy_ok(n, x):
                return f"BCAST({self.arg(x)}, {self.const(shaped)})"
            return f"np.broadcast_to({self.arg(x)}, {self.const(shaped)})"
        if shaped is not None and (array_in or (n.op in ("expand_dims", "reshape_like") and ir.numpy_typed(x))):
            expr = self.inline_shaped(n, x, shaped)
            if expr is not None:
                return expr
        if shaped is None and isinstance(x, ir.Node):
            expr = ranked.inline(self, n, x)
            if expr is not None:
                return expr
        if n.op in _REDUCE and array_in and ir.numpy_typed(x):
            pair = scalars.pair_scalar(self, n, x) or self.pair_reduce(n, x)
            if pair is not None:
                return pair
            # what the array method calls (NumPy's _methods), without its Python wrapper and
            # keyword parsing: ~0.8 us less per call on a small array
            dtype = self.const(n.params.get("dtype")) if n.op == "sum" else "None"
            return (f"np.{_REDUCE[n.op]}.reduce({self.arg(x)}, {self.const(n.params.get('axis'))}, {dtype}, None, "
                    f"{bool(n.params.get('keepdims', False))!r})")
        if n.op in ("sum", "mean", "max", "min") and array_in:
            kw = [f"axis={self.const(n.params.get('axis'))}", f"keepdims={n.params.get('keepdims', False)!r}"]
            if n.op == "sum" and n.params.get("dtype") is not None:
                kw.append(f"dtype={self.const(n.params['dtype'])}")
            return f"{self.arg(x)}.{n.op}({', '.join(kw)})"
        return None

    def pair_reduce(self, n, x) -> str | None:
        """A float max or min over one axis of length 2 (a two-class softmax, an actor's two
        logits) as the binary ufunc on its two halves: `np.maximum(x[:, 0:1], x[:, 1:2])`, the
        pair the reduce compares, in its order (which decides between 0.0 and -0.0). The reduce
        call's setup costs twice the ufunc call on a tiny array (1.39 against 0.74 us on a (2,)
        float32 vector). A sum starts from 0.0, so `-0.0 + -0.0` reduces to 0.0 where the
        ufunc gives -0.0: only sums of an exp (never -0.0) take this form."""
        shape = _known(x) if self.static_shapes else None
        axis = n.params.get("axis")
        if isinstance(axis, (tuple, list)) and len(axis) == 1:
            axis = axis[0]
        if shape is None or type(axis) is not int or not -len(shape) <= axis < len(shape) \
                or shape[axis] != 2 or n.params.get("dtype") is not None \
                or np.dtype(x.aval[1]) not in (np.dtype(np.float32), np.dtype(np.float64)) \
                or (n.op == "sum" and x.op != "exp"):
            return None
        lead = ":, " * (axis % len(shape))
        a = self.arg(x)
        if n.params.get("keepdims", False):
            first, second = f"{a}[{lead}0:1]", f"{a}[{lead}1:2]"
        else:
            first, second = f"{a}[{lead}0]", f"{a}[{lead}1]"
        return f"np.{_REDUCE[n.op]}({first}, {second})"

    def _copy_ok(self, n, x) -> bool:
        """A small broadcast read by other nodes only may be a copy: np.broadcast_to is a Python
        function (~4.5 us on a (40, 1) -> (40, 2) spread, against ~1.2 for empty + copyto).
        Outputs keep eager's read-only view, and so do operands of products and reductions."""
        return (n.id not in self.outputs and ir.numpy_typed(x) and n.aval is not None and copy_is_exact(n, self.users)
                and int(np.prod(n.aval[0])) <= 4096 and np.dtype(x.aval[1]) == np.dtype(n.aval[1]))

    def inline_shaped(self, n, x, out_shape) -> str | None:
        """Ops whose registry kernels are Python functions (expand_dims, broadcast_to, sum_to,
        mean, ...) emitted as the NumPy method calls they come down to, with shapes and axes
        worked out from the avals once, at compile time. Same values and dtypes: on graphs of
        small arrays these kernels' Python overhead was the larger part of the step."""
        a = self.arg(x)
        op = n.op
        if op in ("expand_dims", "reshape_like", "squeeze"):
            return f"{a}.reshape({self.const(out_shape)})"
        if op == "sum_to":
            g_shape, like = _known(x), n.inputs[1]
            if g_shape is None or not isinstance(like, ir.Node) or _known(like) is None:
                return None
            shape = _known(like)
            lead = len(g_shape) - len(shape)
            axes = sum_to_axes(g_shape, shape)
            if not axes:
                return self._sum_to_tail(a, 0, "", x, like)
            if axes == tuple(range(lead)) and shape:  # leading axes only (a bias gradient): ndarray.sum's own
                # reduce, without its Python wrapper, keepdims and a reshape (~1.5 us of a 3-5 us call); not to a
                # 0-d `like`: the kernel's keepdims sum and reshape give a 0-d array, the reduce a scalar
                axis = self.const(axes[0] if lead == 1 else axes)
                return self._sum_to_tail(f"np.add.reduce({a}, {axis})", 0, "", x, like)
            return self._sum_to_tail(f"{a}.sum(axis={self.const(axes)}, keepdims=True)", lead, self.const(shape), x, like)
        if op == "mean" and np.dtype(x.aval[1]) in (np.dtype(np.float32), np.dtype(np.float64)):
            # ndarray.mean is a Python function: sum, then divide by the count (numpy's _mean
            # divides by an intp in float64 and rounds back, which for one division is the same)
            axis, axes, _ = _mean_axes(n, x)
            count = int(np.prod([x.aval[0][i] for i in axes], dtype=np.int64))
            if count == 0:
                return None
            total = f"np.add.reduce({a}, axis={self.const(axis)}, keepdims={bool(n.params.get('keepdims', False))!r})"
            return total if count == 1 else f"{total} / {count}"  # x / 1 is x, bit for bit
        return None

    def _sum_to_tail(self, expr, lead, shape_code, x, like):
        """A reduced sum_to value reshaped to `like` (when leading axes went) and cast to its
        float dtype, as the kernel does."""
        if lead:
            expr += f".reshape({shape_code})"
        dt, gt = np.dtype(like.aval[1]), np.dtype(x.aval[1])
        if gt != dt and np.issubdtype(dt, np.inexact):
            expr += f".astype({self.const(dt)})"
        return expr

    def emit(self, nodes, indent, reuse=None):
        reuse = reuse or {}
        pending = {}  # position of first use -> futures to collect there
        async_nodes = getattr(self, "async_nodes", {}) if indent == 4 else {}
        region = self.region if indent == 4 else None
        fl = self.floats if indent == 4 else None
        at = (len(self.lines), None)
        for pos, n in enumerate(nodes):
            located.mark(self.sites, self.lines, *at)  # the previous node's lines
            at = (len(self.lines), n.site)
            if fl is not None:  # (before a region's first write)
                if pos in fl.checks:
                    self.lines.append(floats.check_line(self, fl, fl.checks[pos]))
                if n.id in fl.nodes:
                    self.lines += floats.emit(self, fl, n)
                    continue
            if region is not None and pos == region.start:  # (at a fused group's first node: donation.plan_region)
                self.lines += donation.header(self, region)
            for fid in pending.pop(pos, ()):
                self.lines.append(" " * indent + f"v{fid} = F{fid}.result()")
            if n.id in self.unread or n.id in self.replaced:  # (weight updates: after the loop)
                continue
            if indent == 4 and (group := self.groups.get(n.id)) is not None:  # fusion.py: at its first node
                self.lines += fusion.emit(self, group, indent, reuse) if n is group.members[0] else []
                continue
            if n.id in self.rows:  # an SGD step on gathered rows, where the scatter was (rows.py)
                self.lines.append(" " * indent + rows.code(self, n))
                continue
            if n.id in async_nodes:
                a, b = (self.arg(i) for i in n.inputs)
                self.lines.append(" " * indent + f"F{n.id} = POOL.submit(np.{'matmul' if n.op == 'matmul' else 'dot'}, {a}, {b})")
                pending.setdefault(async_nodes[n.id], []).append(n.id)
                continue
            if n.errstate is not None and n.op not in (ir.COND, ir.LOOP):
                self.lines.append(" " * indent + f"with np.errstate(**{self.const(n.errstate)}):")
                self._emit_one(n, indent + 4, reuse)
            else:
                self._emit_one(n, indent, reuse)
        located.mark(self.sites, self.lines, *at)
        for fids in pending.values():  # used only by the outputs
            for fid in fids:
                self.lines.append(" " * indent + f"v{fid} = F{fid}.result()")
        if fl is not None and fl.final:
            self.lines.append(floats.check_line(self, fl, fl.final))
        if indent == 4 and self.updates:
            blas.emit_updates(self, reuse)

    def _emit_one(self, n, indent, reuse):
        pad = " " * indent
        args = ", ".join(self.arg(i) for i in n.inputs)
        v = f"v{n.id}"
        if n.op == "index_add" and isinstance(n.inputs[0], ir.Node) and ir.numpy_typed(n.inputs[0]):
            # x with g added at an index hitting each position once: in x's buffer when x is
            # dead here and the graph's own (memory planning), else in a copy
            x = self.arg(n.inputs[0])
            idx = self.index_code(n.params["index"], n.inputs[2:])
            g = self.arg(n.inputs[1])
            one = scalars.index(self, n.inputs[0], n.params["index"], n.inputs[2:])
            g0 = scalars.element(self, n.inputs[1])
            if one is not None and g0 is not None:  # one position: a scalar +=
                idx, g = one, g0
            start = x if n.id in reuse else x + _KEEP_LAYOUT
            self.lines.append(f"{pad}{v} = {start}; {v}[{idx}] += {g}")
            return
        if n.op == "index_update" and isinstance(n.inputs[0], ir.Node) and n.inputs[0].aval \
                and len(n.inputs[0].aval[0]) >= 1:
            idx = self.index_code(n.params["index"], n.inputs[2:])
            x = self.arg(n.inputs[0])  # (its buffer when x is dead here and the graph's own: memory planning)
            fl = self.floats
            value = f"u{n.inputs[1].id}" if fl is not None and n.id in fl.sinks else self.arg(n.inputs[1])
            self.lines.append(f"{pad}{v} = {x if n.id in reuse else x + _KEEP_LAYOUT}; {v}[{idx}] = {value}")
            return
        if indent == 4 and self.region is not None and donation.emit_node(self, n, reuse):
            return  # a node of the write region: into its buffer
        if n.id in reuse:  # an operand's buffer is dead after this node: write into it
            target = self.arg(n.inputs[reuse[n.id]])
            if n.op == "clip":
                self.lines.append(f"{pad}{v} = CLIP({args}, {self.const(n.params['lo'])}, "
                                  f"{self.const(n.params['hi'])}, out={target})")
                return
            other = [i for k, i in enumerate(n.inputs) if k != reuse[n.id] and isinstance(i, ir.Node)
                     and i.aval is not None and len(i.aval[0]) > 1]  # another 2-D+ operand: layouts must agree
            out = f"OUT({target}, {self.arg(other[0])})" if other else target
            self.lines.append(f"{pad}{v} = np.{_INPLACE[n.op]}({self.ufunc_args(n)}, out={out})")
            return
        expr = self.inline(n) if n.op not in ir.STRUCTURAL else None
        if expr is not None:
            self.lines.append(f"{pad}{v} = {expr}")
            return
        if n.op == "getitem_grad" and isinstance(n.inputs[0], ir.Node) and ir.numpy_typed(n.inputs[1]):
            self.lines.append(pad + rows.scatter_code(self, n))  # zeros receiving g at the index
            return
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
        elif n.op in (ir.COND, ir.LOOP):
            control_lines(self, n, indent)
        elif n.op == ir.PY_OP:
            form = PY_FORMS.get(n.params["fn"])
            call = form.format(*(self.arg(i) for i in n.inputs)) if form and form.count("{}") == len(n.inputs) \
                else f"{self.const(n.params['fn'])}({args})"
            self.lines.append(f"{pad}{v} = {call}")
        elif n.op == ir.TUPLE_GET:
            self.lines.append(f"{pad}{v} = {args}[{n.params['index']}]")
        else:
            self.lines.append(f"{pad}{v} = {self.kernel(n)}({self.ufunc_args(n)})")


def compile_plan(graph: ir.Graph, reuse_buffers: bool = True, parallel: bool | None = None, fuse: bool = False):
    """Compile `graph` to a Python function `plan(slots) -> list of output values`.

    `parallel` (default: the JANUS_LIKE_PARALLEL environment variable, off) runs large, not yet
    needed matrix products on a worker thread; on this project's 2-core machine it measured
    within noise of sequential execution, so it is opt-in. `fuse`: elementwise groups as Numba loops (fusion.py)."""
    if parallel is None:
        parallel = os.environ.get("JANUS_LIKE_PARALLEL", "") not in ("", "0")
    graph, groups = fusion.reordered(graph) if fuse and not parallel and reuse_buffers else (graph, [])
    em = _Emitter(static_shapes=not graph.polymorphic)
    em.outputs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    em.packed, em.unread = scalars.packed_numbers(graph, read := scalars.readers(graph))
    em.users = read[0]
    em.scalar_nodes = scalars.scalar_pairs(graph, read) if em.static_shapes else set()
    em.rows, skip = rows.sparse_updates(graph, read) if em.static_shapes else ({}, set())
    em.unread, em.globals["SGD_ROWS"], em.globals["REGION_ROWS"] = em.unread | skip, rows.sgd_rows, rows.region_rows
    async_nodes = plan_async(graph) if parallel else {}
    em.graph = graph
    if not parallel:
        em.updates, em.replaced = blas.planned_updates(graph)
    busy = {}  # the operands of a product on the worker stay untouched until it is collected
    for n in graph.nodes:
        if n.id in async_nodes:
            for i in n.inputs:
                busy[i.id] = max(busy.get(i.id, -1), async_nodes[n.id])
    em.async_nodes = async_nodes
    if async_nodes:
        em.globals["POOL"] = _pool()
    reuse = plan_reuse(graph, busy) if reuse_buffers else {}
    if reuse_buffers and graph.donated and not async_nodes and not em.updates:
        reuse, em.region = donation.plan_with_region(graph, busy, reuse, em.unread | em.replaced | set(em.rows)
                                                     | em.scalar_nodes, fusion.blocks(graph, groups))
    if groups:
        fusion.prepare(em, groups, em.region.writers if em.region is not None else {}, reuse)
    em.floats = floats.plan(graph, em.unread | em.replaced | set(em.rows) | em.scalar_nodes | set(em.groups)
                            | set(async_nodes) | set(em.packed), floats.first_write(graph, em), em.static_shapes)
    if em.floats is not None:
        em.globals.update(F64=np.float64, UNDER_OK=floats.under_ignored)
    em.emit(graph.nodes, 4, reuse)
    em.lines = bind_numpy(em.lines, em.globals)
    outs = ", ".join(em.arg(o) for o in graph.outputs)
    # `_own`: the caller owns the slots (executor/fused.py) and weights may be written in place
    src = "def plan(S, _own=False):\n" + "\n".join(em.lines) + f"\n    return [{outs}]\n"
    code = located.compile_at(src, located.sites_of_text(em.lines, em.sites, 1), graph.origin,
                              f"<janus_like plan {graph.name}>", em.globals)
    exec(code, em.globals)
    plan = em.globals["plan"]
    plan.source = src
    plan.inplace = bool(em.updates) or em.region is not None
    plan.donated = sorted(set(em.region.writers.values())) if em.region is not None else []
    plan.parts = (list(em.lines), f"[{outs}]", em.globals)  # for executor/fused.py
    plan.sites, plan.origin = em.sites, graph.origin
    plan.fused = len(groups)
    plan.assumption = em.floats.assumption if em.floats is not None else None  # (its finite check's)
    return plan
