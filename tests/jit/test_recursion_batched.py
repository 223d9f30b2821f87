"""The batched form of recursion regions (graphgen/region_batch.py, ops/recursion_batch.py): the
calls at one height of a tree run as one call on stacked values. Side by side with eager on
one-off trees (within rounding: the graph reassociates), and the batched form against the
region's own per-call form on generated trees, including chains and single leaves."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, optim
from janus_like.executor.interpreter import AssertFailed
from janus_like.ops.recursion import _Choice

from .harness import side_by_side, within
from .test_recursion_methods import LeftCell, TreeLSTM, make_tree_lstm
from .test_recursion_regions import H, V, Node, _regions, calls, make_tree_rnn, summed, tree


def make_mixed():
    """A region of many ops: a matrix times a vector, per-call scalars broadcast over vectors,
    a reversed slice, reshape and transpose, a mean, a bias of another shape summed back."""
    rng = np.random.default_rng(1)

    def var(shape, name, scale=0.4):
        return jl.Variable((rng.standard_normal(shape) * scale).astype(np.float32), name=name)

    emb, w, m, s = var((V, H), "emb", 1.0), var((2 * H, H), "w"), var((H, H), "m"), var((H,), "s")
    b2, w_out = var((1, H), "b2"), var((H, 3), "w_out")
    params = {"emb": emb, "w": w, "m": m, "s": s, "b2": b2, "w_out": w_out}
    opt = optim.SGD(0.1)

    def encode(node):
        if node.is_leaf:
            x = emb[node.word]
            return np.tanh(m @ x) * s
        a = encode(node.left)
        b = encode(node.right)
        y = F.sigmoid(np.concatenate([a, b]) @ w)
        k = F.sum(a * b) * 0.1 + F.mean(a)
        z = F.reshape(F.reshape(y, (2, H // 2)).T, (H,))
        return z * k + y[::-1] * 0.5 + F.reshape(F.exp(b2) * y, (H,))

    def step(root, label):
        with jl.GradientTape() as tape:
            logits = F.reshape(encode(root) @ w_out, (1, -1))
            loss = F.cross_entropy(logits, label)
        params_ = list(params.values())
        opt.apply_gradients(zip(tape.gradient(loss, params_), params_))
        return loss

    return step, params


JOINS = ("swapped", "twice", "rows", "columns", "extra")


def make_joined(join):
    """A node joining its children's results, (2, H/2) matrices, in a way the batched form
    gathers (and the gradient scatters) as one block of rows, or must not: `swapped` the right
    child first; `twice` one child twice, then both in order (the left one's cotangent a sum: no
    block); `rows` both in order on their first axis; `columns` on the second (piece by piece);
    `extra` both and a row of the node's own (`node.tag`, see `_tagged`): the children's
    cotangents are slices of a longer one."""
    def make():
        rng = np.random.default_rng(3)

        def var(shape, name, scale=0.3):
            return jl.Variable((rng.standard_normal(shape) * scale).astype(np.float32), name=name)

        emb, b, w_out = var((V, H), "emb", 1.0), var(H, "b", 0.1), var((H, 3), "w_out")
        w = var((3 * H if join == "extra" else 2 * H, H), "w")
        opt = optim.SGD(0.1)
        axis = 1 if join == "columns" else 0
        if join == "swapped":
            def combine(node, a, c):
                return np.concatenate([c, a])
        elif join == "twice":
            def combine(node, a, c):
                return np.concatenate([a, a]) * 0.5 + np.concatenate([a, c])
        elif join == "extra":
            def combine(node, a, c):
                return np.concatenate([a, c, F.reshape(emb[node.tag], (2, H // 2))])
        else:
            def combine(node, a, c):
                return np.concatenate([a, c], axis=axis)

        def encode(node):
            if node.is_leaf:
                return F.reshape(emb[node.word], (2, H // 2))
            return F.reshape(np.tanh(F.reshape(combine(node, encode(node.left), encode(node.right)), (-1,)) @ w + b),
                             (2, H // 2))

        params = {"emb": emb, "w": w, "b": b, "w_out": w_out}

        def step(root, label):
            with jl.GradientTape() as tape:
                logits = F.reshape(F.reshape(encode(root), (H,)) @ w_out, (1, -1))
                loss = F.cross_entropy(logits, label)
            variables = list(params.values())
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        return step, params

    return make


def _tagged(root):
    """`root`'s tree with an int `tag` on every node (make_joined's `extra` reads it)."""
    stack, k = [root], 0
    while stack:
        node = stack.pop()
        node.tag, k = k % V, k + 1
        if not node.is_leaf:
            stack += [node.left, node.right]
    return root


@pytest.mark.parametrize("join", JOINS)
def test_children_joined_and_split_as_blocks_of_rows_side_by_side_with_eager(join):
    """One gather `OUT[0][C]` for a first-axis concatenation of the children's results and one
    scatter `COT[0][C] = ...` for cotangents that are consecutive slices of one value, in the
    children's order given by the columns of C; piece by piece where that is not the form."""
    trees = [_tagged(tree(s)) for s in range(20)] + [_tagged(tree(50, leaves=1)), _tagged(tree(51, leaves=9))]
    with within(1e-5, 1e-6):
        jf = side_by_side(make_joined(join), calls(trees), reassociate=True)
    region = _region(jf)
    assert region.batched is not None, region.batch_reason
    src = region.batch_source
    gather = {"swapped": "OUT[0][C[:, (1, 0)]]", "twice": "OUT[0][C[:, (0, 0)]]", "rows": "OUT[0][C]"}.get(join)
    assert (gather in src) if gather else "OUT[0][C" not in src
    scatter = {"swapped": "COT[0][C[:, (1, 0)]] = ", "rows": "COT[0][C] = "}.get(join)
    assert (scatter in src) if scatter else "COT[0][C" not in src
    assert jf.stats()["graph_calls"] >= 10


def _region(jf):
    (region,) = {n.params["region"] for n in _regions(jf)}
    return region


@pytest.mark.parametrize("make", [make_tree_rnn, make_mixed, make_tree_lstm(cls=TreeLSTM),
                                  make_tree_lstm(cls=LeftCell)], ids=["tree_rnn", "mixed", "tree_lstm", "left_cell"])
def test_batched_regions_side_by_side_with_eager(make):
    trees = [tree(s) for s in range(20)] + [tree(50, leaves=1), tree(51, leaves=9)]
    with within(1e-5, 1e-6):
        jf = side_by_side(make, calls(trees), reassociate=True)
    region = _region(jf)
    assert region.batched is not None, region.batch_reason
    assert "def site1(" in region.batch_source
    assert jf.stats()["graph_calls"] >= 10


def test_without_reassociation_the_region_runs_call_by_call():
    jf = side_by_side(make_tree_rnn, calls([tree(s) for s in range(20)]), reassociate=False)
    region = _region(jf)
    assert region.batched is None and "reassociate" in region.batch_reason
    assert "call by call (the graph may not reassociate" in jf.explain()


def _chain(words, left=True):
    node = Node(word=words[0])
    for w in words[1:]:
        node = Node(left=node, right=Node(word=w)) if left else Node(left=Node(word=w), right=node)
    return node


def _trees():
    leaf = st.integers(0, V - 1).map(lambda w: Node(word=w))
    random = st.recursive(leaf, lambda kids: st.tuples(kids, kids).map(lambda p: Node(left=p[0], right=p[1])),
                          max_leaves=14)
    chain = st.tuples(st.lists(st.integers(0, V - 1), min_size=1, max_size=10), st.booleans()).map(
        lambda a: _chain(*a))
    return st.one_of(random, chain)


def _run(region, root, arrays, g, form):
    region.form = form
    try:
        out = region.forward(root, arrays)
        grads = [_grad(region, g, j) if j in region.float_arrays else None for j in range(len(arrays))]
        assert region._batched == (form == "batched")
    finally:
        region.form = None
    return out, grads


def _grad(region, g, j):
    try:
        return region.grads(g, j)
    except AssertFailed:  # no call read this array (a one-leaf tree never reads `w`): eager's None
        return None


@pytest.fixture(scope="module", params=["tree_rnn", "mixed", "tree_lstm", *JOINS])
def staged(request):
    make = {"tree_rnn": make_tree_rnn, "mixed": make_mixed, "tree_lstm": make_tree_lstm(cls=TreeLSTM),
            **{join: make_joined(join) for join in JOINS}}[request.param]
    step, _ = make()
    jf = jl.jit(step)
    for t in [_tagged(tree(s)) for s in range(14)]:
        jf(t, np.array([1]))
    region = _region(jf)
    assert region.batched is not None, region.batch_reason
    return region, region._arrays


@settings(max_examples=40, deadline=None)
@given(root=_trees(), seed=st.integers(0, 2 ** 16))
def test_batched_form_against_the_per_call_form(staged, root, seed):
    """The same values and gradients as the region's per-call form, within rounding, for every
    tree shape: one leaf, chains leaning either way (one call per height), random trees."""
    region, arrays = staged
    root = _tagged(root)
    g = np.random.default_rng(seed).standard_normal(region.aval[0]).astype(region.aval[1])
    want, want_grads = _run(region, root, arrays, g, "call")
    got, got_grads = _run(region, root, arrays, g, "batched")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert [x is None for x in got_grads] == [x is None for x in want_grads]
    for a, b in zip(got_grads, want_grads):
        if a is not None:
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_batched_code_reads_every_value_it_computes_or_saves(staged):
    """No dead lines in a site or its backward (a joined gather's pieces, slices one scatter
    replaced), and a site's record holds only what its backward reads."""
    region, _ = staged
    for fn in re.split(r"\n(?=def )", region.batch_source):
        body = fn.splitlines()
        for i, line in enumerate(body):
            m = re.match(r"    (v\d+|J\d+) = ", line)
            if m:
                assert any(re.search(rf"\b{m[1]}\b", other) for other in body[i + 1:]), (m[1], fn)
        saved = re.search(r"_k, C, (.*)= rec", fn)
        if saved:
            rest = "\n".join(body[2:])
            for name in filter(None, (n.strip() for n in saved[1].split(","))):
                assert re.search(rf"\b{name}\b", rest), (name, fn)


def test_a_call_whose_result_gets_no_cotangent_keeps_the_per_call_form():
    """The per-call form never runs the gradient code of a subtree no cotangent reaches; the
    batched form would run it on zeros (not the same when a value is inf or nan): refused."""
    rng = np.random.default_rng(2)
    emb = jl.Variable(rng.standard_normal((V, H)).astype(np.float32), name="emb")
    w = jl.Variable((rng.standard_normal((H, H)) * 0.3).astype(np.float32), name="w")

    def encode(node):
        if node.is_leaf:
            return emb[node.word]
        _, left = encode(node.right), encode(node.left)  # the right one computed, never read
        return np.tanh(left @ w)

    with within(1e-5, 1e-6):
        jf = side_by_side(summed(encode, emb, w), [lambda s, t=t: (t,) for t in [tree(s) for s in range(16)]], reassociate=True)
    region = _region(jf)
    assert region.batched is None and "no cotangent" in region.batch_reason


def test_the_form_is_chosen_by_measured_cost():
    """The first runs alternate between the forms; then the cheaper one for the tree's shape:
    with a group costing 3 calls, a tree of 31 calls in 8 groups runs batched, a chain of 31
    calls in 16 heights call by call."""
    choice = _Choice()
    forms = []
    for _ in range(2 * _Choice.SAMPLES):
        forms.append(choice.batched(31, 8))
        choice.start(forms[-1], 8 if forms[-1] else 31, 0.0)
        choice.add(3e-5 * 8 if forms[-1] else 1e-5 * 31)  # the backward's time completes the run's
    assert forms == [True, False] * _Choice.SAMPLES
    assert choice.batched(31, 8) and not choice.batched(31, 16)
    for _ in range(2 * _Choice.SAMPLES):  # the chosen form keeps being measured: its latest runs decide
        choice.start(True, 8, 8 * 1e-4)
        choice.flush()
    assert not choice.batched(31, 8)


def test_regions_choose_between_the_forms_as_they_run():
    with within(1e-5, 1e-6):
        jf = side_by_side(make_tree_lstm(cls=TreeLSTM), calls([tree(s) for s in range(30)]), reassociate=True,
                          check_interpreter=False)
    region = _region(jf)
    assert region.form is None and all(len(c) >= _Choice.SAMPLES for c in region.choice.costs.values())
    runs = region.choice.runs
    assert f"{runs[True]} trees batched by height, {runs[False]} call by call" in jf.explain()
    assert min(runs.values()) >= _Choice.SAMPLES
    (graph,) = [g for g in jf.graphs() if any(n.op == "recursion" for n in g.graph.all_nodes())]
    assert sum(runs.values()) == graph.runs  # the trial run at generation is not counted
