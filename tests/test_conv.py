"""conv2d / max_pool2d / avg_pool2d: forward against naive loops, gradient rules, errors."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F
from janus_like.errors import OpError
from test_grad_check import check_grads


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def naive_conv2d(x, w, b, stride, padding):
    (sh, sw), (ph, pw) = _pair(stride), _pair(padding)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, c, h, wd = xp.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype=np.result_type(x, w))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out if b is None else out + b[None, :, None, None]


def naive_pool(x, size, stride, padding, reduce, pad_value):
    (kh, kw) = _pair(size)
    (sh, sw) = _pair(stride if stride is not None else size)
    (ph, pw) = _pair(padding)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    oh, ow = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    out = np.zeros(x.shape[:2] + (oh, ow), dtype=reduce(xp[:, :, :1, :1], axis=(2, 3)).dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = reduce(xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw], axis=(2, 3))
    return out


conv_params = st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3),
                        st.integers(1, 3), st.sampled_from([1, 2, 3, (1, 2)]), st.sampled_from([0, 1, 2, (2, 0)]),
                        st.booleans(), st.integers(0, 2**32 - 1))


@given(conv_params)
def test_conv2d_matches_naive_loops(params):
    n, c, o, kh, kw, stride, padding, bias, seed = params
    rng = np.random.default_rng(seed)
    ph, pw = _pair(padding)
    x = rng.standard_normal((n, c, max(kh - 2 * ph, 1) + 3, max(kw - 2 * pw, 1) + 2))
    w = rng.standard_normal((o, c, kh, kw))
    b = rng.standard_normal(o) if bias else None
    got = F.conv2d(jl.tensor(x), jl.tensor(w), None if b is None else jl.tensor(b), stride=stride, padding=padding)
    np.testing.assert_allclose(got.numpy(), naive_conv2d(x, w, b, stride, padding), rtol=1e-12, atol=1e-12)


@given(st.sampled_from([1, 2, 3, (2, 3)]), st.sampled_from([None, 1, 2, (2, 1)]), st.sampled_from([0, 1, (0, 1)]),
       st.integers(0, 2**32 - 1))
def test_pooling_matches_naive_loops(size, stride, padding, seed):
    kh, kw = _pair(size)
    padding = tuple(min(p, k - 1) for p, k in zip(_pair(padding), (kh, kw)))
    x = np.random.default_rng(seed).standard_normal((2, 3, 5, 6))
    np.testing.assert_array_equal(F.max_pool2d(jl.tensor(x), size, stride, padding).numpy(),
                                  naive_pool(x, size, stride, padding, np.max, -np.inf))
    np.testing.assert_allclose(F.avg_pool2d(jl.tensor(x), size, stride, padding).numpy(),
                               naive_pool(x, size, stride, padding, np.mean, 0.0), rtol=1e-12, atol=1e-14)


def test_conv2d_output_shape_and_dtype():
    x = jl.tensor(np.ones((2, 3, 7, 9), np.float32))
    w = jl.tensor(np.ones((4, 3, 3, 2), np.float32))
    y = F.conv2d(x, w, jl.tensor(np.zeros(4, np.float32)), stride=(2, 3), padding=(1, 0))
    assert y.shape == (2, 4, 4, 3)
    assert y.dtype == np.float32
    assert y.numpy().flags.c_contiguous


def test_pooling_keeps_integer_dtype_for_max():
    x = np.arange(16, dtype=np.int32).reshape(1, 1, 4, 4)
    y = F.max_pool2d(jl.tensor(x), 2, padding=1)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y.numpy(), naive_pool(x, 2, 2, 1, np.max, np.iinfo(np.int32).min))


def test_conv2d_gradient_with_uncovered_border():
    # stride 3 over width 8 with a 2-wide kernel leaves the last columns unused: zero gradient there
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 2, 5, 8)), rng.standard_normal((3, 2, 2, 2))
    check_grads(lambda a, b: F.conv2d(a, b, stride=3, padding=0), x, w)
    with jl.GradientTape() as tape:
        xt = jl.tensor(x)
        tape.watch(xt)
        y = F.sum(F.conv2d(xt, jl.tensor(w), stride=3))
    assert np.all(tape.gradient(y, xt).numpy()[..., 2] == 0)


def test_conv2d_bias_gradient_is_sum_over_batch_and_space():
    rng = np.random.default_rng(1)
    x, w, b = (jl.tensor(rng.standard_normal(s)) for s in [(2, 1, 4, 4), (3, 1, 3, 3), (3,)])
    with jl.GradientTape() as tape:
        tape.watch(b)
        y = F.conv2d(x, w, b, padding=1)
    g = rng.standard_normal(y.shape)
    gb = tape.gradient(y, b, output_gradients=jl.tensor(g))
    np.testing.assert_allclose(gb.numpy(), g.sum(axis=(0, 2, 3)))


def test_max_pool_gradient_goes_to_first_maximum_of_a_tie():
    x = jl.tensor(np.array([[[[1.0, 5.0], [5.0, 2.0]]]]))
    with jl.GradientTape() as tape:
        tape.watch(x)
        y = F.sum(F.max_pool2d(x, 2))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[[[0.0, 1.0], [0.0, 0.0]]]])


def test_max_pool_overlapping_windows_accumulate():
    x = jl.tensor(np.array([[[[1.0, 9.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]]]))
    with jl.GradientTape() as tape:
        tape.watch(x)
        y = F.sum(F.max_pool2d(x, 2, stride=1))  # 9 is the max of both top windows
    np.testing.assert_array_equal(tape.gradient(y, x).numpy()[0, 0], [[0, 2, 0], [0, 0, 0], [0, 1, 1]])


def test_avg_pool_gradient_spreads_evenly_and_counts_padding():
    x = jl.tensor(np.ones((1, 1, 2, 2)))
    with jl.GradientTape() as tape:
        tape.watch(x)
        y = F.avg_pool2d(x, 2, stride=2, padding=1)  # each window holds one real element of four
        total = F.sum(y)
    np.testing.assert_array_equal(y.numpy(), np.full((1, 1, 2, 2), 0.25))
    np.testing.assert_array_equal(tape.gradient(total, x).numpy(), np.full((1, 1, 2, 2), 0.25))


def test_second_derivative_through_conv2d():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 2, 4, 4)), rng.standard_normal((2, 2, 3, 3))
    check_grads(lambda a, b: F.mul(F.conv2d(a, b, stride=2, padding=1), F.conv2d(a, b, stride=2, padding=1)),
                x, w, order=2, rtol=1e-4, atol=1e-5)


def test_conv2d_channel_mismatch_names_op_and_shapes():
    with pytest.raises(OpError) as info:
        F.conv2d(jl.tensor(np.ones((1, 3, 5, 5))), jl.tensor(np.ones((2, 4, 3, 3))))
    text = str(info.value)
    assert "conv2d" in text and "[1,3,5,5]" in text and "(2, 4, 3, 3)" in text and "test_conv.py" in text


def test_conv2d_rejects_non_nchw_input():
    with pytest.raises(ValueError, match="4-d NCHW"):
        F.conv2d(jl.tensor(np.ones((3, 5, 5))), jl.tensor(np.ones((2, 3, 3, 3))))


def test_window_larger_than_input_is_an_error():
    with pytest.raises(ValueError, match="larger than the padded input"):
        F.conv2d(jl.tensor(np.ones((1, 1, 2, 2))), jl.tensor(np.ones((1, 1, 3, 3))))


def test_pool_padding_must_be_smaller_than_window():
    with pytest.raises(ValueError, match="padding"):
        F.max_pool2d(jl.tensor(np.ones((1, 1, 4, 4))), 2, padding=2)


@pytest.mark.parametrize("call, error, text", [
    (lambda x, w: F.conv2d(x, w, stride=0), ValueError, "conv2d stride must be positive, got 0"),
    (lambda x, w: F.conv2d(x, w, stride=(1, -1)), ValueError, "conv2d stride must be positive, got (1, -1)"),
    (lambda x, w: F.conv2d(x, w, padding=-1), ValueError, "conv2d padding must be non-negative, got -1"),
    (lambda x, w: F.conv2d(x, w, padding=1.5), TypeError, "conv2d padding must be an int or a pair of ints"),
    (lambda x, w: F.conv2d(x, w, np.ones(3)), ValueError, "conv2d bias must have shape (4,)"),
    (lambda x, w: F.max_pool2d(x, 0), ValueError, "max_pool2d size must be positive, got 0"),
    (lambda x, w: F.max_pool2d(x, 2, -1), ValueError, "max_pool2d stride must be positive, got -1"),
    (lambda x, w: F.max_pool2d(x, 2.5), TypeError, "max_pool2d size must be an int or a pair of ints, got 2.5"),
    (lambda x, w: F.avg_pool2d(x, (2, 2, 2)), TypeError, "avg_pool2d size must be an int or a pair of ints"),
    (lambda x, w: F.avg_pool2d(x, (0, 1)), ValueError, "avg_pool2d size must be positive, got (0, 1)"),
    (lambda x, w: jl.nn.Conv2D(3, 4, 3, stride=0), ValueError, "Conv2D stride must be positive"),
    (lambda x, w: jl.nn.MaxPool2D(2, padding=-1), ValueError, "MaxPool2D padding must be non-negative"),
])
def test_bad_window_parameters_name_the_op_and_the_value(call, error, text):
    """A stride of 0 was a division by zero, a negative padding a broadcasting error, a negative
    pooling stride or a float size a result: each is the user's error, named with the op."""
    x, w = jl.tensor(np.ones((2, 3, 5, 5))), jl.tensor(np.ones((4, 3, 3, 3)))
    with pytest.raises(error) as info:
        call(x, w)
    assert str(info.value).startswith(text)  # (an op's error quotes the source line: the table's text too)


def test_an_empty_batch_or_no_output_channels_give_empty_results():
    """A reshape sized with -1 failed on 0 elements (an empty batch through max pooling, a
    convolution with no output channels); the results are empty arrays, gradients too."""
    x, w = jl.tensor(np.ones((0, 3, 4, 4))), jl.Variable(np.ones((2, 3, 3, 3)))
    with jl.GradientTape() as tape:
        y = F.max_pool2d(F.conv2d(x, w, padding=1), 2, 1)
        loss = F.sum(y)
    assert y.shape == (0, 2, 3, 3) and tape.gradient(loss, w).numpy().tolist() == np.zeros((2, 3, 3, 3)).tolist()
    x2, w2 = jl.Variable(np.ones((2, 3, 5, 5))), jl.tensor(np.ones((0, 3, 3, 3)))
    with jl.GradientTape() as tape:
        loss = F.sum(F.conv2d(x2, w2))
    assert F.conv2d(x2, w2).shape == (2, 0, 3, 3) and not tape.gradient(loss, x2).numpy().any()
    assert F.avg_pool2d(np.ones((0, 1, 4, 4)), 2).shape == (0, 1, 2, 2)


def test_numpy_arrays_are_accepted():
    x, w = np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2))
    y = F.conv2d(x, w)
    assert isinstance(y, jl.Tensor)
    np.testing.assert_array_equal(y.numpy(), np.full((1, 1, 2, 2), 4.0))


def test_tiled_avg_pool_gradient_is_the_even_spread():
    # windows that tile the input take the one-broadcast path (a global pool has hundreds of taps)
    rng = np.random.default_rng(3)
    x = jl.Variable(rng.standard_normal((2, 3, 8, 8)))
    c = rng.standard_normal((2, 3, 2, 2))
    for size in (4, (8, 8)):
        with jl.GradientTape() as tape:
            y = F.sum(F.avg_pool2d(x, size) * (c if size == 4 else c[:, :, :1, :1]))
        side = 4 if size == 4 else 8
        cc = c if size == 4 else c[:, :, :1, :1]
        expected = np.repeat(np.repeat(cc, side, axis=2), side, axis=3) / (side * side)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-12)


def naive_conv2d_grad_input(g, w, x_shape, stride, padding):
    (sh, sw), (ph, pw) = _pair(stride), _pair(padding)
    n, c, h, wd = x_shape
    o, _, kh, kw = w.shape
    dx = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    for i in range(g.shape[2]):
        for j in range(g.shape[3]):
            dx[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw] += np.einsum("no,ochw->nchw", g[:, :, i, j], w)
    return dx[:, :, ph:ph + h, pw:pw + wd]


@given(conv_params)
def test_conv2d_input_gradient_matches_naive_loops(params):
    n, c, o, kh, kw, stride, padding, _, seed = params
    rng = np.random.default_rng(seed)
    ph, pw = _pair(padding)
    x = jl.Variable(rng.standard_normal((n, c, max(kh - 2 * ph, 1) + 3, max(kw - 2 * pw, 1) + 2)))
    w = jl.tensor(rng.standard_normal((o, c, kh, kw)))
    with jl.GradientTape() as tape:
        y = F.conv2d(x, w, stride=stride, padding=padding)
        g = rng.standard_normal(y.shape)
        loss = F.sum(y * g)
    want = naive_conv2d_grad_input(g, w.numpy(), x.shape, stride, padding)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), want, rtol=1e-10, atol=1e-10)


def naive_max_pool_scatter(g, x, k):
    """g routed to each k x k window's first argmax (np.argmax: the first NaN when there is one);
    every other position +0.0."""
    out = np.zeros(x.shape, dtype=g.dtype)
    for i in range(g.shape[2]):
        for j in range(g.shape[3]):
            win = x[:, :, i * k:(i + 1) * k, j * k:(j + 1) * k].reshape(x.shape[0], x.shape[1], -1)
            pos = np.argmax(win, axis=-1)
            for n in range(x.shape[0]):
                for c in range(x.shape[1]):
                    di, dj = divmod(int(pos[n, c]), k)
                    out[n, c, i * k + di, j * k + dj] = g[n, c, i, j]
    return out


@given(st.sampled_from([np.float16, np.float32, np.float64]), st.sampled_from([2, 3]),
       st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_tiled_max_pool_gradient_is_the_naive_routing_bit_for_bit(dtype, k, with_max, nans, seed):
    # the tiled path routes g with a bit mask: every bit of g (-0.0, inf, NaN payloads) must come
    # through at the first maximum, and every other position must be +0.0, with and without the
    # forward's output passed in (max_pool2d's gradient rule passes it)
    from janus_like.ops.conv import _max_pool2d, _max_pool2d_scatter
    rng = np.random.default_rng(seed)
    x = np.maximum(rng.integers(-2, 3, (2, 3, 2 * k, 3 * k)), 0).astype(dtype)  # many ties, at 0 and above
    if nans:
        x[rng.random(x.shape) < 0.1] = np.nan
    g = rng.standard_normal((2, 3, 2, 3)).astype(dtype)
    g.flat[:3] = (-0.0, np.inf, np.nan)
    params = dict(size=(k, k), stride=(k, k), padding=(0, 0))
    best = (_max_pool2d(np, x, **params),) if with_max else ()
    got = _max_pool2d_scatter(np, g, x, *best, **params)
    want = naive_max_pool_scatter(g, x, k)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(bits), want.view(bits))


def naive_cols(x, size, stride, padding):
    """The im2col matrix (C*kh*kw, OH*OW*N) by one window at a time from np.pad's padding."""
    (kh, kw), (sh, sw), (ph, pw) = size, stride, padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, c = x.shape[:2]
    oh, ow = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    cols = np.empty((c, kh, kw, oh, ow, n), x.dtype)
    for r in range(oh):
        for q in range(ow):
            cols[:, :, :, r, q, :] = xp[:, :, r * sh:r * sh + kh, q * sw:q * sw + kw].transpose(1, 2, 3, 0)
    return cols.reshape(c * kh * kw, oh * ow * n)


@given(st.sampled_from([np.float16, np.float32, np.float64]), st.integers(1, 3), st.integers(1, 3),
       st.integers(1, 4), st.integers(1, 4), st.tuples(st.integers(1, 3), st.integers(1, 3)),
       st.tuples(st.integers(1, 3), st.integers(1, 3)), st.tuples(st.integers(0, 2), st.integers(0, 2)),
       st.integers(0, 2**32 - 1))
def test_im2col_is_the_window_by_window_matrix_bit_for_bit(dtype, n, c, dh, dw, size, stride, padding, seed):
    from janus_like.ops.conv import _cols

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, max(size[0] - 2 * padding[0], 1) + dh - 1,
                             max(size[1] - 2 * padding[1], 1) + dw - 1)).astype(dtype)
    x.flat[rng.integers(0, x.size, 3)] = [-0.0, np.nan, np.inf]
    got = _cols(np, x, size, stride, padding)[0]
    want = naive_cols(x, size, stride, padding)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(f"u{x.itemsize}"), want.view(f"u{x.itemsize}"))


@given(st.integers(1, 2), st.integers(8, 10), st.integers(1, 3), st.sampled_from([(1, 1), (3, 3), (3, 5), (5, 1)]),
       st.integers(0, 2**32 - 1))
def test_same_conv_input_gradient_as_a_flipped_convolution_matches_naive_loops(n, c, o, kernel, seed):
    # stride 1, "same" padding, 8+ input channels: the input gradient is computed as a
    # convolution of g with the flipped, channel-swapped kernel instead of col2im
    rng = np.random.default_rng(seed)
    kh, kw = kernel
    padding = ((kh - 1) // 2, (kw - 1) // 2)
    x = jl.Variable(rng.standard_normal((n, c, 5, 4)))
    w = jl.tensor(rng.standard_normal((o, c, kh, kw)))
    with jl.GradientTape() as tape:
        y = F.conv2d(x, w, padding=padding)
        g = rng.standard_normal(y.shape)
        loss = F.sum(y * g)
    got = tape.gradient(loss, x).numpy()
    np.testing.assert_allclose(got, naive_conv2d_grad_input(g, w.numpy(), x.shape, 1, padding), rtol=1e-10, atol=1e-10)
    assert got.shape == x.shape and got.flags.c_contiguous


@pytest.mark.parametrize("stride, padding, c", [(1, 1, 8), (1, 0, 3), (2, 1, 8)])
def test_conv_kernels_return_c_ordered_arrays(stride, padding, c):
    # a strided gradient would make the updated weight strided, and NumPy's products round
    # differently on strided operands: eager and jit runs must see the same layouts
    rng = np.random.default_rng(0)
    x = jl.Variable(rng.standard_normal((2, c, 6, 6)).astype(np.float32))
    w = jl.Variable(rng.standard_normal((4, c, 3, 3)).astype(np.float32))
    with jl.GradientTape() as tape:
        y = F.conv2d(x, w, stride=stride, padding=padding)
        loss = F.sum(y * y)
    gx, gw = tape.gradient(loss, [x, w])
    for a in (y, gx, gw):
        assert a.numpy().flags.c_contiguous and a.dtype == np.float32


@pytest.mark.parametrize("block_bytes", [1, 6000, 9000])
def test_the_input_gradient_built_in_blocks_of_rows_matches_naive_loops(monkeypatch, block_bytes):
    # the flipped-kernel form lays out and multiplies its im2col matrix in blocks of output rows
    # when the matrix is large; small thresholds here make blocks of 1 row, of several rows and a
    # shorter last block
    from janus_like.ops import conv

    monkeypatch.setattr(conv, "ROWS_BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(block_bytes)
    x = jl.Variable(rng.standard_normal((2, 8, 7, 5)).astype(np.float32))
    w = jl.tensor(rng.standard_normal((3, 8, 3, 3)).astype(np.float32))
    with jl.GradientTape() as tape:
        y = F.conv2d(x, w, padding=1)
        g = rng.standard_normal(y.shape).astype(np.float32)
        loss = F.sum(y * g)
    got = tape.gradient(loss, x).numpy()
    want = naive_conv2d_grad_input(g.astype(np.float64), w.numpy().astype(np.float64), x.shape, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert got.dtype == np.float32 and got.flags.c_contiguous


@pytest.mark.parametrize("stride, padding, c", [(1, 1, 8), (1, 0, 3), (2, 1, 4), (1, 2, 2)])
def test_products_in_pieces_give_the_convolution_and_both_gradients(monkeypatch, stride, padding, c):
    # tiny thresholds put every float32 product in pieces (columns, or the weight gradient's
    # inner dimension), with a shorter last piece; float64 references
    from janus_like.ops import conv

    monkeypatch.setattr(conv, "SMALL_GEMM_MACS", 60)
    monkeypatch.setattr(conv, "MIN_PIECE_COLUMNS", 1)
    monkeypatch.setattr(conv, "MIN_PIECE_INNER", 1)
    monkeypatch.setattr(conv, "ROWS_BLOCK_BYTES", 3000)
    rng = np.random.default_rng(c)
    x64, w64 = rng.standard_normal((2, c, 7, 6)), rng.standard_normal((3, c, 3, 3))
    x, w = jl.Variable(x64.astype(np.float32)), jl.Variable(w64.astype(np.float32))
    with jl.GradientTape() as tape:
        y = F.conv2d(x, w, stride=stride, padding=padding)
        g = rng.standard_normal(y.shape)
        loss = F.sum(y * g.astype(np.float32))
    gx, gw = tape.gradient(loss, [x, w])
    tol = dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y.numpy(), naive_conv2d(x.numpy(), w.numpy(), None, stride, padding), **tol)
    np.testing.assert_allclose(gx.numpy(), naive_conv2d_grad_input(g, w.numpy(), x.shape, stride, padding), **tol)
    with jl.GradientTape() as tape:  # the float64 kernels never take pieces: the reference
        loss64 = F.sum(F.conv2d(jl.tensor(x.numpy().astype(np.float64)), w64v := jl.Variable(w.numpy().astype(np.float64)),
                                stride=stride, padding=padding) * g)
    np.testing.assert_allclose(gw.numpy(), tape.gradient(loss64, w64v).numpy(), **tol)
    assert all(a.dtype == np.float32 and a.numpy().flags.c_contiguous for a in (y, gx, gw))
