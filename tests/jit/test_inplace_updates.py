"""Weight updates written into the weight's own buffer (passes/inplace.py, executor/blas.py).

Eager SGD rebinds each Variable to a new array; the plan writes `w - a @ b` into w's array
when only the executor refers to it. Every test runs eager and the jit side by side and
compares results and state after every call; the in-place write must be invisible, so an array
the user holds, a view, a weak reference or NumPy set to raise must each see eager's behaviour.
"""
import gc
import types
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, optim
from janus_like import executor as ex
from janus_like.executor import blas
from janus_like.passes import inplace

from .harness import HOLDS, held_then_written, call_sequence, random_array, side_by_side, within

# NumPy's wheels bring OpenBLAS, which `blas` must find (and check): skipped only with another BLAS
_BLAS = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
pytestmark = pytest.mark.skipif(blas.GEMM is None and _BLAS != "scipy-openblas",
                                reason=f"NumPy's BLAS ({_BLAS}) is not reachable through ctypes")


def _make(sizes=(300, 256, 256), batch=32, lr=0.1, dtype=np.float32, momentum=0.0):
    def make():
        d_in, hidden, d_out = sizes
        w1 = jl.Variable(random_array(1, (d_in, hidden), dtype, 0.05), name="w1")
        w2 = jl.Variable(random_array(2, (hidden, d_out), dtype, 0.05), name="w2")
        opt = optim.SGD(lr, momentum=momentum)

        def step(x):
            with jl.GradientTape() as tape:
                loss = F.mean(F.relu(x @ w1) @ w2)
            grads = tape.gradient(loss, [w1, w2])
            opt.apply_gradients(zip(grads, [w1, w2]))
            return loss

        return step, {"w1": w1, "w2": w2}
    return make


def _batches(n, batch=32, d_in=300, dtype=np.float32):
    return call_sequence(n, lambda s, i: (random_array(100 + i % 4, (batch, d_in), dtype),))


def _graph(jf):
    (g,) = [g for g in jf.graphs() if g.runs]
    return g


def test_sgd_updates_are_written_in_place_and_match_eager():
    make = _make()
    seen = []

    def recording():
        fn, state = make()
        seen.append(state)
        return fn, state

    with within(1e-5, 1e-6):
        jf = side_by_side(recording, _batches(14), reassociate=True, native="off")
    g = _graph(jf)
    assert len(g.graph.inplace) == 2  # w1 (300 x 256) and w2 (256 x 256)
    assert "GEMM_SUB" in g.fast.source and "_own = True" in g.fast.source
    # the jit's Variables kept their arrays from call to call: the updates were written in place
    # (w2 also has a transposed view in the backward pass, which the plan drops first)
    before = [id(v._data) for v in seen[1].values()]  # (holding an array would keep it from being written)
    jf(random_array(7, (32, 300), np.float32))
    assert [id(v._data) for v in seen[1].values()] == before
    assert "updates written into the weight's own array when only the executor sees it: w1 (300, 256), " \
        "w2 (256, 256)" in jf.explain()


def test_plain_numbers_and_bits_equal_the_plan_without_the_write():
    """One GEMM with beta = 1 has the bits of the product then the subtraction (a batch of 32)."""
    make = _make()
    xs = [random_array(100 + i % 4, (32, 300), np.float32) for i in range(12)]
    runs = {}
    for on in (True, False):
        saved = blas.GEMM
        blas.GEMM = saved if on else None
        try:
            fn, state = make()
            jf = jl.jit(fn, native="off")
            runs[on] = ([float(jf(x)) for x in xs], {k: v.numpy().copy() for k, v in state.items()})
        finally:
            blas.GEMM = saved
    assert runs[True][0] == runs[False][0]
    for k in runs[True][1]:
        np.testing.assert_array_equal(runs[True][1][k], runs[False][1][k])


def _pair(n, warm):
    """Eager and jitted steps over the same state, after `warm` calls, and the `n` batches."""
    fn_e, state_e = _make()()
    fn_j, state_j = _make()()
    jf = jl.jit(fn_j, native="off")
    xs = [random_array(100 + i % 4, (32, 300), np.float32) for i in range(n)]
    for x in xs[:warm]:
        fn_e(x), jf(x)
    return fn_e, state_e, jf, state_j, xs[warm:]


def _same_step(fn_e, state_e, jf, state_j, x):
    assert float(jf(x)) == pytest.approx(float(fn_e(x)), rel=1e-5)
    for k in state_e:
        np.testing.assert_allclose(state_j[k].numpy(), state_e[k].numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", HOLDS)
def test_an_array_someone_else_sees_is_not_written(kind):
    fn_e, state_e, jf, state_j, xs = _pair(14, 6)
    held_then_written(kind, state_j["w1"], lambda: _graph(jf),
                      lambda x: _same_step(fn_e, state_e, jf, state_j, x), xs)


def test_numpy_set_to_raise_keeps_the_ordinary_update():
    fn_e, state_e, jf, state_j, xs = _pair(10, 5)
    ids = []
    with np.errstate(over="raise"):
        for x in xs:
            _same_step(fn_e, state_e, jf, state_j, x)
            ids.append(id(state_j["w1"]._data))
    # a new array each call (the old one alive until the commit): nothing written in place
    assert all(a != b for a, b in zip(ids, ids[1:]))


def test_no_write_without_reassociation_or_below_the_size():
    with within(0, 0):
        jf = side_by_side(_make(), _batches(8), reassociate=False)
    assert not _graph(jf).graph.inplace
    with within(1e-5, 1e-6):
        jf = side_by_side(_make(sizes=(64, 32, 16)), _batches(8, d_in=64), reassociate=True)
    assert not _graph(jf).graph.inplace  # 64 x 32 and 32 x 16: too small to pay for the BLAS call


def test_a_long_plan_called_from_the_fused_function_also_writes(monkeypatch):
    monkeypatch.setattr(ex, "INLINE_PLAN_LINES", 0)
    fn, state = _make()()
    jf = jl.jit(fn, native="off")
    xs = [random_array(100 + i % 4, (32, 300), np.float32) for i in range(10)]
    ids = []
    for x in xs:
        jf(x)
        ids.append(id(state["w1"]._data))
    assert "PLAN(S, True)" in _graph(jf).fast.source
    assert len(set(ids[-4:])) == 1


def test_updates_with_momentum_and_an_assert_failure_match_eager():
    """SGD with momentum commits `w - lr * buf` (no product): not written; a call breaking an
    assumption falls back with nothing changed."""
    def make():
        w = jl.Variable(random_array(3, (300, 256), np.float32, 0.05), name="w")
        opt = optim.SGD(0.05)

        def step(x, scale):
            with jl.GradientTape() as tape:
                loss = F.mean(F.tanh(x @ w))
                if scale > 1:
                    loss = loss * 2.0
            opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
            return loss

        return step, {"w": w}
    scales = [1, 1, 1, 1, 1, 1, 2, 1, 1, 2, 1, 1]
    calls = call_sequence(len(scales), lambda s, i: (random_array(50 + i % 3, (16, 300), np.float32), scales[i]))
    with within(1e-5, 1e-6):
        jf = side_by_side(make, calls, reassociate=True, native="off")
    assert any(g.graph.inplace for g in jf.graphs())
    assert jf.stats()["graph_calls"] >= 6


def test_a_value_computed_from_another_variable_is_not_written_into_it():
    """`target.assign(source - a @ b)`: source's array must keep source's value (here the
    warm-up's records keep it visible anyway, so the pass itself must refuse)."""
    def make():
        source = jl.Variable(random_array(4, (300, 256), np.float32), name="source")
        target = jl.Variable(np.zeros((300, 256), np.float32), name="target")

        def step(x, y):
            target.assign(source - x.T @ y)
            return F.sum(x)

        return step, {"source": source, "target": target}
    calls = call_sequence(8, lambda s, i: (random_array(i % 3, (16, 300), np.float32),
                                           random_array(9 + i % 3, (16, 256), np.float32)))
    with within(1e-5, 1e-5):
        jf = side_by_side(make, calls, reassociate=True, native="off")
    assert jf.stats()["graph_calls"] >= 4 and not any(g.graph.inplace for g in jf.graphs())


def test_writable_checks():
    holder = types.SimpleNamespace(_data=np.zeros((4, 3), np.float32))
    a, b = np.ones((2, 4), np.float32).T, np.ones((2, 3), np.float32)

    def chain():  # the fused function's references: guard local, slot tuple, plan local
        s4 = holder._data
        S = (s4,)
        v3 = S[0]
        return blas.writable(v3, a, b)

    assert chain()
    kept = holder._data
    assert not chain()
    del kept
    ref = weakref.ref(holder._data)
    assert not chain()
    del ref
    holder._data = np.zeros((8, 3), np.float32)[:4]  # a view: its base is someone else's memory
    assert not chain()
    holder._data = np.asfortranarray(np.zeros((4, 3), np.float32))
    assert not chain()
    holder._data = np.zeros((4, 3), np.float32)
    holder._data.flags.writeable = False
    assert not chain()
    holder._data = np.zeros((4, 3), np.float64)  # another dtype than the operands
    assert not chain()
    holder._data = np.zeros((4, 3), np.float32)
    with np.errstate(invalid="raise"):
        assert not chain()
    assert chain()


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 40),
       dtype=st.sampled_from([np.float32, np.float64]), ta=st.booleans(), tb=st.booleans())
def test_gemm_sub_equals_numpy(m, n, k, dtype, ta, tb):
    rng = np.random.default_rng(m * 1600 + n * 40 + k)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    a, b = (a.T if ta else a), (b.T if tb else b)
    w = rng.standard_normal((m, n)).astype(dtype)
    want = w - a @ b
    assert blas.gemm_sub(w, a, b) is w
    np.testing.assert_allclose(w, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@settings(max_examples=12, deadline=None)
@given(sizes=st.tuples(st.integers(2, 24), st.integers(2, 24), st.integers(2, 24)), batch=st.integers(1, 40),
       lr=st.floats(0.001, 0.5), holds=st.lists(st.booleans(), min_size=10, max_size=10),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_generated_steps_match_eager(sizes, batch, lr, holds, dtype):
    """Any size (the threshold lowered to 0), batch, dtype and learning rate; on drawn calls the
    user holds w1's array across the call, which must then stay as eager leaves it."""
    old = inplace.MIN_ELEMENTS
    inplace.MIN_ELEMENTS = 0
    try:
        fn_e, state_e = _make(sizes, batch, lr, dtype)()
        fn_j, state_j = _make(sizes, batch, lr, dtype)()
        jf = jl.jit(fn_j, native="off")
        for i, holding in enumerate(holds):
            x = random_array(i % 3, (batch, sizes[0]), dtype)
            held = state_j["w1"]._data if holding else None
            kept = held.copy() if holding else None
            le, lj = fn_e(x), jf(x)
            np.testing.assert_allclose(float(lj), float(le), rtol=1e-4, atol=1e-6)
            for k in state_e:
                np.testing.assert_allclose(state_j[k].numpy(), state_e[k].numpy(), rtol=1e-4, atol=1e-6)
            if holding:
                np.testing.assert_array_equal(held, kept)
        assert any(g.graph.inplace for g in jf.graphs())
    finally:
        inplace.MIN_ELEMENTS = old


def test_a_graph_does_not_keep_the_arrays_of_its_generation_call():
    """The input program's slots held the values read at generation for the graph's life: the
    weights of that call (and its batch) stayed in memory, and that array was never private."""
    fn, state = _make()()
    jf = jl.jit(fn, native="off")
    refs = []
    for i in range(10):
        refs.append(weakref.ref(state["w1"]._data))  # (a weak reference: that call updates a copy)
        jf(random_array(i % 4, (32, 300), np.float32))
    gc.collect()
    # all gone but the current array (and the last call's input, in the graph's last slots)
    assert all(r() is None or r() is state["w1"]._data for r in refs[:-1])
