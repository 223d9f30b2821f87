"""`x[mask]` with a mask the graph computes, and `np.nonzero` / one-argument `np.where` /
`np.flatnonzero` / `np.argwhere` / `np.unique`, run in a graph of unknown sizes (graphgen/masks.py):
side by side against eager with results, state and arguments compared after every call, on call
sequences whose masks select every count from none to all, so a count the generator baked in, a
branch on the count or an empty selection's warning would show."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from .harness import call_sequence, check, fallback_reasons, load_module, random_array, within

BODIES = {
    "mean_and_count": "valid = y > 0\n    return float(((x[valid] - 1) ** 2).mean()), int(valid.sum())",
    "rows_len_shape": "kept = x[y > 0]\n    return kept.sum(axis=0), len(kept), kept.shape, kept.shape[0] * 2",
    "whole_array_mask": "m = x > 0.5\n    return x[m].sum(), x[m], np.abs(x[m]).max()",
    "second_axis": "m = x[0] > 0\n    return x[:, m] * 2, x[1:, m].T",
    "write_through": "m = y < 0\n    x[m] = x[m] * 0.5 + y[m][:, None]\n    return x.sum()",
    "augmented_state": "w = st['w']\n    w[w > 1] -= 1.0\n    return w.sum() + x[y > 0.5].sum()",
    "same_mask_twice": "m = y > 0\n    return (x[m] - x[m] * y[m][:, None]).sum(axis=1)",
    "branch_on_count": "kept = x[y > 0]\n    if len(kept) > 2:\n        return kept.mean(axis=0)\n    "
                       "return np.zeros(4)",
    "nested": "a = x[y > 0]\n    return a[a[:, 0] > 0].sum(), a[a[:, 0] > 0]",
    "mask_from_state": "m = st['m']\n    return x[m].sum(axis=0), y[m] + 1",
    "cumulative": "k = y[y > -0.5]\n    return np.cumsum(k), np.sort(k), k.argmax() if len(k) else -1",
    "more_ops": "k = y[y > 0]\n    return k * np.arange(len(k)), np.stack([k, k * 2]), np.concatenate([k, y]), k[-1:], "
                "k[::2], k.reshape(1, -1)",
    "loop_over_count": "k = y[y > 0]\n    t = k[:0].sum()\n    for i in range(len(k)):\n        t = t + k[i] * i\n"
                       "    return t",
    "nonzero_family": "i = np.nonzero(y > 0)[0]\n    r, c = np.nonzero(x > 0.5)\n    return x[i], "
                      "y[np.where(y < 0)[0]].sum(), np.flatnonzero(x > 0), np.argwhere(x > 1), r, c, "
                      "np.nonzero(np.round(y))[0], (y > 0).nonzero(), x[r, c] + c",
    "fixed_sizes": "k = x[y > 0]\n    z = np.zeros(len(y))\n    for i in range(len(y)):\n        z[i] = y[i] * 2\n"
                   "    return k.sum(), z, x.size, [r.sum() for r in x], x.shape, k.shape[1]",
    "unique": "u = np.unique(np.round(y * 2))\n    v = np.unique(np.where(x > 1, np.nan, np.round(x)))\n"
              "    k = np.unique((x > 0).sum(1))\n"
              "    return u, len(u), v, k, x[np.unique(np.clip(np.round(y * 3), 0, 5).astype(np.int64))], "
              "np.unique(st['m']), np.unique(x[:0])",
    "unique_returns": "u, c = np.unique(np.round(y), return_counts=True)\n"
                      "    v, i, inv, n = np.unique(np.where(x > 1, np.nan, np.round(x)), True, True, True)\n"
                      "    w, j = np.unique(np.round(y * 2), return_index=True)\n"
                      "    return u, c, v, i, inv, n, w, j, v[inv], np.unique(x[:0], return_counts=True), "
                      "np.unique((x > 0).sum(1), return_inverse=True), c.sum()",
    "tape": "w = st['v']\n    with jl.GradientTape() as tape:\n        h = x @ w\n        loss = (h[y > 0] ** 2).sum()"
            "\n    g = tape.gradient(loss, w)\n    w.assign_sub(0.1 * g)\n    return loss",
}
STILL_EAGER = {
    "loop_over_rows": "s = 0.0\n    for r in x[y > 0]:\n        s += r.sum()\n    return s",
    "list_of_items": "k = y[y > 0]\n    return list(k)",
    "size": "k = y[y > 0]\n    return k.size",
    "two_masks_combined": "return (y[y > 0] + y[y > 0.5]).sum()",
    "unique_axis": "return np.unique(np.round(x), axis=0)",
}


def _y(i):
    """Masks `y > 0` of every count: none, all, and random ones in between."""
    y = random_array(i, (6,))
    return -np.abs(y) if i % 5 == 3 else (np.abs(y) + 0.1 if i % 5 == 4 else y)


def _run(tmp_path, name, body, min_graph_calls, n=14, **jit_options):
    module = load_module(tmp_path, f"import numpy as np\nimport janus_like as jl\n\n\n"
                                   f"def f(x, y, st):\n    {body}\n", name)

    def make():
        import janus_like as jl
        return module.f, {"st": {"w": np.arange(12.0).reshape(3, 4) / 4, "m": np.zeros(6, bool),
                                 "v": jl.Variable(np.ones((4, 3)) / 4)}}

    def args(s, i):
        s["st"]["m"] = random_array(90 + i, (6,)) > 0
        return random_array(i, (6, 4)), _y(i), s["st"]

    return check(make, call_sequence(n, args), min_graph_calls=min_graph_calls, **jit_options)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_masked_selections_side_by_side(tmp_path, name):
    jf = _run(tmp_path, name, BODIES[name], 6)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()
    assert all(g.graph.polymorphic for g in jf.graphs()), jf.explain()


@pytest.mark.parametrize("name", sorted(STILL_EAGER))
def test_counts_baked_in_stay_eager(tmp_path, name):
    jf = _run(tmp_path, name, STILL_EAGER[name], 0)
    assert jf.stats()["graph_calls"] == 0 and fallback_reasons(jf), jf.explain()


def test_the_reason_names_the_mask_when_the_count_is_baked_in(tmp_path):
    jf = _run(tmp_path, "why", STILL_EAGER["list_of_items"], 0)
    assert any(fb.reason == "data-dependent-shape" and "boolean mask" in fb.detail for fb in jf.fallbacks()), \
        jf.explain()


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=5, max_size=12), st.sampled_from(sorted(BODIES)))
def test_any_sequence_of_counts(tmp_path_factory, counts, name):
    """Calls whose masks select exactly the drawn counts, in the drawn order."""
    body = BODIES[name]
    module = load_module(tmp_path_factory.mktemp("m"), f"import numpy as np\nimport janus_like as jl\n\n\n"
                                                        f"def f(x, y, st):\n    {body}\n", name)

    def make():
        import janus_like as jl
        return module.f, {"st": {"w": np.arange(12.0).reshape(3, 4) / 4, "m": np.ones(6, bool),
                                 "v": jl.Variable(np.ones((4, 3)) / 4)}}

    def args(s, i):
        y = np.abs(random_array(i, (6,))) + 0.1
        y[counts[i]:] *= -1
        s["st"]["m"] = y > 0
        return random_array(i, (6, 4)), np.random.default_rng(i).permutation(y), s["st"]

    check(make, call_sequence(len(counts), args), min_graph_calls=0)



@pytest.mark.parametrize("name", ["tape", "write_through", "mean_and_count", "whole_array_mask"])
def test_the_native_tier_leaves_masks_to_the_plan(tmp_path, name):
    """Numba's loops take index arrays as row numbers: a graph with a mask stays a NumPy plan."""
    pytest.importorskip("numba")
    with within(1e-9, 1e-12):
        jf = _run(tmp_path, f"native_{name}", BODIES[name], 6, native="always", reassociate=True)
    assert jf.stats()["native_graphs"] == 0 and "boolean mask as an index" in jf.explain(), jf.explain()


def test_masks_in_a_graph_for_unknown_dimensions(tmp_path):
    """Episodes of changing length T, a mask over their steps: one graph for every T and count."""
    body = "done = y > 0\n    r = x[done]\n    return r.sum(axis=0) / max(len(r), 1), len(x), x[~done].shape"
    module = load_module(tmp_path, f"import numpy as np\n\n\ndef f(x, y):\n    {body}\n", "episodes")

    def args(s, i):
        n = 3 + i % 6
        return random_array(i, (n, 4)), _y(i)[:n] if n <= 6 else random_array(40 + i, (n,))

    jf = check(lambda: (module.f, {}), call_sequence(20, args), min_graph_calls=8)
    assert jf.stats()["regenerations"] >= 1 and len(jf.graphs()) == 1, jf.explain()
    assert jf.graphs()[0].graph.polymorphic and jf.stats()["eager_calls"] <= 6, jf.explain()


BINCOUNT = {
    "counts_and_means": "c = np.bincount(y, minlength=5)\n    s = np.bincount(y, weights=w, minlength=5)\n"
                        "    return c, s / np.maximum(c, 1), c.shape, np.bincount(y, w, 5).argmax()",
    "of_a_selection": "yv = y[w > 0]\n    return np.bincount(yv, minlength=6), len(yv), np.bincount(yv, w[w > 0], 6)",
    "class_weights": "c = np.bincount(y, minlength=5)\n    return (1.0 / np.maximum(c, 1))[y] * w",
}


@pytest.mark.parametrize("name", sorted(BINCOUNT))
def test_bincount_speculates_its_minlength(tmp_path, name):
    """Labels below minlength (its bins), labels above it (more bins: the assert fails, eager
    runs) and a negative label (NumPy's error, raised where eager raises it)."""
    module = load_module(tmp_path, f"import numpy as np\n\n\ndef f(y, w):\n    {BINCOUNT[name]}\n", name)

    def args(s, i):
        y = np.random.default_rng(i).integers(0, 7 if i % 6 == 4 else 5, 12)
        if i == 9:
            y[3] = -1
        w = random_array(i, (12,))
        return y, -np.abs(w) if i == 7 else w  # (no weight above 0: an empty selection)

    jf = check(lambda: (module.f, {}), call_sequence(14, args), min_graph_calls=6)
    assert jf.stats()["assert_failures"] >= 1, jf.explain()
    assert jf.graphs()[0].graph.polymorphic == (name == "of_a_selection"), jf.explain()


def test_bincount_without_minlength_speculates_the_warm_ups_count(tmp_path):
    """As many bins as the largest label + 1: the count the warm-up calls agreed on, asserted
    (all labels below it, one at its last bin); calls with fewer or more bins and a negative
    label run eagerly (NumPy's error where eager raises it)."""
    source = "import numpy as np\n\n\ndef f(y, w):\n    c = np.bincount(y)\n" \
             "    return c, np.bincount(y, w, 0) / np.maximum(c, 1), (1.0 / c[y]) * w\n"
    module = load_module(tmp_path, source, "nomin")

    def args(s, i):
        y = np.random.default_rng(i).integers(0, 5, 12)
        y[0] = {8: 3, 11: 6}.get(i, 4)
        y = np.minimum(y, 3) if i == 8 else y  # fewer bins
        if i == 5:
            y[3] = -1
        return y, random_array(i, (12,))

    jf = check(lambda: (module.f, {}), call_sequence(14, args), min_graph_calls=6)
    assert jf.stats()["assert_failures"] >= 2, jf.explain()


def test_bincount_without_minlength_whose_count_changes_stays_eager(tmp_path):
    module = load_module(tmp_path, "import numpy as np\n\n\ndef f(y, w):\n    return np.bincount(y, w)\n", "nomin2")
    calls = call_sequence(8, lambda s, i: (np.random.default_rng(i).integers(0, 3 + i, 12), random_array(i, (12,))))
    jf = check(lambda: (module.f, {}), calls, min_graph_calls=0)
    assert jf.stats()["graph_calls"] == jf.stats()["assert_failures"] == 0, jf.explain()  # (no graph tried)
    assert "data-dependent-shape" in fallback_reasons(jf), jf.explain()


def test_bincount_whose_count_keeps_failing_is_relaxed_to_eager(tmp_path):
    module = load_module(tmp_path, "import numpy as np\n\n\ndef f(y):\n    return np.bincount(y) * 2\n", "nomin3")
    calls = call_sequence(14, lambda s, i: (np.minimum(np.arange(8), 4 if i < 4 else 2 + i % 4),))
    jf = check(lambda: (module.f, {}), calls, min_graph_calls=0)
    assert jf.stats()["regenerations"] == 1 and jf.stats()["fallbacks"] <= 4, jf.explain()
    assert "data-dependent-shape" in fallback_reasons(jf), jf.explain()


def test_the_idiom_benchmark_steps_run_as_graphs_and_agree_with_eager():
    """benchmarks/idiom_steps.py's steps, side by side for a few calls each."""
    from benchmarks import idiom_steps

    for name, (fn, make, args) in idiom_steps._cases().items():
        def made(fn=fn, make=make):
            return fn, ({"st": make()} if make else {})

        def call(s, i, args=args):
            return (s["st"], *args[i]) if "st" in s else args[i]

        jf = check(made, call_sequence(8, call), min_graph_calls=3)
        reasons = {fb.reason for fb in jf.fallbacks() if "one graph per outcome" not in fb.detail}  # (clip_some)
        assert not reasons - {"assumption"}, (name, jf.explain())


def test_one_mask_computed_twice_selects_one_count():
    """`s[~pos] @ X[~pos]`: the two `~pos` are two nodes of the same values, given one stand-in
    count (their products' shapes agree); the generator reported the product failing."""
    def make():
        def step(s, X, y):
            pos = y == 1
            return s[~pos] @ X[~pos], (s[pos] * 2.0).sum()

        return step, {}

    ys = [np.array([1, 0, 1, 0, 0]), np.array([0, 0, 1, 1, 1]), np.array([1, 1, 1, 1, 0])]
    calls = [lambda s, i=i: (random_array(i, (5,)), random_array(i + 50, (5, 3)), ys[i % 3]) for i in range(10)]
    jf = check(make, calls, min_graph_calls=5)
    assert not fallback_reasons(jf), jf.explain()
