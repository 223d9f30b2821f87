"""Every differentiable op, forward and gradient, on the GPU against the CPU.

Each gradient case (`grad_cases.CASES`) is run twice: on NumPy, and with its tensors, the
projections of its outputs and the host arrays its function captured (masks, shape templates)
moved to the device. The outputs and gradients must agree and the GPU ones must stay on the GPU. The `fake`
parameter runs on the CPU stand-in (`fake_gpu.py`: no implicit host copies, no host operands);
the `cupy` one on CuPy itself, where a GPU is present, which also finds functions CuPy lacks.
"""
from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import backend
from janus_like.errors import OpValueError

from grad_cases import CASES, drawn_float_case
from gradcheck import _leaves, _project
from test_devices import DEVICES, _use_gpu


def _on_device(fn, device):
    """fn with the host arrays its closure captured (masks, shape templates) moved to `device`."""
    if not fn.__closure__:
        return fn
    cells = tuple(types.CellType(backend.to_device(c.cell_contents, device))
                  if isinstance(c.cell_contents, np.ndarray) else c for c in fn.__closure__)
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cells)


def _values_and_grads(fn, args, us, wrt, device="cpu"):
    ts = [jl.tensor(np.asarray(a)).to(device) if i in wrt else a for i, a in enumerate(args)]
    us = [backend.to_device(u, device) for u in us]
    with jl.GradientTape() as tape:
        tape.watch([ts[i] for i in wrt])
        out = _on_device(fn, device)(*ts)
        loss = _project(out, us)
    grads = tape.gradient(loss, [ts[i] for i in wrt], unconnected_gradients="zero")
    return [o for o in _leaves(out) if isinstance(o, jl.Tensor)] + list(grads)


def _tolerance(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kind", DEVICES)
@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=6)
@given(data=st.data())
def test_every_op_and_its_gradient_on_the_gpu_match_the_cpu(name, kind, data):
    case = drawn_float_case(data, name)
    if case is None or name == "to_device":  # that case moves to the CPU (test_devices.py has both ways)
        return
    fn, args, us, wrt = case
    cpu = _values_and_grads(fn, args, us, wrt)
    with pytest.MonkeyPatch.context() as mp:
        _use_gpu(mp, kind)
        if name == "cast_longdouble" and kind == "cupy":  # CuPy has no long double: a clear error
            with pytest.raises(OpValueError, match="op 'cast' failed .*float128"):
                _values_and_grads(fn, args, us, wrt, "gpu")
            return
        gpu = _values_and_grads(fn, args, us, wrt, "gpu")
        assert len(gpu) == len(cpu)
        for i, (c, g) in enumerate(zip(cpu, gpu)):
            assert g.device == "gpu", f"{name}: result {i} came back on the {g.device}"
            assert (g.dtype, g.shape) == (c.dtype, c.shape), f"{name}: result {i}"
            np.testing.assert_allclose(g.numpy(), c.numpy(), err_msg=f"{name}: result {i}",
                                       **_tolerance(c.dtype))
