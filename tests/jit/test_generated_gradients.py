"""Random training steps, eager vs jit. Hypothesis draws a small differentiable program: a
forward pass under a `GradientTape` over two Variables (products, elementwise functions,
reductions, rows, index-array gathers from a table, concatenation, `where`, janus_like's relu,
softmax and cross-entropy), with `if` on Python values and on computed
values, unrolled `for` loops and `while` loops on a computed value, then `tape.gradient` and an
SGD step. It runs side by side with eager on a random call sequence (shape changes and scalar
changes included): losses, gradients returned, the Variables and every other piece of state must
equal eager's after every call, whatever the JIT does (graphs, regenerations, fallbacks).

The number of examples comes from the Hypothesis profile in tests/conftest.py (derandomized
under `ci`).
"""
import os

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import janus_like as jl

from .harness import check, load_module, with_dead_values, within

_DETERMINISTIC = os.environ.get("HYPOTHESIS_PROFILE") == "ci"
_VARS = ("h0", "h1")


@st.composite
def expressions(draw, depth=2):
    """An (n, m) expression of the hidden values, the input and the Variables."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(list(_VARS) + ["x", "(x @ obj.w1)", "(h0 * obj.b)"]))
    a = draw(expressions(depth - 1))
    kind = draw(st.sampled_from(["unary", "binary", "binary", "matmul", "row", "where", "concat", "reduce",
                                 "gather", "library"]))
    if kind == "unary":
        return draw(st.sampled_from(["np.tanh({})", "F.sigmoid({})", "np.maximum({}, 0.0)", "np.exp(-np.abs({}))",
                                     "({} * {})", "(-{})", "np.arctan({})", "np.log1p({} * {})",
                                     "({} % 1.5)"])).format(a, a)
    if kind == "binary":
        b = draw(expressions(depth - 1))
        return f"({a} {draw(st.sampled_from(['+', '-', '*']))} {b})"
    if kind == "matmul":
        return draw(st.sampled_from([f"({a} @ obj.w1)", f"({a} @ obj.w1.T)", f"np.dot({a}, obj.w1)"]))
    if kind == "row":  # a row broadcast back over the batch
        return draw(st.sampled_from([f"({a}[0] + x)", f"(x * {a}[-1])", f"(np.sum({a}, axis=0) * 0.1 + x)"]))
    if kind == "where":
        return f"np.where(x > 0.0, {a}, x * 0.5)"
    if kind == "gather":  # rows picked by index arrays (an embedding's lookup and its scatter-add)
        return draw(st.sampled_from([f"({a}[IDX[:len(x)]] + x)", f"(obj.emb[IDS[:len(x)]] * {a})",
                                     f"np.stack([{a}[0], x[-1]] * len(x))[:len(x)]"]))
    if kind == "library":  # library functions of janus_like
        return draw(st.sampled_from([f"F.relu({a})", f"F.softmax({a})", f"(F.log_softmax({a}) + x)",
                                     f"F.sigmoid({a} * 2.0)"]))
    if kind == "concat":
        return f"np.concatenate([{a}, x], axis=1)[:, :M]"
    return draw(st.sampled_from([f"(x * np.mean({a}))",  # a layer norm's statistics too (ops/statistics.py)
                                 # (plus x: a centred row sums to rounding noise, which a branch
                                 # on its sum would follow in the reassociating mode)
                                 f"(({a} - {a}.mean(axis=-1, keepdims=True)) / np.sqrt({a}.var(axis=-1, keepdims=True)"
                                 " + 1.0) + x)", f"(x * np.std({a}, axis=0))"]))


@st.composite
def statements(draw, depth=2):
    v = draw(st.sampled_from(_VARS))
    kind = draw(st.sampled_from(["assign"] * 4 + ["if_py", "if_computed", "for", "while"]))
    if kind == "assign" or depth == 0:
        return [f"{v} = {draw(expressions())}"]
    if kind == "if_py":
        body = draw(statements(depth - 1))
        return ["if s > 0.3:"] + ["    " + line for line in body]
    if kind == "if_computed":  # both arms assign v: a conditional node, differentiated
        return [f"if np.sum({v}) > 0.0:", f"    {v} = {draw(expressions(1))}", "else:",
                f"    {v} = {draw(expressions(1))}"]
    if kind == "for":
        body = draw(statements(depth - 1))
        return [f"for i in range({draw(st.integers(1, 3))}):"] + ["    " + line for line in body]
    # a loop node when its trip count varies: the body keeps v's shape
    return ["k = 0", f"while np.max(np.abs({v})) > 1.0 and k < 3:", f"    {v} = np.tanh({v}) * 0.5", "    k = k + 1"]


@st.composite
def programs(draw):
    body = [line for _ in range(draw(st.integers(1, 4))) for line in draw(statements())]
    loss = draw(st.sampled_from(["np.sum(h0 * h1)", "np.mean(h1 * h1) + np.sum(obj.b * obj.b)",
                                 "np.sum(np.tanh(h0)) - np.mean(h1)",
                                 "F.cross_entropy(h0 @ obj.w1, LABELS[:len(x)]) + np.mean(h1)"]))
    lines = ["def f(x, s, obj):", "    with jl.GradientTape() as tape:", "        h0 = np.tanh(x @ obj.w1)",
             "        h1 = h0 * obj.b + x"] + ["        " + line for line in body] + [
        f"        loss = {loss}"]
    if draw(st.booleans()):  # the lookup table's gradient too (rows scattered and summed)
        lines += ["    g1, gb, ge = tape.gradient(loss, [obj.w1, obj.b, obj.emb])", "    if ge is not None:",
                  "        obj.emb.assign_sub(0.1 * ge)"]
    else:
        lines += ["    g1, gb = tape.gradient(loss, [obj.w1, obj.b])"]
    if draw(st.booleans()):
        lines += ["    obj.w1.assign_sub(0.1 * g1)", "    if gb is not None:", "        obj.b.assign_sub(0.1 * gb)"]
    lines += ["    return loss, g1, gb"]
    return "\n".join(lines)


PRELUDE = '''
import numpy as np
import pytest
import janus_like as jl
from janus_like import F

M = {m}
IDX = np.array([1, 0, 1, 0])  # rows of a batch (n is 2 to 4)
IDS = np.array([3, 0, 3, 1])  # rows of the table (repeated: their gradients add up)
LABELS = np.array([0, 1, 1, 0])


'''


class Params:
    def __init__(self, m):
        r = np.random.default_rng(0)
        self.w1 = jl.Variable(r.standard_normal((m, m)) * 0.5, name="w1")
        self.b = jl.Variable(r.standard_normal(m) * 0.5, name="b")
        self.emb = jl.Variable(r.standard_normal((5, m)) * 0.5, name="emb")


@st.composite
def call_sequences(draw):
    """Per call: rows n and the scalar s."""
    seq, n, s = [], draw(st.sampled_from([2, 3])), 0.5
    for _ in range(draw(st.integers(5, 9))):
        change = draw(st.sampled_from([None] * 4 + ["n", "s", "x"]))
        if change == "n":
            n = draw(st.sampled_from([2, 3, 4]))
        elif change == "s":
            s = draw(st.sampled_from([-0.5, 0.1, 0.9]))
        seq.append((n, s, change == "x"))
    return seq


@settings(derandomize=_DETERMINISTIC)
@given(program=programs(), seq=call_sequences(), m=st.sampled_from([2, 3, 64]))  # 64: the memory plan reuses buffers of 64+ elements
def test_random_training_step_eager_vs_jit(tmp_path_factory, program, seq, m):
    _run(tmp_path_factory, program, seq, m)


@settings(derandomize=_DETERMINISTIC)
@given(program=programs(), seq=call_sequences(), m=st.sampled_from([2, 3, 64]))  # 64: big enough for the passes' size rules
def test_random_training_step_reassociating(tmp_path_factory, program, seq, m):
    """The JIT's default mode: passes that reorder floating-point sums (batched products, lifted
    row blocks, folded accumulations, the learning rate on the smaller operand) run too; values
    then match eager's to float64 rounding, not bit for bit (relative to each array's scale: the
    SGD steps amplify a rounding apart ~10x a call where training is unstable)."""
    directory = tmp_path_factory.mktemp("grads", numbered=True)
    # A sequence whose training is so unstable that eager itself, its weights changed by 1e-13
    # of their value, drifts by 1e-6 of the results' scale cannot tell reassociation (~1e-16 an
    # op) from the amplification: such examples are not this test's to judge.
    assume(_drift(directory, program, seq, m) < 1e-6)
    with within(rtol=1e-7, atol=1e-12):
        _run(tmp_path_factory, program, seq, m, reassociate=True)


def _drift(directory, program, seq, m):
    """The largest difference, relative to each result's scale, between eager runs of the
    sequence from the initial weights and from the weights times (1 + 1e-13)."""
    runs = []
    for nudge in (0.0, 1e-13):
        make, calls = _sequence(directory, program, seq, m)
        f, state = make()
        state["obj"].w1.assign(state["obj"].w1.numpy() * (1.0 + nudge))
        outs = []
        for c in calls:
            try:
                outs.append([np.asarray(v, np.float64) for v in f(*c(state)) if v is not None])
            except Exception:  # eager's error: the comparison itself reports it
                return 0.0
        runs.append(outs)
    drift = 0.0
    for a_call, b_call in zip(*runs):
        for a, b in zip(a_call, b_call):
            finite = np.isfinite(a) & np.isfinite(b)
            scale = float(np.max(np.abs(a[finite]), initial=0.0)) or 1.0
            drift = max(drift, float(np.max(np.abs(a[finite] - b[finite]), initial=0.0)) / scale)
    return drift


def _sequence(directory, program, seq, m):
    def make():
        mod = load_module(directory, PRELUDE.format(m=m) + program + "\n", "genstep")
        return mod.f, {"obj": Params(m)}

    def call(k, n, s, big):
        def c(state):
            x = np.random.default_rng(2000 + k).standard_normal((n, m)) * (3.0 if big else 1.0)
            return x, s, state["obj"]
        return c

    return make, [call(k, *spec) for k, spec in enumerate(seq)]


def _run(tmp_path_factory, program, seq, m, **jit_options):
    make, calls = _sequence(tmp_path_factory.mktemp("grads", numbered=True), program, seq, m)
    with with_dead_values():  # the programs assign values nothing reads: their overflows show eagerly only
        jf = check(make, calls, min_graph_calls=0, **jit_options)
    assert jf.stats()["calls"] == len(seq)


def test_only_eagers_floating_point_warnings_may_go_missing_with_dead_values():
    from .harness import _same_text

    eager = "out\n[warning] RuntimeWarning: overflow encountered in dot" \
        "\n[warning] RuntimeWarning: overflow encountered in matmul"
    jit = "out\n[warning] RuntimeWarning: overflow encountered in matmul"
    with pytest.raises(AssertionError):
        _same_text(eager, jit, "call 0")  # outside `with_dead_values`: the same text
    with with_dead_values():
        _same_text(eager, jit, "call 0")
        for other in ("changed\n[warning] RuntimeWarning: overflow encountered in matmul",  # printed text
                      jit + "\n[warning] UserWarning: extra",  # a warning eager did not show
                      "out\n[warning] RuntimeWarning: overflow encountered in exp"):
            with pytest.raises(AssertionError):
                _same_text(eager, other, "call 0")
        with pytest.raises(AssertionError):  # a missing warning that is not a floating-point one
            _same_text("out\n[warning] UserWarning: careful", "out", "call 0")
