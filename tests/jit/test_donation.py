"""State arrays overwritten by the elementwise op that reads them last (passes/donate.py,
executor/donation.py).

Eager code rebinds a Variable to a new array at each `assign`; the plan writes an optimizer's
new moments (and a weight's new value) into the old arrays when only the executor sees them.
Every test runs eager and the jit side by side and compares results and all state after every
call: the writes must be invisible. An array the user holds, a view of it, a weak reference, a
returned view, NumPy or the warnings module set to raise, an F-ordered array, or a node after
the writes that reads the new state in a way that could fail each keep eager's behaviour.
"""
import warnings

import numpy as np
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, optim
from janus_like.passes import donate

from .harness import (HOLDS, held_then_written, GraphRecorder, call_sequence, check, load_module, random_array,
                      side_by_side, with_dead_values)

OPTIMIZERS = {
    "adam": lambda: optim.Adam(1e-2),
    "momentum": lambda: optim.SGD(0.05, momentum=0.9),
    "nesterov": lambda: optim.SGD(0.05, momentum=0.9, nesterov=True),
    "rmsprop": lambda: optim.RMSprop(1e-2, momentum=0.5),
    "adagrad": lambda: optim.Adagrad(0.05),
}


def _make(opt_name="adam"):
    """A two-layer model (w1: 300 x 128, w2: 128 x 130, both above donate.MIN_ELEMENTS; w2 has a
    transposed view in the backward pass) trained by the named optimizer."""
    def make():
        w1 = jl.Variable(random_array(1, (300, 128), np.float32, 0.05), name="w1")
        b1 = jl.Variable(np.zeros(128, np.float32), name="b1")
        w2 = jl.Variable(random_array(2, (128, 130), np.float32, 0.05), name="w2")
        opt = OPTIMIZERS[opt_name]()
        params = [w1, b1, w2]

        def step(x):
            with jl.GradientTape() as tape:
                loss = F.mean(F.relu(x @ w1 + b1) @ w2)
            opt.apply_gradients(zip(tape.gradient(loss, params), params))
            return loss

        return step, {"w1": w1, "b1": b1, "w2": w2, "opt": opt}
    return make


def _batches(n):
    return call_sequence(n, lambda s, i: (random_array(100 + i % 4, (16, 300), np.float32),))


def _arrays(state):
    """Every big state array: the weights and the optimizer's slots."""
    out = [state["w1"], state["w2"]] + [v for v in state["opt"].variables() if v.numpy().size >= donate.MIN_ELEMENTS]
    return [v._data for v in out]


def _graph(jf):
    (g,) = [g for g in jf.graphs() if g.runs]
    return g


def _recording(make):
    seen = []

    def recording():
        fn, state = make()
        seen.append(state)
        return fn, state
    return recording, seen


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_optimizer_state_is_written_in_place_and_matches_eager(opt_name):
    make, seen = _recording(_make(opt_name))
    jf = side_by_side(make, _batches(12), native="off")
    g = _graph(jf)
    assert g.graph.donated and g.plan.donated and "_st = _own and FP_QUIET()" in g.fast.source
    # from the first write on, every op writes into a buffer that exists already: no allocation
    # (no MemoryError) can interrupt the writes
    lines = g.plan.source.splitlines()
    region = lines[next(k for k, line in enumerate(lines) if "_st = " in line) + 3:-1]
    assert region and all("out=" in line for line in region), "\n".join(region)
    # the jit's Variables keep their arrays from call to call: the new values were written there
    before = [id(a) for a in _arrays(seen[1])]
    jf(random_array(7, (16, 300), np.float32))
    assert [id(a) for a in _arrays(seen[1])] == before
    assert "state arrays overwritten by their last reader when only the executor sees them: w1 (300, 128)" \
        in jf.explain()


def _pair(opt_name="adam", warm=6, n=14, native="off"):
    fn_e, state_e = _make(opt_name)()
    fn_j, state_j = _make(opt_name)()
    jf = jl.jit(fn_j, native=native, reassociate=False)
    xs = [random_array(100 + i % 4, (16, 300), np.float32) for i in range(n)]
    for x in xs[:warm]:
        fn_e(x), jf(x)
    return fn_e, state_e, jf, state_j, xs[warm:]


def _same_step(fn_e, state_e, jf, state_j, x):
    assert float(jf(x)) == float(fn_e(x))
    for a, b in zip(_arrays(state_j), _arrays(state_e)):
        np.testing.assert_array_equal(a, b)
        assert a.flags.c_contiguous == b.flags.c_contiguous and a.flags.f_contiguous == b.flags.f_contiguous


@pytest.mark.parametrize("kind", HOLDS)
def test_a_state_array_someone_else_sees_is_not_written(kind):
    fn_e, state_e, jf, state_j, xs = _pair()
    held_then_written(kind, state_j["opt"].get_slot(state_j["w1"], "m"), lambda: _graph(jf),
                      lambda x: _same_step(fn_e, state_e, jf, state_j, x), xs)


def test_an_f_ordered_state_array_keeps_new_arrays_in_its_layout():
    """w and the step F-ordered: eager's `assign_add` gives an F-ordered w (`assign` copies to C
    order), and the region, whose results are C-ordered, writes nothing."""
    def make():
        w = jl.Variable(np.asfortranarray(random_array(3, (200, 100))), name="w")

        def step(g):
            w.assign_add(g * 0.5)  # the product would go into a C-ordered buffer of the region
            return F.sum(g)

        return step, {"w": w}
    make, seen = _recording(make)
    calls = call_sequence(10, lambda s, i: (np.asfortranarray(random_array(i, (200, 100))),))
    jf = side_by_side(make, calls, native="off")
    assert jf.stats()["graph_calls"] >= 6 and _graph(jf).plan.donated
    ids = []
    for i in range(3):
        jf(np.asfortranarray(random_array(i, (200, 100))))
        assert seen[1]["w"]._data.flags.f_contiguous and not seen[1]["w"]._data.flags.c_contiguous
        ids.append(id(seen[1]["w"]._data))
    assert len(set(ids)) > 1  # new arrays (an id may come back once the old array is freed)


def _sqrt_make():
    """A state update whose square root is invalid for negative inputs; eager assigns v, then
    raises at the square root (with NumPy or the warnings set to raise) before w changes."""
    def make():
        v = jl.Variable(np.ones((200, 100)), name="v")
        w = jl.Variable(np.ones((200, 100)), name="w")

        def step(g):
            v.assign(v * 0.5 + g)
            w.assign(w - np.sqrt(v) * 0.1)
            return F.sum(g)

        return step, {"v": v, "w": w}
    return make


def _sqrt_calls():
    signs = [1, 1, 1, 1, 1, 1, -1, 1, -1, 1, 1]
    return call_sequence(len(signs), lambda s, i: (np.full((200, 100), 0.5 * signs[i]) + i * 0.01,))


@pytest.mark.parametrize("mode", ["errstate", "warnings", "call"])
def test_errors_that_raise_keep_the_writes_from_happening(mode):
    def raising_call(kind, flag):
        raise FloatingPointError(f"{kind} ({flag})")

    with warnings.catch_warnings():
        if mode == "errstate":
            ctx = np.errstate(invalid="raise")
        elif mode == "call":
            old = np.seterrcall(raising_call)
            ctx = np.errstate(invalid="call")
        else:
            warnings.simplefilter("error", RuntimeWarning)
            ctx = np.errstate(invalid="warn")
        try:
            with ctx:
                jf = side_by_side(_sqrt_make(), _sqrt_calls(), native="off", check_interpreter=False)
        finally:
            if mode == "call":
                np.seterrcall(old)
    assert jf.stats()["graph_calls"] >= 4 and _graph(jf).graph.donated


def test_without_raising_errors_the_same_steps_write_in_place():
    make, seen = _recording(_sqrt_make())
    with np.errstate(invalid="ignore"):
        jf = side_by_side(make, _sqrt_calls(), native="off")
    assert jf.stats()["fallbacks"] == 0 and _graph(jf).plan.donated
    ids = {id(seen[1]["w"]._data)}
    with np.errstate(invalid="ignore"):
        jf(np.full((200, 100), -0.5))
    assert {id(seen[1]["w"]._data)} == ids


def test_a_returned_view_of_the_state_keeps_its_values():
    def make():
        w = jl.Variable(random_array(3, (200, 100)), name="w")

        def step(g):
            old = w[:2]
            w.assign(w * 0.9 + g)
            return old

        return step, {"w": w}
    jf = side_by_side(make, call_sequence(8, lambda s, i: (random_array(i, (200, 100)),)), native="off")
    assert jf.stats()["graph_calls"] >= 4 and not _graph(jf).plan.donated


def test_a_reduction_of_the_new_state_keeps_the_state_unwritten():
    """`sum(m)` after the update would run after the first write; a reduction of the gradient
    written after the update in the source moves before the writes instead."""
    def make(reads_new_state):
        def build():
            m = jl.Variable(np.zeros((200, 100)), name="m")

            def step(g):
                m.assign(m * 0.9 + g)
                return F.sum(m) if reads_new_state else F.sum(g * g)

            return step, {"m": m}
        return build
    calls = call_sequence(8, lambda s, i: (random_array(i, (200, 100)),))
    jf = side_by_side(make(True), calls, native="off")
    assert jf.stats()["graph_calls"] >= 4 and not _graph(jf).graph.donated
    jf = side_by_side(make(False), calls, native="off")
    assert _graph(jf).plan.donated


def test_small_state_arrays_are_not_donated():
    def make():
        m = jl.Variable(np.zeros((10, 10)), name="m")

        def step(g):
            m.assign(m * 0.9 + g)
            return F.sum(g)

        return step, {"m": m}
    jf = side_by_side(make, call_sequence(6, lambda s, i: (random_array(i, (10, 10)),)), native="off")
    assert not _graph(jf).graph.donated




# ------------------------------------------------------------------ generated update programs
# Three Variables a, b, c of shape (8, 16) (donatable: the size rule is lowered to 64 elements
# for these tests) updated by a few statements drawn from the forms optimizers take, with reads
# of old and new values in any order, views, reductions and what is returned.
_NAMES = ("a", "b", "c")


@st.composite
def _exprs(draw, depth=2):
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(["g", "a", "b", "c", "t", "u", "0.5", "a[0]", "c.T.T"]))
    x, y = draw(_exprs(depth - 1)), draw(_exprs(depth - 1))
    form = draw(st.sampled_from(["({} + {})", "({} * {})", "({} - {})", "np.sqrt(np.abs({}) + 1.0) * {}",
                                 "np.tanh({}) + {}", "np.maximum({}, {})", "F.sum({}) * {}"]))
    return form.format(x, y)


@st.composite
def update_programs(draw):
    lines = ["def f(g):", "    t = g * 2.0", "    u = a[0:2]"]  # u: a view, of a state array's old value
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["assign", "assign", "assign_add", "assign_sub", "local", "view"]))
        e = draw(_exprs())
        if kind == "local":
            lines.append(f"    t = {e}")
        elif kind == "view":
            lines.append(f"    u = {draw(st.sampled_from(_NAMES))}[1:3]")
        else:
            lines.append(f"    {draw(st.sampled_from(_NAMES))}.{kind}({e})")
    ret = draw(st.sampled_from(["F.sum(g)", "t", "u", "a", "F.sum(b)", "c[1]", "(F.sum(t), u)", "None"]))
    lines.append(f"    return {ret}")
    return "\n".join(lines) + "\n"


_PRELUDE = """import numpy as np
import janus_like as jl
from janus_like import F

a = jl.Variable(np.linspace(-1.0, 1.0, 128).reshape(8, 16), name="a")
b = jl.Variable(np.ones((8, 16)), name="b")
c = jl.Variable(np.zeros((8, 16)), name="c")

"""


_ADAM_LIKE = ("def f(g):\n    t = g * 2.0\n    u = a[0:2]\n    a.assign(a * 0.5 + g)\n"
              "    b.assign_sub(np.sqrt(np.abs(a) + 1.0) * t)\n    return F.sum(g)\n")


@settings(deadline=None)
@example(program=_ADAM_LIKE, holds=[None] * 6 + ["a", None, "b"] + [None] * 3, shapes=[(8, 16)] * 12)
@example(program=_ADAM_LIKE.replace("F.sum(g)", "(F.sum(t), u)"), holds=[None] * 12,
         shapes=[(8, 16)] * 7 + [(16,)] + [(8, 16)] * 4)
# a Variable assigned a broadcast row, then summed: the copy that gives it its own buffer is
# C-ordered in both executors (a layout-keeping copy summed in another order than the plan's)
@example(program="def f(g):\n    a.assign(a[0])\n    a.assign(F.sum(a) * F.sum(a) * g)\n    return F.sum(g)\n",
         holds=[None] * 12, shapes=[(8, 16)] * 12)
@example(program="def f(g):\n    c.assign(g)\n    u = c[1:3]\n    c.assign(c)\n    return u\n",  # the view shows the
         holds=[None] * 12, shapes=[(8, 16)] * 12)  # array eager's second assign copied from, not c's
# `t = c * c`, read by nothing, overflows eagerly by call 8; the graph never computes it
@example(program="def f(g):\n    t = g * 2.0\n    u = a[0:2]\n    a.assign(g)\n    t = (g + (g + c.T.T))\n"
                 "    c.assign((t * (g + c)))\n    t = (c * c)\n    return F.sum(g)\n",
         holds=[None] * 12, shapes=[(8, 16)] * 12)
@given(program=update_programs(), holds=st.lists(st.sampled_from([None, None, "a", "b", "c"]), min_size=12,
                                                  max_size=12),
       shapes=st.lists(st.sampled_from([(8, 16)] * 5 + [(16,)]), min_size=12, max_size=12))
def test_generated_updates_match_eager(tmp_path_factory, program, holds, shapes):
    """Each call may hold one Variable's array across the call (it must keep its values) and
    pass a gradient of another shape (a guard failure, a new graph or an eager call)."""
    directory = tmp_path_factory.mktemp("updates", numbered=True)

    def make():
        mod = load_module(directory, _PRELUDE + program, "updates")
        return mod.f, {name: getattr(mod, name) for name in _NAMES}

    held = {}

    def call(i):
        def args(state):
            if holds[i] is not None and state is not held.get("jit_state"):
                array = state[holds[i]]._data
                held.setdefault("arrays", []).append((array, array.copy()))
            return (random_array(i, shapes[i]),)
        return args

    old = donate.MIN_ELEMENTS
    donate.MIN_ELEMENTS = 64
    try:
        with GraphRecorder() as rec, with_dead_values():  # (`t = c * c` nothing reads: eager's overflow only)
            check(make, [call(i) for i in range(12)], min_graph_calls=0)
    finally:
        donate.MIN_ELEMENTS = old
    for array, kept in held.get("arrays", []):
        np.testing.assert_array_equal(array, kept)
    event(f"a plan overwrote state: {any(getattr(g.plan, 'donated', None) for g in rec.compiled)}")

