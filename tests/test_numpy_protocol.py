"""NumPy's own functions on tensors: results are tensors, `out=` writes where NumPy would, and
functions without a registered op still work (as constants for the tape)."""
import warnings

import numpy as np
import pytest

import janus_like as jl
from janus_like import GradientTape


@pytest.fixture
def x():
    return jl.tensor(np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]))


MAPPED = {  # NumPy calls with a registered op behind them
    "tanh": lambda t: np.tanh(t),
    "exp": lambda t: np.exp(t),
    "square": lambda t: np.square(t),
    "positive": lambda t: np.positive(t),
    "add_scalar": lambda t: np.add(t, 1.0),
    "greater": lambda t: np.greater(t, 0),
    "sum_axis": lambda t: np.sum(t, axis=1),
    "mean": lambda t: np.mean(t),
    "amax": lambda t: np.amax(t, axis=0, keepdims=True),
    "min": lambda t: np.min(t),
    "dot": lambda t: np.dot(t, np.ones(3)),
    "matmul": lambda t: np.matmul(t.T, t),
    "einsum": lambda t: np.einsum("ij,ij->i", t, t),
    "tensordot": lambda t: np.tensordot(t, t, axes=([0], [0])),
    "clip": lambda t: np.clip(t, -0.5, 0.5),
    "where": lambda t: np.where(np.asarray(t) > 0, t, 0.0),
    "reshape": lambda t: np.reshape(t, (3, 2)),
    "transpose": lambda t: np.transpose(t),
    "expand_dims": lambda t: np.expand_dims(t, 0),
    "concatenate": lambda t: np.concatenate([t, np.zeros((1, 3))]),
    "stack": lambda t: np.stack([t, t]),
    "take": lambda t: np.take(t, [0, 0, 4]),
    "broadcast_to": lambda t: np.broadcast_to(t, (2, 2, 3)),
    "outer": lambda t: np.outer(t[0], t[1]),
    "argmax": lambda t: np.argmax(t, axis=1),
    "zeros_like": lambda t: np.zeros_like(t),
    "copy": lambda t: np.copy(t),
    "reduce": lambda t: np.add.reduce(t, axis=0),
    "cumsum": lambda t: np.cumsum(t, axis=1), "sort": lambda t: np.sort(t), "prod": lambda t: np.prod(t, axis=0),
}


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_numpy_functions_on_tensors_return_tensors(name, x):
    out = MAPPED[name](x)
    assert isinstance(out, jl.Tensor), f"np {name} returned {type(out).__name__}"
    np.testing.assert_array_equal(out.numpy(), MAPPED[name](x.numpy()))


def test_split_returns_a_list_of_tensors(x):
    parts = np.split(x, 3, axis=1)
    assert isinstance(parts, list) and all(isinstance(p, jl.Tensor) for p in parts)


UNMAPPED = {  # no registered op: run on the arrays, result wrapped as a constant tensor
    "cumprod": lambda t: np.cumprod(t, axis=1),
    "partition": lambda t: np.partition(t, 1),
    "flip": lambda t: np.flip(t),
    "floor": lambda t: np.floor(t),
    "accumulate": lambda t: np.multiply.accumulate(t, axis=0),
    "masked_add": lambda t: np.add(t, 1.0, where=np.asarray(t) > 0, out=np.zeros((2, 3))),
}


@pytest.mark.parametrize("name", sorted(UNMAPPED))
def test_functions_without_an_op_still_work(name, x):
    out = UNMAPPED[name](x)
    expected = UNMAPPED[name](x.numpy())
    if name == "masked_add":  # out= an ndarray: NumPy writes into it and returns it
        assert isinstance(out, np.ndarray)
    else:
        assert isinstance(out, jl.Tensor)
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_multiple_outputs_with_out_buffers(x):
    q, r = np.zeros((2, 3)), jl.Variable(np.zeros((2, 3)))
    res = np.divmod(x, 2.0, out=(q, r))
    assert res[0] is q and res[1] is r
    np.testing.assert_array_equal(q, np.divmod(x.numpy(), 2.0)[0])
    np.testing.assert_array_equal(r.numpy(), np.divmod(x.numpy(), 2.0)[1])


def test_masked_ufunc_into_a_variable_keeps_unselected_values(x):
    v = jl.Variable(np.full((2, 3), 7.0))
    np.add(x, 1.0, where=x.numpy() > 0, out=v)
    np.testing.assert_array_equal(v.numpy(), np.where(x.numpy() > 0, x.numpy() + 1.0, 7.0))


def test_multiple_outputs_and_non_array_results(x):
    q, r = np.divmod(x, 2.0)
    assert isinstance(q, jl.Tensor) and isinstance(r, jl.Tensor)
    values, counts = np.unique(jl.tensor([3, 1, 3]), return_counts=True)
    np.testing.assert_array_equal(values.numpy(), [1, 3])
    np.testing.assert_array_equal(counts.numpy(), [1, 2])
    assert bool(np.allclose(x, x))  # a NumPy scalar result comes back as it is
    assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x) == 6


def test_unmapped_function_under_a_tape_warns_and_is_constant(x):
    with GradientTape() as tape:
        tape.watch(x)
        with pytest.warns(UserWarning, match="numpy.cumprod has no gradient rule"):
            y = np.cumprod(x, axis=1)
        z = np.sum(y * x)
    g = tape.gradient(z, x)
    np.testing.assert_array_equal(g.numpy(), np.cumprod(x.numpy(), axis=1))  # y treated as a constant


def test_numpy_functions_are_differentiable(x):
    with GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.tanh(x) * np.exp(x), axis=1)
        z = np.mean(y)
    g = tape.gradient(z, x)
    a = x.numpy()
    np.testing.assert_allclose(g.numpy(), ((1 - np.tanh(a) ** 2) * np.exp(a) + np.tanh(a) * np.exp(a)) / 2)


# ------------------------------------------------------------------ mixing ndarrays and tensors
@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
                                lambda a, b: a ** b, lambda a, b: a < b, lambda a, b: a == b,
                                lambda a, b: a @ b.T])
def test_ndarray_on_the_left_returns_a_tensor(op, x):
    a = np.full((2, 3), 2.0)
    out = op(a, x)
    assert isinstance(out, jl.Tensor)
    np.testing.assert_array_equal(out.numpy(), op(a, x.numpy()))


def test_numpy_scalar_on_the_left_returns_a_tensor(x):
    for out in (np.float32(2.0) * x, np.float64(1.0) - x, np.int64(3) + x):
        assert isinstance(out, jl.Tensor)


def test_inplace_on_an_ndarray_stays_an_ndarray(x):
    a = np.zeros((2, 3))
    a += x
    assert isinstance(a, np.ndarray)
    np.testing.assert_array_equal(a, x.numpy())


def test_array_conversion(x):
    a = np.asarray(x)
    assert isinstance(a, np.ndarray) and a.dtype == np.float64
    assert np.array(x, dtype=np.float32).dtype == np.float32
    assert float(jl.tensor(2.5)) == 2.5 and int(jl.tensor(3)) == 3
    assert [1, 2, 3][jl.tensor(1)] == 2  # __index__


# ------------------------------------------------------------------ out=
def test_ufunc_out_variable_is_updated_in_place(x):
    v = jl.Variable(np.zeros((2, 3)))
    ident = id(v)
    result = np.add(x, 1.0, out=v)
    assert result is v and id(v) == ident
    np.testing.assert_array_equal(v.numpy(), x.numpy() + 1.0)
    np.multiply(v, 2.0, out=v)
    np.testing.assert_array_equal(v.numpy(), (x.numpy() + 1.0) * 2.0)
    np.tanh(x, out=v)
    np.testing.assert_array_equal(v.numpy(), np.tanh(x.numpy()))


def test_out_variable_keeps_its_dtype():
    v = jl.Variable(np.zeros(3, np.float32))
    np.add(v, np.ones(3), out=v)  # float64 result cast back into the float32 variable
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), np.ones(3, np.float32))


def test_clip_out_variable(x):
    v = jl.Variable(np.zeros((2, 3)))
    assert np.clip(x, -0.5, 0.5, out=v) is v
    np.testing.assert_array_equal(v.numpy(), np.clip(x.numpy(), -0.5, 0.5))


def test_reduction_out_variable(x):
    v = jl.Variable(np.zeros(3))
    assert np.sum(x, axis=0, out=v) is v
    np.testing.assert_array_equal(v.numpy(), x.numpy().sum(axis=0))
    w = jl.Variable(np.zeros(2))
    np.max(x, axis=1, out=w)
    np.testing.assert_array_equal(w.numpy(), x.numpy().max(axis=1))
    np.mean(x, axis=1, out=w)
    np.testing.assert_array_equal(w.numpy(), x.numpy().mean(axis=1))


def test_out_ndarray_is_written(x):
    buf = np.zeros((2, 3))
    res = np.exp(x, out=buf)
    assert res is buf
    np.testing.assert_array_equal(buf, np.exp(x.numpy()))


def test_out_tensor_is_rebound_functionally(x):
    t = jl.tensor(np.zeros((2, 3)))
    old = t.numpy()
    np.add(x, 1.0, out=t)
    np.testing.assert_array_equal(t.numpy(), x.numpy() + 1.0)
    assert not old.any()  # the previous array value was not mutated


def test_out_variable_under_a_tape_is_a_state_update(x):
    v = jl.Variable(np.zeros((2, 3)))
    with GradientTape() as tape:
        tape.watch(x)
        np.multiply(x, 3.0, out=v)  # a state update, like v.assign(x * 3)
        y = np.sum(v * x)
    g = tape.gradient(y, x)
    np.testing.assert_array_equal(g.numpy(), 3.0 * x.numpy())  # v's read is a separate, watched value


def test_no_warnings_for_mapped_functions_under_tape(x):
    with GradientTape() as tape, warnings.catch_warnings():
        warnings.simplefilter("error")
        tape.watch(x)
        np.sum(np.clip(np.tanh(x), -0.5, 0.5))
