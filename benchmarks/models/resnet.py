"""Small ResNet on synthetic 3x32x32 images, batch 8, 10 classes, SGD lr 0.01:

    stem conv(16, 3x3, pad 1) - relu
    stage 1: 2 residual blocks at 16 channels, 32x32
    conv(32, 3x3, stride 2, pad 1) - relu                 (downsample to 16x16)
    stage 2: 2 residual blocks at 32 channels, 16x16
    global average pool (avg_pool2d over the whole map) - linear 32->10 - softmax cross-entropy

A residual block is relu(x + conv(relu(conv(x)))), both convolutions 3x3 with padding 1 and no
normalisation (the second convolution starts small so the untrained net stays stable). The
janus_like model is Python objects: a `ResidualBlock` class and a list of blocks looped over in
`forward`. The hand-written NumPy step does convolution as im2col (`sliding_window_view`) + one
matmul, strided windows for the downsampling convolution, and col2im for input gradients.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F, optim

from ._common import (conv2d_backward, conv2d_forward, glorot_uniform, he_normal, janus_stepper, next_batch, sgd_,
                      softmax_cross_entropy)

FULL = dict(batch=8, size=32, widths=(16, 32), blocks=2, classes=10, n_batches=4)
QUICK = dict(batch=2, size=8, widths=(4, 8), blocks=1, classes=10, n_batches=2)
LR = 0.01


def available():
    if not (hasattr(F, "conv2d") and hasattr(F, "avg_pool2d")):
        return "janus_like.F has no conv2d / avg_pool2d yet"
    return None


def _names(cfg):
    names = ["stem_w", "stem_b", "down_w", "down_b"]
    for stage in range(2):
        for k in range(cfg["blocks"]):
            names += [f"s{stage}b{k}_{p}" for p in ("w1", "b1", "w2", "b2")]
    return names + ["fc_w", "fc_b"]


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    c0, c1 = cfg["widths"]
    params = {
        "stem_w": he_normal(rng, (c0, 3, 3, 3), 3 * 9), "stem_b": np.zeros(c0, np.float32),
        "down_w": he_normal(rng, (c1, c0, 3, 3), c0 * 9), "down_b": np.zeros(c1, np.float32),
    }
    for stage, c in enumerate((c0, c1)):
        for k in range(cfg["blocks"]):
            params[f"s{stage}b{k}_w1"] = he_normal(rng, (c, c, 3, 3), c * 9)
            params[f"s{stage}b{k}_b1"] = np.zeros(c, np.float32)
            params[f"s{stage}b{k}_w2"] = he_normal(rng, (c, c, 3, 3), c * 9) * np.float32(0.2)
            params[f"s{stage}b{k}_b2"] = np.zeros(c, np.float32)
    params["fc_w"] = glorot_uniform(rng, (c1, cfg["classes"]), c1, cfg["classes"])
    params["fc_b"] = np.zeros(cfg["classes"], np.float32)
    assert list(params) == _names(cfg)
    s = cfg["size"]
    batches = [(rng.standard_normal((cfg["batch"], 3, s, s)).astype(np.float32),
                rng.integers(0, cfg["classes"], cfg["batch"]))
               for _ in range(cfg["n_batches"])]
    return {"params": params, "batches": batches, "lr": LR, "step": 0, "config": cfg}


# ------------------------------------------------------------------ hand-written NumPy
def numpy_step(state):
    p, lr = state["params"], state["lr"]
    cfg = state["config"]
    x, y = next_batch(state)
    stages = [[f"s{stage}b{k}_" for k in range(cfg["blocks"])] for stage in range(2)]

    def block_forward(h, pre, tape):
        a1, cols1 = conv2d_forward(h, p[pre + "w1"], p[pre + "b1"], stride=1, padding=1)
        r1 = np.maximum(a1, 0)
        a2, cols2 = conv2d_forward(r1, p[pre + "w2"], p[pre + "b2"], stride=1, padding=1)
        s = h + a2
        out = np.maximum(s, 0)
        tape.append((pre, h.shape, a1, r1.shape, cols1, cols2, s))
        return out

    tape = []
    a0, cols0 = conv2d_forward(x, p["stem_w"], p["stem_b"], stride=1, padding=1)
    h = np.maximum(a0, 0)
    for pre in stages[0]:
        h = block_forward(h, pre, tape)
    down_in_shape = h.shape
    ad, colsd = conv2d_forward(h, p["down_w"], p["down_b"], stride=2, padding=1)
    h = np.maximum(ad, 0)
    for pre in stages[1]:
        h = block_forward(h, pre, tape)
    hw = h.shape[2] * h.shape[3]
    pooled = h.mean(axis=(2, 3))  # avg_pool2d over the whole map
    logits = pooled @ p["fc_w"] + p["fc_b"]
    loss, dlogits = softmax_cross_entropy(logits, y)

    grads = {"fc_w": pooled.T @ dlogits, "fc_b": dlogits.sum(0)}
    dh = np.broadcast_to((dlogits @ p["fc_w"].T)[:, :, None, None] / np.float32(hw), h.shape)

    def block_backward(dout, record):
        pre, x_shape, a1, r1_shape, cols1, cols2, s = record
        ds = dout * (s > 0)
        dr1, grads[pre + "w2"], grads[pre + "b2"] = conv2d_backward(ds, cols2, r1_shape, p[pre + "w2"], stride=1, padding=1)
        da1 = dr1 * (a1 > 0)
        dx, grads[pre + "w1"], grads[pre + "b1"] = conv2d_backward(da1, cols1, x_shape, p[pre + "w1"], stride=1, padding=1)
        return dx + ds

    for record in reversed(tape[len(stages[0]):]):
        dh = block_backward(dh, record)
    dad = dh * (ad > 0)
    dh, grads["down_w"], grads["down_b"] = conv2d_backward(dad, colsd, down_in_shape, p["down_w"], stride=2, padding=1)
    for record in reversed(tape[:len(stages[0])]):
        dh = block_backward(dh, record)
    da0 = dh * (a0 > 0)
    _, grads["stem_w"], grads["stem_b"] = conv2d_backward(da0, cols0, x.shape, p["stem_w"], stride=1, padding=1, need_dx=False)
    sgd_(p, grads, lr)
    return float(loss)


# ------------------------------------------------------------------ janus_like
class ResidualBlock:
    """relu(x + conv2(relu(conv1(x)))), 3x3 convolutions with padding 1."""

    def __init__(self, w1, b1, w2, b2):
        self.w1, self.b1, self.w2, self.b2 = w1, b1, w2, b2

    def __call__(self, x):
        h = F.relu(F.conv2d(x, self.w1, self.b1, stride=1, padding=1))
        return F.relu(x + F.conv2d(h, self.w2, self.b2, stride=1, padding=1))

    def parameters(self):
        return [self.w1, self.b1, self.w2, self.b2]


class ResNet:
    def __init__(self, v, cfg):
        self.stem_w, self.stem_b = v["stem_w"], v["stem_b"]
        self.down_w, self.down_b = v["down_w"], v["down_b"]
        self.fc_w, self.fc_b = v["fc_w"], v["fc_b"]
        self.stages = [[ResidualBlock(*(v[f"s{stage}b{k}_{p}"] for p in ("w1", "b1", "w2", "b2")))
                        for k in range(cfg["blocks"])] for stage in range(2)]

    def forward(self, x):
        h = F.relu(F.conv2d(x, self.stem_w, self.stem_b, stride=1, padding=1))
        for block in self.stages[0]:
            h = block(h)
        h = F.relu(F.conv2d(h, self.down_w, self.down_b, stride=2, padding=1))
        for block in self.stages[1]:
            h = block(h)
        h = F.avg_pool2d(h, (h.shape[2], h.shape[3]))  # global average pool: (N, C, 1, 1)
        h = F.reshape(h, (h.shape[0], h.shape[1]))
        return h @ self.fc_w + self.fc_b

    def parameters(self):
        params = [self.stem_w, self.stem_b]
        for block in self.stages[0]:
            params += block.parameters()
        params += [self.down_w, self.down_b]
        for block in self.stages[1]:
            params += block.parameters()
        return params + [self.fc_w, self.fc_b]


def janus_step(state, jit=None):
    cfg = state["config"]
    v = {name: jl.Variable(a.copy(), name=name) for name, a in state["params"].items()}
    model = ResNet(v, cfg)
    lr = state["lr"]
    opt = optim.SGD(lr)  # plain SGD: var -= lr * grad

    def train_step(x, y):
        with jl.GradientTape() as tape:
            loss = F.cross_entropy(model.forward(x), y)
        params = model.parameters()
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return janus_stepper(train_step, state["batches"], v, jit)
