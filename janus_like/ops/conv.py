"""Convolution and pooling over NCHW arrays, as registered primitives.

Convolution lays the padded input's windows out as an im2col matrix (C*kh*kw, OH*OW*N) and does
one matrix product per direction (on NumPy in float32, in pieces sized for OpenBLAS's small-matrix
kernels); the input gradient scatters the column gradient back with one strided add per kernel
tap (col2im), or, for a stride-1 "same" convolution of 8+ input channels, is the convolution of
the gradient with the flipped kernel. Pooling views the input as windows
(`sliding_window_view`). Every kernel goes through the array module `xp`, so the same code runs
on NumPy and CuPy.

The gradient ops come in transpose pairs, which makes every rule here differentiable again:

    conv2d(x, w)                  linear in x and in w
    conv2d_grad_input(g, w, x)    = (d conv2d / dx)^T g       (x only supplies the shape)
    conv2d_grad_weight(g, x, w)   = (d conv2d / dw)^T g       (w only supplies the shape)
    max_pool2d_gather(v, x)       v at each window's first argmax of x (max_pool2d(x) = gather(x, x))
    max_pool2d_scatter(g, x[, m]) the transpose of gather: g routed back to those positions
                                  (m = max_pool2d(x), passed by max_pool2d's rule, not recomputed)
    avg_pool2d(x) / avg_pool2d_grad(g, x)   averaging and its transpose (even spreading)

Max pooling routes each window's gradient to the *first* maximal position (row-major order
inside the window), like PyTorch; ties are not split. Average pooling counts padded zeros in
the denominator (PyTorch's `count_include_pad=True`).

    >>> import numpy as np, janus_like as jl
    >>> x = jl.tensor(np.ones((1, 1, 4, 4))); w = jl.tensor(np.ones((2, 1, 3, 3)))
    >>> jl.F.conv2d(x, w, padding=1).shape
    (1, 2, 4, 4)
"""
from __future__ import annotations

import math

import numpy as np

from . import conv_gpu
from .conv_params import pair_param, pool_params
from .registry import bind, register, wants


def _rows(a):
    """`a` as a matrix of its first dimension's rows (sized without -1: the dimensions may be 0)."""
    return a.reshape(a.shape[0], math.prod(a.shape[1:]))


def _check_nchw(x, what):
    if x.ndim != 4:
        raise ValueError(f"{what} expects a 4-d NCHW input, got shape {tuple(x.shape)}")


def _pad(xp, x, padding, value=0):
    ph, pw = padding
    if ph == 0 and pw == 0:
        return x
    return xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def _windows(xp, x, size, stride, padding, value=0):
    """(N, C, OH, OW, kh, kw) view of the padded input's windows."""
    kh, kw = size
    sh, sw = stride
    padded = _pad(xp, x, padding, value)
    if padded.shape[2] < kh or padded.shape[3] < kw:
        raise ValueError(f"window {size} is larger than the padded input {tuple(padded.shape[2:])}")
    view = xp.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))
    return view[:, :, ::sh, ::sw]


def _scatter_windows(xp, cols, x_shape, stride, padding):
    """Transpose of `_windows`: add (N, C, OH, OW, kh, kw) values into an input-shaped array."""
    n, c, h, w = x_shape
    ph, pw = padding
    sh, sw = stride
    oh, ow, kh, kw = cols.shape[2:]
    out = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):  # rows i, i+sh, ..., i+sh*(oh-1) of the padded input see tap (i, j)
            out[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw] += cols[:, :, :, :, i, j]
    return out[:, :, ph:ph + h, pw:pw + w]


# ------------------------------------------------------------------ convolution
# OpenBLAS (0.3.31 here; this machine's AVX-512 kernels) multiplies float32 products of at most
# about a million multiply-adds with its small-matrix kernels, and those run the convolutions'
# skinny products (a few rows, thousands of columns) faster than its packed path: in pieces of at
# most SMALL_GEMM_MACS, a forward product measured 0.49-0.79x the time of one call on LeNet's and
# ResNet's layers, an input-gradient product (col2im form) 0.45-0.92x. Pieces narrower than
# MIN_PIECE_COLUMNS lost (ResNet's 32-channel forward: 108 columns, 1.11x). A weight gradient's
# inner dimension is the long one: summed in pieces it measured 0.43 and 0.55x where a piece
# keeps MIN_PIECE_INNER terms (LeNet's first layer, ResNet's stem) and 1.09-1.14x elsewhere.
# Eager and graphs call these same kernels, so both see the same pieces and the same bits.
SMALL_GEMM_MACS = 1_000_000
MIN_PIECE_COLUMNS = 256
MIN_PIECE_INNER = 2048


def _in_pieces(xp, a, b, width, minimum) -> bool:
    return (xp is np and a.dtype == b.dtype == np.float32 and width >= minimum
            and a.shape[0] * a.shape[1] * b.shape[1] > SMALL_GEMM_MACS)


def _product(xp, a, b, out=None):
    """a @ b for 2-D a and b, in pieces of columns of at most SMALL_GEMM_MACS multiply-adds."""
    width = SMALL_GEMM_MACS // max(1, a.shape[0] * a.shape[1])
    if not _in_pieces(xp, a, b, width, MIN_PIECE_COLUMNS):
        return xp.matmul(a, b, out=out)
    if out is None:
        out = xp.empty((a.shape[0], b.shape[1]), dtype=np.float32)
    for s in range(0, b.shape[1], width):
        xp.matmul(a, b[:, s:s + width], out=out[:, s:s + width])
    return out


def _product_long_inner(xp, a, b):
    """a @ b for 2-D a and b, the inner dimension in pieces of at most SMALL_GEMM_MACS
    multiply-adds, summed in order."""
    width = SMALL_GEMM_MACS // max(1, a.shape[0] * b.shape[1])
    if not _in_pieces(xp, a, b, width, MIN_PIECE_INNER):
        return a @ b
    out = a[:, :width] @ b[:width]
    for s in range(width, a.shape[1], width):
        out += a[:, s:s + width] @ b[s:s + width]
    return out


def out_size(h, w, size, stride, padding):
    """(OH, OW): how many windows of `size` fit along each padded axis at `stride`."""
    (kh, kw), (sh, sw), (ph, pw) = size, stride, padding
    return (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1


# The im2col matrix is laid out (C*kh*kw, OH*OW*N): batch innermost. Each kernel tap then copies
# (and, in the input gradient, adds back) runs of OW*N contiguous floats instead of OW, which
# measured 1.1-2.6x faster on LeNet's and ResNet's layers than the (C*kh*kw, N*OH*OW) layout.
def _chwn(xp, x, padding):
    """x in (C, H, W, N) order, contiguous and padded, in one copy: im2col's taps then copy whole
    contiguous runs. Copying tap by tap from the transposed view instead (no padding) took 0.36 ms
    for LeNet's second layer where this takes 0.15, and np.pad 0.25 ms of a (8, 16, 32, 32)
    layer's 0.6 where zeros plus one copy into the middle take 0.15."""
    ph, pw = padding
    xt = x.transpose(1, 2, 3, 0)
    if not (ph or pw):
        return xp.ascontiguousarray(xt)
    c, h, w, n = xt.shape
    padded = xp.zeros((c, h + 2 * ph, w + 2 * pw, n), dtype=x.dtype)
    padded[:, ph:ph + h, pw:pw + w] = xt
    return padded


def _taps(cols, xt, stride, first_row=0):
    """Fill the (C, kh, kw, rows, OW, N) im2col block whose output rows start at `first_row` from
    the padded (C, H, W, N) input: one strided copy per kernel tap."""
    (sh, sw), (_, kh, kw, rows, ow, _) = stride, cols.shape
    top = first_row * sh
    for i in range(kh):
        for j in range(kw):
            cols[:, i, j] = xt[:, top + i:top + i + sh * (rows - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw, :]


def _cols(xp, x, size, stride, padding):
    """im2col: the padded input's windows as a (C*kh*kw, OH*OW*N) matrix."""
    kh, kw = size
    xt = _chwn(xp, x, padding)
    c, hp, wp, n = xt.shape
    if hp < kh or wp < kw:
        raise ValueError(f"window {size} is larger than the padded input {(hp, wp)}")
    oh, ow = out_size(hp, wp, size, stride, (0, 0))
    if conv_gpu.available(xp):  # one strided copy, one kernel launch (a launch per tap below)
        cols = conv_gpu.im2col(xp, xt, size, stride, (oh, ow))
    else:
        cols = xp.empty((c, kh, kw, oh, ow, n), dtype=x.dtype)
        _taps(cols, xt, stride)
    return cols.reshape(c * kh * kw, oh * ow * n), (n, oh, ow)


def _conv2d(xp, x, w, stride, padding):
    _check_nchw(x, "conv2d")
    if w.ndim != 4 or w.shape[1] != x.shape[1]:
        raise ValueError(f"conv2d weight must be (O, C, kh, kw) with C = {x.shape[1]} input channels, "
                         f"got shape {tuple(w.shape)}")
    cols, _ = _cols(xp, x, w.shape[2:], stride, padding)
    return _conv2d_cols(xp, cols, w, x, stride, padding)


def _conv2d_cols(xp, cols, w, x, stride, padding):
    """conv2d from the im2col matrix of x: one matrix product, back to NCHW."""
    n, _, h, wd = x.shape
    o = w.shape[0]
    oh, ow = out_size(h, wd, w.shape[2:], stride, padding)
    out = _product(xp, _rows(w), cols).reshape(o, oh, ow, n)
    return xp.ascontiguousarray(out.transpose(3, 0, 1, 2))


def _batch_last(g):
    """(N, O, OH, OW) gradient as the (O, OH*OW*N) matrix matching `_cols`."""
    return _rows(g.transpose(1, 2, 3, 0))


def _conv2d_grad_input(xp, g, w, x, stride, padding):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = g.shape[2:]
    ph, pw = padding
    sh, sw = stride
    if (sh, sw) == (1, 1) and (2 * ph, 2 * pw) == (kh - 1, kw - 1) and c >= 8:
        # A "same" stride-1 convolution's input gradient is itself a same convolution of g with
        # the kernel flipped and its channel axes swapped: a gather (im2col) and a product in
        # the forward's orientation instead of a product and kh*kw scatter-adds. It measured
        # 0.43-0.78x the time of the col2im form on ResNet-like layers, but 1.8x with 4 input
        # channels (a 4-row product) and 1.1-3.9x where the output is smaller than the input
        # (the padded gradient then holds more zeros than values).
        flipped = xp.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
        return _conv2d_rows(xp, g, flipped, (kh - 1 - ph, kw - 1 - pw)).astype(x.dtype, copy=False)
    dcols = _product(xp, _rows(w).T, _batch_last(g)).reshape(c, kh, kw, oh, ow, n)
    if conv_gpu.available(xp) and conv_gpu.col2im_supported(dcols.dtype):  # the loop below in one kernel
        return conv_gpu.col2im(xp, dcols, x.shape, stride, padding).astype(x.dtype, copy=False)
    dx = xp.zeros((c, h + 2 * ph, wd + 2 * pw, n), dtype=dcols.dtype)
    for i in range(kh):  # col2im: each kernel tap adds its slice back into the padded input
        for j in range(kw):
            dx[:, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw, :] += dcols[:, i, j]
    dx = dx[:, ph:ph + h, pw:pw + wd, :].transpose(3, 0, 1, 2)
    return xp.ascontiguousarray(dx).astype(x.dtype, copy=False)


# A stride-1 convolution whose im2col matrix is larger than two of these (the input gradient's
# flipped form, which shares no im2col matrix) lays it out and multiplies it in blocks of output
# rows of about ROWS_BLOCK_BYTES each: the product then reads each block from cache, just after
# its taps were copied. On ResNet-like layers (4.7 MB matrices) that measured 0.77-0.86x the
# time of one matrix and one product, 0.53-0.63x on a 13 MB one; blocks of 256-512 KiB gained
# less, and a 1.2 MB matrix in two blocks lost (1.08x).
ROWS_BLOCK_BYTES = 1 << 20


def _conv2d_rows(xp, x, w, padding):
    """Stride-1 conv2d(x, w) with the im2col matrix built and multiplied block by block."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = out_size(h, wd, (kh, kw), (1, 1), padding)
    per_row = c * kh * kw * ow * n * x.dtype.itemsize
    if xp is not np or per_row * oh <= 2 * ROWS_BLOCK_BYTES:  # a cache's blocks: NumPy only
        return _conv2d(xp, x, w, (1, 1), padding)
    rows = max(1, ROWS_BLOCK_BYTES // per_row)
    xt = _chwn(xp, x, padding)
    out = xp.empty((o, oh, ow, n), dtype=np.result_type(x.dtype, w.dtype))
    buf = xp.empty(c * kh * kw * rows * ow * n, dtype=x.dtype)
    wm = _rows(w)
    for a in range(0, oh, rows):
        b = min(a + rows, oh)
        block = buf[:c * kh * kw * (b - a) * ow * n].reshape(c, kh, kw, b - a, ow, n)
        _taps(block, xt, (1, 1), a)
        _product(xp, wm, block.reshape(c * kh * kw, (b - a) * ow * n), out=_rows(out[:, a:b]))  # a view of out
    return xp.ascontiguousarray(out.transpose(3, 0, 1, 2))


def _conv2d_grad_weight(xp, g, x, w, stride, padding):
    cols, _ = _cols(xp, x, w.shape[2:], stride, padding)
    return _conv2d_grad_weight_cols(xp, g, cols, w)


def _conv2d_grad_weight_cols(xp, g, cols, w):
    # (cols @ g^T)^T rather than g @ cols^T: the same sums, but OpenBLAS runs the long inner
    # dimension 1.1-1.6x faster with the im2col matrix as the left operand (LeNet and ResNet
    # layers, one thread). The small (O, C*kh*kw) result is copied to C order: a strided view
    # would make the updated weight strided too, and NumPy picks a product's BLAS layout (so
    # its rounding) from the strides.
    gw = _product_long_inner(xp, cols, _batch_last(g).T)
    return xp.ascontiguousarray(gw.T).reshape(w.shape).astype(w.dtype, copy=False)


# A graph that runs a convolution forward and its weight gradient builds the im2col matrix of
# the same input twice; the `share_im2col` pass rewrites both onto one `im2col` node with these
# (same kernels, same arithmetic: exact). They only appear in optimized graphs, after
# differentiation, so they carry no gradient rules.
register("im2col", lambda xp, x, size, stride, padding: _cols(xp, x, size, stride, padding)[0],
         doc="the (C*kh*kw, OH*OW*N) im2col matrix of NCHW x (shared by a conv2d and its weight gradient)")
register("conv2d_cols", _conv2d_cols, doc="conv2d(x, w) from im2col(x); x supplies the shape only")
register("conv2d_grad_weight_cols", _conv2d_grad_weight_cols,
         doc="conv2d_grad_weight(g, x, w) from im2col(x); w supplies the shape only")


_CONV = register(
    "conv2d", _conv2d,
    vjp=lambda g, o, x, w, stride, padding: (
        wants(0) and bind(_CONV_GX, g, w, x, stride=stride, padding=padding),
        wants(1) and bind(_CONV_GW, g, x, w, stride=stride, padding=padding)),
    doc="NCHW cross-correlation of x (N, C, H, W) with w (O, C, kh, kw)")
# <ct, grad_input(g, w)> = <conv2d(ct, w), g>: d/dg is conv2d(ct, w), d/dw is grad_weight(g, ct)
_CONV_GX = register(
    "conv2d_grad_input", _conv2d_grad_input,
    vjp=lambda ct, o, g, w, x, stride, padding: (
        bind(_CONV, ct, w, stride=stride, padding=padding),
        bind(_CONV_GW, g, ct, w, stride=stride, padding=padding), None),
    doc="gradient of conv2d with respect to its input (x supplies the shape only)")
# <ct, grad_weight(g, x)> = <conv2d(x, ct), g>: d/dg is conv2d(x, ct), d/dx is grad_input(g, ct)
_CONV_GW = register(
    "conv2d_grad_weight", _conv2d_grad_weight,
    vjp=lambda ct, o, g, x, w, stride, padding: (
        bind(_CONV, x, ct, stride=stride, padding=padding),
        bind(_CONV_GX, g, ct, x, stride=stride, padding=padding), None),
    doc="gradient of conv2d with respect to its weight (w supplies the shape only)")


# ------------------------------------------------------------------ max pooling
def _lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.inexact) else np.iinfo(dtype).min


def _first_argmax(xp, x, size, stride, padding):
    """Flat in-window position (0 .. kh*kw-1) of each window's first maximum: (N, C, OH, OW)."""
    win = _windows(xp, x, size, stride, padding, value=_lowest(x.dtype))
    n, c, oh, ow = win.shape[:4]
    return xp.argmax(win.reshape(n, c, oh, ow, math.prod(win.shape[4:])), axis=-1)


def _max_pool2d_gather(xp, v, x, size, stride, padding, v_pad=0):
    _check_nchw(x, "max_pool2d")
    pos = _first_argmax(xp, x, size, stride, padding)
    win = _windows(xp, v, size, stride, padding, value=v_pad)
    n, c, oh, ow = pos.shape
    flat = win.reshape(n, c, oh, ow, math.prod(win.shape[4:]))
    return xp.take_along_axis(flat, pos[..., None], axis=-1)[..., 0]


def _max_pool2d_scatter(xp, g, x, best=None, *, size, stride, padding):
    kh, kw = size
    taps = _tap_views(x, size, stride, padding)
    if taps is not None:  # windows tile the input: route g tap by tap to each window's first max
        if best is None:  # the forward's output, when the gradient rule passed it
            best = _max_pool2d(xp, x, size, stride, padding)
        if conv_gpu.available(xp) and conv_gpu.route_supported(x, g, best):  # the routing below in one kernel
            return conv_gpu.max_pool_route(xp, g, x, best, size).astype(x.dtype, copy=False)
        out = xp.empty(x.shape, dtype=g.dtype)  # every position is one window's tap: all written below
        nan_best = xp.isnan(best) if np.issubdtype(best.dtype, np.inexact) else None
        if nan_best is not None and not nan_best.any():
            nan_best = None  # no NaN maximum: the NaN rule below would add nothing
        route = _bit_route if g.dtype.kind in "fiu" and g.dtype.itemsize in (1, 2, 4, 8) else _where_route
        route(xp, out, g, _first_hits(xp, taps, best, nan_best), kh, kw)
        return out.astype(x.dtype, copy=False)
    pos = _first_argmax(xp, x, size, stride, padding)
    taps = xp.arange(kh * kw).reshape(kh, kw)
    cols = xp.where(pos[..., None, None] == taps, g[..., None, None], xp.zeros((), dtype=g.dtype))
    return _scatter_windows(xp, cols, x.shape, stride, padding).astype(x.dtype, copy=False)


def _first_hits(xp, taps, best, nan_best):
    """For each tap k in order, a boolean array: the windows whose first maximum is tap k (argmax
    order: the first position equal to the maximum, or the first NaN when the maximum is NaN).
    One buffer is reused: each mask is valid until the next one is drawn."""
    hit = xp.empty(best.shape, dtype=bool)
    open_ = None  # windows whose first maximum is not found yet (None: all of them)
    last = len(taps) - 1
    for k, t in enumerate(taps):
        xp.equal(t, best, out=hit)
        if nan_best is not None:
            hit |= nan_best & xp.isnan(t)
        if open_ is not None:
            xp.logical_and(hit, open_, out=hit)
        if k < last:  # open and not hit; for booleans that is open > hit
            open_ = xp.logical_not(hit) if open_ is None else xp.greater(open_, hit, out=open_)
        yield hit


def _where_route(xp, out, g, hits, kh, kw):
    for k, hit in enumerate(hits):
        out[:, :, k // kw::kh, k % kw::kw] = xp.where(hit, g, 0)


def _bit_route(xp, out, g, hits, kh, kw):
    """`_where_route` bit for bit, ~3x faster: g's bits ANDed with an all-ones or all-zeros
    mask of the same width (a masked select with np.where costs ~100 us on a (32, 6, 14, 14)
    block, the AND ~30). Zero bits are 0 (+0.0 for floats), as where(hit, g, 0) gives."""
    bits = np.dtype(f"u{g.dtype.itemsize}")
    ones = bits.type(np.iinfo(bits).max)
    gb, ob = g.view(bits), out.view(bits)
    mask = None
    for k, hit in enumerate(hits):
        mask = xp.multiply(hit, ones, out=mask)
        xp.bitwise_and(gb, mask, out=ob[:, :, k // kw::kh, k % kw::kw])


_MAX_GATHER = register(
    "max_pool2d_gather", _max_pool2d_gather,
    vjp=lambda ct, o, v, x, size, stride, padding: (
        bind(_MAX_SCATTER, ct, x, size=size, stride=stride, padding=padding), None),
    doc="v at the first argmax of each pooling window of x; max_pool2d(x) is gather(x, x)")
_MAX_SCATTER = register(
    "max_pool2d_scatter", _max_pool2d_scatter,
    vjp=lambda ct, o, g, x, *best, size, stride, padding: (
        bind(_MAX_GATHER, ct, x, size=size, stride=stride, padding=padding), None) + (None,) * len(best),
    doc="transpose of max_pool2d_gather: g added at each window's first argmax of x (best: max_pool2d(x), "
        "when the caller has it)")


def _max_pool2d(xp, x, size, stride, padding):
    _check_nchw(x, "max_pool2d")
    taps = _tap_views(x, size, stride, padding)
    if taps is None:
        return _max_pool2d_gather(xp, x, x, size, stride, padding, v_pad=_lowest(x.dtype))
    out = taps[0].copy()
    for t in taps[1:]:  # kh*kw - 1 elementwise maxima over strided views: no window copies
        xp.maximum(out, t, out=out)
    return out


def _tap_views(x, size, stride, padding):
    """When pooling windows tile the input (stride = size, no padding, sizes divisible): one
    strided view per kernel tap, in row-major tap order. Else None."""
    (kh, kw), (sh, sw) = size, stride
    h, w = x.shape[2:]
    if (kh, kw) != (sh, sw) or padding != (0, 0) or h % kh or w % kw:
        return None
    return [x[:, :, i::kh, j::kw] for i in range(kh) for j in range(kw)]


_MAX = register(
    "max_pool2d", _max_pool2d,
    vjp=lambda g, o, x, size, stride, padding: (bind(_MAX_SCATTER, g, x, o, size=size, stride=stride, padding=padding),),
    doc="NCHW max pooling; the gradient goes to the first maximum of each window")


# ------------------------------------------------------------------ average pooling
def _avg_pool2d(xp, x, size, stride, padding):
    _check_nchw(x, "avg_pool2d")
    win = _windows(xp, x, size, stride, padding)
    return win.mean(axis=(4, 5))


def _avg_pool2d_grad(xp, g, x, size, stride, padding):
    kh, kw = size
    share = g / (kh * kw)
    if _tap_views(x, size, stride, padding) is not None:  # windows tile the input: one broadcast copy
        n, c, oh, ow = share.shape  # (not kh*kw strided adds: a global pool has hundreds of taps)
        out = xp.empty((n, c, oh, kh, ow, kw), dtype=share.dtype)
        out[...] = share[:, :, :, None, :, None]
        return out.reshape(x.shape).astype(x.dtype, copy=False)
    cols = xp.broadcast_to(share[..., None, None], share.shape + (kh, kw))
    return _scatter_windows(xp, cols, x.shape, stride, padding).astype(x.dtype, copy=False)


_AVG = register(
    "avg_pool2d", _avg_pool2d,
    vjp=lambda g, o, x, size, stride, padding: (bind(_AVG_GRAD, g, x, size=size, stride=stride, padding=padding),),
    doc="NCHW average pooling; padded zeros count in the mean")
_AVG_GRAD = register(
    "avg_pool2d_grad", _avg_pool2d_grad,
    vjp=lambda ct, o, g, x, size, stride, padding: (bind(_AVG, ct, size=size, stride=stride, padding=padding), None),
    doc="transpose of avg_pool2d: each output's gradient spread evenly over its window")


# ------------------------------------------------------------------ functional API
def conv2d(x, w, b=None, stride=1, padding=0):
    """2-d convolution (cross-correlation, as in every DL framework) over NCHW input.

    x: (N, C, H, W); w: (O, C, kh, kw); b: (O,) or None; stride, padding: int or (h, w) pair.
    Returns (N, O, (H + 2*ph - kh) // sh + 1, (W + 2*pw - kw) // sw + 1).
    """
    out = bind(_CONV, x, w, stride=pair_param(stride, "stride"), padding=pair_param(padding, "padding"))
    if b is None:
        return out
    from . import api as F

    if np.ndim(b) != 1 or np.shape(b)[0] != np.shape(w)[0]:
        raise ValueError(f"conv2d bias must have shape ({np.shape(w)[0]},), one entry per output channel of the "
                         f"weight {tuple(np.shape(w))}, got shape {tuple(np.shape(b))}")

    return F.add(out, F.reshape(b, (1, -1, 1, 1)))  # bias gradient: sum_to, i.e. F.sum over N, H, W


def max_pool2d(x, size, stride=None, padding=0):
    """Max pooling over NCHW input; stride defaults to size, padding is -inf.
    The gradient of each window goes to its first maximal element."""
    return bind(_MAX, x, **pool_params("max_pool2d", size, stride, padding))


def avg_pool2d(x, size, stride=None, padding=0):
    """Average pooling over NCHW input; stride defaults to size, padded zeros count in the mean."""
    return bind(_AVG, x, **pool_params("avg_pool2d", size, stride, padding))


from . import api  # noqa: E402  (attach to F so `F.conv2d` works)

api.conv2d = conv2d
api.max_pool2d = max_pool2d
api.avg_pool2d = avg_pool2d
