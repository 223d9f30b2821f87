"""CUDA kernels for the convolution and pooling steps that the NumPy path does as a loop of
strided copies or adds over kernel taps (`conv.py`). On a GPU each of those is a kernel launch
that costs ~10-25 us of host time, so LeNet's step spent most of its time launching them. Each
kernel here computes what the loop computes, bit for bit: the same adds in the same order, the
same copies.

- im2col: one strided copy of the padded input's windows (a view made with `as_strided`);
- col2im: each input position sums the column gradients of the taps that hit it, in tap order,
  starting from 0.0, as the loop's `dx[...] += dcols[:, i, j]` over a zeroed `dx` adds them;
- max-pool routing (windows that tile the input): each position takes its window's gradient
  where it is the window's first maximum (argmax order; the first NaN where the maximum is NaN)
  and +0.0 elsewhere.

Used only with CuPy itself (an array module with `RawKernel`); the CPU stand-in for CuPy in
the tests and NumPy run the loops.
"""
from __future__ import annotations

import numpy as np

_BLOCK = 256
_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}

_COL2IM = r"""
extern "C" __global__ void col2im(const T* dcols, T* dx, long long total, int C, int H, int W,
                                  int KH, int KW, int OH, int OW, int N, int SH, int SW, int PH, int PW) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int x = idx % W;  long long r = idx / W;
    int y = r % H;  r /= H;
    int c = r % C;  int n = r / C;
    int yp = y + PH, xp = x + PW;
    T acc = 0;
    for (int i = 0; i < KH; ++i) {
        int dy = yp - i;
        if (dy < 0 || dy % SH) continue;
        int oy = dy / SH;
        if (oy >= OH) continue;
        for (int j = 0; j < KW; ++j) {
            int dxx = xp - j;
            if (dxx < 0 || dxx % SW) continue;
            int ox = dxx / SW;
            if (ox >= OW) continue;
            acc = ADD(acc, dcols[(((((long long)c * KH + i) * KW + j) * OH + oy) * OW + ox) * N + n]);
        }
    }
    dx[idx] = acc;
}
"""

_ROUTE = r"""
extern "C" __global__ void route(const TX* x, const TX* best, const TG* g, TG* out, long long total,
                                 int H, int W, int KH, int KW) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int xx = idx % W;  long long r = idx / W;
    int y = r % H;  long long plane = r / H;
    int OH = H / KH, OW = W / KW;
    int wy = y / KH, wx = xx / KW;
    long long window = (plane * OH + wy) * OW + wx;
    TX b = best[window];
    bool nan_best = b != b;
    int k = (y % KH) * KW + xx % KW;
    const TX* corner = x + (plane * H + (long long)wy * KH) * W + (long long)wx * KW;
    bool first = true;
    for (int t = 0; t <= k && first; ++t) {
        TX v = corner[(long long)(t / KW) * W + t % KW];
        bool hit = v == b || (nan_best && v != v);
        if (hit) {
            out[idx] = t == k ? g[window] : (TG)0;
            first = false;
        }
    }
    if (first) out[idx] = (TG)0;
}
"""

_kernels = {}


def available(xp) -> bool:
    """Whether `xp` is CuPy itself (the kernels need its RawKernel)."""
    return xp is not np and hasattr(xp, "RawKernel") and hasattr(xp, "cuda")


def _kernel(xp, name, source, **types_):
    """The kernel `name` of `source` with its type names (T, TX, TG) bound, compiled once."""
    key = (id(xp), name, tuple(sorted(types_.items())))
    if key not in _kernels:
        head = "".join(f"typedef {c} {t};\n" for t, c in sorted(types_.items()))
        if types_.get("T"):  # (the rounding add, never contracted)
            head += f"#define ADD {'__fadd_rn' if types_['T'] == 'float' else '__dadd_rn'}\n"
        _kernels[key] = xp.RawKernel(head + source, name)
    return _kernels[key]


def _launch(kernel, total, args):
    kernel(((total + _BLOCK - 1) // _BLOCK,), (_BLOCK,), args)


def im2col(xp, xt, size, stride, out_hw):
    """The (C, kh, kw, OH, OW, N) windows of the padded (C, H, W, N) input `xt`, as one copy."""
    (kh, kw), (sh, sw), (oh, ow) = size, stride, out_hw
    xt = xp.ascontiguousarray(xt)
    sc, sy, sx, sn = xt.strides
    view = xp.lib.stride_tricks.as_strided(xt, (xt.shape[0], kh, kw, oh, ow, xt.shape[3]),
                                           (sc, sy, sx, sy * sh, sx * sw, sn))
    return xp.ascontiguousarray(view)


def col2im_supported(dtype) -> bool:
    return np.dtype(dtype) in _TYPES


def col2im(xp, dcols, x_shape, stride, padding):
    """conv2d's input gradient (N, C, H, W) from the (C, kh, kw, OH, OW, N) column gradient."""
    n, c, h, w = x_shape
    _, kh, kw, oh, ow, _ = dcols.shape
    dcols = xp.ascontiguousarray(dcols)
    dx = xp.empty((n, c, h, w), dtype=dcols.dtype)
    total = dx.size
    if total:
        kernel = _kernel(xp, "col2im", _COL2IM, T=_TYPES[dcols.dtype])
        _launch(kernel, total, (dcols, dx, np.int64(total), *(np.int32(v) for v in (
            c, h, w, kh, kw, oh, ow, n, *stride, *padding))))
    return dx


def route_supported(x, g, best) -> bool:
    return x.dtype in _TYPES and g.dtype in _TYPES and best.dtype == x.dtype


def max_pool_route(xp, g, x, best, size):
    """max_pool2d's gradient (x's shape, g's dtype) where the windows tile x (stride = size)."""
    kh, kw = size
    x, best, g = (xp.ascontiguousarray(a) for a in (x, best, g))
    out = xp.empty(x.shape, dtype=g.dtype)
    total = out.size
    if total:
        kernel = _kernel(xp, "route", _ROUTE, TX=_TYPES[x.dtype], TG=_TYPES[g.dtype])
        _launch(kernel, total, (x, best, g, out, np.int64(total), *(np.int32(v) for v in (
            x.shape[2], x.shape[3], kh, kw))))
    return out
