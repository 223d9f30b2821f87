"""Helpers shared by the model files: steppers, initialisation and hand-written NumPy layers.

A *stepper* is what every system's builder returns: calling it runs one training step on the
next batch and returns the loss as a float; `parameters()` gives the current parameter values as
NumPy arrays (for the correctness checks); `stats()` gives the JIT's statistics when there are any;
`work()` gives the units of work done so far (the RL models: environment steps), or None where
every step does the same work.
"""
from __future__ import annotations

import numpy as np


class Stepper:
    """Runs `fn(*batches[i % len(batches)])` on call i and returns the loss as a float."""

    def __init__(self, fn, batches, parameters, system, work=None):
        self.fn = fn
        self.batches = batches
        self._parameters = parameters  # () -> {name: ndarray}
        self.system = system
        self.calls = 0
        self._work = work  # () -> units of work done so far, or None

    def __call__(self) -> float:
        batch = self.batches[self.calls % len(self.batches)]
        self.calls += 1
        return float(np.asarray(self.fn(*batch)))

    def parameters(self) -> dict:
        return self._parameters()

    def stats(self):
        stats = getattr(self.fn, "stats", None)
        return stats() if callable(stats) else None

    def work(self):
        """Units of work done so far (see the model's WORK_UNIT), or None."""
        return None if self._work is None else self._work()


def janus_stepper(train_step, batches, variables, jit=None):
    """A Stepper over janus_like `train_step`, wrapped with `jit` when given."""
    fn = train_step if jit is None else jit(train_step)
    return Stepper(fn, batches, lambda: {k: v.numpy().copy() for k, v in variables.items()},
                   "jit" if jit is not None else "eager")


def numpy_stepper(module, state):
    """A Stepper over `module.numpy_step(state)` (which picks its own batch)."""
    return Stepper(lambda: module.numpy_step(state), [()], lambda: state["params"], "numpy",
                   work=(lambda: state["work"]) if "work" in state else None)


def next_batch(state):
    """The batch for the state's current step; advances the step counter."""
    batch = state["batches"][state["step"] % len(state["batches"])]
    state["step"] += 1
    return batch


# models whose janus_like step makes host arrays itself (np.zeros for a recurrent state, an
# environment simulated in NumPy), so it cannot run on a GPU without changes to its code
HOST_ONLY = {"lstm_lm": "its step starts the LSTM state with np.zeros (a host array)",
             "reinforce": "its environment runs in NumPy on the host",
             "a2c": "its environment runs in NumPy on the host"}


def batches_on(batches, device):
    """The batches with every NumPy array moved to `device` (a GPU run's inputs live there)."""
    from janus_like import backend

    def move(x):
        if isinstance(x, np.ndarray):
            return backend.to_device(x, device)
        return type(x)(move(v) for v in x) if isinstance(x, (tuple, list)) else x

    return move(batches)


def he_normal(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def glorot_uniform(rng, shape, fan_in, fan_out):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, shape).astype(np.float32)


def sgd_(params, grads, lr):
    """In-place SGD on NumPy arrays: p -= lr * g for every name in grads."""
    for name, g in grads.items():
        params[name] -= lr * g


# ------------------------------------------------------------------ hand-written NumPy layers
def sigmoid(x):
    # the same formula as janus_like's sigmoid primitive, so float32 results match closely
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def softmax_cross_entropy(logits, labels):
    """Mean negative log-likelihood of integer `labels` (N,) under `logits` (N, C), and its
    gradient with respect to the logits. float32 in, float32 out."""
    n = logits.shape[0]
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    total = e.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    loss = -(z[rows, labels] - np.log(total[:, 0])).mean()
    dlogits = e / total
    dlogits[rows, labels] -= 1
    dlogits /= n
    return loss, dlogits


def conv2d_forward(x, w, b, padding, stride=1):
    """Cross-correlation, NCHW, as im2col + one matmul. Returns the output and the im2col matrix
    (C*kh*kw, N*Ho*Wo) for the backward pass.

    The columns are laid out (C, kh, kw | N, Ho, Wo) so the copy that builds them runs along
    whole image rows; the (N, Ho, Wo | C, kh, kw) layout copies 5 floats at a time and was 2-4x
    slower here."""
    if padding:
        x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c = x.shape[:2]
    o, _, kh, kw = w.shape
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    ho, wo = windows.shape[2:4]
    cols = windows.transpose(1, 4, 5, 0, 2, 3).reshape(c * kh * kw, n * ho * wo)
    out = (w.reshape(o, -1) @ cols).reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    return out + b[:, None, None], cols


def conv2d_backward(dout, cols, x_shape, w, padding, need_dx=True, stride=1):
    """Gradients of conv2d_forward for (x, w, b) given dout (N, O, Ho, Wo); dx is None unless
    `need_dx` (the first layer's input gradient is never used)."""
    n, c, h, wd = x_shape
    o, _, kh, kw = w.shape
    ho, wo = dout.shape[2:]
    d = dout.transpose(1, 0, 2, 3).reshape(o, -1)  # (O, N*Ho*Wo)
    dw = (d @ cols.T).reshape(w.shape)
    db = d.sum(axis=1)
    if not need_dx:
        return None, dw, db
    # col2im: each kernel tap adds its slice of the column gradient back into the padded input
    dcols = (w.reshape(o, -1).T @ d).reshape(c, kh, kw, n, ho, wo)
    dx = np.zeros((c, n, h + 2 * padding, wd + 2 * padding), dtype=dout.dtype)
    for i in range(kh):
        for j in range(kw):
            dx[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride] += dcols[:, i, j]
    dx = dx.transpose(1, 0, 2, 3)
    return (dx[:, :, padding:padding + h, padding:padding + wd] if padding else dx), dw, db


def max_pool2d_forward(x, size):
    """Non-overlapping max pooling (stride = size, NCHW). Returns the output and each window's
    first argmax (row-major inside the window, like PyTorch) for the backward pass."""
    n, c, h, w = x.shape
    oh, ow = h // size, w // size
    windows = (x[:, :, : oh * size, : ow * size].reshape(n, c, oh, size, ow, size)
               .transpose(0, 1, 2, 4, 3, 5).reshape(n, c, oh, ow, size * size))
    pos = windows.argmax(axis=-1)
    return np.take_along_axis(windows, pos[..., None], axis=-1)[..., 0], pos


def max_pool2d_backward(dout, pos, x_shape, size):
    """Each output gradient goes to its window's first maximum; everything else gets zero."""
    n, c, h, w = x_shape
    oh, ow = dout.shape[2:]
    onehot = pos[..., None] == np.arange(size * size)
    dwin = np.where(onehot, dout[..., None], np.float32(0))  # (N, C, OH, OW, size*size)
    dx = np.zeros(x_shape, dtype=dout.dtype)
    dx[:, :, : oh * size, : ow * size] = (dwin.reshape(n, c, oh, ow, size, size)
                                          .transpose(0, 1, 2, 4, 3, 5).reshape(n, c, oh * size, ow * size))
    return dx
