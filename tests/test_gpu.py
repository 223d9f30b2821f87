"""GPU (CuPy) tests: skipped with the reason when CuPy or a CUDA device is missing (see conftest).
The JIT on the GPU is tested in test_devices.py, test_gpu_ops.py and test_gpu_models.py (their
`cupy` parameters)."""
import numpy as np
import pytest

import janus_like as jl
from janus_like import F, backend


def test_requesting_a_gpu_without_one_is_a_clear_error():
    if backend.gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="device 'gpu' requested but"):
        with jl.device("gpu"):
            pass


@pytest.mark.gpu
def test_ops_on_gpu_match_cpu():
    r = np.random.default_rng(0)
    a, b = r.standard_normal((8, 5)), r.standard_normal((5, 3))
    ta, tb = jl.tensor(a).to("gpu"), jl.tensor(b).to("gpu")
    assert ta.device == "gpu"
    out = np.tanh(ta @ tb).sum(axis=1)
    np.testing.assert_allclose(out.numpy(), np.tanh(a @ b).sum(axis=1), rtol=1e-10)


@pytest.mark.gpu
def test_gradients_on_gpu_match_cpu():
    r = np.random.default_rng(1)
    x = r.standard_normal((4, 6))
    for device in ("cpu", "gpu"):
        t = jl.tensor(x).to(device)
        with jl.GradientTape() as tape:
            tape.watch(t)
            y = F.sum(F.log_softmax(t) * t)
        g = tape.gradient(y, t)
        if device == "cpu":
            expected = g.numpy()
        else:
            np.testing.assert_allclose(g.numpy(), expected, rtol=1e-9)


@pytest.mark.gpu
def test_device_context_creates_gpu_tensors():
    with jl.device("gpu"):
        t = jl.tensor([1.0, 2.0])
    assert t.device == "gpu"
    assert (t * 2).to("cpu").numpy().tolist() == [2.0, 4.0]

