"""Training-step idioms that used to keep whole steps eager: selections by masks, `np.nonzero`,
`np.bincount`, context managers, `max` by computed keys, `min(1.0, clip / norm)`, a centroid
written in a branch after a view of the centroids was read, `np.fill_diagonal` and `^` on ints,
a functional step (a frozen dataclass state replaced, dataclass metrics, a bounded deque), an
epoch of minibatches cut at the batch index.

    JANUS_LIKE_NATIVE=off PYTHONPATH=. taskset -c 1 python3 -m benchmarks.idiom_steps

Each step runs its argument sets 10 times per block after warming up; eager, jit keeping every
graph (`choose="graph"`) and jit (the measured choice, the default) alternate, five blocks each;
µs a call, best block. The last column says what the measured choice picked and how many calls
ran as graphs.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import statistics
import time

import numpy as np

import janus_like as jl
from janus_like import optim


class Timer:
    """A context manager of the user's: counts entries."""

    def __init__(self):
        self.entered = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        return False


@contextlib.contextmanager
def section(log, name):
    log[name] = log.get(name, 0) + 1
    yield


def masked_mse(st, x, y):
    """Regression on targets with missing values (NaN), a two-layer net, SGD."""
    valid = ~np.isnan(y)
    with jl.GradientTape() as tape:
        h = np.tanh(x @ st["w1"])
        pred = (h @ st["w2"])[:, 0]
        err = pred[valid] - y[valid]
        loss = (err ** 2).mean()
    g = tape.gradient(loss, [st["w1"], st["w2"]])
    st["opt"].apply_gradients(zip(g, [st["w1"], st["w2"]]))
    return float(loss), int(valid.sum())


def advantages(r, v, done, gamma=0.99):
    """Discounted returns over a 64-step rollout, advantages normalized over live steps."""
    ret = np.zeros(len(r))
    g = 0.0
    for t in range(len(r) - 1, -1, -1):
        g = r[t] + gamma * g * (1.0 - done[t])
        ret[t] = g
    adv = ret - v
    live = adv[done == 0]
    return (adv - live.mean()) / (live.std() + 1e-8), np.nonzero(done)[0]


def balanced(st, x, y):
    """Softmax regression with an ignore label (-1) and class weights from np.bincount, inside a
    Timer and a @contextmanager section."""
    valid = y >= 0
    yv = y[valid]
    counts = np.bincount(yv, minlength=4)
    weights = (counts.sum() / np.maximum(counts, 1) / 4.0)[yv]
    with st["timer"], section(st["log"], "fwd"):
        with jl.GradientTape() as tape:
            logits = x @ st["w"]
            z = logits - logits.max(axis=1, keepdims=True)
            logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
            loss = -(logp[valid][np.arange(len(yv)), yv] * weights).sum() / max(len(yv), 1)
        g = tape.gradient(loss, st["w"])
    st["opt"].apply_gradients([(g, st["w"])])
    return float(loss)


def q_update(q, s, r, s2):
    """Tabular Q-learning with a greedy action by `max(..., key=)`."""
    a = max(range(4), key=lambda i: q[s, i])
    q[s, a] += 0.1 * (r + 0.9 * q[s2].max() - q[s, a])
    return a


def clipped_sgd(st, x, y, clip=0.5):
    """A two-layer regression step with gradients clipped by their global norm, the scale by
    `min(1.0, clip / norm)` (a Tensor norm)."""
    with jl.GradientTape() as tape:
        h = np.tanh(x @ st["w1"])
        loss = (((h @ st["w2"])[:, 0] - y) ** 2).mean()
    grads = tape.gradient(loss, [st["w1"], st["w2"]])
    norm = np.sqrt(sum(np.sum(g * g) for g in grads))
    scale = min(1.0, clip / (norm + 1e-6))
    st["opt"].apply_gradients([(g * scale, w) for g, w in zip(grads, [st["w1"], st["w2"]])])
    return float(loss)


def kmeans(c, x):
    """One k-means step: distances through a view of the centroids, each centroid moved to the
    mean of its points unless its cluster is empty (a branch writing the array the view reads)."""
    d = ((x[:, None, :] - c[None]) ** 2).sum(-1)
    labels = d.argmin(1)
    for j in range(c.shape[0]):
        m = labels == j
        if m.any():
            c[j] = x[m].mean(0)
    return float(d.min(1).sum())


def contrastive(st, x):
    """An InfoNCE step on pairs (rows 2i and 2i + 1): similarities with the diagonal masked by
    `np.fill_diagonal`, the positive of row i at `i ^ 1`, the gradient by hand, SGD."""
    z = x @ st["w"]
    n = len(z)
    sim = z @ z.T / 0.5
    np.fill_diagonal(sim, -np.inf)
    pos = np.arange(n) ^ 1
    p = np.exp(sim - sim.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    loss = -np.log(p[np.arange(n), pos]).mean()
    p[np.arange(n), pos] -= 1.0
    dz = (p + p.T) @ z / (0.5 * n)
    st["w"] -= 0.01 * x.T @ dz
    return float(loss)


@dataclasses.dataclass(frozen=True)
class TrainState:
    step: int
    w1: np.ndarray
    w2: np.ndarray


@dataclasses.dataclass
class StepMetrics:
    loss: float
    grad_norm: float
    smoothed: float


def functional(box, x, y):
    """A functional step: a frozen train state replaced by `dataclasses.replace`, its metrics
    returned as a dataclass, the loss smoothed over a bounded deque by `statistics.fmean`."""
    s = box["state"]
    h = np.tanh(x @ s.w1)
    err = (h @ s.w2)[:, 0] - y
    loss = float((err ** 2).mean())
    d = err[:, None] * (2.0 / len(y))
    g2 = h.T @ d
    g1 = x.T @ ((d @ s.w2.T) * (1 - h ** 2))
    norm = float(np.sqrt((g1 ** 2).sum() + (g2 ** 2).sum()))
    box["state"] = dataclasses.replace(s, step=s.step + 1, w1=s.w1 - 0.01 * g1, w2=s.w2 - 0.01 * g2)
    box["window"].append(loss)
    return StepMetrics(loss, norm, statistics.fmean(box["window"]))


class Replay:
    """A ring buffer of observations and returns, its write index an attribute."""

    def __init__(self, capacity, width):
        self.obs, self.ret, self.i = np.zeros((capacity, width)), np.zeros(capacity), 0


class Meter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value, n):
        self.sum += value * n  # a NumPy scalar from the second call on
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def replay(st, obs, ret):
    """A value step over a ring buffer: the batch written at the buffer's index and read back
    (slices whose bounds the state keeps), a loss meter whose sum is a NumPy scalar, its average
    a property."""
    buf, n = st["buf"], len(obs)
    i = buf.i
    buf.obs[i:i + n] = obs
    buf.ret[i:i + n] = ret
    buf.i = (i + n) % len(buf.ret)
    x, y = buf.obs[i:i + n], buf.ret[i:i + n]
    err = x @ st["w"] - y
    st["w"] -= 0.01 * x.T @ err / n
    st["meter"].update((err ** 2).mean(), n)
    return st["meter"].avg


def minibatches(st, X, y, k, bs=32):
    """Softmax regression over an epoch of minibatches cut at the batch index (`X[k * bs:(k + 1) *
    bs]`, a shorter last batch), the loss read at `probs[range(n), y]`, the rate halved when the
    epoch count is in a list of milestones."""
    xb, yb = X[k * bs:(k + 1) * bs], y[k * bs:(k + 1) * bs]
    if k == 0:
        st["epoch"] += 1
        if st["epoch"] in st["milestones"]:
            st["lr"] *= 0.5
    scores = xb @ st["W"]
    scores -= scores.max(axis=1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=1, keepdims=True)
    n = len(xb)
    loss = -np.log(probs[range(n), yb]).mean()
    probs[range(n), yb] -= 1.0
    st["W"] -= st["lr"] * (xb.T @ probs) / n
    return float(loss)


def _cases():
    rng = np.random.default_rng(0)

    def mse_state():
        r = np.random.default_rng(1)
        return {"w1": jl.Variable(r.standard_normal((32, 64)) * 0.1),
                "w2": jl.Variable(r.standard_normal((64, 1)) * 0.1), "opt": optim.SGD(0.01)}

    def bal_state():
        return {"w": jl.Variable(np.full((16, 4), 0.1)), "opt": optim.SGD(0.1), "timer": Timer(), "log": {}}

    def functional_state():
        r = np.random.default_rng(4)
        state = TrainState(0, r.standard_normal((32, 64)) * 0.1, r.standard_normal((64, 1)) * 0.1)
        return {"state": state, "window": collections.deque(maxlen=10)}

    mse = []
    for _ in range(20):
        y = rng.standard_normal(64)
        y[rng.random(64) < 0.2] = np.nan
        mse.append((rng.standard_normal((64, 32)), y))
    adv = [(rng.standard_normal(64), rng.standard_normal(64), (rng.random(64) < 0.05).astype(float))
           for _ in range(20)]
    bal = [(rng.standard_normal((32, 16)), rng.integers(-1, 4, 32)) for _ in range(20)]
    clipped = [(rng.standard_normal((64, 32)), rng.standard_normal(64) * 3.0) for _ in range(20)]
    # the clip binds on every fourth step (a large target), and not on the others
    some = [(rng.standard_normal((64, 32)), rng.standard_normal(64) * (3.0 if i % 4 == 0 else 0.2), 1.5)
            for i in range(20)]
    qs = [(int(rng.integers(16)), float(rng.standard_normal()), int(rng.integers(16))) for _ in range(20)]
    centers = rng.standard_normal((8, 16)) * 3
    # every fifth batch comes from two clusters only: the other centroids' clusters are empty
    points = [(centers[rng.integers(0, 2 if i % 5 == 4 else 8, 256)] + rng.standard_normal((256, 16)),)
              for i in range(20)]
    pairs = [(np.repeat(rng.standard_normal((32, 32)), 2, 0) + 0.1 * rng.standard_normal((64, 32)),)
             for _ in range(20)]
    transitions = [(rng.standard_normal((32, 16)), rng.standard_normal(32)) for _ in range(20)]
    data = (rng.standard_normal((620, 16)), rng.integers(0, 10, 620))  # 19 batches of 32 and one of 12
    epoch = [(*data, k) for k in range(20)]
    return {
        "masked_mse": (masked_mse, mse_state, mse),
        "advantages": (advantages, None, adv),
        "balanced": (balanced, bal_state, bal),
        "q_update": (q_update, lambda: np.zeros((16, 4)), qs),
        "clipped_sgd": (clipped_sgd, mse_state, clipped),
        "clip_some": (clipped_sgd, mse_state, some),
        "kmeans": (kmeans, lambda: np.random.default_rng(2).standard_normal((8, 16)) * 3, points),
        "contrastive": (contrastive, lambda: {"w": np.random.default_rng(3).standard_normal((32, 16)) * 0.1}, pairs),
        "functional": (functional, functional_state, clipped),
        "replay": (replay, lambda: {"buf": Replay(256, 16), "w": np.zeros(16), "meter": Meter()}, transitions),
        "minibatches": (minibatches, lambda: {"W": np.zeros((16, 10)), "lr": 0.5, "epoch": 0, "milestones": [2, 4]},
                        epoch),
    }


def main():
    print(f"{'step':12s} {'eager':>9s} {'graph':>9s} {'jit':>9s} {'jit/eager':>9s}  chosen (µs a call)")
    for name, (fn, make, args) in _cases().items():
        systems = {"eager": fn, "graph": jl.jit(fn, choose="graph"), "jit": jl.jit(fn)}
        states = {k: make() if make else None for k in systems}

        def run(label, f):
            for a in args:
                f(*a) if states[label] is None else f(states[label], *a)

        for label, f in systems.items():
            for _ in range(10):
                run(label, f)
        best = dict.fromkeys(systems, float("inf"))
        for _ in range(5):
            for label, f in systems.items():
                start = time.perf_counter()
                for _ in range(10):
                    run(label, f)
                best[label] = min(best[label], (time.perf_counter() - start) / (10 * len(args)) * 1e6)
        g, s = systems["graph"].stats(), systems["jit"].stats()
        chosen = "eager" if s["eager_by_choice"] else "graph" if s["graph_calls"] else "no graph"
        ratio = best["jit"] / best["eager"]
        print(f"{name:12s} {best['eager']:9.2f} {best['graph']:9.2f} {best['jit']:9.2f} {ratio:9.2f}  "
              f"{chosen} (graph calls: {g['graph_calls']}/{g['calls']} kept, {s['graph_calls']}/{s['calls']} measured)")


if __name__ == "__main__":
    main()
