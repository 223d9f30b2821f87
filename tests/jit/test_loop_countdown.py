"""A `for` over a range whose bounds change between calls and whose constant step is negative
(`range(n - 1, -1, -1)`): a loop node counting down, side by side with eager."""
import numpy as np
from hypothesis import given, settings, strategies as st

from .harness import check


def _has_loop(jf):
    return any(n.op == "loop" for g in jf.compiled for n in g.graph.all_nodes())


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=6, max_size=9), st.sampled_from([-1, -2, -3]),
       st.sampled_from(["n - 1, -1", "n, 0", "n + 2, 1", "n, n - 4"]))
def test_a_graph_valued_range_that_counts_down(counts, step, bounds):
    """Discounted returns the way REINFORCE code writes them, over `range(n - 1, -1, -1)` of an
    episode length n that changes every call: a loop node counting down (its test is `k > stop`),
    which runs no trip where eager runs none."""
    start, stop = bounds.split(", ")

    def make():
        scope = {"np": np}
        exec(f"def f(r, n):\n"
             f"    G = r[0] * 0.0\n"
             f"    out = np.zeros(12)\n"
             f"    for t in range({start}, {stop}, {step}):\n"
             f"        G = r[t % 12] + 0.9 * G\n"
             f"        out[t % 12] = G\n"
             f"    return out, G\n", scope)
        return scope["f"], {}

    r = np.random.default_rng(3).standard_normal(12)
    jf = check(make, [lambda s, n=n: (r, n) for n in counts], min_graph_calls=0)
    assert _has_loop(jf) or jf.stats()["graph_calls"] == 0, jf.explain()
    assert "non-positive step" not in jf.explain()
