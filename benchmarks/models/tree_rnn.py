"""TreeRNN sentiment-style classifier over random binary trees (batch = one tree).

Trees are Python `Node` objects; 8 distinct shapes with 16 leaves on average are cycled through.
A leaf's state is its word's embedding row; an internal node's is
tanh([h_left; h_right] @ W + b); the root feeds a linear classifier over 5 classes with softmax
cross-entropy. Hidden size 64, vocabulary 500, SGD lr 0.05. Both the janus_like and the NumPy
steps recurse over the tree in Python: control flow that depends on the data, which a tracing
JIT cannot capture once for all inputs.
"""
from __future__ import annotations

import numpy as np

import janus_like as jl
from janus_like import F, optim

from ._common import glorot_uniform, janus_stepper, next_batch, sgd_, softmax_cross_entropy

FULL = dict(vocab=500, hidden=64, classes=5, leaves=(10, 22), n_trees=8)
QUICK = dict(vocab=20, hidden=8, classes=5, leaves=(3, 7), n_trees=4)
LR = 0.05
NAMES = ("emb", "w", "b", "w_out", "b_out")


class Node:
    """A binary tree node: a leaf has a `word` id, an internal node `left` and `right`."""

    def __init__(self, word=None, left=None, right=None):
        self.word = word
        self.left = left
        self.right = right
        self.is_leaf = word is not None

    def __repr__(self):
        return str(self.word) if self.is_leaf else f"({self.left!r} {self.right!r})"


class Tree:
    def __init__(self, root, label):
        self.root = root
        self.label = np.array([label])  # shape (1,): cross_entropy takes a batch of labels

    def __repr__(self):
        return f"Tree({self.root!r}, label={int(self.label[0])})"


def random_tree(rng, words):
    """A random binary tree over `words` (left to right), split points uniform."""
    if len(words) == 1:
        return Node(word=int(words[0]))
    split = int(rng.integers(1, len(words)))
    return Node(left=random_tree(rng, words[:split]), right=random_tree(rng, words[split:]))


def count_leaves(node):
    return 1 if node.is_leaf else count_leaves(node.left) + count_leaves(node.right)


def available():
    return None


def random_trees(rng, cfg, vocab, classes):
    """`cfg["n_trees"]` labelled trees with `cfg["leaves"]` (lo, hi) leaves of random words, as
    one-argument batches."""
    lo, hi = cfg["leaves"]
    trees = [Tree(random_tree(rng, rng.integers(0, vocab, int(rng.integers(lo, hi + 1)))), int(rng.integers(0, classes)))
             for _ in range(cfg["n_trees"])]
    return [(t,) for t in trees]


def one_off(state, cfg, seed):
    """`state` (a tree model's, its configuration `cfg`) training on cfg["n_trees"] trees that do
    not repeat, drawn from another seed than the model's."""
    state["batches"] = random_trees(np.random.default_rng(seed + 1000), cfg, cfg["vocab"], cfg["classes"])
    state["config"] = cfg
    return state


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    rng = np.random.default_rng(seed)
    v, h, k = cfg["vocab"], cfg["hidden"], cfg["classes"]
    params = {
        "emb": (rng.standard_normal((v, h)) * 0.5).astype(np.float32),
        "w": glorot_uniform(rng, (2 * h, h), 2 * h, h),
        "b": np.zeros(h, np.float32),
        "w_out": glorot_uniform(rng, (h, k), h, k),
        "b_out": np.zeros(k, np.float32),
    }
    return {"params": params, "batches": random_trees(rng, cfg, v, k), "lr": LR, "step": 0, "config": cfg}


def numpy_step(state):
    p, lr = state["params"], state["lr"]
    (tree,) = next_batch(state)
    hidden = p["b"].shape[0]
    cache = {}  # id(node) -> (concatenated children, node state); the trees stay untouched

    def forward(node):
        if node.is_leaf:
            return p["emb"][node.word]
        both = np.concatenate([forward(node.left), forward(node.right)])
        h = np.tanh(both @ p["w"] + p["b"])
        cache[id(node)] = (both, h)
        return h

    grads = {name: np.zeros_like(a) for name, a in p.items()}

    def backward(node, dh):
        if node.is_leaf:
            grads["emb"][node.word] += dh
            return
        both, h = cache[id(node)]
        da = dh * (1 - h * h)
        grads["w"] += np.outer(both, da)
        grads["b"] += da
        dboth = p["w"] @ da
        backward(node.left, dboth[:hidden])
        backward(node.right, dboth[hidden:])

    root = forward(tree.root)
    logits = (root @ p["w_out"] + p["b_out"])[None, :]
    loss, dlogits = softmax_cross_entropy(logits, tree.label)
    grads["w_out"] = np.outer(root, dlogits[0])
    grads["b_out"] = dlogits[0]
    backward(tree.root, p["w_out"] @ dlogits[0])
    sgd_(p, grads, lr)
    return float(loss)


def janus_step(state, jit=None):
    v = {name: jl.Variable(state["params"][name].copy(), name=name) for name in NAMES}
    emb, w, b, w_out, b_out = (v[name] for name in NAMES)
    lr = state["lr"]
    opt = optim.SGD(lr)  # plain SGD: var -= lr * grad

    def encode(node):
        if node.is_leaf:
            return emb[node.word]
        h_left = encode(node.left)
        h_right = encode(node.right)
        return np.tanh(np.concatenate([h_left, h_right]) @ w + b)

    def train_step(tree):
        with jl.GradientTape() as tape:
            h = encode(tree.root)
            logits = F.reshape(h @ w_out + b_out, (1, -1))
            loss = F.cross_entropy(logits, tree.label)
        params = [emb, w, b, w_out, b_out]
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return janus_stepper(train_step, state["batches"], v, jit)


def torch_step(state):
    import torch

    from ._torch import TorchStepper, to_torch

    t = {k: torch.tensor(a, requires_grad=True) for k, a in state["params"].items()}

    def encode(node):
        if node.is_leaf:
            return t["emb"][node.word]
        return torch.tanh(torch.cat([encode(node.left), encode(node.right)]) @ t["w"] + t["b"])

    def loss_fn(tree):
        logits = (encode(tree.root) @ t["w_out"] + t["b_out"])[None, :]
        return torch.nn.functional.cross_entropy(logits, to_torch(tree.label))

    return TorchStepper(loss_fn, t, state["batches"], state["lr"])


def jax_step(state):
    import jax
    import jax.numpy as jnp

    from ._jax import JaxStepper

    def encode(p, node):
        if node.is_leaf:
            return p["emb"][node.word]
        return jnp.tanh(jnp.concatenate([encode(p, node.left), encode(p, node.right)]) @ p["w"] + p["b"])

    def loss_fn(p, tree):
        logp = jax.nn.log_softmax(encode(p, tree.root) @ p["w_out"] + p["b_out"])
        return -logp[int(tree.label[0])]

    # one compiled step per distinct tree (8 shapes): jax.jit must retrace on structure
    return JaxStepper(loss_fn, state["params"], state["batches"], state["lr"], static_batch=True)
