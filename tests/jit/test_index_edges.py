"""Integer-array indexing at its edges, side by side with eager: a constant index naming one row
by a negative and a non-negative value (`H[[0, -1]]` of one row, `E[[1, -3]]` of four), whose
gradient adds both contributions (passes/simplify.unique_scatters makes a scatter an assignment
only when no two values are one position), and an index tuple whose items are tuples
(`W[tuple(zip(*pairs))]`, as NumPy converts them)."""
import numpy as np
import pytest

import janus_like as jl

from .harness import check


def _tape_step(index):
    def make():
        st = {"W": jl.Variable(np.full((3, 2), 0.1))}

        def step(X, st):
            W = st["W"]
            with jl.GradientTape() as tape:
                H = np.tanh(X @ W)
                loss = np.sum(H[index])
            g = tape.gradient(loss, W)
            W.assign_sub(0.1 * g)
            return g
        return step, st
    return make


@pytest.mark.parametrize("rows,index", [(1, [0, -1]), (4, [1, -3]), (4, [-1, -2]), (4, [0, 3]),
                                        (4, ([0, -4, 2], [1, 1, 1]))])
def test_gradient_of_a_constant_index_naming_one_row_twice(rows, index):
    calls = [lambda s, i=i: (np.ones((rows, 3)) * (1 + 0.1 * i), s) for i in range(7)]
    index = tuple(index) if isinstance(index, tuple) else index
    check(_tape_step(index), calls, min_graph_calls=3, reassociate=True)


def test_an_index_tuple_of_tuples():
    def make():
        def step(k, st):
            st["W"][k] += 1.0
            return st["W"][k] * 2.0
        return step, {"W": np.arange(16.0).reshape(4, 4)}

    pairs = [((0, 1), (2, 3)), ((0, 1), (2, 3)), ((3, 3), (0, 0)), ((0, 1), (2, 3))]
    check(make, [lambda s, i=i: (pairs[min(i, 3) if i < 4 else i % 4], s) for i in range(8)], min_graph_calls=2)


def test_a_write_at_an_index_computed_in_a_branch_of_a_loop():
    # `x[j % 3] += 1` in the branch a data-dependent break skips: its view is the branch's own
    def make():
        def step(x, st):
            for j in range(3):
                if x[j, 0] > 0:
                    break
                x[j % 3] += 1.0
            return x.sum()
        return step, {}

    check(make, [lambda s, i=i: (np.random.default_rng(100 + i).standard_normal((3, 4)), s) for i in range(8)],
          min_graph_calls=2)
