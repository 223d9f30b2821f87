"""Errors that teach: op failures name the op, the operands' shapes and the user's source line."""
import inspect

import numpy as np
import pytest

import janus_like as jl
from janus_like import F, GradientTape
from janus_like.errors import GradientError, OpError, OpIndexError, OpTypeError, ShapeError


def here():
    """file:line of the caller's *next* line, as error messages print it."""
    return f"test_errors.py:{inspect.currentframe().f_back.f_lineno + 1}"


def test_broadcast_failure_names_shapes_op_and_line():
    x, b = jl.tensor(np.ones((3, 4))), jl.tensor(np.ones(5))
    with pytest.raises(ShapeError) as info:
        where = here()
        y = x + b  # noqa: F841
    text = str(info.value)
    assert "cannot broadcast shapes (3, 4) and (5,)" in text
    assert "'add'" in text
    assert "`y = x + b  # noqa: F841`" in text
    assert where in text
    assert isinstance(info.value, ValueError)  # code catching NumPy's ValueError still works
    assert isinstance(info.value.__cause__, ValueError)  # NumPy's own message is kept as the cause


def test_broadcast_failure_through_numpy_function_points_at_user_line():
    x, b = jl.tensor(np.ones((3, 4))), np.ones(5)
    with pytest.raises(ShapeError) as info:
        where = here()
        np.multiply(x, b)
    text = str(info.value)
    assert "cannot broadcast shapes (3, 4) and (5,)" in text and "'mul'" in text
    assert "np.multiply(x, b)" in text and where in text


def _model(x, w):
    return F.tanh(x @ w)  # the failing line is in user code one call deeper


def test_error_points_at_the_innermost_user_line():
    with pytest.raises(ShapeError) as info:
        _model(jl.tensor(np.ones((2, 3))), jl.tensor(np.ones((4, 5))))
    line = inspect.getsourcelines(_model)[1] + 1
    text = str(info.value)
    assert f"test_errors.py:{line}" in text and "`return F.tanh(x @ w)" in text


def test_matmul_mismatch_names_op_shapes_and_line():
    a, b = jl.tensor(np.ones((3, 4))), jl.tensor(np.ones((5, 2), np.float32))
    with pytest.raises(ShapeError) as info:
        where = here()
        F.matmul(a, b)
    text = str(info.value)
    assert "op 'matmul' failed on (float64[3,4], float32[5,2])" in text
    assert "F.matmul(a, b)" in text and where in text
    assert "mismatch" in text  # NumPy's explanation follows


def test_reshape_to_wrong_size_is_a_shape_error():
    with pytest.raises(ShapeError, match=r"op 'reshape' failed on \(int64\[12\]\).*size 12"):
        jl.tensor(np.arange(12)).reshape(5, 3)


def test_bad_index_names_op_shape_and_line():
    x = jl.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises(IndexError) as info:
        where = here()
        x[2, 0]
    assert isinstance(info.value, OpIndexError)
    text = str(info.value)
    assert "op 'getitem' failed on (float64[2,3])" in text and "out of bounds" in text
    assert "x[2, 0]" in text and where in text


def test_bad_index_array_is_an_index_error():
    x = jl.tensor(np.arange(3.0))
    with pytest.raises(IndexError, match=r"getitem.*float64\[3\], int64\[2\]"):
        x[np.array([0, 7])]


def test_unsupported_index_type_raises_numpys_index_error():
    # (NumPy's own error, the one eager NumPy code raises: a graph's generator raises it too)
    with pytest.raises(IndexError, match="only integers, slices"):
        jl.tensor(np.arange(3.0))["a"]


def test_wrong_operand_type_is_a_type_error():
    with pytest.raises(OpTypeError, match=r"op 'add' failed on \(float64\[2\], str\)"):
        jl.tensor(np.ones(2)) + "a"


def test_op_errors_share_one_base_class():
    assert issubclass(ShapeError, OpError) and issubclass(OpIndexError, OpError)
    assert issubclass(OpError, jl.JanusError) and issubclass(GradientError, jl.JanusError)


def test_gradient_of_non_scalar_target_needs_output_gradients():
    x = jl.tensor(np.ones((2, 3)))
    with GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(GradientError) as info:
        tape.gradient(y, x)
    text = str(info.value)
    assert "non-scalar target (shape (2, 3))" in text and "output_gradients" in text and "sum()" in text


def test_output_gradients_count_must_match_targets():
    x = jl.tensor(1.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(GradientError, match="output_gradients has 2 entries for 1 targets"):
        tape.gradient(y, x, output_gradients=[1.0, 1.0])


def test_gradient_sources_must_be_tensors():
    x = jl.tensor(1.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(TypeError, match="sources must be tensors"):
        tape.gradient(y, [x, 3.0])


def test_unknown_op_name():
    from janus_like.ops import P

    with pytest.raises(AttributeError, match="no op named 'nonexistent'"):
        P.nonexistent


def test_split_into_unequal_sections():
    with pytest.raises(ValueError, match="equal division: 5 into 2"):
        F.split(jl.tensor(np.ones(5)), 2)
