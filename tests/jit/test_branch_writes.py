"""Variables assigned and arrays written in place inside a branch on a graph value (a
conditional node). Eager and jit side by side after every call, comparing results, the
Variables and the caller's arrays; the branch outcome changes mid-sequence.

Each written array or Variable is an output of the conditional node: the value before the node
is put back after each branch (`statements.branch_box_write`, `control.take_branch_state`), the
branch that did not write passes it through, and the merged value is what the graph commits."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import janus_like as jl
from janus_like import F, optim

from .harness import check, fallback_reasons


def _has_cond(jf):
    return any(n.op == "cond" for g in jf.compiled for n in g.graph.all_nodes())


def _guarded_sgd(limit=100.0):
    """Skip the update when the loss is too large (as a loss-scaling or NaN guard does) and
    keep a copy of the weights of the last step taken."""
    def make():
        w = jl.Variable(np.linspace(0.5, 1.5, 3).astype(np.float32), name="w")
        best = jl.Variable(np.zeros(3, np.float32), name="best")
        opt = optim.SGD(0.05)

        def step(x):
            with jl.GradientTape() as tape:
                loss = F.sum((w * x - 1.0) ** 2)
            grads = tape.gradient(loss, [w])
            if loss < limit:
                opt.apply_gradients(zip(grads, [w]))
                best.assign(w)
            return loss

        return step, {"w": w, "best": best, "iterations": opt.iterations}

    return make


def _scaled(scales, n=3):
    return [lambda s, k=k: (np.full(n, k, np.float32),) for k in scales]


def test_optimizer_step_and_variable_copy_in_one_branch():
    scales = [1.0, 20.0, 0.5, 30.0, 1.5, 40.0, 1.0, 50.0, 0.8, 2.0, 60.0, 1.2]
    jf = check(_guarded_sgd(), _scaled(scales), min_graph_calls=5)
    assert _has_cond(jf), jf.explain()


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from([0.5, 1.0, 1.5, 20.0, 40.0]), min_size=5, max_size=12))
def test_optimizer_step_random_loss_sequences(scales):
    check(_guarded_sgd(), _scaled(scales), min_graph_calls=0)


def test_in_place_writes_of_local_and_input_arrays():
    """A local buffer written in one branch, the caller's array written in both (committed)."""
    def make():
        def f(x, acc):
            buf = np.zeros(3)
            if x.sum() > 0:
                buf[0] = x.sum()
                acc[:] = acc * 0.5 + x
            else:
                acc *= 2.0
            buf += 1.0
            return buf * acc

        return f, {"acc": np.ones(3)}

    signs = [1, -1, 1, 1, -1, 1, -1, -1, 1, -1]
    jf = check(make, [lambda s, sg=sg, i=i: (np.full(3, sg * (1.0 + 0.1 * i)), s["acc"]) for i, sg in enumerate(signs)],
               min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


def test_nested_branches_assign_one_variable():
    def make():
        v = jl.Variable(np.zeros(2), name="v")

        def f(x):
            s = x.sum()
            if s > 0:
                if s > 5:
                    v.assign(x)
                else:
                    v.assign_add(x)
            else:
                v.assign_sub(1.0)
            return v.value() * 2.0

        return f, {"v": v}

    vals = [1.0, 8.0, -1.0, 2.0, 9.0, -2.0, 3.0, -3.0, 10.0, 1.0, -1.0]
    jf = check(make, [lambda s, k=k: (np.full(2, k / 2),) for k in vals], min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


def test_name_rebound_in_one_branch_and_written_in_place_in_the_other_falls_back():
    def make():
        def f(x):
            y = x * 1.0
            if x.sum() > 0:
                y += 1.0
            else:
                y = x * 3.0
            return y

        return f, {}

    signs = [1, -1, 1, -1, 1, 1, -1, 1]
    jf = check(make, [lambda s, sg=sg: (np.full(2, sg * 1.0),) for sg in signs], min_graph_calls=0)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()
    assert "written in place in a branch" in jf.explain(), jf.explain()


def _centroid_step(x, c):
    d = ((x[:, None, :] - c[None]) ** 2).sum(-1)  # a view of c read before the branches
    labels = d.argmin(1)
    for j in range(c.shape[0]):
        m = labels == j
        if m.any():  # an empty cluster keeps its centroid
            c[j] = x[m].mean(0)
    return float(d.min(1).sum())


def _view_read_in_both_branches(x, c):
    row, col = c[0], c[:, 1:]
    before = row.sum()
    if x.sum() > 0:
        c[0, 1] = x[0, 0]
        r = row * 2.0 + col.sum()  # the write, seen through both views
    else:
        r = row + 1.0
    c[1] += r[:2].sum()  # after the conditional: the views see the merged array and this write
    return r, row.copy(), col.sum(), before


def _view_of_a_view(x, c):
    row = c[0]
    inner = row[1:]
    if x.sum() > 0:
        c[0, 2] = 9.0 + x[0, 0]
        s = inner.sum()
    else:
        s = inner.sum() + row.sum()
    c[0, 1] = x[1, 1]
    return s, inner.sum(), row.sum()


def _transposed_view(x, c):
    t = c.T
    if x.sum() > 0:
        c[0, 0] = 5.0
    return t[0].sum()


def _loop_over_a_view(x, c):
    row = c[0]
    i = 0
    while c[0, 0] < x.sum() * 10 and i < 20:  # a loop node: its body would read `row` as before the loop
        c[0, 0] += 1.0
        i += 1
    return row.sum(), i


@pytest.mark.parametrize("fn, graphs", [(_centroid_step, True), (_view_read_in_both_branches, True),
                                        (_view_of_a_view, True), (_transposed_view, False),
                                        (_loop_over_a_view, False)])
def test_writes_in_a_branch_to_an_array_with_views_made_before_it(fn, graphs):
    """Slicing views of an array made before a conditional node read it as the branch taking
    them wrote it: each branch refreshes them from its own writes, the node puts them back, and
    its merge refreshes them (statements.branch_box_write), views of those views too. Reshaped or
    transposed views, and a loop node's views made before it, keep the step eager."""
    def make():
        return fn, {"c": np.arange(12.0).reshape(4, 3) / 4}

    def args(s, k):
        rng = np.random.default_rng(k)
        x = rng.standard_normal((8, 3)) * (1 if k % 3 else -1)
        if fn is _centroid_step and k % 4 == 2:
            x[:] = s["c"][0] + 0.01 * x  # every point nearest one centroid: the others' clusters are empty
        return x, s["c"]

    jf = check(make, [lambda s, k=k: args(s, k) for k in range(12)], min_graph_calls=6 if graphs else 0)
    if graphs:
        assert _has_cond(jf), jf.explain()
    else:
        assert "view-write" in fallback_reasons(jf) or not jf.stats()["graph_calls"], jf.explain()


def test_a_view_of_a_view_reads_a_write_to_the_base():
    """`inner = c[0][1:]` then `c[0, 2] = v`: the view of the view reads the write (it read the
    array as it was before: a wrong result, refresh_views did not reach views of views)."""
    def f(x, c):
        inner = c[0][1:]
        c[0, 2] = x.sum()
        return inner.sum(), inner

    check(lambda: (f, {"c": np.arange(12.0).reshape(4, 3)}),
          [lambda s, k=k: (np.full(3, float(k)), s["c"]) for k in range(8)], min_graph_calls=4)
