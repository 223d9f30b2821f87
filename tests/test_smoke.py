import numpy as np

import janus_like as jl


def test_tensor_numpy_functions_return_tensors():
    t = jl.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = np.sum(np.tanh(t), axis=1)
    assert isinstance(out, jl.Tensor)
    np.testing.assert_array_equal(out.numpy(), np.sum(np.tanh(t.numpy()), axis=1))


def test_second_derivative_through_nested_tapes():
    x = jl.tensor(3.0)
    with jl.GradientTape() as outer:
        outer.watch(x)
        with jl.GradientTape() as inner:
            inner.watch(x)
            y = x * x
        dy = inner.gradient(y, x)
    assert float(dy) == 6.0
    assert float(outer.gradient(dy, x)) == 2.0
