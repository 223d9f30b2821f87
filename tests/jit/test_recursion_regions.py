"""Recursion regions: a recursive function over trees that never repeat their shape, staged as
one node that walks each tree at run time (graphgen/recursion.py, ops/recursion.py), side by
side with eager on call sequences that also break what the region assumes."""
from __future__ import annotations

import numpy as np
import pytest

import janus_like as jl
from janus_like import F, optim
from janus_like.graphgen.recursion import self_recursive
from janus_like.source import function_ast

from gradcheck import assert_variable_gradients

from .harness import check, side_by_side, within

H, V = 4, 12


class Node:
    def __init__(self, word=None, left=None, right=None):
        self.word, self.left, self.right = word, left, right
        self.is_leaf = word is not None


def tree(seed, leaves=None, word=int):
    """A random binary tree (every seed its own shape) with `word` applied to each word id."""
    rng = np.random.default_rng(seed)
    n = leaves or int(rng.integers(3, 8))

    def build(words):
        if len(words) == 1:
            return Node(word=word(words[0]))
        split = int(rng.integers(1, len(words)))
        return Node(left=build(words[:split]), right=build(words[split:]))

    return build([int(w) for w in rng.integers(0, V, n)])


def make_tree_rnn():
    rng = np.random.default_rng(0)
    emb = jl.Variable(rng.standard_normal((V, H)).astype(np.float32), name="emb")
    w = jl.Variable((rng.standard_normal((2 * H, H)) * 0.3).astype(np.float32), name="w")
    b = jl.Variable(np.zeros(H, np.float32), name="b")
    w_out = jl.Variable((rng.standard_normal((H, 3)) * 0.3).astype(np.float32), name="w_out")
    opt = optim.SGD(0.1)

    def encode(node):
        if node.is_leaf:  # a host local and a host test too
            return emb[node.word]
        pair = (node.left, node.right)
        both = np.concatenate([encode(pair[0]), encode(pair[1])])
        return np.tanh(both @ w + b)

    def step(root, label):
        with jl.GradientTape() as tape:
            logits = F.reshape(encode(root) @ w_out, (1, -1))
            loss = F.cross_entropy(logits, label)
        params = [emb, w, b, w_out]
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return step, {"emb": emb, "w": w, "b": b, "w_out": w_out}


def calls(trees):
    return [lambda s, t=t, i=i: (t, np.array([i % 3])) for i, t in enumerate(trees)]


def _regions(jf):
    return [n for g in jf.graphs() for n in g.graph.all_nodes() if n.op == "recursion"]


def test_one_off_trees_run_as_one_graph_with_eager_results():
    jf = side_by_side(make_tree_rnn, calls([tree(s) for s in range(24)]))
    assert _regions(jf), "no recursion region was staged"
    assert jf.stats()["graph_calls"] >= 12  # the region's graph runs every later tree


def test_folded_weight_gradients_within_rounding():
    with within(1e-5, 1e-6):
        jf = side_by_side(make_tree_rnn, calls([tree(s) for s in range(24)]), reassociate=True)
    assert _regions(jf) and jf.stats()["graph_calls"] >= 12


@pytest.mark.parametrize("reassociate", [False, True])
def test_an_embeddings_sgd_step_updates_the_rows_the_region_gathered(reassociate):
    """`emb - lr * grad(emb)`, the region having gathered one row of emb per leaf: the plan's
    REGION_ROWS (executor/rows.py) copies emb and updates the leaves' rows, with the bits of the
    zeros-and-scatter gradient; trees with a word twice take that dense form. Eager and jit side
    by side, and the plan against the interpreter on every graph (both forms of the region when
    reassociating)."""
    trees = [tree(s) for s in range(16)] + [tree(100 + s, leaves=6, word=lambda w: w % 2) for s in range(4)]
    trees += [tree(200, leaves=1)] + [tree(s) for s in range(30, 36)]
    if reassociate:
        with within(1e-5, 1e-6):
            jf = check(make_tree_rnn, calls(trees), min_graph_calls=12, reassociate=True)
    else:
        jf = check(make_tree_rnn, calls(trees), min_graph_calls=12)
    sources = [g.plan.source for g in jf.graphs() if g.plan is not None and _regions_in(g)]
    assert sources and all(src.count("REGION_ROWS(") == 1 for src in sources), sources  # emb only


def _regions_in(g):
    return any(n.op == "recursion" for n in g.graph.all_nodes())


def summed(encode, emb, w):
    """A `make` for side_by_side: a step returning the gradients of sum(encode(root))."""
    def make():
        def step(root):
            with jl.GradientTape() as tape:
                loss = F.sum(encode(root))
            return tape.gradient(loss, [emb, w])

        return step, {"emb": emb, "w": w}

    return make


def test_explain_says_why_no_recursion_region_was_staged():
    """A recursive function the region translator cannot take (a conditional expression) runs
    as before (per-shape graphs, then eagerly) and explain() names the reason and the call."""
    rng = np.random.default_rng(4)
    emb = jl.Variable(rng.standard_normal((V, H)).astype(np.float32), name="emb")
    w = jl.Variable((rng.standard_normal((2 * H, H)) * 0.3).astype(np.float32), name="w")

    def encode(node):
        if node.is_leaf:
            return emb[node.word]
        h = np.tanh(np.concatenate([encode(node.left), encode(node.right)]) @ w)
        return -h if node.word is not None else h

    jf = side_by_side(summed(encode, emb, w), [lambda s, t=t: (t,) for t in [tree(s) for s in range(14)]])
    assert not _regions(jf)
    text = jf.explain()
    assert "no recursion region (new tree shapes run eagerly): recursion region " in text, text
    assert ".encode: a `IfExp` expression (called at test_recursion_regions.py:" in text, text
    assert text.count("IfExp") == 1


def test_calls_that_break_the_region_assumptions_run_eagerly():
    trees = [tree(s) for s in range(14)]
    trees += [tree(100, word=np.int64),  # a NumPy integer where the region expects an int
              tree(101, leaves=1),  # one leaf: eager's tape gives `w` no gradient (None)
              tree(102), tree(103, word=lambda w: w + V),  # a word past the table: IndexError both ways
              tree(104), tree(105)]
    jf = side_by_side(make_tree_rnn, calls(trees))
    assert _regions(jf)
    stats = jf.stats()
    assert stats["assert_failures"] >= 2 and stats["graph_calls"] >= 6


def test_an_unconvertible_recursive_function_stays_inlined():
    def make():
        w = jl.Variable(np.full((H,), 0.5, np.float32), name="w")

        def total(node):
            if node.is_leaf:
                return w * float(node.word)
            parts = [total(node.left), total(node.right)]  # a list of arrays: not converted
            return parts[0] + parts[1]

        def step(root, label):
            return F.sum(total(root))

        return step, {"w": w}

    jf = side_by_side(make, calls([tree(s) for s in range(16)]))
    assert not _regions(jf)
    assert any("no self-recursive function could be staged" in text for _, _, text in jf.events)


def test_self_recursion_is_detected_by_the_name_the_function_calls():
    def walk(node):
        return 0 if node is None else walk(node.left)

    def other(node):
        return walk(node)

    assert self_recursive(walk, function_ast(walk))
    assert not self_recursive(other, function_ast(other))


@pytest.mark.parametrize("body", ["for", "array-branch"])
def test_unsupported_bodies_are_refused_with_a_reason(body):
    from janus_like.graphgen.region_code import Translator
    from janus_like.graphgen.values import Unsupported

    w = np.ones(H, np.float32)

    def loops(node):
        if node.is_leaf:
            return w
        for _ in range(2):
            pass
        return loops(node.left)

    def branchy(node):
        if node.is_leaf:
            return w * 2.0
        h = loops(node.left)
        if node.word is None:
            h = h * 2.0
        return h

    fn = loops if body == "for" else branchy
    free = {"w": w, "np": np, "loops": loops, "branchy": branchy, "range": range}
    with pytest.raises(Unsupported, match="recursion region"):
        Translator(fn, function_ast(fn), {k: v for k, v in free.items() if k in fn.__code__.co_names
                                           or k in fn.__code__.co_freevars}, "here").translate()


def test_region_gradients_match_finite_differences():
    """The region's backward pass (`recursion` is a differentiable op: see tests/grad_cases.py)
    against central differences of the eager loss, in float64, with the weight-gradient fold."""
    rng = np.random.default_rng(3)
    values = {"emb": rng.standard_normal((V, H)), "w": rng.standard_normal((2 * H, H)) * 0.4,
              "b": rng.standard_normal(H) * 0.1}
    params = {k: jl.Variable(v.copy(), name=k) for k, v in values.items()}
    emb, w, b = params.values()

    def encode(node):
        if node.is_leaf:
            return emb[node.word] * 1.5
        return np.tanh(np.concatenate([encode(node.left), encode(node.right)]) @ w + b)

    def loss_of(root):
        return F.sum(encode(root) * np.arange(1.0, H + 1))

    def grads(root):
        with jl.GradientTape() as tape:
            loss = loss_of(root)
        return tape.gradient(loss, list(params.values()))

    jf = jl.jit(grads, warmup=1)
    jf._regions = True  # stage the region from the first graph on (not after FREE_GRAPHS)
    root = tree(7, leaves=6)
    for _ in range(3):
        got = [g.numpy() for g in jf(root)]
    assert _regions(jf) and jf.stats()["graph_calls"] >= 2
    assert_variable_gradients(list(params.values()), got, lambda: loss_of(root))

