"""Binary TreeLSTM (Tai et al. 2015, the N-ary Tree-LSTM with N = 2) over random binary trees.

Batch = one tree; 8 distinct tree shapes with 16 leaves on average are cycled through (the same
`Node` / `Tree` objects and generator as `tree_rnn`). Embedding and hidden size 64, vocabulary
500, 5 classes, SGD lr 0.05.

    leaf:      i, o, u = split(x @ W_leaf + b_leaf);     c = s(i) * tanh(u);  h = s(o) * tanh(c)
    internal:  i, f_l, f_r, o, u = split([h_l; h_r] @ U + b)
               c = s(i) * tanh(u) + s(f_l) * c_l + s(f_r) * c_r;             h = s(o) * tanh(c)

The root's h feeds a linear classifier with softmax cross-entropy. The janus_like encoder
recurses over Python `Node` objects, returning (h, c) tuples; the hand-written NumPy step
recurses the same way forward and backward, caching each node's gates.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F, optim

from ._common import glorot_uniform, janus_stepper, next_batch, sgd_, sigmoid, softmax_cross_entropy
from .tree_rnn import random_trees

FULL = dict(vocab=500, embed=64, hidden=64, classes=5, leaves=(10, 22), n_trees=8)
QUICK = dict(vocab=20, embed=6, hidden=8, classes=5, leaves=(3, 7), n_trees=4)
LR = 0.05
NAMES = ("emb", "w_leaf", "b_leaf", "u", "b", "w_out", "b_out")


def available():
    return None


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    v, e, h, k = cfg["vocab"], cfg["embed"], cfg["hidden"], cfg["classes"]
    params = {
        "emb": (rng.standard_normal((v, e)) * 0.5).astype(np.float32),
        "w_leaf": glorot_uniform(rng, (e, 3 * h), e, 3 * h),
        "b_leaf": np.zeros(3 * h, np.float32),
        "u": glorot_uniform(rng, (2 * h, 5 * h), 2 * h, 5 * h),
        "b": np.zeros(5 * h, np.float32),
        "w_out": glorot_uniform(rng, (h, k), h, k),
        "b_out": np.zeros(k, np.float32),
    }
    return {"params": params, "batches": random_trees(rng, cfg, v, k), "lr": LR, "step": 0, "config": cfg}


def numpy_step(state):
    p, lr = state["params"], state["lr"]
    (tree,) = next_batch(state)
    hid = p["b"].shape[0] // 5
    cache = {}  # id(node) -> what the backward pass needs; the trees stay untouched

    def forward(node):
        if node.is_leaf:
            x = p["emb"][node.word]
            z = x @ p["w_leaf"] + p["b_leaf"]
            i, o, u = sigmoid(z[:hid]), sigmoid(z[hid:2 * hid]), np.tanh(z[2 * hid:])
            c = i * u
            tc = np.tanh(c)
            cache[id(node)] = (x, i, o, u, tc)
            return o * tc, c
        h_l, c_l = forward(node.left)
        h_r, c_r = forward(node.right)
        both = np.concatenate([h_l, h_r])
        z = both @ p["u"] + p["b"]
        i, f_l, f_r, o = (sigmoid(z[k * hid:(k + 1) * hid]) for k in range(4))
        u = np.tanh(z[4 * hid:])
        c = i * u + f_l * c_l + f_r * c_r
        tc = np.tanh(c)
        cache[id(node)] = (both, c_l, c_r, i, f_l, f_r, o, u, tc)
        return o * tc, c

    grads = {name: np.zeros_like(a) for name, a in p.items()}

    def backward(node, dh, dc):
        if node.is_leaf:
            x, i, o, u, tc = cache[id(node)]
            dc = dc + dh * o * (1 - tc * tc)
            dz = np.concatenate([dc * u * i * (1 - i), dh * tc * o * (1 - o), dc * i * (1 - u * u)])
            grads["w_leaf"] += np.outer(x, dz)
            grads["b_leaf"] += dz
            grads["emb"][node.word] += p["w_leaf"] @ dz
            return
        both, c_l, c_r, i, f_l, f_r, o, u, tc = cache[id(node)]
        dc = dc + dh * o * (1 - tc * tc)
        dz = np.concatenate([dc * u * i * (1 - i), dc * c_l * f_l * (1 - f_l), dc * c_r * f_r * (1 - f_r),
                             dh * tc * o * (1 - o), dc * i * (1 - u * u)])
        grads["u"] += np.outer(both, dz)
        grads["b"] += dz
        dboth = p["u"] @ dz
        backward(node.left, dboth[:hid], dc * f_l)
        backward(node.right, dboth[hid:], dc * f_r)

    root_h, _ = forward(tree.root)
    logits = (root_h @ p["w_out"] + p["b_out"])[None, :]
    loss, dlogits = softmax_cross_entropy(logits, tree.label)
    grads["w_out"] = np.outer(root_h, dlogits[0])
    grads["b_out"] = dlogits[0]
    backward(tree.root, p["w_out"] @ dlogits[0], np.zeros(hid, np.float32))
    sgd_(p, grads, lr)
    return float(loss)


class TreeLSTM:
    """The encoder: parameters as attributes, one method per node kind, recursion in Python."""

    def __init__(self, emb, w_leaf, b_leaf, u, b):
        self.emb, self.w_leaf, self.b_leaf, self.u, self.b = emb, w_leaf, b_leaf, u, b

    def leaf(self, word):
        i, o, u = F.split(self.emb[word] @ self.w_leaf + self.b_leaf, 3)
        c = F.sigmoid(i) * np.tanh(u)
        return F.sigmoid(o) * np.tanh(c), c

    def combine(self, left, right):
        h_l, c_l = left
        h_r, c_r = right
        i, f_l, f_r, o, u = F.split(np.concatenate([h_l, h_r]) @ self.u + self.b, 5)
        c = F.sigmoid(i) * np.tanh(u) + F.sigmoid(f_l) * c_l + F.sigmoid(f_r) * c_r
        return F.sigmoid(o) * np.tanh(c), c

    def encode(self, node):
        if node.is_leaf:
            return self.leaf(node.word)
        return self.combine(self.encode(node.left), self.encode(node.right))


def janus_step(state, jit=None):
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    encoder = TreeLSTM(v["emb"], v["w_leaf"], v["b_leaf"], v["u"], v["b"])
    w_out, b_out = v["w_out"], v["b_out"]
    lr = state["lr"]
    opt = optim.SGD(lr)  # plain SGD: var -= lr * grad

    def train_step(tree):
        with jl.GradientTape() as tape:
            h, _ = encoder.encode(tree.root)
            logits = F.reshape(h @ w_out + b_out, (1, -1))
            loss = F.cross_entropy(logits, tree.label)
        params = [encoder.emb, encoder.w_leaf, encoder.b_leaf, encoder.u, encoder.b, w_out, b_out]
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return janus_stepper(train_step, state["batches"], v, jit)
