"""GPU elementwise fusion: a chain of elementwise ops as one CuPy ElementwiseKernel.

On a GPU the small ops of a training step cost their launch, not their arithmetic: a CuPy ufunc
call is 12-17 µs of host time while its kernel runs for a few µs. The SGD update `w - lr * g` is
two launches per weight, the tanh gradient `g * (1 - y * y)` three, an LSTM cell's gates a dozen.
Here such a chain becomes one kernel (measured on an H100: the three-op chain 52 µs as ufuncs,
12-15 µs as one kernel):

    float t0 = __fmul_rn(F32(a1), F32(a1)); float t1 = __fsub_rn(F32(1.0), t0); ...; o0 = t2;

Same values as the unfused ufuncs, bit for bit:
- each op casts its operands to its result dtype and computes in it, as the ufunc's loop does;
- add, subtract, multiply and divide are CUDA's round-to-nearest intrinsics (`__fadd_rn`, ...),
  correctly rounded and never contracted into a fused multiply-add with a neighbour (under
  NVRTC's default contraction the SGD chain's bits differed from CuPy's);
- sqrt, fabs, exp, log, tanh and CuPy's maximum (NaN where an operand is NaN, else CUDA's max)
  are written as CuPy's ufuncs write them, and the kernel is compiled with CuPy's default
  options, so the same CUDA implementations run (checked on an H100 against the ufuncs on
  3.1 M values per dtype, subnormals, infinities, NaNs and signed zeros among them: no bit
  differed); the sigmoid is the primitive's `1 / (1 + exp(-x))`, op for op;
- a comparison is IEEE's, in its float operands' dtype, with a bool result (a later op casts it
  to 1.0 or 0.0, as the ufunc does).
Before a kernel is used, it is run once on random operands against the chain's own kernels; a
kernel that differs or fails to compile leaves its chain unfused.

A group (executor/fusion.py's `find_groups`, with the GPU member rule below) is a set of such ops
on the GPU of one static shape, connected through operands of that shape. Other operands are
GPU arrays that broadcast to it (0-d ones too) and finite Python numbers, which the kernel
broadcasts itself. The plan calls the kernel where the group's last op was; no op outside the
group reads a member before that point.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ir
from ..ops.registry import REGISTRY
from ..passes.order import refs
from .buffers import _known
from .fusion import boundary, find_groups

# op -> the C expression of one element, from its operands' (already cast) expressions; {p} is
# the rounding intrinsics' type letter (f: float, d: double), {c} the cast to the op's type.
# Arithmetic is written as CUDA's round-to-nearest intrinsics, which are never contracted into a
# fused multiply-add; the transcendental functions are CUDA's, as CuPy's ufuncs call them.
OPS = {"add": "__{p}add_rn({}, {})", "sub": "__{p}sub_rn({}, {})", "mul": "__{p}mul_rn({}, {})",
       "div": "__{p}div_rn({}, {})", "neg": "-{}", "sqrt": "sqrt({})", "abs": "fabs({})",
       "exp": "exp({})", "log": "log({})", "tanh": "tanh({})",
       "sigmoid": "__{p}div_rn({c}(1), __{p}add_rn({c}(1), exp(-{})))",  # CuPy's 1 / (1 + exp(-x))
       "maximum": "MAXIMUM({}, {})", "relu": "MAXIMUM({}, {c}(0))",  # (relu: CuPy's maximum(x, 0))
       **{op: f"({{}} {c} {{}})" for op, c in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="),
                                               ("eq", "=="), ("ne", "!="))}}
COMPARISONS = ("gt", "ge", "lt", "le", "eq", "ne")  # bool results, computed in their float operands' dtype
_CTYPES = {np.dtype(np.float32): ("float32", "float", "F32", "f"), np.dtype(np.float64): ("float64", "double", "F64", "d")}
# CuPy's float maximum: NaN where either operand is NaN, else CUDA's max
PREAMBLE = ("#define F32(x) ((float)(x))\n#define F64(x) ((double)(x))\n"
            "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n"
            "template <typename T> __device__ T MAXIMUM(T a, T b) { return (isnan(a) | isnan(b)) ? T(NAN) : T(max(a, b)); }\n")
OPTIONS = ()  # CuPy's own, under which its ufuncs' transcendental functions were compiled
_KERNELS: dict = {}  # (module, inputs, outputs, body) -> the ElementwiseKernel, shared by graphs


def _dtype(n):
    return np.dtype(n.aval[1]) if n.aval is not None else None


def _broadcasts(shape, to) -> bool:
    return len(shape) <= len(to) and all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(to)))


def _computed_in(n):
    """The dtype op n computes in: its result's, or a comparison's float operands' (one dtype)."""
    if n.op not in COMPARISONS:
        return _dtype(n)
    ds = {_dtype(i) for i in n.inputs if isinstance(i, ir.Node)}
    return ds.pop() if len(ds) == 1 and _dtype(n) == np.bool_ else None


def _param(d) -> str:
    return _CTYPES[d][0] if d.kind == "f" else "bool"


def gpu_member(n, devices) -> bool:
    """Node n may be fused: an op of OPS without parameters on the GPU, of a static float shape
    (a comparison: bool, of float operands of one dtype), whose operands are GPU arrays
    broadcasting to that shape (float or bool; 0-d ones too) or finite Python numbers."""
    if n.op not in OPS or n.params or devices.get(n.id) != "gpu" or _computed_in(n) not in _CTYPES:
        return False
    shape = _known(n)
    if not shape:
        return False
    for i in n.inputs:
        if isinstance(i, ir.Node):
            s, d = _known(i), _dtype(i)
            if s is None or d is None or d.kind not in "fb":
                return False
            if devices.get(i.id) != "gpu" or not _broadcasts(s, shape):  # (a host 0-d array: CuPy refuses it)
                return False
        elif type(i) not in (int, float) or not math.isfinite(i) or (type(i) is int and abs(i) > 2 ** 24):
            return False
    return True


class GpuGroup:
    """Members (in plan order), external `operands` (nodes), `outputs` (members read after the
    group or returned) and the kernel's declarations and body."""

    def __init__(self, members, output_ids, users):
        self.members = members
        self.operands, self.outputs = boundary(members, output_ids, users)
        self.kernel = None
        local = {}
        params = []
        for k, a in enumerate(self.operands):
            params.append(f"{_param(_dtype(a))} a{k}")
            local[a.id] = (f"a{k}", _dtype(a))
        lines = []
        for k, m in enumerate(members):
            computed = _computed_in(m)
            _, ctype, cast, letter = _CTYPES[computed]
            args = []
            for i in m.inputs:
                if isinstance(i, ir.Node):
                    expr, d = local[i.id]
                    args.append(expr if d == computed and expr[0] == "t" else f"{cast}({expr})")
                else:
                    args.append(f"{cast}({float(i)!r})")
            ctype = ctype if _dtype(m).kind == "f" else "bool"
            lines.append(f"{ctype} t{k} = {OPS[m.op].format(*args, p=letter, c=cast)};")
            local[m.id] = (f"t{k}", _dtype(m))
        lines += [f"o{k} = {local[m.id][0]};" for k, m in enumerate(self.outputs)]
        self.in_params = ", ".join(params)
        self.out_params = ", ".join(f"{_param(_dtype(m))} o{k}" for k, m in enumerate(self.outputs))
        self.body = " ".join(lines)


def groups_of(graph: ir.Graph, devices: dict) -> list[GpuGroup]:
    """The fusable groups of two or more GPU ops among `graph`'s top-level nodes."""
    if graph.polymorphic or not devices:
        return []
    users: dict = {}
    for n in graph.nodes:
        for i in set(x.id for x in refs(n)):
            users.setdefault(i, []).append(n.id)
    outs = {o.id for o in graph.outputs if isinstance(o, ir.Node)}
    return [GpuGroup(g.members, outs, users) for g in find_groups(graph, member=lambda n: gpu_member(n, devices))]


def kernel_for(group: GpuGroup, cp):
    key = (cp, group.in_params, group.out_params, group.body)  # (a kernel belongs to its module)
    k = _KERNELS.get(key)
    if k is None:
        name = f"janus_fused_{len(_KERNELS)}"
        k = _KERNELS[key] = cp.ElementwiseKernel(group.in_params, group.out_params, group.body, name,
                                                 options=OPTIONS, preamble=PREAMBLE)
    return k


def _random(node, cp, rng):
    shape, d = _known(node), _dtype(node)
    if d.kind == "b":
        host = rng.random(shape) < 0.5
    else:
        host = rng.standard_normal(shape).astype(d)
    return cp.asarray(host)


def checked(group: GpuGroup, cp) -> bool:
    """Compile `group`'s kernel and run it once on random operands against the members' own
    kernels: True (and `group.kernel` set) only when every output agrees, NaNs in the same places."""
    rng = np.random.default_rng(len(group.body))
    env = {a.id: _random(a, cp, rng) for a in group.operands}
    try:
        kernel = kernel_for(group, cp)
        with np.errstate(all="ignore"):  # random operands: sqrt of a negative, say (CuPy never warns)
            for m in group.members:
                env[m.id] = REGISTRY[m.op].impl(cp, *[env[i.id] if isinstance(i, ir.Node) else i for i in m.inputs])
            got = kernel(*[env[a.id] for a in group.operands])
    except Exception:  # no compiler, a CuPy without the kernel's feature: the chain stays unfused
        return False
    got = got if isinstance(got, tuple) else (got,)
    for m, g in zip(group.outputs, got):
        want = env[m.id]
        if g.shape != want.shape or g.dtype != want.dtype \
                or not bool(cp.array_equal(g, want, equal_nan=want.dtype.kind == "f")):
            return False
    group.kernel = kernel
    return True


def fused_groups(graph: ir.Graph, devices: dict, cp) -> list[GpuGroup]:
    """The groups whose kernels compiled and reproduced their chains (none without a kernel
    compiler: `cp.ElementwiseKernel` missing)."""
    if getattr(cp, "ElementwiseKernel", None) is None:
        return []
    return [g for g in groups_of(graph, devices) if checked(g, cp)]
