"""Differential tests: realistic programs under eager and jit, with calls that break each kind
of assumption. Every test also checks that graphs really ran."""
import numpy as np
import pytest

import janus_like as jl
from janus_like import F, nn, optim

from .harness import side_by_side


def _data(seed, n=8, d=5, k=3):
    r = np.random.default_rng(seed)
    return r.standard_normal((n, d)).astype(np.float32), r.integers(0, k, n)


class MLP(nn.Module):
    def __init__(self, rng):
        super().__init__()
        self.l1 = nn.Linear(5, 16, rng=rng)
        self.l2 = nn.Linear(16, 3, rng=rng)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


@pytest.mark.parametrize("opt_name", ["sgd", "momentum", "adam", "rmsprop", "adagrad"])
def test_training_step_with_tape_and_optimizer(opt_name):
    def make():
        model = MLP(np.random.default_rng(0))
        opt = {"sgd": lambda: optim.SGD(0.1), "momentum": lambda: optim.SGD(0.1, momentum=0.9, weight_decay=1e-3),
               "adam": lambda: optim.Adam(1e-2), "rmsprop": lambda: optim.RMSprop(1e-2),
               "adagrad": lambda: optim.Adagrad(1e-1)}[opt_name]()

        def train_step(model, opt, x, y):
            with jl.GradientTape() as tape:
                loss = F.cross_entropy(model(x), y)
            grads = tape.gradient(loss, model.parameters())
            opt.apply_gradients(zip(grads, model.parameters()))
            return loss

        return train_step, {"model": model, "opt": opt}

    batches = [_data(i) for i in range(8)]
    calls = [lambda s, b=b: (s["model"], s["opt"], b[0], b[1]) for b in batches]
    jf = side_by_side(make, calls)
    assert jf.stats()["graph_calls"] >= 4, jf.explain()


def test_numpy_char_rnn_manual_backward_with_dicts_and_inplace():
    H, V, T = 8, 6, 5

    def make():
        r = np.random.default_rng(1)
        params = {"Wxh": r.standard_normal((H, V)) * 0.01, "Whh": r.standard_normal((H, H)) * 0.01,
                  "Why": r.standard_normal((V, H)) * 0.01, "bh": np.zeros((H, 1)), "by": np.zeros((V, 1))}
        mem = {k: np.zeros_like(v) for k, v in params.items()}

        def step(params, mem, inputs, targets, hprev, lr):
            Wxh, Whh, Why, bh, by = params["Wxh"], params["Whh"], params["Why"], params["bh"], params["by"]
            xs, hs, ys, ps = {}, {}, {}, {}
            hs[-1] = np.copy(hprev)
            loss = 0
            for t in range(len(inputs)):
                xs[t] = np.zeros((V, 1))
                xs[t][inputs[t]] = 1
                hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
                ys[t] = np.dot(Why, hs[t]) + by
                ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
                loss += -np.log(ps[t][targets[t], 0])
            dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
            dbh, dby = np.zeros_like(bh), np.zeros_like(by)
            dhnext = np.zeros_like(hs[0])
            for t in reversed(range(len(inputs))):
                dy = np.copy(ps[t])
                dy[targets[t]] -= 1
                dWhy += np.dot(dy, hs[t].T)
                dby += dy
                dh = np.dot(Why.T, dy) + dhnext
                dhraw = (1 - hs[t] * hs[t]) * dh
                dbh += dhraw
                dWxh += np.dot(dhraw, xs[t].T)
                dWhh += np.dot(dhraw, hs[t - 1].T)
                dhnext = np.dot(Whh.T, dhraw)
            for dparam in [dWxh, dWhh, dWhy, dbh, dby]:
                np.clip(dparam, -5, 5, out=dparam)
            for name, dparam in zip(["Wxh", "Whh", "Why", "bh", "by"], [dWxh, dWhh, dWhy, dbh, dby]):
                mem[name] += dparam * dparam
                params[name] += -lr * dparam / np.sqrt(mem[name] + 1e-8)
            return loss, hs[len(inputs) - 1]

        return step, {"params": params, "mem": mem, "h": [np.zeros((H, 1))]}

    r = np.random.default_rng(2)
    seqs = [(list(r.integers(0, V, T)), list(r.integers(0, V, T))) for _ in range(8)]

    def call(s, seq):
        return (s["params"], s["mem"], seq[0], seq[1], s["h"][0], 0.1)

    jf = side_by_side(make, [lambda s, q=q: call(s, q) for q in seqs])
    assert jf.stats()["graph_calls"] >= 3, jf.explain()


class Tree:
    def __init__(self, word=None, left=None, right=None):
        self.word, self.left, self.right = word, left, right
        self.is_leaf = left is None


def _random_tree(r, leaves):
    if leaves == 1:
        return Tree(word=int(r.integers(0, 10)))
    k = int(r.integers(1, leaves))
    return Tree(left=_random_tree(r, k), right=_random_tree(r, leaves - k))


def test_tree_rnn_recursion_over_python_objects():
    def make():
        r = np.random.default_rng(3)
        emb = jl.Variable(r.standard_normal((10, 4)).astype(np.float32))
        W = jl.Variable(r.standard_normal((8, 4)).astype(np.float32) * 0.3)
        b = jl.Variable(np.zeros(4, np.float32))

        def encode(node):
            if node.is_leaf:
                return emb[node.word]
            h = np.concatenate([encode(node.left), encode(node.right)])
            return np.tanh(h @ W + b)

        def step(tree):
            with jl.GradientTape() as tape:
                loss = np.sum(encode(tree) ** 2)
            grads = tape.gradient(loss, [emb, W, b])
            for v, g in zip([emb, W, b], grads):
                v.assign_sub(0.05 * g)
            return loss

        return step, {"vars": [emb, W, b]}

    r = np.random.default_rng(4)
    shapes = [_random_tree(r, n) for n in (3, 4, 3, 5)]
    trees = [shapes[i % 4] for i in range(12)]
    # same shapes with different words
    for t in trees[8:]:
        pass
    jf = side_by_side(make, [lambda s, t=t: (t,) for t in trees])
    assert jf.stats()["graph_calls"] >= 4, jf.explain()


def _halving(x):
    y = x.copy()
    n = np.zeros(())
    while np.max(np.abs(y)) > 1.0:
        y = y * 0.5
        n = n + 1
    return y, n


def test_while_with_varying_trip_count_becomes_a_loop_node():
    r = np.random.default_rng(0)
    xs = [r.standard_normal(4) * (i + 1) * 3 for i in range(10)]
    jf = side_by_side(lambda: (_halving, {}), [lambda s, x=x: (x,) for x in xs])
    assert jf.stats()["graph_calls"] == 7, jf.explain()
    assert "loop" in str(jf.graphs()[0].graph)


def test_while_trip_count_assert_fails_then_regenerates_as_loop():
    # the same trip count during warm-up: unrolled with trip-count asserts; then it changes
    xs = [np.full(3, 4.0)] * 5 + [np.full(3, 40.0), np.full(3, 400.0), np.full(3, 4000.0), np.full(3, 2.0)]
    jf = side_by_side(lambda: (_halving, {}), [lambda s, x=x: (x,) for x in xs])
    st = jf.stats()
    assert st["assert_failures"] >= 2 and st["regenerations"] == 1, jf.explain()
    assert any("loop" in str(g.graph) for g in jf.graphs())
    assert st["graph_calls"] >= 3


def test_dropout_with_an_explicit_generator_consumes_the_same_stream():
    def make():
        rng = np.random.default_rng(7)
        w = jl.Variable(np.ones((4, 3), np.float32))

        def step(x, rng):
            with jl.GradientTape() as tape:
                loss = np.sum(F.dropout(x @ w, 0.5, rng) ** 2)
            w.assign_sub(0.01 * tape.gradient(loss, w))
            return loss

        return step, {"rng": rng, "w": w}

    xs = [np.full((2, 4), i + 1.0, np.float32) for i in range(7)]
    jf = side_by_side(make, [lambda s, x=x: (x, s["rng"]) for x in xs])
    assert jf.stats()["graph_calls"] >= 3, jf.explain()


def test_print_and_logging_happen_once_in_order_after_the_commit(caplog):
    import logging

    log = logging.getLogger("janus_like.test.model")

    def make():
        w = jl.Variable(np.ones(3))

        def step(x):
            y = np.tanh(x * w)
            print("step", np.sum(y))
            log.info("loss %s", float(np.sum(y)))
            logging.info("done")
            w.assign_sub(0.1 * x)
            print(f"w0={w[0]:.4f}")
            return y

        return step, {"w": w}

    with caplog.at_level(logging.INFO):
        jf = side_by_side(make, [lambda s, i=i: (np.full(3, 0.1 * i),) for i in range(6)])
    assert jf.stats()["graph_calls"] == 3, jf.explain()
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs[:2] == ["loss 0.0", "done"] and len(msgs) == 24  # eager and jit, 6 calls, 2 lines each
    assert msgs[-4:-2] == msgs[-2:]  # the jit's lines equal eager's for the same call


def _shrink(x, n):
    y = x.copy()
    for i in range(n):
        y = y * 0.5 + i
    return y


def test_for_over_a_range_of_varying_length_becomes_a_loop_node():
    ns = [3, 5, 2, 7, 0, 4, 6, 1, 3, 9]
    jf = side_by_side(lambda: (_shrink, {}), [lambda s, n=n: (np.ones(3), n) for n in ns])
    assert jf.stats()["graph_calls"] == 7, jf.explain()
    assert "loop" in str(jf.graphs()[0].graph)


def _onehot_sum(inputs, w):
    total = np.zeros(w.shape[1])
    for t in range(len(inputs)):
        total = total + w[inputs[t]]
    return total


def test_list_elements_seen_varying_in_warmup_are_graph_inputs_from_the_start():
    r = np.random.default_rng(5)
    seqs = [[int(v) for v in r.integers(0, 6, 4)] for _ in range(8)]
    jf = side_by_side(lambda: (_onehot_sum, {"w": np.arange(18.0).reshape(6, 3)}),
                      [lambda s, q=q: (q, s["w"]) for q in seqs])
    st = jf.stats()
    assert st["graphs_generated"] == 1 and st["regenerations"] == 0 and st["graph_calls"] == 5, jf.explain()


def _copy_then_write(x):
    y = np.array(x)
    x += 1.0
    return y


def test_np_array_of_an_argument_is_a_copy_not_a_view():
    jf = side_by_side(lambda: (_copy_then_write, {}), [lambda s, i=i: (np.full(3, float(i)),) for i in range(6)])
    assert jf.stats()["graph_calls"] == 3, jf.explain()
