"""share_im2col: a convolution and its weight gradient read one im2col matrix, bit for bit the
same results as the separate kernels, in eager-vs-jit runs and against the interpreter."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, optim

from jit.harness import call_sequence, random_array, side_by_side


def _make(stride, padding, k, channels):
    # 8 hidden channels: with k = 2 * padding + 1 the second convolution's input gradient takes
    # the flipped-kernel convolution form (ops/conv.py), here bit for bit against eager too
    def make():
        w = jl.Variable(random_array(1, (8, channels, k, k), np.float32) * 0.3, name="w")
        w2 = jl.Variable(random_array(2, (3, 8, k, k), np.float32) * 0.3, name="w2")
        opt = optim.SGD(0.05)

        def step(x):
            with jl.GradientTape() as tape:
                h = F.relu(F.conv2d(x, w, stride=stride, padding=padding))
                y = F.conv2d(h, w2, padding=padding)
                loss = F.mean(y * y)
            opt.apply_gradients(zip(tape.gradient(loss, [w, w2]), [w, w2]))
            return loss, h

        return step, {"w": w, "w2": w2}

    return make


@settings(deadline=None, max_examples=10)
@given(stride=st.sampled_from([1, 2]), padding=st.sampled_from([0, 1]), k=st.sampled_from([1, 3]),
       channels=st.sampled_from([1, 2]), n=st.sampled_from([1, 3]))
def test_a_conv_and_its_weight_gradient_share_im2col_exactly(stride, padding, k, channels, n):
    calls = call_sequence(6, lambda s, i: (jl.tensor(random_array(i, (n, channels, 9, 9), np.float32)),))
    for reassociate in (False, True):
        jf = side_by_side(_make(stride, padding, k, channels), calls, reassociate=reassociate)
        (g,) = jf.graphs()
        ops = [m.op for m in g.graph.nodes]
        # each conv shares one matrix with its weight gradient (side_by_side also checked the
        # plan against the interpreter)
        assert ops.count("im2col") == 2 and "conv2d_grad_weight" not in ops
        assert ops.count("conv2d_cols") == 2 and ops.count("conv2d_grad_weight_cols") == 2


@pytest.mark.parametrize("stride, padding", [(1, 1), (2, 0)])
def test_products_in_pieces_keep_eager_and_jit_bit_for_bit(monkeypatch, stride, padding):
    # the convolution kernels multiply in pieces (ops/conv.py); tiny thresholds make every product
    # take them here: eager and the graph (and the interpreter) must still agree exactly
    from janus_like.ops import conv

    monkeypatch.setattr(conv, "SMALL_GEMM_MACS", 100)
    monkeypatch.setattr(conv, "MIN_PIECE_COLUMNS", 1)
    monkeypatch.setattr(conv, "MIN_PIECE_INNER", 1)
    monkeypatch.setattr(conv, "ROWS_BLOCK_BYTES", 4000)
    calls = call_sequence(6, lambda s, i: (jl.tensor(random_array(i, (3, 2, 9, 9), np.float32)),))
    side_by_side(_make(stride, padding, 3, 2), calls, reassociate=False)
