"""Steps that call np.cumsum, np.prod, np.sort, np.diff, np.round, np.triu / np.tril, np.hypot,
np.atleast_*d, `np.full` of a computed value, the reducing ufunc methods, `copy=` of np.array /
astype, and the in-place `x.fill(v)` / `x.sort()`, run as graphs (each ran eagerly before), side by
side against eager: outputs, state, the caller's arrays and who is who after every call."""
import numpy as np
import pytest

import janus_like as jl

from .harness import call_sequence, check, load_module, random_array

BODIES = {
    "discounted_returns": "r = x * st['gamma'] ** np.arange(4.0)\n"
                          "    return np.cumsum(r[::-1])[::-1] / st['gamma']",
    "running_sums": "return np.cumsum(m, axis=1), np.cumsum(m), np.add.accumulate(m * x, axis=1), m.cumsum(0)",
    "integer_sums": "return np.cumsum((x * 10).astype(np.int32)), np.cumsum(x > 0), np.cumsum(x, dtype=np.float32)",
    "products": "y = np.where(x > 0, x, 0.0)\n    return np.prod(y), (m * 2).prod(axis=1, keepdims=True), "
                "np.multiply.reduce(m, axis=None)",
    "sorted_copies": "y = m * x\n    y[0, 0] = np.nan\n"
                     "    return np.sort(y, axis=0), np.sort(y, axis=None), np.sort(x)[-2:].mean()",
    "differences": "return np.diff(m * x, n=2, axis=1), np.diff(m, axis=0), np.diff(x > 0)",
    "rounding": "return np.round(x * 100, -1), np.around(x, 2), (x * 10).astype(np.int64).round(), x.round(1)",
    "triangles": "s = m * x\n    return np.triu(s), np.tril(s, -1), np.triu(np.stack([s, s + 1]), 1)",
    "hypot": "return np.hypot(m, x), np.hypot(x, 2.0)",
    "at_least": "return np.atleast_2d(x) * 2, np.atleast_3d(m * x).shape, np.atleast_1d(x.sum()) + 1",
    "filled_with_a_value": "return np.full((2, 4), x.sum(), dtype=np.float32), np.full(3, float(x[0])), "
                           "np.full((2, 4), x)",
    "reducing_methods": "return np.add.reduce(m * x, keepdims=True), np.maximum.reduce(m, axis=1), "
                        "np.minimum.reduce(m * x)",
    "no_copy": "y = x * 2\n    return y, y.astype(y.dtype, copy=False), np.array(y, copy=False), "
               "np.asarray(y, copy=None), y.astype(np.float32, copy=False)",
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_numpy_functions_side_by_side(tmp_path, name):
    module = load_module(tmp_path, f"import numpy as np\n\n\ndef f(x, m, st):\n    {BODIES[name]}\n", name)
    st = {"gamma": 0.9}
    calls = call_sequence(7, lambda s, i: (random_array(i, (4,)), random_array(50 + i, (3, 4)), st))
    jf = check(lambda: (module.f, {}), calls, min_graph_calls=3)
    assert not jf.fallbacks(), jf.explain()


def test_in_place_fill_and_sort_write_the_arrays_eager_writes(tmp_path):
    """`x.sort()` sorts the caller's array, `m[0].sort()` a row of a state array through its view,
    `st['w'].fill(v)` a state array: the graph's commit writes them as eager's calls do."""
    module = load_module(tmp_path, """
        import numpy as np

        def f(x, st):
            x.sort()
            st["m"][0].sort()
            st["m"].sort(axis=0)
            st["w"].fill(x[0])
            y = np.zeros(3, dtype=np.int64)
            y.fill(2.7)
            return x[-1] * 2, y
    """)

    def make():
        return module.f, {"st": {"m": random_array(99, (3, 3)), "w": np.ones(3)}}

    jf = check(make, call_sequence(7, lambda s, i: (random_array(i, (5,)), s["st"])), min_graph_calls=3)
    assert not jf.fallbacks(), jf.explain()
    x, st = random_array(7, (5,)), {"m": random_array(98, (3, 3)), "w": np.ones(3)}
    jf(x, st)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(st["m"], axis=0) >= 0) and np.all(st["w"] == x[0])


def test_tape_gradients_through_the_new_ops_in_a_graph(tmp_path):
    module = load_module(tmp_path, """
        import numpy as np
        import janus_like as jl

        def f(x, m):
            t = jl.tensor(m * x)
            with jl.GradientTape() as tape:
                tape.watch(t)
                y = np.sum(np.cumsum(t, axis=1) * np.sort(t)) + np.prod(t[0]) + np.sum(np.hypot(t, 1.0)) \\
                    + np.sum(np.triu(t) * np.tril(t, 1)) + np.sum(np.diff(t, axis=0) ** 2)
            return tape.gradient(y, t)
    """)
    calls = call_sequence(7, lambda s, i: (random_array(i, (4,)), random_array(50 + i, (3, 4))))
    jf = check(lambda: (module.f, {}), calls, min_graph_calls=3)
    assert not jf.fallbacks(), jf.explain()


def test_copy_false_that_would_copy_stays_eager_and_raises_as_eager(tmp_path):
    source = "import numpy as np\n\n\ndef f(x):\n    return np.array(x * 2, np.float32, copy=False)\n"
    module = load_module(tmp_path, source)
    jf = jl.jit(module.f)
    for i in range(5):
        with pytest.raises(ValueError):
            jf(random_array(i, (3,)))
    assert jf.stats()["graph_calls"] == 0


def test_a_tape_follows_reducing_and_accumulating_ufunc_methods_as_eager_does(tmp_path):
    """np.add.accumulate and np.multiply.reduce of a Tensor are the same ops eagerly and in a graph
    (the graph had its own table: a tape differentiated through the running sum there while eager
    held it constant, and the gradients differed)."""
    module = load_module(tmp_path, """
        import numpy as np
        import janus_like as jl

        def f(x, m):
            t = jl.tensor(m * x)
            with jl.GradientTape() as tape:
                tape.watch(t)
                y = np.sum(np.add.accumulate(t, axis=1) * t) + np.sum(np.multiply.reduce(t, axis=0)) \\
                    + np.sum(np.maximum.reduce(t, 1))
            return tape.gradient(y, t)
    """)
    calls = call_sequence(7, lambda s, i: (random_array(i, (4,)), random_array(50 + i, (3, 4))))
    jf = check(lambda: (module.f, {}), calls, min_graph_calls=3)
    assert not jf.fallbacks(), jf.explain()
