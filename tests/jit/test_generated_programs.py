"""Random programs, eager vs jit. Hypothesis draws a small program from a grammar (array and scalar
arithmetic, NumPy calls in their argument forms, conversions, local functions, `if` on Python
values and on computed values, `for` over `range` and over lists, helper calls,
attribute/container/Variable mutation, in-place updates, the global RNG, print), renders it as
Python source in a real module file (the JIT reads source), and runs it side by side on a random
call sequence (shape changes, scalar changes, list-length changes included), with float64 or
float32 arrays passed in.

Whatever the JIT does with a program — graphs, regenerations, eager fallbacks — results, printed
text, state, arguments and the RNG must equal eager's after every call. Every compiled graph is
verified and its plan compared with the reference interpreter.

The number of examples comes from the Hypothesis profile in tests/conftest.py; under the `ci`
profile the search is derandomized so a run is reproducible.
"""
import itertools
import os
import textwrap

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl

from .harness import check, load_module, within

_DETERMINISTIC = os.environ.get("HYPOTHESIS_PROFILE") == "ci"
_program_ids = itertools.count(1)

# ================================================================== the grammar
# Expression kinds are broadcast classes of an (n, m) array: "nm", "m" (a row), "n1" (a column),
# "s" (a scalar). Every variable v0..v2 holds an "nm" array.
_VARS = ("v0", "v1", "v2")


def _broadcast(a, b):
    if a == b:
        return a
    if "s" in (a, b):
        return b if a == "s" else a
    return "nm"


@st.composite
def expressions(draw, depth=2, loop_var=False):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        atoms = [(v, "nm") for v in _VARS] + [("x", "nm"), ("y", "nm"), ("s", "s"), ("obj.scale", "s"),
                                                ("0.5", "s"), ("obj.acc", "m"), ("obj.gain", "s")]
        if loop_var:
            atoms.append(("i", "s"))
        return draw(st.sampled_from(atoms))
    kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce", "dot", "helper"]))
    if kind == "unary":
        e, k = draw(expressions(depth - 1, loop_var))
        tmpl = draw(st.sampled_from(["np.tanh({})", "np.exp(-np.abs({}))", "np.maximum({}, 0.0)", "(-{})",
                                     "np.sqrt(np.abs({}) + 1.0)", "({} // 0.5)", "({} % 0.75)", "np.floor({})",
                                     "np.log1p(np.abs({}))", "np.arctan({})",
                                     # ufuncs without a graph op, called as library nodes
                                     "np.fmax({}, 0.25)", "np.trunc({})", "np.cbrt({})", "np.modf({})[0]"]))
        return tmpl.format(e), k
    if kind == "binary":
        a, ka = draw(expressions(depth - 1, loop_var))
        b, kb = draw(expressions(depth - 1, loop_var))
        op = draw(st.sampled_from(["+", "-", "*", "max"]))
        if op == "max":
            return f"np.maximum({a}, {b})", _broadcast(ka, kb)
        return f"({a} {op} {b})", _broadcast(ka, kb)
    if kind == "reduce":
        e = draw(nm_expressions(depth - 1, loop_var))
        fn = draw(st.sampled_from(["np.sum", "np.mean", "np.max", "np.linalg.norm"]))
        # NumPy's arguments in their forms: positional, keyword, the ones without a graph op
        axis = draw(st.sampled_from(["axis=0", "axis=1, keepdims=True", "", "0", "-1, keepdims=True",
                                     "axis=(0, 1), keepdims=True", "axis=0, initial=0.5", "axis=0, where=True"]))
        out = {"axis=0": "m", "axis=1, keepdims=True": "n1", "": "s", "0": "m", "-1, keepdims=True": "n1",
               "axis=(0, 1), keepdims=True": "s", "axis=0, initial=0.5": "m", "axis=0, where=True": "m"}[axis]
        if fn == "np.mean" and "initial" in axis:
            axis = "axis=0, dtype=np.float64"
        if fn != "np.linalg.norm" and draw(st.booleans()):  # the method spelling (keywords only here)
            return f"({e}).{fn[3:]}({axis.replace('-1, keepdims', 'axis=-1, keepdims')})", out
        return f"{fn}({e}{', ' + axis if axis else ''})", out
    if kind == "dot":
        e = draw(nm_expressions(depth - 1, loop_var))
        return draw(st.sampled_from([f"np.dot({e}, obj.w)", f"({e} @ obj.w)"])), "nm"
    e, k = draw(expressions(depth - 1, loop_var))
    return f"helper({e})", k


@st.composite
def nm_expressions(draw, depth=2, loop_var=False):
    e, k = draw(expressions(depth, loop_var))
    return e if k == "nm" else f"(x + {e})"


@st.composite
def row_expressions(draw, depth=1):
    e = draw(nm_expressions(depth))
    return f"np.sum({e}, axis=0)"


@st.composite
def simple_statements(draw, loop_var=False):
    """Statements allowed anywhere (including inside loops and Python-value branches)."""
    v = draw(st.sampled_from(_VARS))
    kind = draw(st.sampled_from(["assign", "assign", "iadd", "imul", "row", "col", "slice", "fancy", "out",
                                 "attr", "attr_inplace", "append", "dictset", "variable", "bump", "xs_append",
                                 "convert", "local", "callback", "box", "hist", "alias", "view", "swap", "where",
                                 "stack", "comprehension", "fkey"]))
    e = draw(nm_expressions(2, loop_var))
    if kind == "assign":
        return [f"{v} = {e}"]
    if kind == "iadd":
        return [f"{v} += {e}"]
    if kind == "imul":
        return [f"{v} *= 0.5"]
    if kind == "row":
        return [f"{v}[0] = {draw(row_expressions())} * 0.1"]
    if kind == "col":
        return [f"{v}[:, 0] = {draw(st.sampled_from(['0.0', 's', 'obj.scale']))}"]
    if kind == "slice":
        return [f"{v}[1:] *= 0.5"]
    if kind == "fancy":
        return [f"{v}[IDX] += 1.0"]
    if kind == "out":
        return [f"np.add({v}, {e}, out={v})"]
    if kind == "attr":
        return [f"obj.acc = obj.acc * 0.5 + {draw(row_expressions())} * 0.1"]
    if kind == "attr_inplace":
        return [f"obj.acc += {draw(row_expressions())} * 0.1"]
    if kind == "append":
        return [f"obj.log.append(np.sum({v}))"]
    if kind == "xs_append":
        return [f"xs.append({v} * 1.0)"]
    if kind == "convert":  # NumPy conversions of graph scalars (graphgen/conversions.py)
        return [draw(st.sampled_from([f"{v} = {v} * np.asarray(float(np.sum({v})) * 0.01)",
                                      f"{v} = {v} * np.float32(np.mean({v}))",
                                      f"obj.log.append(np.array([float(np.sum({v})), np.max({v}), 1.0]))",
                                      f"{v} = {v} + np.array([np.mean({v}), s])[1]"]))]
    if kind == "local":  # a function defined in the jitted code, reading an enclosing name late
        w = draw(st.sampled_from(_VARS))
        return ["def inner(a, k=s):", f"    return np.tanh(a) * k + {w}[0]", f"{v} = inner({e})",
                f"{v} = {draw(st.sampled_from(['inner', '(lambda a: inner(a) * 0.5)']))}({v})"]
    if kind == "callback":  # user functions called by library code; lazy iterators (graphgen/callbacks.py)
        w = draw(st.sampled_from(_VARS))
        return draw(st.sampled_from([
            [f"{v} = sum(map(helper, [{v}, {w}]))"],
            [f"{v} = functools.reduce(lambda a, b: a + b * 0.5, [{v}, {w}, {e}])"],
            [f"{v} = sorted([{v}, {w}], key=lambda a: -a.shape[1])[0] * 0.5"],
            [f"{v} = ([{v}] + list(filter(lambda a: a.shape[0] > 2, [{w}, {e}])))[-1]"],
            # the item reads {v} when pulled, after the body's write: eager's order or a wrong value
            [f"for t in (np.tanh(a) * {v}[0, 0] for a in [{v}, {w}]):", f"    obj.log.append(np.sum(t))",
             f"    {v} = {v} + t * 0.1"],
            [f"for t in map(lambda a: bump(obj, a), [{v}, {w}]):", f"    obj.log.append(np.sum(obj.acc))",
             f"    {v} = {v} * 0.5 + t"]]))
    if kind == "alias":  # a second name for the same array, written in place through either
        w = draw(st.sampled_from(_VARS))
        return draw(st.sampled_from([[f"u = {v}", f"u += {e}"], [f"u = {v}", f"{v} *= 0.5", f"{w} = u + 0.0"]]))
    if kind == "view":  # basic-index views written in place; a transposed view (stays eager)
        return draw(st.sampled_from([[f"u = {v}[0]", "u *= 0.5"], [f"u = {v}[:, :1]", "u += 1.0"],
                                     [f"u = {v}[-1:]", f"u[...] = {v}[0] * 0.25"], [f"u = {v}.T", "u *= 0.5"]]))
    if kind == "swap":
        w = draw(st.sampled_from(_VARS))
        return [f"{v}, {w} = {w}, {e}"]
    if kind == "where":
        return [f"{v} = np.where({v} > 0.0, {v}, {e})"]
    if kind == "stack":
        w = draw(st.sampled_from(_VARS))
        return [draw(st.sampled_from([f"{v} = np.stack([{v}, {w}]).sum(axis=0) * 0.5",
                                      f"{v} = np.concatenate([{v}, {w}], axis=1)[:, ::2] + {e}"]))]
    if kind == "fkey":  # a dict key formatted from a counter that becomes a graph input
        return ["obj.t += 1", f"obj.cache[f'k{{obj.t % 2}}'] = np.sum({v})"]
    if kind == "comprehension":
        w = draw(st.sampled_from(_VARS))
        return [draw(st.sampled_from([f"{v} = sum([t * 0.5 for t in ({v}, {w})])",
                                      f"{v} = {{k: t for k, t in zip('ab', [{w}, {e}])}}['b']"]))]
    if kind == "dictset":
        return [f"obj.cache[{draw(st.sampled_from(['a', 'b']))!r}] = {e}"]
    if kind in ("box", "hist"):  # the function's own dict and list (graphgen/branch_containers.py)
        return [draw(_local_container_writes(e, v))]
    if kind == "variable":
        return [f"obj.var.assign_add({draw(row_expressions())} * 0.01)"]
    return [f"{v} = bump(obj, {e})"]


def _indent(lines):
    return ["    " + line for line in lines]


def _local_container_writes(e, v):
    # values computed before a branch as well as in it: a branch must not see the other's writes
    return st.sampled_from([f"box['a'] = {e}", f"box['a'] = {v}", f"box['n'] = box['n'] + 1", f"hist.append({v})",
                            f"hist[0] = hist[-1] + {e}", "hist.reverse()"])


@st.composite
def statements(draw, depth=2):
    kind = draw(st.sampled_from(["simple"] * 5 + ["if_py", "if_flag", "if_computed", "for_range", "for_list",
                                                 "random", "print", "while", "break", "try", "log", "early"]))
    if kind == "simple" or depth == 0:
        return draw(simple_statements())
    if kind in ("if_py", "if_flag"):
        test = "s > 0.3" if kind == "if_py" else "obj.flag"
        body = [line for _ in range(draw(st.integers(1, 2))) for line in draw(statements(depth - 1))]
        out = [f"if {test}:"] + _indent(body)
        if draw(st.booleans()):
            out += ["else:"] + _indent(draw(simple_statements()))
        return out
    if kind == "if_computed":
        # assign the same variable in both arms so the generator can build a cond node (an arm may
        # rebind to an argument: see test_state.test_value_merged_from_cond_keeps_alias_to_argument)
        v, w = draw(st.sampled_from(_VARS)), draw(st.sampled_from(_VARS))
        a, b = draw(nm_expressions(2)), draw(nm_expressions(2))
        # state written in either arm is an output of the cond node too (control.cond)
        # and so are the items of the function's own dict and list (graphgen/branch_containers.py)
        # and so are Variables and arrays written in place (statements.branch_box_write)
        then_extra, else_extra = ([draw(st.sampled_from([f"    obj.acc = obj.acc * 0.5 + {draw(row_expressions())} * 0.1",
                                                          "    " + draw(_local_container_writes(a, v)),
                                                          f"    obj.var.assign_add({draw(row_expressions())} * 0.01)",
                                                          f"    {w}[0] = {draw(row_expressions())} * 0.1",
                                                          f"    {w} += {b}", "    obj.acc *= 0.5"]))]
                                  if draw(st.booleans()) else [] for _ in range(2))
        test = draw(st.sampled_from([f"np.sum({w}) > 0.0", f"not np.any({w} > 1.5)", f"np.all({w} < 2.0)"]))
        form = draw(st.sampled_from(["statement", "statement", "expression", "number", "boolop", "either"]))
        if form == "expression" and not then_extra and not else_extra:  # `a if test else b` (expressions.py)
            return [f"{v} = ({a}) if {test} else ({b})"]
        if form == "either":  # a Tensor (y is one when tensor_y) or an ndarray: graphgen/builder.either
            return [f"{v} = y * 0.5 if {test} else np.asarray({a})"]
        if form == "boolop":  # `and` / `or` used as values (expressions.expr_BoolOp)
            return [draw(st.sampled_from([f"{v} = {v} * (float(np.sum({w})) > 0.0 or 0.5)",
                                          f"{v} = (np.max({w}) > 1.0) or ({v} * 2.0)",
                                          f"{v} = {v} + (float(np.sum({w})) > -1.0 and float(np.min({w})) < 0.5"
                                          " and 0.25)"]))]
        if form == "number":  # Python numbers from a computed test: a clipping scale
            return [f"sc = 0.5 / float(np.sum({w} * {w})) if float(np.sum({w} * {w})) > 0.5 else 1.0",
                    f"{v} = {v} * sc"]
        return [f"if {test}:", f"    {v} = {a}"] + then_extra + ["else:", f"    {v} = {b}"] + else_extra
    if kind == "for_range":
        body = [line for _ in range(draw(st.integers(1, 2))) for line in draw(simple_statements(loop_var=True))]
        return [f"for i in range({draw(st.integers(1, 3))}):"] + _indent(body)
    if kind == "for_list":
        v = draw(st.sampled_from(_VARS))
        body = draw(st.sampled_from([f"{v} = {v} + t * 0.5", f"{v} = np.maximum({v}, t)", f"{v} += np.tanh(t)",
                                     "t += 0.1",  # writes the list's arrays in place
                                     f"t[0] = {v}[0]"]))
        return ["for t in xs:", f"    {body}"]
    if kind == "while":
        # trip count depends on the data: stable for a while, then different (or varying)
        # the counter is a Python int before the loop; state written in the body is carried by
        # the loop node (graphgen/loops.py), and so is an array written in place through a name
        v, w = draw(st.sampled_from(_VARS)), draw(st.sampled_from(_VARS))
        extra = draw(st.sampled_from([[], ["    box['a'] = v0"], ["    obj.acc = obj.acc * 0.5 + 0.1"],
                                      ["    obj.acc *= 0.5"], [f"    obj.var.assign_add({v}[0] * 0.01)"],
                                      [f"    {w} += 0.25"], [f"    {w}[0] = {v}[-1] * 0.5"],
                                      ["    t = v0 * 2.0", "    t += 1.0", "    obj.acc = obj.acc + t[0] * 0.1"],
                                      [f"    if np.sum({v}) > 0.0:", "        obj.acc += 0.5", "    else:",
                                       f"        obj.var.assign({v}[0])"]]))
        # (halving, with at most +0.25 a trip, ends below 1.0 without the `k < 4` cap too)
        cap = draw(st.sampled_from([" and k < 4", ""]))
        # after the loop: in-place writes through the carried name or what it was before the loop
        after = draw(st.sampled_from([[], [f"{v} += 1.0"], ["box['a'] += 1.0"], ["hist[0] *= 0.5"]]))
        return ["k = 0", f"while np.max(np.abs({v})) > {draw(st.sampled_from(['1.0', '2.0']))}{cap}:",
                f"    {v} = {v} * 0.5", "    k = k + 1"] + extra + after
    if kind == "break":  # a loop left early on a Python value or a computed one (a loop node: loops.py)
        v = draw(st.sampled_from(_VARS))
        test = draw(st.sampled_from(["i == 1 and s > 0.3", f"np.sum({v}) > 2.0", f"np.max(np.abs({v})) < 1.0"]))
        step = f"    {v} = {v} * 0.5 + {draw(nm_expressions(1, True))}"
        where = draw(st.sampled_from(["first", "last", "middle", "continue", "while", "draw_test", "draw_break"]))
        if where == "draw_test":  # a draw in the loop's test, left by a break: drawn as often as Python does
            return (["k = 0", "while obj.rng.random() < 0.9 and k < 6:", f"    {v} = {v} * 0.5", "    k += 1",
                     f"    if {test.replace('i ==', 'k ==')}:", "        break", "obj.log.append(k)"])
        if where == "draw_break":  # a draw in the break's test
            return (["k = 0", "while k < 5:", "    if obj.rng.random() > 0.7:", "        break", f"    {v} = {v} * 0.5",
                     "    k += 1", "obj.log.append(k)"])
        if where == "while":  # the counter keeps it finite; `or` of a graph value and a Python one
            state = [f"    obj.acc = obj.acc + np.sum({v}, axis=0) * 0.1"] if draw(st.booleans()) else []
            return (["k = 0", "while True:", f"    {v} = {v} * 0.5", "    k += 1"] + state
                    + [f"    if {test.replace('i ==', 'k ==')} or k > 3:", "        break", "obj.log.append(k)"])
        exit_ = [f"    if {test}:", "        break" if where != "continue" else "        continue"]
        loop = [f"for i in range({draw(st.integers(1, 3))}):"]
        if where in ("middle", "continue"):  # statements after the exit: a conditional node on its test
            return loop + [step] + exit_ + [f"    obj.acc = obj.acc + np.sum({v}, axis=0) * 0.1"]
        return loop + (exit_ + [step] if where == "first" else [step] + exit_)
    if kind == "try":  # a handler some calls enter (the key depends on s), an `else`, a `finally`;
        v = draw(st.sampled_from(_VARS))  # or state the handler creates on its first miss
        body = [line for _ in range(draw(st.integers(1, 2))) for line in draw(simple_statements())]
        risky, handler = draw(st.sampled_from([
            (f"    {v} = {v} + box['a' if s > 0.3 else 'zz']", f"    {v} = {v} * 0.0"),
            (f"    {v} = {v} * xs[0][0, 0]", f"    {v} = {v} * 0.0"),
            (f"    {v} = {v} + obj.cache['a']", f"    {v} = {v} * 0.0"),
            (f"    {v} = {v} + obj.cache['b']", f"    obj.cache['b'] = {v} * 0.5")]))
        tail = draw(st.sampled_from([[], ["else:", "    obj.log.append(1)"], ["finally:", "    obj.acc = obj.acc * 0.5"]]))
        return ["try:"] + _indent(body) + [risky, "except (KeyError, IndexError):", handler] + tail
    if kind == "log":  # every k-th call appends and prints: one graph per outcome (jit/variants.py)
        v = draw(st.sampled_from(_VARS))
        k = draw(st.sampled_from([2, 3]))
        return ["obj.t += 1", f"if obj.t % {k} == 0:", f"    obj.log.append(float(np.sum({v})))",
                '    print("log", obj.t, f"{obj.log[-1]:.3f}")']
    if kind == "early":  # helpers returning early on a computed value, math of Python floats
        v = draw(st.sampled_from(_VARS))
        return [draw(st.sampled_from([f"{v} = clipped({v}, {draw(st.sampled_from(['1.0', '3.0']))})",
                                      f"{v} = {v} * schedule(obj.t + len(obj.log))"]))]
    if kind == "random":
        v = draw(st.sampled_from(_VARS))
        call = draw(st.sampled_from(["np.random.randn(*{v}.shape)", "np.random.rand(*{v}.shape)",
                                     "np.random.normal(0.0, 0.1, size={v}.shape)",
                                     # the object's own Generator (a draw node on it)
                                     "obj.rng.normal(0.0, 0.1, size={v}.shape)",
                                     "obj.rng.permutation(len({v}))[:, None] * obj.rng.random()"]))
        return [f"{v} = {v} + 0.1 * {call.format(v=v)}"]
    v = draw(st.sampled_from(_VARS))
    return [f'print("{v}", {v}.shape, f"{{float(np.sum({v})):.4f}}")']


@st.composite
def programs(draw):
    body = [line for _ in range(draw(st.integers(1, 5))) for line in draw(statements())]
    alias = draw(st.booleans())
    tensor_y = draw(st.booleans())
    ret = draw(st.sampled_from(["v0", "(v0, np.sum(v1))", "(v2, obj.acc)", "[v0, v1, v2]", "{'a': v1, 'n': s}",
                                "(v0, v0)", "v2[1:]", "(v1.T, v0[0])", "(x, y)", "(v0, box, hist[0], len(hist))"]))
    pid = next(_program_ids)
    lines = ["def f(x, y, s, obj, xs):", f'    """generated program {pid}"""', "    v0 = x * 1.0", "    v1 = y + 0.0",
             "    v2 = x" if alias else "    v2 = y * 0.5", "    box = {'a': v1, 'n': 0}", "    hist = [v0]"]
    if draw(st.booleans()):  # the function's own dict and list as they are at the end
        ret = f"({ret}, box, hist)"
    lines += _indent(body) + [f"    return {ret}"]
    return "\n".join(lines), tensor_y


PRELUDE = '''
import functools
import math

import numpy as np
import janus_like as jl

IDX = np.array([0, 0, 1])


def helper(a):
    return np.tanh(a) * 0.5 + a * 0.25


def bump(o, a):
    o.acc = o.acc + np.sum(a, axis=0) * 0.1
    return a * 0.5


def clipped(a, c):
    n = math.sqrt(float(np.sum(a * a)))
    if n > c:
        return a * (c / n)
    return a


def schedule(t):
    if t < 3:
        return 0.1 * (t + 1) / 3
    return 0.05 * (1 + math.cos(math.pi * min(t / 10, 1.0)))


'''


class State:
    """The object argument (one class for both sides, so eager and jit state compare by type).
    `gain` is a class attribute the call sequence changes between calls (`State.gain = ...`)."""

    gain = 1.0

    def __init__(self, m):
        self.w = np.random.default_rng(0).standard_normal((m, m)) * 0.5
        self.acc = np.zeros(m)
        self.scale = 0.75
        self.flag = True
        self.rng = np.random.default_rng(7)
        self.t = 0
        self.log = []
        self.cache = {}
        self.var = jl.Variable(np.zeros(m))


@st.composite
def call_sequences(draw):
    """Per call: rows n (the shape), scalar s, obj.flag, obj.scale, the list length, State.gain."""
    n_calls = draw(st.integers(5, 9))
    base = (draw(st.sampled_from([2, 3])), 0.5, True, 0.75, 2, 1.0)
    seq = []
    for _ in range(n_calls):
        change = draw(st.sampled_from([None] * 5 + ["n", "s", "flag", "scale", "len", "gain"]))
        n, s, flag, scale, length, gain = base
        if change == "n":
            n = draw(st.sampled_from([2, 3, 4]))
        elif change == "s":
            s = draw(st.sampled_from([-0.5, 0.1, 0.9]))
        elif change == "flag":
            flag = not flag
        elif change == "scale":
            scale = draw(st.sampled_from([0.25, 1.5]))
        elif change == "len":
            length = draw(st.sampled_from([1, 3]))
        elif change == "gain":
            gain = draw(st.sampled_from([0.5, 2.0]))
        seq.append((n, s, flag, scale, length, gain))
    return seq


def _make_calls(seq, m, tensor_y=False, dtype=np.float64):
    """`y` is a janus_like Tensor when `tensor_y`: programs then mix Tensors and ndarrays. The
    arrays passed in are of `dtype` (float32 ones meet the object's float64 state: promotions)."""
    def call(k, n, s, flag, scale, length, gain=1.0):
        def c(state):
            obj = state["obj"]
            obj.flag, obj.scale = flag, scale
            State.gain = gain  # a class attribute changed between calls (both sides see the same)
            r = np.random.default_rng(1000 + k)
            x, y = r.standard_normal((n, m)).astype(dtype), r.standard_normal((n, m)).astype(dtype)
            if tensor_y:
                y = jl.tensor(y)
            xs = [r.standard_normal((n, m)).astype(dtype) for _ in range(length)]
            return (x, y, s, obj, xs)
        return c

    return [call(k, *spec) for k, spec in enumerate(seq)]


@settings(derandomize=_DETERMINISTIC)
@given(program=programs(), seq=call_sequences(), m=st.sampled_from([2, 3, 64]),  # 64: the memory plan reuses
       dtype=st.sampled_from([np.float64, np.float32]))                         # buffers of 64+ elements
def test_random_program_eager_vs_jit(tmp_path_factory, program, seq, m, dtype):
    source, tensor_y = program
    directory = tmp_path_factory.mktemp("progs", numbered=True)

    def make():
        mod = load_module(directory, PRELUDE + source + "\n", "genprog")
        return mod.f, {"obj": State(m)}

    jf = check(make, _make_calls(seq, m, tensor_y, dtype), min_graph_calls=0)
    assert jf.stats()["calls"] == len(seq)


@settings(derandomize=_DETERMINISTIC)
@given(program=programs(), seq=call_sequences(), m=st.sampled_from([2, 3, 64]))  # 64: big enough for the passes' size rules
def test_random_program_reassociating(tmp_path_factory, program, seq, m):
    """The JIT's default mode (passes that reorder floating-point sums run too): values match
    eager's to float64 rounding; everything else (types, state, printed text, the RNG) exactly."""
    source, tensor_y = program
    directory = tmp_path_factory.mktemp("progs", numbered=True)

    def make():
        mod = load_module(directory, PRELUDE + source + "\n", "genprog")
        return mod.f, {"obj": State(m)}

    with within(rtol=1e-7, atol=1e-12):
        jf = check(make, _make_calls(seq, m, tensor_y), min_graph_calls=0, reassociate=True)
    assert jf.stats()["calls"] == len(seq)


# ------------------------------------------------------------------ the generator itself
def test_rendered_programs_compile():
    """Every program the grammar draws is valid Python (independent of the JIT)."""
    @settings(max_examples=30, derandomize=True)
    @given(program=programs())
    def inner(program):
        compile(PRELUDE + program[0], "<program>", "exec")

    inner()


def test_a_fixed_program_runs_as_graphs(tmp_path):
    """A representative program from the grammar, pinned, so a change that stops graphs from
    running at all is caught even when the random ones all fall back."""
    source = textwrap.dedent('''
        def f(x, y, s, obj, xs):
            """pinned program"""
            v0 = x * 1.0
            v1 = y + 0.0
            v2 = x
            v0 = np.tanh(v0 @ obj.w) + helper(v1)
            if s > 0.3:
                v1 += np.maximum(v0, 0.0)
            for t in xs:
                v2 += np.tanh(t)
            obj.acc += np.sum(v0, axis=0) * 0.1
            v1[IDX] += 1.0
            if np.sum(v1) > 0.0:
                v0 = v0 * 2.0
            else:
                v0 = v0 - 1.0
            print("v0", v0.shape, f"{float(np.sum(v0)):.4f}")
            return (v2, obj.acc)
    ''')
    seq = [(3, 0.5, True, 0.75, 2)] * 5 + [(4, 0.5, True, 0.75, 2)] * 2 + [(3, 0.5, True, 0.75, 3)] * 2

    def make():
        mod = load_module(tmp_path, PRELUDE + source, "pinned")
        return mod.f, {"obj": State(3)}

    jf = check(make, _make_calls(seq, 3), min_graph_calls=3)
    assert jf.stats()["graphs_generated"] >= 3, jf.explain()
