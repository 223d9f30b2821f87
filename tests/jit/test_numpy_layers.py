"""Hand-written NumPy layers, side by side with eager: a convolution that pads with `np.pad`
and takes its windows with `np.einsum`, an embedding gradient accumulated with `np.add.at`
(repeated rows: eager's order of additions, bit for bit), `np.mean` of a list of Python
numbers, and an accuracy counter kept in a dict."""
import numpy as np

import janus_like as jl
from janus_like import F

from .harness import check, fallback_reasons, random_array


class Net:
    def __init__(self):
        r = np.random.default_rng(0)
        self.k = r.standard_normal((4, 9)) * 0.3
        self.w = r.standard_normal((4 * 36, 5)) * 0.05
        self.emb_grad = np.zeros((10, 5))
        self.stats = {"seen": 0, "correct": 0}


def conv_step(net, x, y, ids):
    n, h, w = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, i:i + h, j:j + w] for i in range(3) for j in range(3)], axis=-1)
    a = np.maximum(np.einsum("nhwk,fk->nfhw", cols, net.k), 0)
    feats = a.reshape(n, 4, 6, 2, 6, 2).max(axis=(3, 5)).reshape(n, -1)
    logits = feats @ net.w
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    net.stats["seen"] += n
    net.stats["correct"] += int((np.argmax(p, axis=1) == y).sum())
    d = p.copy()
    d[np.arange(n), y] -= 1
    np.add.at(net.emb_grad, ids, d / n)  # repeated ids: each occurrence added, in order
    net.w -= 0.05 * (feats.T @ d)
    return float(-np.log(p[np.arange(n), y]).mean()), np.mean([net.stats["correct"], n, 0.5])


def _calls(n):
    def call(net, k):
        r = np.random.default_rng(k)
        return net, r.standard_normal((6, 12, 12)), r.integers(0, 5, 6), np.array([1, 3, 1, 1, 9, 3])
    return [lambda s, k=k: call(s["net"], k) for k in range(n)]


def test_a_numpy_convolution_step_with_pad_and_add_at_runs_as_a_graph():
    jf = check(lambda: (conv_step, {"net": Net()}), _calls(12), min_graph_calls=6)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def padded_loss(x, w):
    with jl.GradientTape() as tape:
        h = np.pad(x * w, ((0, 0), (2, 1))) @ np.ones((8, 2))
        loss = F.sum(h * h)
    return loss, tape.gradient(loss, w)


def test_gradients_through_pad_under_a_tape():
    def make():
        return padded_loss, {"w": jl.Variable(np.linspace(-1.0, 1.0, 5))}

    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal((3, 5)), s["w"]) for k in range(8)]
    check(make, calls, min_graph_calls=4)


def padded_tokens(st, seqs, x):
    """Token sequences padded to one length with a padding token (`constant_values=-1`), a
    mask made from it, and a float border; `np.empty_like` filled before it is read."""
    longest = max(len(s) for s in seqs)
    ids = np.stack([np.pad(s, (0, longest - len(s)), constant_values=-1) for s in seqs])
    mask = ids >= 0
    emb = st["E"][np.where(mask, ids, 0)] * mask[..., None]
    border = np.pad(x, 1, constant_values=0.5)
    out = np.empty_like(x)
    out[...] = x * 2.0
    st["E"] *= 0.99
    return emb.sum((0, 1)), ids, border, out


def test_padding_with_a_constant_and_empty_like():
    def call(s, k):
        r = np.random.default_rng(k)
        return s, [r.integers(0, 6, n) for n in (2 + k % 3, 4, 1 + k % 2)], r.standard_normal((2, 3))

    jf = check(lambda: (padded_tokens, {"E": random_array(1, (6, 3))}), [lambda s, k=k: call(s, k) for k in range(10)],
               min_graph_calls=5)
    assert "unsupported-call" not in fallback_reasons(jf), jf.explain()


def test_add_at_with_other_numpy_forms_stays_eager_or_agrees():
    # np.add.at on a Tensor, and np.subtract.at: no graph op; eager runs them
    def f(x, ids):
        t = np.zeros(4)
        np.subtract.at(t, ids, x)
        return t

    jf = check(lambda: (f, None), [lambda s, k=k: (np.arange(3.0) * k, np.array([0, 0, 2])) for k in range(6)],
               min_graph_calls=0)
    assert fallback_reasons(jf) == {"unsupported-call"}, jf.explain()


def causal_scores(x):
    t = x.shape[0]
    mask = np.triu(np.ones((t, t), dtype=bool), 1)  # no graph op, but constants in: folded
    s = np.where(mask, -1e9, x @ x.T)
    s = s - s.max(axis=1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=1, keepdims=True)


def test_numpy_functions_of_constants_fold_at_generation():
    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal((5, 3)),) for k in range(8)]
    jf = check(lambda: (causal_scores, None), calls, min_graph_calls=4)
    assert fallback_reasons(jf) == set(), jf.explain()


def iou(a, b):
    x1, y1 = np.maximum(a[:, None, 0], b[None, :, 0]), np.maximum(a[:, None, 1], b[None, :, 1])
    x2, y2 = np.minimum(a[:, None, 2], b[None, :, 2]), np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)

    def area(r):
        return (r[:, 2] - r[:, 0]) * (r[:, 3] - r[:, 1])

    return inter / (area(a)[:, None] + area(b)[None, :] - inter + 1e-9)


def loss_fn(state, pred, gt, cls_logits, labels):
    m = iou(pred, gt)
    best = m.max(axis=1)
    pos = best > 0.3
    d = pred - gt[m.argmax(axis=1)]
    ad = np.abs(d)
    smooth = np.where(ad < 1.0, 0.5 * d * d, ad - 0.5).sum(axis=1)
    box_loss = (smooth * pos).sum() / max(1, int(pos.sum()))
    losses = []
    for c in range(cls_logits.shape[1]):
        z = cls_logits[:, c]
        y = (labels == c).astype(float)
        losses.append(np.mean(np.logaddexp(0, z) - y * z))
    cls_loss = sum(losses) / len(losses)
    top = np.argsort(-best)[:3]
    state["seen"] += 1
    return box_loss + cls_loss, int(pos.sum()), top


def _boxes(rng, n):
    xy = rng.uniform(0, 10, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(1, 4, (n, 2))], axis=1)


def test_a_detection_loss_with_logaddexp_argsort_and_python_numbers():
    # np.logaddexp (softplus), np.argsort (top-k), max(1, int(...)) and sum() of a list of losses
    def call(s, k):
        rng = np.random.default_rng(k % 4)
        return s, _boxes(rng, 6), _boxes(rng, 4), rng.standard_normal((6, 3)), rng.integers(0, 3, 6)

    jf = check(lambda: (loss_fn, {"seen": 0}), [lambda s, k=k: call(s, k) for k in range(12)], min_graph_calls=6)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def augmented_step(w, x, y, flip_first):
    """Augmentation in the step: a boolean-mask write, np.roll, np.flip (a view), a flip chosen
    by the global RNG; then a gradient step through the augmented batch. (A write through a
    flipped view stays eager: `flipped_write`.)"""
    x = x.copy()
    x[x < -1.5] = 0.0
    if np.random.rand() < 0.5:
        x = np.flip(x, axis=1)
    x = np.roll(x, 1, axis=0)
    x = np.roll(x, (2, -1), (0, 1)) if flip_first else np.flip(x)
    with jl.GradientTape() as tape:
        z = np.roll(x @ w, -1) + np.flip(w, 0)[:1]
        loss = F.mean((z - np.eye(3)[y]) ** 2)
    w.assign_sub(0.1 * tape.gradient(loss, w))
    return loss


def flipped_write(x):
    y = np.flip(x, 0)
    y[0] = 5.0  # writes x's last row, as NumPy's view does
    return x.sum(), y


def test_roll_and_flip_in_an_augmented_step():
    r = np.random.default_rng(2)
    data = [(r.standard_normal((6, 3)), r.integers(0, 3, 6)) for _ in range(4)]

    def make():
        return augmented_step, {"w": jl.Variable(np.random.default_rng(0).standard_normal((3, 3)) * 0.3)}

    jf = check(make, [lambda s, k=k: (s["w"],) + data[k % 4] + (k % 5 < 3,) for k in range(20)], min_graph_calls=10)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()
    jf = check(lambda: (flipped_write, {}), [lambda s, k=k: (np.arange(6.0).reshape(3, 2) + k,) for k in range(8)],
               min_graph_calls=0)
    assert fallback_reasons(jf) == {"view-write"}, jf.explain()


def beam_step(h, w, k):
    logp = h @ w
    logp = logp - np.log(np.exp(logp).sum())
    top = np.argpartition(-logp, k)[:k]  # NumPy's introselect: its order within each side too
    top = top[np.argsort(-logp[top])]
    halves = np.argpartition(logp, [1, len(logp) - 2])
    return [(int(i), float(logp[i])) for i in top], halves


def test_a_beams_top_k_with_argpartition():
    w = np.random.default_rng(9).standard_normal((4, 10))
    calls = [lambda s, i=i: (random_array(i, (4,)), w, 3) for i in range(10)]
    jf = check(lambda: (beam_step, None), calls, min_graph_calls=5)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def safe_ratios(st, x):
    b = np.where(np.abs(x) > 0.5, x, 0.0)
    q = np.divide(st["w"], b, out=np.zeros_like(st["w"]), where=b != 0)  # the safe division idiom
    p = np.abs(x) / np.abs(x).sum()
    p[0] = 0.0
    entropy = -np.sum(p * np.log(p, out=np.zeros_like(p), where=p > 0))
    np.sqrt(x, out=st["r"], where=x > 0)  # into the state: its old values where x <= 0
    st["w"] -= 0.01 * q
    return q, entropy, st["r"].copy()


def test_ufuncs_with_where_and_out():
    """`np.divide(a, b, out=np.zeros_like(a), where=b != 0)` and `np.log(p, out=..., where=p > 0)`:
    the ufunc only where the mask holds (no division by zero and no warning elsewhere, as in
    eager), `out`'s values elsewhere (they kept the step eager)."""
    jf = check(lambda: (safe_ratios, {"w": random_array(0, (4,)), "r": np.zeros(4)}),
               [lambda s, k=k: (s, random_array(k, (4,))) for k in range(10)], min_graph_calls=5)
    assert "unsupported-call" not in fallback_reasons(jf), jf.explain()


def stacked(st, x):
    a = np.hstack([x, x * 2])
    b = np.hstack([x.reshape(2, 2), np.ones((2, 1))])
    c = np.vstack([x, x + 1, st["w"]])
    d = np.vstack((x.reshape(2, 2), x.reshape(2, 2)))
    e = np.moveaxis(np.arange(24.0).reshape(2, 3, 4) * x[0], 0, -1)
    f = np.moveaxis(np.ones((2, 3, 4)) * x[1], [0, 1], [-1, -2])
    st["w"] -= 0.1 * np.ravel(c[:1])
    y = np.select([x < -0.5, x > 0.5], [x * 2, x ** 2], default=0.0)
    return a, b, c, d, e, f, np.ravel(x.reshape(2, 2).T), y, np.vdot(x, st["w"]), np.column_stack([x, x * 3])


def test_hstack_vstack_moveaxis_ravel_and_select():
    """They had no graph op (the step stayed eager); `np.select`, `np.vdot`, `np.column_stack`
    are NumPy's own functions as nodes."""
    jf = check(lambda: (stacked, {"w": random_array(0, (4,))}),
               [lambda s, k=k: (s, random_array(k, (4,))) for k in range(8)], min_graph_calls=4)
    assert "unsupported-call" not in fallback_reasons(jf), jf.explain()


def by_length(st, lengths, x):
    order = np.lexsort((np.arange(len(lengths)), -lengths))  # longest first, ties by position
    st["w"] = st["w"] * 0.99
    return order, x[order] * st["w"], np.lexsort([lengths, lengths % 2])


def test_lexsort_orders_a_batch_by_length():
    """`np.lexsort` is NumPy's own function as a node (it kept the step eager)."""
    jf = check(lambda: (by_length, {"w": np.ones(3)}),
               [lambda s, k=k: (s, np.array([3, 1, 3, 2, 5]) + k % 3, random_array(k, (5, 3))) for k in range(8)],
               min_graph_calls=4)
    assert "unsupported-call" not in fallback_reasons(jf), jf.explain()
