"""The CUDA kernels of `janus_like/ops/conv_gpu.py` against the loops they replace, run on CuPy
with the kernels turned off: the same bits (im2col's copy, col2im's adds in tap order, max
pooling's routing with ties, NaNs and signed zeros), and the same values as NumPy where no
arithmetic differs. The kernel tests need a GPU; they are skipped without one."""
from __future__ import annotations

import numpy as np
import pytest

from janus_like import backend
from janus_like.ops import conv, conv_gpu

CONV_CASES = [  # (N, C, H, W), (kh, kw), stride, padding
    ((2, 3, 7, 9), (3, 2), (1, 2), (1, 0)),
    ((4, 1, 8, 8), (5, 5), (1, 1), (2, 2)),
    ((1, 2, 5, 5), (2, 2), (3, 3), (1, 1)),
    ((3, 6, 12, 12), (5, 5), (1, 1), (0, 0)),  # LeNet's second layer, smaller
    ((2, 4, 6, 6), (3, 3), (2, 1), (0, 1)),
]
POOL_CASES = [((2, 3, 8, 6), (2, 2)), ((1, 2, 9, 6), (3, 2)), ((3, 1, 4, 4), (1, 1)), ((2, 2, 4, 6), (4, 3))]


@pytest.fixture
def cp(monkeypatch):
    cupy = backend._cupy()
    monkeypatch.setitem(backend._state, "gpu_used", True)
    assert conv_gpu.available(cupy)
    return cupy


def _loops(monkeypatch):
    """The NumPy path's loops on CuPy (the kernels off)."""
    monkeypatch.setattr(conv_gpu, "available", lambda xp: False)


def _same_bits(a, b):
    a, b = (backend.to_device(v, "cpu") for v in (a, b))
    assert a.dtype == b.dtype and a.shape == b.shape
    bits = np.dtype(f"u{a.dtype.itemsize}")
    assert np.array_equal(a.view(bits), b.view(bits)), np.argwhere(a.view(bits) != b.view(bits))[:5]


def _awkward(rng, shape, dtype):
    """Values with ties (small integers), signed zeros, NaNs and wide magnitudes."""
    x = rng.integers(-3, 4, shape).astype(dtype)
    wide = rng.random(shape) < 0.4
    x[wide] = (rng.standard_normal(wide.sum()) * 10.0 ** rng.integers(-6, 7, wide.sum())).astype(dtype)
    x[rng.random(shape) < 0.1] = -0.0
    x[rng.random(shape) < 0.05] = np.nan
    return x


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,size,stride,padding", CONV_CASES)
def test_im2col_and_col2im_give_the_loops_bits(cp, monkeypatch, shape, size, stride, padding, dtype):
    rng = np.random.default_rng(0)
    x = _awkward(rng, shape, dtype)
    cols_np, _ = conv._cols(np, x, size, stride, padding)
    cols_k, _ = conv._cols(cp, cp.asarray(x), size, stride, padding)
    _same_bits(cols_k, cols_np)  # a copy: NumPy's bits

    oh, ow = conv.out_size(*shape[2:], size, stride, padding)
    w = cp.asarray(rng.standard_normal((5, shape[1], *size)).astype(dtype))
    g = cp.asarray(_awkward(rng, (shape[0], 5, oh, ow), dtype))
    xg = cp.asarray(x)
    kernel = conv._conv2d_grad_input(cp, g, w, xg, stride, padding)
    _loops(monkeypatch)
    loop = conv._conv2d_grad_input(cp, g, w, xg, stride, padding)
    _same_bits(kernel, loop)
    assert kernel.flags.c_contiguous


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,size", POOL_CASES)
def test_max_pool_routing_gives_the_loops_bits(cp, monkeypatch, shape, size, dtype):
    rng = np.random.default_rng(1)
    x = _awkward(rng, shape, dtype)
    x[0, 0, :size[0], :size[1]] = np.nan  # a window of NaNs: its first position takes the gradient
    out_shape = (shape[0], shape[1], shape[2] // size[0], shape[3] // size[1])
    g = _awkward(rng, out_shape, dtype)
    kw = dict(size=size, stride=size, padding=(0, 0))
    want = conv._max_pool2d_scatter(np, g, x, **kw)
    xg, gg = cp.asarray(x), cp.asarray(g)
    kernel = conv._max_pool2d_scatter(cp, gg, xg, **kw)
    _same_bits(kernel, want)  # no arithmetic: NumPy's bits
    _loops(monkeypatch)
    _same_bits(kernel, conv._max_pool2d_scatter(cp, gg, xg, **kw))


def test_the_kernels_are_not_used_on_the_cpu_stand_in():
    from fake_gpu import FakeCupy

    assert not conv_gpu.available(FakeCupy()) and not conv_gpu.available(np)
