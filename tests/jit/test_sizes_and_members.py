"""Python ints a loop reads from a list at varying positions are graph inputs; two places needed
them as constants and kept the step eager: the size or shape of `np.zeros`, `np.ones`,
`np.empty`, `np.full`, `np.eye` (`[np.zeros(dims[i + 1]) for i in range(len(dims) - 1)]`), now
taken at their values under a value guard; and `epoch in milestones` (a learning-rate schedule),
now Python's own `in` when the graph runs, a branch on it speculated as any other. Eager and jit
side by side after every call, including calls whose sizes or membership change."""
import numpy as np

from .harness import check, fallback_reasons


def test_sizes_read_from_a_list_in_a_loop():
    def make():
        def f(dims, x):
            bs = [np.zeros(dims[i + 1]) for i in range(len(dims) - 1)]
            out = {}
            for i in range(len(dims) - 1):
                out["W%d" % i] = np.full((dims[i], dims[i + 1]), 0.5) * x[0] + np.ones((dims[i], 1))
                out["e%d" % i] = np.eye(dims[i]) + np.empty((0, dims[i])).sum()
            return x.sum() + sum(b.sum() for b in bs), [b.shape for b in bs], out

        return f, {}

    dims = [[3, 4, 2]] * 6 + [[3, 5, 2], [3, 4, 2], [3, 5, 2], [3, 4, 2], [3, 6, 2]]
    jf = check(make, [lambda st, i=i: (list(dims[i]), np.ones(2) * i) for i in range(len(dims))], min_graph_calls=3)
    assert "unsupported-call" not in fallback_reasons(jf), jf.explain()


def test_a_counter_in_a_list_of_milestones_decays_the_learning_rate():
    def make():
        def step(st, g, milestones):
            st["epoch"] += 1
            if st["epoch"] in milestones:
                st["lr"] *= 0.1
            st["W"] -= st["lr"] * g
            return st["lr"], st["epoch"] not in milestones

        return step, {"W": np.ones(3), "lr": 0.5, "epoch": 0}

    calls = [lambda st, i=i: (st, np.full(3, float(i)), (3, 6, 7) if i < 9 else [10, 11]) for i in range(12)]
    jf = check(make, calls, min_graph_calls=4)
    assert "data-dependent-python" not in fallback_reasons(jf), jf.explain()


def test_a_local_list_extended_with_the_inputs_lists():
    """`src.extend(ns)` of an input's list (message passing over neighbour lists) was an
    unsupported call where `src += ns` was not: both take the list's items, each guarded."""
    def make():
        def step(X, nbr_lists, st):
            src, dst = [], []
            for v, ns in enumerate(nbr_lists):
                src.extend(ns)
                dst.extend([v] * len(ns))
            agg = np.zeros_like(X)
            np.add.at(agg, np.asarray(dst, dtype=np.intp), X[np.asarray(src, dtype=np.intp)])
            st["W"] -= 0.01 * agg.T @ agg
            return agg, src

        return step, {"W": np.eye(3)}

    nbrs = [[[1], [0, 2], [1]]] * 4 + [[[1, 2], [0], [0]], [[], [2], [1]], [[2], [0, 2], [1, 0]], [[1], [0, 2], [1]]]
    X = np.arange(9.0).reshape(3, 3) / 10
    jf = check(make, [lambda st, i=i: (X, nbrs[i], st) for i in range(len(nbrs))], min_graph_calls=4)
    assert "unsupported-call" not in fallback_reasons(jf), jf.explain()
