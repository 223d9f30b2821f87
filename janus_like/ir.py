"""The graph IR: a flat list of nodes in program order, asserts and conditionals included.

    %3 = matmul(%1, %2) : float32[16,128]  @ model.py:12
    assert %5 is True  [branch model.py:14]

A node's inputs are other nodes or literal Python constants (numbers, None, dtypes). Op names
are registry ops, or one of the structural opcodes below. `verify(graph)` checks the invariants
every pass must keep, with networkx for the graph algorithm (acyclicity); `to_networkx` gives the
graph to reports and tests. Nothing on the way to a first graph run imports networkx (its import
costs ~0.25 s): the passes' re-ordering is a heap-ordered Kahn walk (`passes/order.py`),
checked against networkx's lexicographic topological sort in the tests.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

# structural opcodes (everything else names an op in the registry)
INPUT = "input"  # params: slot (int), name (path text)
CONST = "const"  # params: value
ASSERT = "assert"  # inputs: (cond,); params: expect (bool), assumption
TO_PY = "to_py"  # Python float/int/bool of a 0-d value (float(x), x.item())
RANDOM = "np_random"  # the NumPy global RNG; params: method, args, kwargs
COND = "cond"  # inputs: (pred,); params: then_nodes, else_nodes, then_outs, else_outs
TUPLE_GET = "tuple_get"  # inputs: (tuple node,); params: index
LOOP = "loop"  # inputs: initial carried values; params: placeholders, cond_nodes, cond, body_nodes, body_outs
LOOP_VAR = "loop_var"  # a carried value inside a loop's blocks (bound by the loop each iteration)
# ops whose value may be their first operand itself (`np.asarray(x) is x`; ascontiguousarray and
# keep_layout: where x is in C order, or laid out as the target; `x.real` of a real array; cast
# from `astype(copy=False)`): a value is another's object on some runs only
MAY_BE_OPERAND = frozenset({"asarray", "ascontiguousarray", "keep_layout", "real", "stop_gradient", "cast"})
# ops whose value may be another value's array or a view of one (an input's, a constant's): a
# value that must own its buffer (a Variable's after assign, a new array returned) is copied.
ALIASING_OPS = frozenset({INPUT, CONST, "reshape", "reshape_like", "transpose", "expand_dims", "squeeze",
                          "broadcast_to", "broadcast_like", "getitem", "tuple_get", "recursion", "diagonal",
                          "imag", "sliding_window_view", "flip", "view"}) | (MAY_BE_OPERAND - {"cast"})
# views NumPy makes read-only (`np.diagonal`, `np.broadcast_to`): `v * 1` of one is a new array
READ_ONLY_VIEWS = frozenset({"diagonal", "broadcast_to", "broadcast_like", "sliding_window_view"})
PY_OP = "py_op"  # Python arithmetic on Python numbers (int + int stays int); params: fn
STRUCTURAL = {INPUT, CONST, ASSERT, TO_PY, RANDOM, COND, TUPLE_GET, LOOP, LOOP_VAR, PY_OP}
STATEFUL = {ASSERT, RANDOM, COND, LOOP}

_ids = itertools.count(1)


@dataclass(eq=False)
class Node:
    op: str
    inputs: tuple = ()
    params: dict = field(default_factory=dict)
    aval: tuple | None = None  # (shape, dtype) when known
    site: str = ""  # "file.py:12" of the user line that produced it
    id: int = field(default_factory=lambda: next(_ids))
    errstate: dict | None = None  # NumPy floating-point error settings in force (np.errstate)
    hint: object = None  # generation-time value of a run-time Python number (a dimension's size)

    def __repr__(self):
        return f"%{self.id}"

    @property
    def shape(self):
        return None if self.aval is None else self.aval[0]

    @property
    def dtype(self):
        return None if self.aval is None else self.aval[1]


FLOATS_RELAX = ("finite", "python floats")  # the relaxation key of Graph.python_floats

BLOCKS = ("then_nodes", "else_nodes", "cond_nodes", "body_nodes")  # the node lists a COND/LOOP holds

SHAPE_TO_LIKE = frozenset({"sum_to", "broadcast_like", "reshape_like"})  # op(x, like): x brought to like's shape


def identity_operand(op: str, inputs, aval):
    """x, when `op(x, like)` is one of SHAPE_TO_LIKE and x already has like's shape and the
    result's dtype (the op is the identity); else None. The graph builder then makes no node
    (a backward pass asks for one per operand of every elementwise op), and `simplify` removes
    the ones built otherwise."""
    if op not in SHAPE_TO_LIKE:
        return None
    x, like = inputs[0], inputs[1]
    if isinstance(x, Node) and isinstance(like, Node) and x.aval and like.aval and aval \
            and tuple(x.aval[0]) == tuple(like.aval[0]) and np.dtype(aval[1]) == np.dtype(x.aval[1]):
        return x
    return None


def numpy_typed(x) -> bool:
    """True when node x's run-time value is a NumPy array or scalar: never a Python number
    (whose weak type would change the dtype an elementwise op promotes to, and which has no
    array methods)."""
    from .ops.registry import REGISTRY

    if not isinstance(x, Node) or x.aval is None:
        return False
    if x.op == CONST:
        return isinstance(x.params["value"], (np.ndarray, np.generic))
    if x.op == INPUT:  # an array, a tensor's data or a NumPy scalar, unless read from a Python number
        return not x.params.get("python")
    return (x.op in REGISTRY and x.op not in ("dim_of", "reduced_count")) or len(x.aval[0]) > 0


# ops whose 0-d result is a 0-d ndarray, and ops whose result has their first operand's type
_ZERO_D_ARRAY_OPS = frozenset({"copy", "copy_keep", "asarray", "ascontiguousarray", "zeros_like", "ones_like",
                               "full_like", "where", "tensordot", "roll", "sort", "tile", "pad", "broadcast_to",
                               "index_update", "index_add", "add_at"})
_OPERAND_TYPE_OPS = frozenset({"cast", "reshape", "squeeze", "transpose", "real", "imag", "view", "flip",
                               "reshape_like", "broadcast_like", "sum_to", "diagonal"})


def numpy_scalar_node(node) -> bool:
    """Whether a 0-d node's value is a NumPy scalar when the graph runs (`x.sum()`, `w[0]`,
    `np.float64(s)`), not a 0-d ndarray (`np.array(s)`, `a[...]`, an input array). The graph runs
    NumPy's own operations, so the answer is NumPy's for each op."""
    while node.aval is not None and len(node.aval[0]) == 0:
        if node.op == INPUT:
            return bool(node.params.get("scalar") or node.params.get("python"))
        if node.op == LOOP_VAR and "scalar" in node.params:  # (a carried value: its start's)
            return node.params["scalar"]
        if node.op == CONST:
            return not isinstance(node.params["value"], np.ndarray)
        if node.op == "getitem":  # one integer per axis: an element (`a[...]`, `a[0, ...]`: a 0-d view)
            return Ellipsis not in node.params["index"][0]
        if node.op in _ZERO_D_ARRAY_OPS:
            return False
        if node.op == TUPLE_GET and node.inputs and isinstance(node.inputs[0], Node) \
                and node.inputs[0].op in (LOOP, COND):  # a loop's or branch's result: what its body gives
            source, k = node.inputs[0], node.params["index"]
            outs = source.params["body_outs" if source.op == LOOP else "then_outs"]
            node = outs[k] if k < len(outs) and isinstance(outs[k], Node) else None
            if node is None:
                return False
            continue
        if node.op not in _OPERAND_TYPE_OPS or not node.inputs or not isinstance(node.inputs[0], Node):
            return True  # ufuncs, reductions, matmul of vectors, np.float64(x), library calls
        node = node.inputs[0]
    return False


def _fmt_value(v) -> str:
    if isinstance(v, Node):
        return f"%{v.id}"
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}" if v.size > 4 else np.array2string(v, separator=",").replace("\n", "")
    if isinstance(v, np.dtype):
        return str(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt_value(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def fmt_aval(aval) -> str:
    if aval is None:
        return "?"
    shape, dtype = aval
    return f"{np.dtype(dtype).name}[{','.join(str(d) for d in shape)}]"


def _block(label, nodes, result_word, result, indent) -> list[str]:
    """A nested block of a conditional or loop node: its nodes, then what it produces."""
    lines = [f"{indent}  {label}:"]
    for m in nodes:
        lines += format_node(m, indent + "    ")
    lines.append(f"{indent}    {result_word} {_fmt_value(result)}")
    return lines


def format_node(n: Node, indent: str = "") -> list[str]:
    where = f"  @ {n.site}" if n.site else ""
    if n.op == ASSERT:
        a = n.params.get("assumption")
        return [f"{indent}assert {_fmt_value(n.inputs[0])} is {n.params['expect']}  [{a.kind if a else ''} {a.site if a else ''}]".rstrip()]
    if n.op == INPUT:
        return [f"{indent}%{n.id} = input {n.params['name']} : {fmt_aval(n.aval)}"]
    if n.op == CONST:
        return [f"{indent}%{n.id} = const {_fmt_value(n.params['value'])} : {fmt_aval(n.aval)}"]
    if n.op == COND:
        return ([f"{indent}%{n.id} = cond {_fmt_value(n.inputs[0])}{where}"]
                + _block("then", n.params["then_nodes"], "yield", tuple(n.params["then_outs"]), indent)
                + _block("else", n.params["else_nodes"], "yield", tuple(n.params["else_outs"]), indent))
    if n.op == LOOP:
        phs = ", ".join(f"%{p.id}" for p in n.params["placeholders"])
        return ([f"{indent}%{n.id} = loop ({phs}) = {_fmt_value(n.inputs)}{where}"]
                + _block("while", n.params["cond_nodes"], "test", n.params["cond"], indent)
                + _block("do", n.params["body_nodes"], "next", tuple(n.params["body_outs"]), indent))
    args = [_fmt_value(i) for i in n.inputs]
    for k, v in n.params.items():
        if k == "index" and isinstance(v, tuple):
            from .ops.indexing import format_index

            args.append(f"index={format_index(v)}")
        elif k == "fn":
            args.append(getattr(v, "__name__", repr(v)))
        elif k not in ("rng",):
            args.append(f"{k}={_fmt_value(v)}")
    return [f"{indent}%{n.id} = {n.op}({', '.join(args)}) : {fmt_aval(n.aval)}{where}"]


def _nested(nodes):
    for n in nodes:
        yield n
        if n.op == COND:
            yield from _nested(n.params["then_nodes"])
            yield from _nested(n.params["else_nodes"])
        elif n.op == LOOP:
            yield from n.params["placeholders"]
            yield from _nested(n.params["cond_nodes"])
            yield from _nested(n.params["body_nodes"])


@dataclass(eq=False)
class Graph:
    """A dataflow graph for one function signature. `nodes` is in a valid execution order."""

    name: str
    nodes: list = field(default_factory=list)
    outputs: list = field(default_factory=list)  # nodes whose values leave the graph
    n_inputs: int = 0
    # generated for unknown dimensions: avals hold the generation-time sizes, which other calls
    # do not share, so nothing may be specialized on them (passes and code generation check this)
    polymorphic: bool = False
    # float64 scalar chains may run as Python floats (executor/floats.py); off once their check
    # kept failing for the signature
    python_floats: bool = True
    # weight updates the plan may write into the weight's buffer: update node id -> (product
    # node, scale or None, the nodes the update replaces) (passes/inplace.py, executor/blas.py)
    inplace: dict = field(default_factory=dict)
    # ids of the INPUT nodes (Variable arrays) whose buffers the plan may overwrite once they are
    # dead (passes/donate.py, executor/donation.py)
    donated: list = field(default_factory=list)
    # (file, module globals, def line) of the user's function: the plan reports its lines
    # (executor/located.py)
    origin: tuple | None = None

    def __str__(self):
        lines = [f"graph {self.name}({self.n_inputs} inputs) {{"]
        for n in self.nodes:
            lines += format_node(n, "  ")
        lines.append(f"  return {_fmt_value(tuple(self.outputs))}")
        lines.append("}")
        return "\n".join(lines)

    def all_nodes(self):
        """Every node, those of conditionals and loops nested at any depth included."""
        return _nested(self.nodes)

    @property
    def asserts(self):
        return [n for n in self.all_nodes() if n.op == ASSERT]

    def size(self) -> int:
        return sum(1 for _ in self.all_nodes())

    def to_networkx(self):
        import networkx as nx  # imported on use: it costs ~0.2 s at startup

        g = nx.DiGraph()
        for n in self.all_nodes():
            g.add_node(n.id, op=n.op)
            for i in n.inputs:
                if isinstance(i, Node):
                    g.add_edge(i.id, n.id)
        return g


class VerifyError(AssertionError):
    pass


def verify(graph: Graph) -> None:
    """Check invariants: inputs defined before use, unique ids, known ops, acyclic."""
    from .ops.registry import REGISTRY

    everywhere: set = set()  # ids placed anywhere in the graph, blocks included

    def check_block(nodes, defined):
        for n in nodes:
            if n.id in defined or n.id in everywhere:
                raise VerifyError(f"node %{n.id} defined twice")
            everywhere.add(n.id)
            if n.op == LOOP_VAR:
                raise VerifyError(f"loop variable %{n.id} used as a node outside its loop")
            if n.op not in STRUCTURAL and n.op not in REGISTRY:
                raise VerifyError(f"node %{n.id} uses unknown op {n.op!r}")
            for i in n.inputs:
                if isinstance(i, Node) and i.id not in defined:
                    raise VerifyError(f"node %{n.id} ({n.op}) uses %{i.id} before it is defined")
            if n.op == COND:
                for block, outs in (("then_nodes", "then_outs"), ("else_nodes", "else_outs")):
                    inner = set(defined)
                    check_block(n.params[block], inner)
                    for o in n.params[outs]:
                        if isinstance(o, Node) and o.id not in inner:
                            raise VerifyError(f"cond %{n.id} yields undefined %{o.id}")
            elif n.op == LOOP:
                inner = set(defined) | {p.id for p in n.params["placeholders"]}
                check_block(n.params["cond_nodes"], inner)
                if n.params["cond"].id not in inner:
                    raise VerifyError(f"loop %{n.id} tests undefined %{n.params['cond'].id}")
                check_block(n.params["body_nodes"], inner)
                for o, p in zip(n.params["body_outs"], n.params["placeholders"]):
                    if o.id not in inner:
                        raise VerifyError(f"loop %{n.id} carries undefined %{o.id}")
                    if o.aval != p.aval:
                        raise VerifyError(f"loop %{n.id} changes the type of a carried value")
            defined.add(n.id)

    defined: set = set()
    check_block(graph.nodes, defined)
    for o in graph.outputs:
        if isinstance(o, Node) and o.id not in defined:
            raise VerifyError(f"graph output %{o.id} is not defined")
    import networkx as nx

    if not nx.is_directed_acyclic_graph(graph.to_networkx()):
        raise VerifyError("graph has a cycle")
