"""Shortcuts of the eager backward pass give the bits of the general rules.

- A vector-matrix product's weight gradient (`h @ W` with h of shape (k,)) is the outer product
  computed as a broadcast multiply, not a (k, 1) @ (1, m) matmul (a graph keeps the matmul, which
  the weight-gradient folding pass sums over tree nodes).
- A basic index's cotangent (`emb[word]`, `z[:, 64:128]`) is added into the positions it selected
  instead of a zero array of the whole table being built and added.
- The most frequent ops' rules run on NumPy arrays (ops/eager_vjp.py), not through the dispatcher,
  and their cotangents stay bare arrays until a rule written on tensors takes one.

Each gradient is compared bit for bit with the one the general rules give (the shortcuts switched
off), on every gradient case and on the patterns the shortcuts are for: repeated rows, a table
also used densely, integer tables, and a backward pass an outer tape records.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, autodiff
from janus_like.ops import linalg

from grad_cases import CASES, drawn_float_case
from gradcheck import watched_grads


def _general_rules(off: bool, saved=(linalg._builder, autodiff._GETITEM)):
    """Switch the shortcuts off (the general rules only) or back on."""
    linalg._builder = [object()] if off else saved[0]
    autodiff._GETITEM = None if off else saved[1]
    autodiff._ARRAYS = not off


def _same_bits(a, b):
    a, b = np.asarray(getattr(a, "numpy", lambda: a)()), np.asarray(getattr(b, "numpy", lambda: b)())
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _both(grads):
    """grads() with the shortcuts on, then off."""
    fast = grads()
    _general_rules(True)
    try:
        slow = grads()
    finally:
        _general_rules(False)
    return fast, slow


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=8)
@given(data=st.data())
def test_every_gradient_case_gets_the_bits_of_the_general_rules(name, data):
    case = drawn_float_case(data, name)
    if case is None:
        return
    fn, args, us, wrt = case
    fast, slow = _both(lambda: watched_grads(fn, args, us, wrt))
    for i, (a, b) in enumerate(zip(fast, slow)):
        assert _same_bits(a, b), f"{name}: gradient {i} differs"


def _tree_like(emb, w, words, dtype):
    """A TreeRNN-shaped use: leaves read rows (one twice), nodes multiply vectors by w."""
    h = emb[words[0]]
    for word in words[1:]:
        h = F.tanh(F.matmul(F.concatenate([h, emb[word]]), w))
    return F.sum(F.mul(h, h))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_and_vector_products_of_a_recursive_model(dtype):
    rng = np.random.default_rng(3)
    emb = jl.Variable(rng.standard_normal((7, 4)).astype(dtype))
    w = jl.Variable((rng.standard_normal((8, 4)) * 0.5).astype(dtype))
    words = [2, 5, 2, 0, 6, 5]

    def grads():
        with jl.GradientTape() as tape:
            loss = _tree_like(emb, w, words, dtype)
        return tape.gradient(loss, [emb, w])

    fast, slow = _both(grads)
    assert all(_same_bits(a, b) for a, b in zip(fast, slow))
    assert not np.array_equal(fast[0].numpy()[2], np.zeros(4))  # row 2, read twice, got both


@pytest.mark.parametrize("index", [(slice(None), slice(2, 5)), (1,), (slice(None, None, 2),), (-1, slice(1, 3))])
def test_slices_and_a_dense_use_of_the_same_array(index):
    rng = np.random.default_rng(4)
    z = jl.Variable(rng.standard_normal((4, 6)).astype(np.float32))
    v = rng.standard_normal((6, 3)).astype(np.float32)

    def grads():
        with jl.GradientTape() as tape:
            part = z[index]
            dense = F.sum(F.matmul(z, v))  # a dense contribution between the row additions
            loss = F.sum(F.mul(part, part)) + dense + F.sum(F.sigmoid(z[index]))
        return tape.gradient(loss, z)

    fast, slow = _both(grads)
    assert _same_bits(fast, slow)


def test_an_outer_tape_records_the_general_rule():
    x = jl.Variable(np.array([0.5, -1.0, 2.0]))

    def grads():
        with jl.GradientTape() as outer:
            with jl.GradientTape() as inner:
                loss = F.sum(F.mul(x[1:], x[1:])) + F.sum(F.mul(x[0], x[:2]))
            (g,) = inner.gradient(loss, [x])
            gg = F.sum(F.mul(g, g))
        return [g, outer.gradient(gg, x)]

    fast, slow = _both(grads)
    assert all(_same_bits(a, b) for a, b in zip(fast, slow))
    assert np.allclose(fast[0].numpy(), [2 * 0.5 - 1.0, 2 * -1.0 + 0.5, 4.0])


def test_an_integer_table_row_is_not_a_gradient():
    table = jl.tensor(np.arange(12).reshape(3, 4))
    w = jl.Variable(np.ones(4))

    def grads():
        with jl.GradientTape() as tape:
            tape.watch(table)
            loss = F.sum(F.mul(F.cast(table[1], np.float64), w))
        return tape.gradient(loss, [w])

    fast, slow = _both(grads)
    assert _same_bits(fast[0], slow[0])


@pytest.mark.parametrize("reduce", [F.sum, F.mean])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (-1, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_over_every_axis(reduce, axis, keepdims):
    x = jl.Variable(np.random.default_rng(5).standard_normal((3, 4, 2)))
    u = np.random.default_rng(6).standard_normal(np.shape(reduce(x.numpy(), axis=axis, keepdims=keepdims)))

    def grads():
        with jl.GradientTape() as tape:
            loss = F.sum(F.mul(reduce(x, axis=axis, keepdims=keepdims), u))
        return tape.gradient(loss, x)

    fast, slow = _both(grads)
    assert _same_bits(fast, slow)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bare_array_cotangents_meet_tensor_rules(dtype):
    """The array rules' cotangents are bare arrays until a tensor rule (sin has none on arrays)
    takes one; sums of the two kinds, in both orders, into a matrix, a 0-d scalar and a table's
    rows, give the general rules' bits."""
    rng = np.random.default_rng(7)
    x = jl.Variable(rng.standard_normal((3, 4)).astype(dtype))
    s = jl.Variable(np.asarray(0.7, dtype))

    def grads():
        with jl.GradientTape() as tape:
            a = F.mul(F.sin(x), s)  # recorded first: its cotangents reach x and s last
            b = F.tanh(F.mul(x, x))
            c = F.sin(F.mul(a, b))  # an array rule's cotangent into a tensor rule
            d = F.mul(F.sin(s), x[1])  # a row of x, and s again
            loss = F.sum(c) + F.sum(F.mul(d, d)) + F.mean(x) + F.sum(F.sin(x))
        return tape.gradient(loss, [x, s])

    fast, slow = _both(grads)
    assert all(_same_bits(a, b) for a, b in zip(fast, slow))
    assert all(type(g) is jl.Tensor for g in fast)
