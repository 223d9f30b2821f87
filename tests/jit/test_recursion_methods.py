"""Recursion regions of methods (`self.encode(node)`) whose calls return tuples of arrays and
call helper methods and functions, as a TreeLSTM is written: side by side with eager on one-off
trees, on calls that break the region's assumptions, and against finite differences."""
from __future__ import annotations

import re

import numpy as np
import pytest

import janus_like as jl
from janus_like import F, optim

from gradcheck import assert_variable_gradients

from .harness import side_by_side, within
from .test_recursion_regions import H, V, _regions, calls, tree


def gates(z, n):
    """A module-level helper the region inlines: `n` equal slices, squashed."""
    parts = F.split(z, n)
    return [F.sigmoid(p) for p in parts[:-1]] + [np.tanh(parts[-1])]


class TreeLSTM:
    def __init__(self, rng):
        def var(shape, name, scale=0.3):
            return jl.Variable((rng.standard_normal(shape) * scale).astype(np.float32), name=name)

        self.emb, self.w_leaf, self.u = var((V, H), "emb", 1.0), var((H, 3 * H), "w_leaf"), var((2 * H, 5 * H), "u")
        self.b = jl.Variable(np.zeros(5 * H, np.float32), name="b")
        self.hid = H  # a host constant read from the object

    def leaf(self, word):
        i, o, u = F.split(self.emb[word] @ self.w_leaf, 3)
        c = F.sigmoid(i) * np.tanh(u)
        return F.sigmoid(o) * np.tanh(c), c

    def combine(self, left, right):
        h_l, c_l = left
        h_r, c_r = right
        i, f_l, f_r, o, u = gates(np.concatenate([h_l, h_r]) @ self.u + self.b, 5)
        c = i * u + f_l * c_l + f_r * c_r
        return o * np.tanh(c), c

    def encode(self, node):
        if node.is_leaf:
            return self.leaf(node.word)
        return self.combine(self.encode(node.left), self.encode(node.right))


class LeftCell(TreeLSTM):
    """The right child's cell is never read: that item of its call gets no cotangent."""

    def combine(self, left, right):
        h_l, c_l = left
        i, f_l, f_r, o, u = gates(np.concatenate([h_l, right[0]]) @ self.u + self.b, 5)
        c = i * u + f_l * c_l
        return o * np.tanh(c), c


def make_tree_lstm(use_cell=False, cls=TreeLSTM):
    def make():
        model = cls(np.random.default_rng(0))
        w_out = jl.Variable((np.random.default_rng(1).standard_normal((H, 3)) * 0.3).astype(np.float32), name="w_out")
        opt = optim.SGD(0.1)
        params = [model.emb, model.w_leaf, model.u, model.b, w_out]

        def step(root, label):
            with jl.GradientTape() as tape:
                h, c = model.encode(root)
                out = h + c if use_cell else h
                loss = F.cross_entropy(F.reshape(out @ w_out, (1, -1)), label)
            opt.apply_gradients(zip(tape.gradient(loss, params), params))
            return loss

        return step, {"emb": model.emb, "w_leaf": model.w_leaf, "u": model.u, "b": model.b, "w_out": w_out}

    return make


@pytest.mark.parametrize("use_cell, cls", [(False, TreeLSTM), (True, TreeLSTM), (False, LeftCell)],
                         ids=["h", "h+c", "left-cell"])
def test_a_tree_lstm_method_runs_one_off_trees_as_one_graph(use_cell, cls):
    jf = side_by_side(make_tree_lstm(use_cell, cls), calls([tree(s) for s in range(24)]))
    (region,) = {n.params["region"] for n in _regions(jf)}
    assert region.elems is not None and len(region.elems) == 2  # (h, c) from every call
    assert jf.stats()["graph_calls"] >= 12


@pytest.mark.parametrize("cls", [TreeLSTM, LeftCell])
def test_tree_lstm_with_folded_weight_gradients_within_rounding(cls):
    """Reassociating: weight gradients folded, a split's slice gradients joined into one
    concatenation where they tile the vector (LeftCell's unread `f_r` leaves a gap: summed)."""
    with within(1e-5, 1e-6):
        jf = side_by_side(make_tree_lstm(cls=cls), calls([tree(s) for s in range(24)]), reassociate=True)
    (region,) = {n.params["region"] for n in _regions(jf)}
    assert jf.stats()["graph_calls"] >= 12
    joined = region.source.count(", ))")  # `np.concatenate((v1, v2, ))`: joined slice gradients
    assert joined == (2 if cls is TreeLSTM else 1)  # the leaf's and the combination's / the leaf's
    # the gates' sigmoids run once on the adjacent slices: i, o of a leaf, i, f_l, f_r, o of a node
    spans = re.findall(r"t\d+ = SIGMOID\(v\d+\[0:(\d+)\]\)", region.source)
    assert sorted(map(int, spans)) == [2 * H, 4 * H]


def test_tree_lstm_calls_that_break_the_region_assumptions_run_eagerly():
    trees = [tree(s) for s in range(14)]
    trees += [tree(100, word=np.int64), tree(101, leaves=1), tree(102),
              tree(103, word=lambda w: w + V), tree(104)]
    jf = side_by_side(make_tree_lstm(), calls(trees))
    assert _regions(jf)
    stats = jf.stats()
    assert stats["assert_failures"] >= 2 and stats["graph_calls"] >= 5


def test_an_overriding_subclass_is_not_the_method_staged():
    """`self.encode` resolves through the object's class: a subclass's own `encode` is that
    method's recursion, not the base class's."""

    class Shallow(TreeLSTM):
        def encode(self, node):
            if node.is_leaf:
                return self.leaf(node.word)
            return self.leaf(0)  # not recursive

    def make():
        model = Shallow(np.random.default_rng(0))

        def step(root, label):
            h, c = model.encode(root)
            return F.sum(h * c)

        return step, {"emb": model.emb}

    jf = side_by_side(make, calls([tree(s) for s in range(16)]))
    assert not _regions(jf)


def test_tree_lstm_region_gradients_match_finite_differences():
    """Both items of the returned tuple carry cotangents (the loss reads h and c), float64."""
    rng = np.random.default_rng(5)
    model = TreeLSTM(rng)
    for name in ("emb", "w_leaf", "u", "b"):
        var = getattr(model, name)
        setattr(model, name, jl.Variable(var.numpy().astype(np.float64) + rng.standard_normal(var.shape) * 0.1,
                                         name=name))
    params = [model.emb, model.w_leaf, model.u, model.b]

    def loss_of(root):
        h, c = model.encode(root)
        return F.sum(h * np.arange(1.0, H + 1)) + F.sum(c * c)

    def grads(root):
        with jl.GradientTape() as tape:
            loss = loss_of(root)
        return tape.gradient(loss, params)

    jf = jl.jit(grads, warmup=1)
    jf._regions = True  # stage the region from the first graph on
    root = tree(9, leaves=5)
    for _ in range(3):
        got = [g.numpy() for g in jf(root)]
    assert _regions(jf) and jf.stats()["graph_calls"] >= 2
    assert_variable_gradients(params, got, lambda: loss_of(root))


def test_items_and_slices_of_one_vector_in_a_region():
    """A leaf reading single items (`z[3]`) beside slices of one vector: only the slices are
    grouped (an item's index is not a slice; it once stopped the region with a TypeError)."""
    def make():
        emb = jl.Variable(np.random.default_rng(2).standard_normal((V, H)).astype(np.float32), name="emb")
        w = jl.Variable(np.full((H, H // 2), 0.1, np.float32), name="w")

        def encode(node):
            if node.is_leaf:
                z = emb[node.word]
                return F.sigmoid(z[0:2]) * F.sigmoid(z[2:4]) + F.sigmoid(z[3]) + F.sigmoid(z[2])
            return np.tanh(np.concatenate([encode(node.left), encode(node.right)]) @ w)

        def step(root, label):
            with jl.GradientTape() as tape:
                loss = F.sum(encode(root))
            (g,) = tape.gradient(loss, [emb])
            emb.assign_sub(0.1 * g)
            return loss

        return step, {"emb": emb, "w": w}

    with within(1e-5, 1e-6):
        jf = side_by_side(make, calls([tree(s) for s in range(20)]), reassociate=True)
    assert _regions(jf) and jf.stats()["graph_calls"] >= 8
