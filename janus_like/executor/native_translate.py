"""Translation of a graph into the Python subset Numba compiles (see `native.py`).

`_Translator` walks a graph's nodes and emits one line per node: NumPy calls Numba supports,
the loops in `native_kernels.py` for what it lacks, and in graphs for unknown dimensions sizes
read from the operands at run time. What the subset cannot express raises `NativeUnsupported`
naming the op.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import ir
from ..ops.indexing import build_index, index_source
from ..ops.primitives import sum_to_axes
from .plan_helpers import PY_BINARY

class NativeUnsupported(Exception):
    """The graph uses something the native subset does not translate."""


_UNARY = {"neg": "np.negative", "exp": "np.exp", "log": "np.log", "tanh": "np.tanh", "sqrt": "np.sqrt",
          "abs": "np.abs", "sin": "np.sin", "cos": "np.cos", "sign": "np.sign", "logical_not": "np.logical_not"}
_ARITH = {"add": "np.add", "sub": "np.subtract", "mul": "np.multiply", "div": "np.true_divide",
          "pow": "np.power", "maximum": "np.maximum", "minimum": "np.minimum"}
_COMPARE = {"lt": "np.less", "le": "np.less_equal", "gt": "np.greater", "ge": "np.greater_equal",
            "eq": "np.equal", "ne": "np.not_equal", "logical_and": "np.logical_and", "logical_or": "np.logical_or"}
# Python arithmetic on Python numbers (ints are int64 in native code)
_PY_OPS = {fn: symbol for fn, symbol in PY_BINARY.items() if fn not in (operator.and_, operator.or_)}
_PY_DIVS = (operator.truediv, operator.floordiv, operator.mod)


def _dt(dtype) -> str:
    return f"np.{np.dtype(dtype).name}"


class _Translator:
    def __init__(self, graph: ir.Graph):
        self.graph = graph
        # unknown dimensions (jit/polymorphism.py): every size is read from the operands at run
        # time; avals hold one size only, so they give ranks, dtypes and fixed parameters only.
        # A call whose sizes break what the translation assumed raises TypeError, and
        # CompiledGraph.body runs the plan for it (as for argument types Numba was not compiled for)
        self.poly = graph.polymorphic
        self.lines: list[str] = []
        self.args: list[str] = []  # parameter names, in order
        self.arg_slots: list = []  # ("slot", k) or ("const", value) per parameter
        self.asserts: list = []
        self.names: dict = {}  # node id -> expression name
        # Local names are numbered in the graph (v0, v1, ...), not by the process-wide node ids: the
        # source text keys Numba's disk cache, and the same graph generated after other graphs
        # (or in another order) must give the same text (a TreeRNN's 8 graphs: 230 s of
        # compiling when it did not, 1 s to load when it does)
        self._local: dict = {}

    # ------------------------------------------------------------------ operands
    def ref(self, x) -> str:
        if isinstance(x, ir.Node):
            return self.names[x.id]
        return self.literal(x)

    def literal(self, value, dtype=None) -> str:
        if isinstance(value, (bool, np.bool_)):
            return repr(bool(value))
        if isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(float(value)):
            if dtype is not None:
                return f"{_dt(dtype)}({float(value) if np.dtype(dtype).kind == 'f' else int(value)!r})"
            return repr(value.item() if isinstance(value, np.generic) else value)
        if isinstance(value, (float, np.floating)):  # inf / nan
            text = "np.nan" if math.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
            return f"{_dt(dtype)}({text})" if dtype is not None else text
        if isinstance(value, np.ndarray):
            name = f"c{len(self.args)}"
            self.args.append(name)
            self.arg_slots.append(("const", value))
            return name
        raise NativeUnsupported(f"constant of type {type(value).__name__}")

    @staticmethod
    def rank(x) -> int | None:
        if isinstance(x, ir.Node):
            return None if x.aval is None else len(x.aval[0])
        return np.ndim(x)

    @staticmethod
    def dtype(x):
        if isinstance(x, ir.Node):
            return None if x.aval is None else np.dtype(x.aval[1])
        return None

    def operand(self, x, cast_to) -> str:
        """A scalar operand cast to `cast_to`, so Numba computes in the dtype NumPy's promotion
        rules (NEP 50: Python scalars are weak) gave this node."""
        if self.rank(x) == 0 and cast_to is not None:
            if isinstance(x, ir.Node):
                return f"{_dt(cast_to)}({self.ref(x)})"
            return self.literal(x, cast_to)
        return self.ref(x)

    def dims(self, x) -> tuple:
        """x's shape as code: its avals' ints, or in a graph for unknown dimensions x.shape[i]."""
        if not self.poly:
            return tuple(x.aval[0])
        return tuple(f"{self.ref(x)}.shape[{i}]" for i in range(self.rank(x)))

    def out_dims(self, n, like) -> tuple:
        """The shape of node n, which is `like`'s (a run-time value in unknown-dimension graphs)."""
        return self.dims(like) if self.poly else tuple(n.aval[0])

    # ------------------------------------------------------------------ emission
    def emit_graph(self) -> str:
        for n in self.graph.nodes:
            if n.errstate is not None and any(v == "raise" for v in n.errstate.values()):
                raise NativeUnsupported("np.errstate(..., 'raise') in the graph")
            self.node(n)
        outs = ", ".join(self.ref(o) for o in self.graph.outputs if isinstance(o, ir.Node))
        body = "\n".join("    " + line for line in self.lines)
        return f"def native({', '.join(self.args)}):\n{body}\n    return ({outs}{',' if outs else ''})\n"

    def num(self, n) -> int:
        """Node n's number in this graph."""
        return self._local.setdefault(n.id, len(self._local))

    def put(self, n, expr: str):
        name = f"v{self.num(n)}"
        self.lines.append(f"{name} = {expr}")
        self.names[n.id] = name

    def node(self, n):
        op, ins = n.op, n.inputs
        shape = None if n.aval is None else tuple(n.aval[0])
        if shape is not None and any(not isinstance(d, int) for d in shape):
            raise NativeUnsupported(f"'{op}' with a run-time dimension")
        if op == ir.INPUT:
            name = f"s{n.params['slot']}"
            self.args.append(name)
            self.arg_slots.append(("slot", n.params["slot"]))
            self.names[n.id] = name
        elif op == ir.CONST:
            value = n.params["value"]
            if isinstance(value, np.ndarray):
                self.names[n.id] = self.literal(value)
            else:
                self.put(n, self.literal(value))
        elif op == ir.ASSERT:
            self.lines.append(f"if bool({self.ref(ins[0])}) != {n.params['expect']!r}: "
                              f"raise NativeAssert({len(self.asserts)})")
            self.asserts.append(n.params["assumption"])
        elif op == ir.TO_PY:
            if n.params["type"] not in (int, float, bool):
                raise NativeUnsupported(f"conversion to {n.params['type'].__name__}")
            self.put(n, f"{n.params['type'].__name__}({self.ref(ins[0])})")
        elif op == ir.PY_OP and n.params["fn"] in _PY_OPS and len(ins) == 2:
            a, b = self.ref(ins[0]), self.ref(ins[1])
            if n.params["fn"] in _PY_DIVS:  # Python raises where NumPy's error model gives inf
                self.lines.append(f"if {b} == 0: raise ZeroDivisionError('division by zero')")
            self.put(n, f"({a} {_PY_OPS[n.params['fn']]} {b})")
        elif op == ir.PY_OP and n.params["fn"] is operator.neg:
            self.put(n, f"(-{self.ref(ins[0])})")
        elif op in _UNARY:
            self.put(n, f"{_UNARY[op]}({self.operand(ins[0], n.dtype)})")
        elif op in _ARITH:
            a, b = (self.operand(i, n.dtype) for i in ins)
            self.put(n, f"{_ARITH[op]}({a}, {b})")
        elif op in _COMPARE:
            common = self._common(ins)
            a, b = (self.operand(i, common) for i in ins)
            self.put(n, f"{_COMPARE[op]}({a}, {b})")
        else:
            handler = getattr(self, f"op_{op}", None)
            if handler is None:
                raise NativeUnsupported(f"op '{op}'")
            self.put(n, handler(n, *ins, **n.params))

    def _common(self, ins):
        dts = [self.dtype(i) for i in ins if self.rank(i) and self.dtype(i) is not None]
        return np.result_type(*dts) if dts else None

    # ------------------------------------------------------------------ ops with parameters
    def op_where(self, n, c, a, b):
        return f"np.where({self.ref(c)}, {self.operand(a, n.dtype)}, {self.operand(b, n.dtype)})"

    def op_relu(self, n, x):
        return f"np.maximum({self.ref(x)}, {_dt(n.dtype)}(0))"

    def op_sigmoid(self, n, x):
        one = f"{_dt(n.dtype)}(1)"
        return f"{one} / ({one} + np.exp(np.negative({self.ref(x)})))"

    def op_clip(self, n, x, lo=None, hi=None, **_):
        out = self.ref(x)
        if lo is not None:
            out = f"np.maximum({out}, {self.operand(lo, n.dtype)})"
        if hi is not None:
            out = f"np.minimum({out}, {self.operand(hi, n.dtype)})"
        return out

    def op_cast(self, n, x, dtype):
        return f"{_dt(dtype)}({self.ref(x)})" if self.rank(x) == 0 else f"{self.ref(x)}.astype({_dt(dtype)})"

    def _product(self, n, a, b):
        if not (self.rank(a) in (1, 2) and self.rank(b) in (1, 2)):
            raise NativeUnsupported(f"'{n.op}' of ranks {self.rank(a)} and {self.rank(b)}")
        if self.dtype(a) != self.dtype(b) or self.dtype(a).kind != "f":
            raise NativeUnsupported(f"'{n.op}' of {self.dtype(a)} and {self.dtype(b)}")
        return f"np.dot(np.ascontiguousarray({self.ref(a)}), np.ascontiguousarray({self.ref(b)}))"

    op_matmul = op_dot = _product

    @staticmethod
    def _tuple(items):
        return "(" + "".join(f"{d}, " for d in items) + ")"

    def _reshape(self, x, shape):
        if self.rank(x) == 0:
            return f"np.full({self._tuple(shape)}, {self.ref(x)})"
        if len(shape) == 0:
            return f"{self.ref(x)}.ravel()[0]" if self.rank(x) else self.ref(x)
        return f"np.ascontiguousarray({self.ref(x)}).reshape({self._tuple(shape)})"

    def op_reshape(self, n, x, shape):
        if self.poly:  # a fixed target (the probe rejects size-dependent ones); -1 from the size
            shape = tuple(shape)
            if shape.count(-1) == 1 and self.rank(x):
                known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
                shape = tuple(f"{self.ref(x)}.size // {known}" if d == -1 else d for d in shape)
            elif -1 in shape:
                raise NativeUnsupported(f"reshape to {shape} with unknown dimensions")
            return self._reshape(x, shape)
        return self._reshape(x, n.aval[0])

    def op_reshape_like(self, n, x, like):
        return self._reshape(x, self.out_dims(n, like))

    def op_expand_dims(self, n, x, axis):
        if not self.poly:
            return self._reshape(x, n.aval[0])
        rank = len(n.aval[0])
        new = {a % rank for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
        it = iter(self.dims(x))
        return self._reshape(x, tuple(1 if i in new else next(it) for i in range(rank)))

    def op_squeeze(self, n, x, axis=None):
        if not self.poly:
            return self._reshape(x, n.aval[0])
        if axis is None:  # which dimensions are 1 depends on the sizes
            raise NativeUnsupported("squeeze without an axis, with unknown dimensions")
        gone = {a % self.rank(x) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
        return self._reshape(x, tuple(d for i, d in enumerate(self.dims(x)) if i not in gone))

    def op_transpose(self, n, x, axes=None):
        if self.rank(x) < 2:
            return self.ref(x)
        axes = tuple(range(self.rank(x)))[::-1] if axes is None else tuple(a % self.rank(x) for a in axes)
        return f"np.transpose({self.ref(x)}, {self._tuple(axes)})"

    def _broadcast(self, n, x, shape):
        if tuple(n.aval[0]) == () or self.rank(x) == 0:
            return f"np.full({self._tuple(shape)}, {self.operand(x, n.dtype)})"
        return f"np.broadcast_to({self.ref(x)}, {self._tuple(shape)})"

    def op_broadcast_like(self, n, x, like):
        return self._broadcast(n, x, self.out_dims(n, like))

    def op_broadcast_to(self, n, x, shape):
        return self._broadcast(n, x, tuple(shape))

    def op_ones_like(self, n, x, dtype=None):
        return f"np.ones({self._tuple(self.out_dims(n, x))}, {_dt(n.dtype)})" if n.aval[0] else f"{_dt(n.dtype)}(1)"

    def op_zeros_like(self, n, x, dtype=None):
        return f"np.zeros({self._tuple(self.out_dims(n, x))}, {_dt(n.dtype)})" if n.aval[0] else f"{_dt(n.dtype)}(0)"

    # sizes read at run time (graphs for unknown dimensions)
    def op_dim_of(self, n, x, axis):
        return f"{self.ref(x)}.shape[{axis}]"

    def op_reduced_count(self, n, x, axes):
        return f"max({' * '.join(f'{self.ref(x)}.shape[{a}]' for a in axes) or '1'}, 1)"

    def op_arange(self, n, k):
        return f"np.arange({self.ref(k)})"

    def op_copy(self, n, x):
        return f"{self.ref(x)}.copy()" if self.rank(x) else self.ref(x)

    def op_cumsum(self, n, x, axis=0):
        """Running sums along axis 0 (what the row-chain pass emits), float only: in order."""
        if axis % max(self.rank(x), 1) != 0 or n.dtype.kind != "f" or n.dtype != x.dtype:
            raise NativeUnsupported(f"cumsum along axis {axis} of {x.dtype}")
        flat = "(" + " * ".join(str(d) for d in self.dims(x)[1:]) + ")" if self.rank(x) > 1 else "1"
        rows = f"cumsum_rows(np.ascontiguousarray({self.ref(x)}).reshape(({self.dims(x)[0]}, {flat})))"
        return f"{rows}.reshape({self._tuple(self.dims(x))})"

    def op_concatenate(self, n, *xs, axis=0):
        parts = ", ".join(f"np.ascontiguousarray({self.ref(x)})" for x in xs)
        return f"np.concatenate(({parts},), axis={axis % self.rank(xs[0])})"

    def _reduce(self, n, x, axes, kind):
        """Reduce `axes` of x: move them last, view as (rows, n), reduce each row."""
        rank = self.rank(x)
        if rank == 0:
            return f"{_dt(n.dtype)}({self.ref(x)})"
        axes = tuple(range(rank)) if axes is None else tuple(a % rank for a in (axes if isinstance(axes, tuple) else (axes,)))
        shape = tuple(x.aval[0])
        keep = [a for a in range(rank) if a not in axes]
        inner = int(np.prod([shape[a] for a in axes], dtype=np.int64))
        outer = int(np.prod([shape[a] for a in keep], dtype=np.int64))
        if inner == 0 or outer == 0:
            raise NativeUnsupported(f"'{n.op}' of an empty array")
        if self.poly:  # the counts at run time; an empty reduction is left to the plan
            dims = self.dims(x)
            inner, outer = ("(" + (" * ".join(dims[a] for a in part) or "1") + ")" for part in (axes, keep))
            self.lines.append(f"if {inner} == 0 or {outer} == 0: raise TypeError('empty: the plan runs it')")
            out_shape = tuple(1 if a in axes else dims[a] for a in range(rank)) \
                if len(n.aval[0]) == rank else tuple(dims[a] for a in keep)
        else:
            out_shape = tuple(n.aval[0])
        moved = self.ref(x) if keep + list(axes) == list(range(rank)) else \
            f"np.transpose({self.ref(x)}, {self._tuple(keep + list(axes))})"
        src = x.dtype
        if kind == 0 and n.dtype != src:  # sum(dtype=...) or sum of ints/bools
            moved = f"{moved}.astype({_dt(n.dtype)})"
        expr = f"red_rows(np.ascontiguousarray({moved}).reshape(({outer}, {inner})), {kind})"
        if n.op == "mean":
            expr = f"np.true_divide({expr}, {_dt(n.dtype)}({inner}))" if n.dtype == src else \
                f"np.true_divide({expr}.astype({_dt(n.dtype)}), {inner})"
        return f"{expr}[0]" if n.aval[0] == () else f"{expr}.reshape({self._tuple(out_shape)})"

    def op_sum(self, n, x, axis=None, keepdims=False, dtype=None):
        return self._reduce(n, x, axis, 0)

    def op_mean(self, n, x, axis=None, keepdims=False):
        return self._reduce(n, x, axis, 0)

    def op_max(self, n, x, axis=None, keepdims=False):
        return self._reduce(n, x, axis, 1)

    def op_min(self, n, x, axis=None, keepdims=False):
        return self._reduce(n, x, axis, 2)

    def op_sum_to(self, n, g, like):
        shape = tuple(n.aval[0])
        gshape = tuple(g.aval[0])
        if gshape == shape:
            return self.ref(g) if n.dtype == g.dtype else f"{self.ref(g)}.astype({_dt(n.dtype)})"
        axes = sum_to_axes(gshape, shape)
        if self.poly:
            lead = len(gshape) - len(shape)
            for i, d in enumerate(shape):  # kept at generation; should its size change, the plan runs
                if d == 1 and gshape[i + lead] == 1:
                    self.lines.append(f"if {self.ref(g)}.shape[{i + lead}] != 1: raise TypeError('the plan runs it')")
            expr = self._reduce(n, g, axes, 0)  # keepdims-shaped where ranks agree, else reshaped:
            return f"{expr}.reshape({self._tuple(self.dims(like))})" if lead else expr
        return self._reduce(n, g, axes, 0)

    # ------------------------------------------------------------------ indexing
    def _index(self, template, operands) -> str:
        return index_source(template, lambda k: self.ref(operands[k]))

    def _array_slots(self, template, operands):
        arrays = [operands[i[1]] for i in template[0] if type(i) is tuple and i[0] == "slot"
                  and self.rank(operands[i[1]])]
        # x[mask]: the loops here take index arrays as row numbers
        if any((np.dtype(a.aval[1]) if isinstance(a, ir.Node) else np.asarray(a).dtype).kind == "b" for a in arrays):
            raise NativeUnsupported(f"a boolean mask as an index {template}")
        return arrays

    def op_getitem(self, n, x, *operands, index):
        arrays = self._array_slots(index, operands)
        if len(arrays) <= 1 and not (arrays and None in index[0]):
            return f"{self.ref(x)}[{self._index(index, operands)}]"
        items = index[0]
        if (len(items) == 2 and len(arrays) == 2 and self.rank(x) == 2 and all(self.rank(a) == 1 for a in arrays)):
            i, j = (self.ref(operands[it[1]]) for it in items)
            return f"take2({self.ref(x)}, {i}, {j})"
        raise NativeUnsupported(f"getitem {index}")

    def op_getitem_grad(self, n, g, x, *operands, index, unique=False, dense=False):  # dense: summed in order here
        out = f"np.zeros({self._tuple(self.dims(x))}, {_dt(n.dtype)})"
        arrays = self._array_slots(index, operands)
        items = index[0]
        tmp = f"t{self.num(n)}"
        if not arrays:
            target, value = self._basic_target(n, g, x, operands, index)
            self.lines.append(f"{tmp} = {out}")
            self.lines.append(f"{tmp}[{target}] = {value}")
            return tmp
        if len(items) == 1 and len(arrays) == 1 and type(items[0]) is tuple:
            idx = arrays[0]
            rows = f"{self.ref(idx)}.size" if self.poly else int(np.prod(idx.aval[0], dtype=np.int64))
            rest = self.dims(x)[1:]
            return (f"scatter_rows({out}, np.ascontiguousarray({self.ref(idx)}).reshape(({rows},)), "
                    f"np.ascontiguousarray({self.ref(g)}).reshape({self._tuple((rows,) + rest)}))"
                    f".reshape({self._tuple(self.dims(x))})")
        if len(items) == 2 and len(arrays) == 2 and self.rank(x) == 2 and all(self.rank(a) == 1 for a in arrays):
            i, j = (self.ref(operands[it[1]]) for it in items)
            return f"scatter2({out}, {i}, {j}, np.ascontiguousarray({self.ref(g)}))"
        raise NativeUnsupported(f"getitem_grad {index}")

    def _basic_target(self, n, g, x, operands, index):
        """(index code, value code) writing g, the gradient of x[index] for a basic index, into
        an array of x's shape: newaxis items dropped, g reshaped to what they leave."""
        items = tuple(i for i in index[0] if i is not None)
        probe = np.empty(x.aval[0], np.int8)[build_index((items, False), [np.zeros((), np.int64)] * len(operands))]
        if self.poly and probe.shape != tuple(g.aval[0]):
            raise NativeUnsupported(f"{n.op} {index} with unknown dimensions")
        value = self.ref(g) if probe.shape == () or self.poly else self._reshape(g, probe.shape)
        return self._index((items, False), operands), value

    def op_index_add(self, n, x, v, *operands, index):
        arrays = self._array_slots(index, operands)
        items = index[0]
        if not arrays:
            target, value = self._basic_target(n, v, x, operands, index)
            tmp = f"t{self.num(n)}"
            self.lines.append(f"{tmp} = {self.ref(x)}.copy()")
            self.lines.append(f"{tmp}[{target}] += {value}")
            return tmp
        if len(items) == 2 and len(arrays) == 2 and self.rank(x) == 2 and all(self.rank(a) == 1 for a in arrays):
            i, j = (self.ref(operands[it[1]]) for it in items)
            return f"scatter2({self.ref(x)}.copy(), {i}, {j}, np.ascontiguousarray({self.operand(v, n.dtype)}))"
        raise NativeUnsupported(f"index_add {index}")

    def op_index_update(self, n, x, v, *operands, index):
        if self._array_slots(index, operands) or None in index[0]:
            raise NativeUnsupported(f"index_update {index}")
        tmp = f"t{self.num(n)}"
        self.lines.append(f"{tmp} = {self.ref(x)}.copy()")
        self.lines.append(f"{tmp}[{self._index(index, operands)}] = {self.operand(v, n.dtype)}")
        return tmp
