"""Training steps written the way researchers write them, side by side with eager, each run
mostly as graphs (probes of this session; the first ran eagerly before `a if test else b` on a
graph value and handlers the warm-up entered were generated):
- a step with a warm-up + cosine learning rate, global-norm clipping, per-parameter weight decay,
  layers in a dict, dropout and a lazily created attribute.
- a VAE step: reparameterization with a Generator, a KL term, a beta warm-up with min(), a masked
  similarity matrix, an EMA in a dict.
- message passing over an adjacency dict with np.add.at, and polymorphic node classes.
- Python containers: enumerate(zip()), dict.get / setdefault, a defaultdict, any() of graph
  comparisons, round() and abs() of graph numbers.
- an epoch in one call: a Generator's permutation, minibatch slices, functools.partial, .item(),
  np.linalg.solve.
- a transformer-like block: layer norm by hand, a causal mask, softmax, dropout under a training
  flag, a learning rate from min() and max().
"""
import collections
import functools
import math

import numpy as np

import janus_like as jl
from janus_like import F, nn

from .harness import check, fallback_reasons, random_array


# -------------------- a step with a warm-up + cosine learning rate, global-norm clipping, per-parameter ...
class Net_p2:
    def __init__(self):
        r = np.random.default_rng(0)
        self.layers = {"in": jl.Variable((r.standard_normal((5, 16)) * 0.4).astype(np.float32)),
                       "mid": jl.Variable((r.standard_normal((16, 16)) * 0.3).astype(np.float32)),
                       "out": jl.Variable((r.standard_normal((16, 3)) * 0.3).astype(np.float32))}
        self.bias = jl.Variable(np.zeros(3, np.float32))
        self.bias_no_decay = True
        self.rng = np.random.default_rng(5)
        self.step = 0

def lr_at_p2(step, base=0.05, warm=4, total=30):
    if step < warm:
        return base * (step + 1) / warm
    return 0.5 * base * (1 + math.cos(math.pi * min(step - warm, total) / total))

def train_p2(net, x, y, max_norm=1.0):
    with jl.GradientTape() as tape:
        h = x
        for name, w in net.layers.items():
            h = h @ w
            if name != "out":
                h = F.relu(h)
                h = F.dropout(h, 0.2, rng=net.rng)
        loss = F.cross_entropy(h + net.bias, y)
    params = list(net.layers.values()) + [net.bias]
    grads = tape.gradient(loss, params)
    norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads))
    scale = max_norm / norm if norm > max_norm else 1.0
    lr = lr_at_p2(net.step)
    for p, g in zip(params, grads):
        decay = 0.0 if (p is net.bias and net.bias_no_decay) else 1e-3
        p.assign_sub(lr * (g * scale + decay * p))
    try:
        net.noise = 0.99 * net.noise + 0.01 * norm
    except AttributeError:
        net.noise = norm
    net.step += 1
    return loss, norm

def make_p2():
    return train_p2, {"net": Net_p2()}

def call_p2(s, k):
    r = np.random.default_rng(100 + k)
    return s["net"], r.standard_normal((8, 5)).astype(np.float32) * (3.0 if k % 7 == 3 else 1.0), r.integers(0, 3, 8)



def test_p2_idioms():
    """A step with a warm-up + cosine learning rate, global-norm clipping, per-parameter weight
    decay, layers in a dict, dropout and a lazily created attribute."""
    jf = check(make_p2, [lambda s, k=k: call_p2(s, k) for k in range(24)], min_graph_calls=14)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


# -------------------- a VAE step
class VAE_p7:
    def __init__(self):
        r = np.random.default_rng(0)
        self.p = {"enc": jl.Variable(r.standard_normal((6, 8)) * 0.3),
                  "mu": jl.Variable(r.standard_normal((8, 2)) * 0.3),
                  "lv": jl.Variable(r.standard_normal((8, 2)) * 0.3),
                  "dec": jl.Variable(r.standard_normal((2, 6)) * 0.3)}
        self.ema = {k: v.numpy().copy() for k, v in self.p.items()}
        self.rng = np.random.default_rng(3)
        self.step = 0

def train_p7(m, x):
    beta = min(1.0, m.step / 10)
    with jl.GradientTape() as tape:
        h = np.tanh(x @ m.p["enc"])
        mu, logvar = h @ m.p["mu"], h @ m.p["lv"]
        eps = m.rng.standard_normal(mu.shape)
        z = mu + np.exp(0.5 * logvar) * eps
        recon = z @ m.p["dec"]
        rec = F.mean((recon - x) ** 2)
        kl = -0.5 * F.mean(1 + logvar - mu ** 2 - np.exp(logvar))
        zn = z / np.sqrt(np.sum(z * z, axis=1, keepdims=True) + 1e-6)
        sim = zn @ zn.T - 2.0 * np.eye(len(x))
        con = F.mean(np.max(sim, axis=1))
        loss = rec + beta * kl + 0.1 * con
    grads = tape.gradient(loss, list(m.p.values()))
    for (k, v), g in zip(m.p.items(), grads):
        v.assign_sub(0.05 * g)
        m.ema[k] = 0.9 * m.ema[k] + 0.1 * v.numpy()
    m.step += 1
    return loss, beta

def make_p7():
    return train_p7, {"m": VAE_p7()}

def call_p7(s, k):
    return s["m"], np.random.default_rng(k % 4).standard_normal((5, 6))



def test_p7_idioms():
    """A VAE step: reparameterization with a Generator, a KL term, a beta warm-up with min(), a
    masked similarity matrix, an EMA in a dict."""
    jf = check(make_p7, [lambda s, k=k: call_p7(s, k) for k in range(25)], min_graph_calls=20)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


# -------------------- message passing over an adjacency dict with np.add.at, and polymorphic node classes
class Leaf_p8:
    def __init__(self, v): self.v = v
    def forward(self, W): return np.tanh(self.v @ W["leaf"])

class Pair_p8:
    def __init__(self, a, b): self.a, self.b = a, b
    def forward(self, W): return np.tanh((self.a.forward(W) + self.b.forward(W)) @ W["node"])

def gnn_p8(W, feats_p8, adj, tree):
    h = feats_p8 @ W["in"]
    for _ in range(2):
        msgs = np.zeros_like(h)
        src = [s for s, ns in adj.items() for _ in ns]
        dst = [d for s, ns in adj.items() for d in ns]
        np.add.at(msgs, dst, h[src])
        h = np.tanh(h + msgs @ W["msg"])
    return np.sum(h, axis=0) + tree.forward(W)

def make_p8():
    r_p8 = np.random.default_rng(0)
    W = {k: r_p8.standard_normal((4, 4)) * 0.4 for k in ("in", "msg", "leaf", "node")}
    return gnn_p8, {"W": W}

r_p8 = np.random.default_rng(1)
adjs_p8 = [{0: [1, 2], 1: [2], 2: [0], 3: [0, 1]}, {0: [3], 1: [0, 2, 3], 2: [], 3: [1]}]
trees_p8 = [Pair_p8(Leaf_p8(r_p8.standard_normal(4)),
                    Pair_p8(Leaf_p8(r_p8.standard_normal(4)), Leaf_p8(r_p8.standard_normal(4)))),
         Pair_p8(Leaf_p8(r_p8.standard_normal(4)), Leaf_p8(r_p8.standard_normal(4)))]
feats_p8 = [r_p8.standard_normal((4, 4)) for _ in range(6)]



def test_p8_idioms():
    """Message passing over an adjacency dict with np.add.at, and polymorphic node classes."""
    jf = check(make_p8, [lambda s, k=k: (s["W"], feats_p8[k % 6], adjs_p8[k % 2], trees_p8[(k // 2) % 2])
                         for k in range(24)], min_graph_calls=18)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


# -------------------- a transformer-like block
class Block_p11:
    def __init__(self, d=8):
        r = np.random.default_rng(0)
        self.Wq, self.Wk, self.Wv = (jl.Variable(r.standard_normal((d, d)) * 0.3) for _ in range(3))
        self.Wo = jl.Variable(r.standard_normal((d, 4)) * 0.3)
        self.g = jl.Variable(np.ones(d)); self.b = jl.Variable(np.zeros(d))
        self.training = True
        self.rng = np.random.default_rng(9)
        self.step = 0

def ln_p11(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b

def train_p11(m, x, y):
    T = x.shape[0]
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    with jl.GradientTape() as tape:
        h = ln_p11(x, m.g, m.b)
        q, k, v = h @ m.Wq, h @ m.Wk, h @ m.Wv
        s = (q @ k.T) / np.sqrt(q.shape[-1])
        s = np.where(mask, -1e9, s)
        a = np.exp(s - s.max(-1, keepdims=True))
        a = a / a.sum(-1, keepdims=True)
        if m.training:
            a = F.dropout(a, 0.1, rng=m.rng)
        h = x + a @ v
        loss = F.cross_entropy(h @ m.Wo, y)
    params = [m.Wq, m.Wk, m.Wv, m.Wo, m.g, m.b]
    lr = 0.05 * min(1.0, (m.step + 1) / 5) * max(0.1, 1 - m.step / 100)
    for p, gr in zip(params, tape.gradient(loss, params)):
        p.assign_sub(lr * gr)
    m.step += 1
    return loss

def make_p11():
    return train_p11, {"m": Block_p11()}

def call_p11(s, k):
    if k == 15:
        s["m"].training = False
    r = np.random.default_rng(k % 4)
    T = 5 if k % 3 else 6
    return s["m"], r.standard_normal((T, 8)), r.integers(0, 4, T)



def test_p11_idioms():
    """A transformer-like block: layer norm by hand, a causal mask, softmax, dropout under a
    training flag, a learning rate from min() and max()."""
    jf = check(make_p11, [lambda s, k=k: call_p11(s, k) for k in range(26)], min_graph_calls=20)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


# -------------------- Python containers
class Model_p12:
    def __init__(self):
        r_p12 = np.random.default_rng(0)
        self.w = jl.Variable(r_p12.standard_normal((4, 3)) * 0.3)
        self.counts = collections.defaultdict(int)
        self.cfg = {"lr": 0.1}

def step_p12(m, xs, ys):
    losses = []
    with jl.GradientTape() as tape:
        for i, (x, y) in enumerate(zip(xs, ys)):
            logits = x.astype(np.float64) @ m.w
            l = F.cross_entropy(logits[None], np.array([y]))
            losses.append(l * (1.0 + 0.1 * i))
        loss = sum(losses) / len(losses)
    g = tape.gradient(loss, m.w)
    m.w.assign_sub(m.cfg.get("lr", 0.01) * g)
    big = any(float(l) > 1.5 for l in losses)
    m.counts["big" if big else "small"] += 1
    m.cfg.setdefault("seen", 0)
    m.cfg["seen"] += 1
    feats = np.concatenate([x[None] for x in xs], axis=0)
    return round(float(loss), 4), abs(float(np.sum(feats))), big

def make_p12():
    return step_p12, {"m": Model_p12()}

r_p12 = np.random.default_rng(5)
data_p12 = [([r_p12.standard_normal(4).astype(np.float32) for _ in range(3)], [int(v) for v in r_p12.integers(0, 3, 3)])
            for _ in range(4)]


def test_p12_idioms():
    """Python-container idioms: enumerate(zip()), dict.get and setdefault, a defaultdict of
    counters, sum(list) / len(list), any() of graph comparisons, abs() and round() of graph
    numbers, np.concatenate of a comprehension."""
    jf = check(make_p12, [lambda s, k=k: (s["m"],) + data_p12[k % 4] for k in range(24)], min_graph_calls=12)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


# -------------------- an epoch in one call
def loss_fn_p13(w, xb, yb, reg):
    return F.mean((xb @ w - yb) ** 2) + reg * F.sum(w * w)

def epoch_p13(state, x, y, pairs):
    idx = state["rng"].permutation(len(x))
    w = state["w"]
    lf = functools.partial(loss_fn_p13, reg=0.01)
    total = 0.0
    for b in range(0, len(x), 4):
        sel = idx[b:b + 4]
        with jl.GradientTape() as tape:
            l = lf(w, x[sel], y[sel])
        w.assign_sub(0.1 * tape.gradient(l, w))
        total += l.item()
    a, c = zip(*pairs)
    A, C = np.stack(a), np.stack(c)
    head = np.linalg.solve(A.T @ A + np.eye(A.shape[1]), A.T @ C)
    first = pairs[0][0]
    return total, head, first

def make_p13():
    r_p13 = np.random.default_rng(0)
    return epoch_p13, {"st": {"rng": np.random.default_rng(1), "w": jl.Variable(r_p13.standard_normal(3) * 0.1)}}

r_p13 = np.random.default_rng(2)
data_p13 = [(r_p13.standard_normal((12, 3)), r_p13.standard_normal(12),
             [(r_p13.standard_normal(3), r_p13.standard_normal(2)) for _ in range(5)])
        for _ in range(3)]


def test_p13_idioms():
    """An epoch inside one call: a permutation from a Generator, minibatches by slicing it, a loss
    made with functools.partial, x.item(), zip(*pairs) stacked, np.linalg.solve for a ridge
    head."""
    jf = check(make_p13, [lambda s, k=k: (s["st"],) + data_p13[k % 3] for k in range(15)], min_graph_calls=10)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


# -------------------- a learning-rate schedule as a property of a scheduler object
class WarmupCosine:
    def __init__(self, base=0.1, warmup=4, total=20):
        self.base, self.warmup, self.total, self.step_num = base, warmup, total, 0

    @property
    def lr(self):
        s = self.step_num
        if s < self.warmup:
            return self.base * (s + 1) / self.warmup
        progress = (s - self.warmup) / max(1, self.total - self.warmup)
        return self.base * 0.5 * (1.0 + math.cos(math.pi * progress))

    def advance(self):
        self.step_num += 1


def scheduled_step(st, x, y):
    lr = st["sched"].lr
    g = x.T @ (x @ st["w"] - y) / len(y)
    st["w"] -= lr * g
    st["sched"].advance()
    return lr, float(np.square(x @ st["w"] - y).mean())


def test_a_schedule_read_through_a_property():
    """`sched.lr` is a property that reads the step counter and branches on it. The profiler
    did not see inside property getters: the counter was taken for a constant (two fallbacks),
    and the branch, never profiled, kept the step eager for good."""
    r = np.random.default_rng(4)
    data = [(r.standard_normal((8, 3)), r.standard_normal(8)) for _ in range(4)]
    make = lambda: (scheduled_step, {"sched": WarmupCosine(), "w": np.zeros(3)})  # noqa: E731
    jf = check(make, [lambda s, k=k: (s,) + data[k % 4] for k in range(16)], min_graph_calls=10)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def test_layers_of_one_class_with_different_hyperparameters_run_as_graphs():
    """A CNN whose convolutions have strides 2 and 1 and whose pools have sizes 2 and 1: one
    source line (`self.stride` in Conv2D.forward) reads a different int for each layer, and
    each layer's own stays the same on every call: it is a constant of the graph (guarded),
    not a value read when the graph runs (which conv2d cannot take)."""
    def make():
        rng = np.random.default_rng(0)
        model = nn.Sequential(nn.Conv2D(1, 2, 3, stride=2, rng=rng), nn.Conv2D(2, 2, 1, rng=rng),
                              nn.MaxPool2D(2), nn.MaxPool2D(1))

        def step(x):
            return model(x).sum()

        return step, {"model": model}

    calls = [lambda s, i=i: (random_array(i, (1, 1, 9, 9)).astype(np.float32),) for i in range(10)]
    jf = check(make, calls, min_graph_calls=5)
    assert not fallback_reasons(jf), jf.explain()


def test_message_passing_over_the_nodes_of_a_networkx_graph():
    """`for v in G` of a networkx graph: its class's own `__iter__` (the node dict's keys) is
    inlined, where iterating it kept the step eager; node attribute dicts are read and written
    as the state's dicts are."""
    import networkx as nx

    def make():
        G = nx.Graph()
        for i in range(5):
            G.add_node(i, h=random_array(i, (3,)))
        G.add_edges_from([(0, 1), (1, 2), (2, 3), (3, 4), (0, 4)])

        def step(W):
            new = {v: np.tanh(sum(G.nodes[u]["h"] for u in G.neighbors(v)) @ W) for v in G}
            for v in G:
                G.nodes[v]["h"] = new[v]
            return sum(float(h.sum()) for h in new.values())

        return step, {"G": G}

    jf = check(make, [lambda s, i=i: (random_array(50 + i, (3, 3)),) for i in range(10)], min_graph_calls=5)
    assert not fallback_reasons(jf), jf.explain()


def _pad_rows(seqs):
    ids = np.zeros((len(seqs), 4), dtype=np.int64)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s  # a row written from a Python list of the inputs
    return ids


def test_rows_padded_from_python_lists():
    """The usual padding loop was an op error (the input list passed to the op as it was): the
    step stayed eager."""
    jf = check(lambda: (_pad_rows, None), [lambda s, i=i: ([[1 + i, 2], [3, 4, 5]],) for i in range(8)],
               min_graph_calls=3)
    assert "op-error" not in fallback_reasons(jf), jf.explain()
