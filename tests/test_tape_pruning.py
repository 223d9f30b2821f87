"""The eager backward pass computes only what leads to the sources asked for.

`tape.gradient(loss, sources)` applies the rules of the ops on a path from a source, and tells
each rule which of its inputs lead to one (`registry.wants`): an input batch's cotangent, a
constant's, a parameter nobody asked about, are never computed. What is computed must be the
same ops in the same order as before: every source's gradient is compared bit for bit with the
gradient taken with every input watched.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F
from janus_like.ops import P, eager_vjp

from grad_cases import CASES, drawn_float_case
from gradcheck import watched_grads


def _same_bits(a, b):
    a, b = np.asarray(a.numpy()), np.asarray(b.numpy())
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=5)
@given(data=st.data())
def test_one_source_gets_the_bits_of_the_full_gradient(name, data):
    case = drawn_float_case(data, name)
    if case is None:
        return
    fn, args, us, wrt = case
    full = watched_grads(fn, args, us, wrt)
    for k, i in enumerate(wrt):
        (alone,) = watched_grads(fn, args, us, [i])
        assert _same_bits(alone, full[k]), f"{name}: argument {i} alone differs from its full gradient"


class _Counting:
    """Counts the calls of one op's implementation (eager only), and of the NumPy function of its
    name in the array rules of the eager backward (ops/eager_vjp.py)."""

    def __init__(self, monkeypatch, op):
        self.calls = []
        impl = op.impl

        def counted(xp, *arrays, **params):
            self.calls.append(tuple(np.shape(a) for a in arrays))
            return impl(xp, *arrays, **params)
        monkeypatch.setattr(op, "impl", counted)
        monkeypatch.setattr(eager_vjp, "np", _NumpyCounting(op.name, self.calls))


class _NumpyCounting:
    def __init__(self, name, calls):
        self._name, self._calls = name, calls

    def __getattr__(self, attr):
        fn = getattr(np, attr)
        if attr != self._name:
            return fn

        def counted(*arrays, **kwargs):
            self._calls.append(tuple(np.shape(a) for a in arrays))
            return fn(*arrays, **kwargs)
        return counted


def _mlp(rng):
    x = rng.standard_normal((8, 5)).astype(np.float32)
    w1 = jl.Variable(rng.standard_normal((5, 4)).astype(np.float32))
    w2 = jl.Variable(rng.standard_normal((4, 3)).astype(np.float32))
    return x, w1, w2


def test_an_input_batch_gets_no_gradient_product(monkeypatch):
    x, w1, w2 = _mlp(np.random.default_rng(0))
    with jl.GradientTape() as tape:
        loss = F.sum(F.matmul(F.tanh(F.matmul(x, w1)), w2))
    count = _Counting(monkeypatch, P.matmul)
    g1, g2 = tape.gradient(loss, [w1, w2])
    # backward: (8,3)@(3,4) into the hidden layer, (4,8)@(8,3) for w2, (5,8)@(8,4) for w1 -- and not
    # the (8,4)@(4,5) product that x's gradient would take
    assert sorted(count.calls) == sorted([((8, 3), (3, 4)), ((4, 8), (8, 3)), ((5, 8), (8, 4))])
    assert g1.shape == (5, 4) and g2.shape == (4, 3)


def test_ops_off_every_path_to_a_source_are_skipped(monkeypatch):
    x, w1, w2 = _mlp(np.random.default_rng(1))
    with jl.GradientTape(persistent=True) as tape:
        h = F.tanh(F.matmul(x, w1))
        loss = F.sum(F.matmul(h, w2))
    count = _Counting(monkeypatch, P.matmul)
    (g2,) = tape.gradient(loss, [w2])  # w1's layer is not on a path from w2
    assert count.calls == [((4, 8), (8, 3))]
    (g1,) = tape.gradient(loss, [w1])  # a persistent tape asked again, about the other source
    assert len(count.calls) == 3
    np.testing.assert_allclose(g1.numpy(), x.T @ ((np.ones((8, 3), np.float32) @ w2.numpy().T)
                                                   * (1 - h.numpy() ** 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g2.numpy(), h.numpy().T @ np.ones((8, 3), np.float32), rtol=1e-5)


def test_a_watched_intermediate_and_a_variable_assigned_later():
    """Sources are matched by the identity the tape recorded: a watched intermediate works, and a
    Variable keeps its identity through `assign` (its gradient is the one recorded before)."""
    rng = np.random.default_rng(2)
    x, w1, w2 = _mlp(rng)
    with jl.GradientTape(persistent=True) as tape:
        h = F.matmul(x, w1)
        loss = F.sum(F.mul(h, h))
    np.testing.assert_array_equal(tape.gradient(loss, h).numpy(), 2 * h.numpy())
    before = tape.gradient(loss, w1).numpy()
    w1.assign(np.zeros((5, 4), np.float32))
    np.testing.assert_array_equal(tape.gradient(loss, w1).numpy(), before)
    assert tape.gradient(loss, w2) is None


def test_second_order_through_a_pruned_inner_backward():
    """The inner gradient skips x's cotangent; the outer tape still differentiates what was built."""
    x = jl.tensor(np.array([0.5, -1.0, 2.0]))
    w = jl.tensor(np.array([1.5, 0.25, -0.5]))
    with jl.GradientTape() as outer:
        outer.watch(w)
        with jl.GradientTape() as inner:
            inner.watch([x, w])
            y = F.sum(F.mul(F.mul(x, w), w))
        dw = inner.gradient(y, w)  # 2 x w
        total = F.sum(dw)
    np.testing.assert_array_equal(dw.numpy(), 2 * x.numpy() * w.numpy())
    np.testing.assert_array_equal(outer.gradient(total, w).numpy(), 2 * x.numpy())
