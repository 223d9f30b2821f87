"""`a if test else b` on a graph value, side by side with eager: the expression is the `if`
statement `tmp = a` / `tmp = b` (control.if_expression), so it is speculated while the warm-up saw
one outcome, a conditional node once it saw both (or after `regen_after` failed speculations),
and one graph per outcome where a conditional node cannot hold it."""
import math

import numpy as np

import janus_like as jl
from janus_like import F

from .harness import check, fallback_reasons


def clipped(x, max_norm=1.0):
    norm = math.sqrt(float(np.sum(x * x)))
    scale = max_norm / norm if norm > max_norm else 1.0
    return x * scale, scale


def _calls(pattern):
    """Calls on x = ones * 0.1 (a norm under 1) or ones * 2.0 (over 1), by pattern letter."""
    return [lambda s, c=c: (np.full(3, 0.1 if c == "s" else 2.0),) for c in pattern]


def test_both_outcomes_in_the_warm_up_make_a_conditional_node():
    jf = check(lambda: (clipped, {}), _calls("bss" + "sbbsbs" * 3), min_graph_calls=15)
    assert not jf.fallbacks() and len(jf.graphs()) == 1, jf.explain()


def test_a_speculated_outcome_that_keeps_failing_becomes_a_conditional_node():
    """The warm-up saw small norms only: the expression is speculated; after `regen_after`
    failures it is a conditional node and the large norms run as graphs too."""
    jf = check(lambda: (clipped, {}), _calls("sss" + "ssb" * 6), min_graph_calls=14)
    assert fallback_reasons(jf) == {"assumption"} and jf.stats()["regenerations"] == 1, jf.explain()
    assert sum(fb.count for fb in jf.fallbacks()) == 2, jf.explain()


def mixed(x, w):
    ys = [v * 2.0 if float(np.sum(v)) > 0 else v * -1.0 for v in x]  # in a comprehension
    g = lambda v: v + 1.0 if float(v.max()) > 0.5 else v - 1.0  # noqa: E731  in a lambda
    z = sum(ys) + g(x[0])
    with jl.GradientTape() as tape:
        h = np.tanh(x @ w)
        s = float(np.sum(h))
        out = (h * 2.0 if s > 0 else h * h) if s > -5 else h  # nested, under a tape
        loss = F.sum(out)
    gw = tape.gradient(loss, w)
    acc = 0.0
    for k in range(3):  # in an unrolled loop
        acc = acc + (float(np.mean(x[k])) if float(np.mean(x[k])) > 0 else 0.0)
    rows = x if float(np.sum(x)) > 0 else x[:2]  # arms of two shapes: one graph per outcome
    return z, loss, gw, acc, rows


def test_expressions_in_comprehensions_lambdas_loops_and_under_a_tape():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((3, 4)) * (1 + (k % 4)) for k in range(24)]

    def make():
        return mixed, {"w": jl.Variable(np.random.default_rng(0).standard_normal((4, 4)))}

    jf = check(make, [lambda s, k=k: (xs[k], s["w"]) for k in range(24)], min_graph_calls=12)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def drawn(x):
    return x + (np.random.rand(3) if float(np.sum(x)) > 0 else 0.0)  # a draw in one arm only


def test_a_draw_in_one_arm_keeps_the_global_rng_in_step():
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(3) for _ in range(20)]
    jf = check(lambda: (drawn, {}), [lambda s, k=k: (xs[k],) for k in range(20)], min_graph_calls=0)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


# ------------------------------------------------------------------ any() and all()
def flags(xs, limit):
    big = any(float(np.sum(x)) > limit for x in xs)  # a generator expression
    small = all([float(np.max(x)) < 2.0 for x in xs])  # a list
    early = any([True, float(np.sum(xs[0])) > 0.0])  # a Python item decides it
    none = any(x.sum() > 100.0 for x in xs[:0])
    scale = 0.5 if big else 1.0
    return [x * scale for x in xs], big, small, early, none, all(())


def drawn_later(xs):
    return any(float(np.sum(x)) > 0.0 and np.random.rand() > 0.5 for x in xs), np.random.rand()


def test_any_and_all_of_graph_values():
    rng = np.random.default_rng(4)
    xss = [[rng.standard_normal(3) * (1 + k % 3) for _ in range(3)] for k in range(6)]
    jf = check(lambda: (flags, {}), [lambda s, k=k: (xss[k % 6], 1.0) for k in range(18)], min_graph_calls=10)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_any_whose_later_items_draw_stays_eager():
    """Eager stops pulling at the first true item, so the later items' draws depend on the
    data: such a call keeps the signature eager (and the RNG in step)."""
    rng = np.random.default_rng(5)
    xss = [[rng.standard_normal(3) for _ in range(3)] for _ in range(4)]
    jf = check(lambda: (drawn_later, {}), [lambda s, k=k: (xss[k % 4],) for k in range(10)], min_graph_calls=0)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()


def logged_checks(grads, st):
    def finite(k, g):
        st["checked"].append(k)
        return bool(np.isfinite(g).all())
    return all(finite(k, g) for k, g in enumerate(grads))


def indexed_items(x, idx):
    return x * any(x[j] > 2 for j in idx)


def test_any_and_all_whose_later_items_write_state_or_may_raise_are_eagers():
    """An item after one the graph computes is one eager may never pull: one that appends to a
    state list (a log of the checks made), or one that indexes at a position the call gives
    (`x[7]` of three values, past the item that decides), is not built into the graph."""
    def grads(st, i):
        gs = [np.ones(2), np.ones(2), np.ones(2)]
        if i in (3, 5):
            gs[1] = np.array([np.nan, 1.0])
        return gs, st

    jf = check(lambda: (logged_checks, {"checked": []}), [lambda s, i=i: grads(s, i) for i in range(9)],
               min_graph_calls=0)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()
    calls = [lambda s, i=i: (np.array([1.0, 3.0, 0.0]), [0, 1, 2] if i < 4 else [0, 1, 7]) for i in range(7)]
    jf = check(lambda: (indexed_items, {}), calls, min_graph_calls=0)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


# ------------------------------------------------------------------ a and b, a or b as values
def gates(x, y):
    s, t = float(np.sum(x)), float(np.sum(y))
    first = s > 0 and t  # a Python bool, or t
    either = (x.max() > 1.0) or (y * 2.0)  # a 0-d array, or an array
    chain = s > -1 and t > -1 and s + t
    return first, either, chain


def test_and_or_values_on_graph_values_become_conditional_nodes():
    """Each operand's truth was speculated operand by operand; once both outcomes occur the
    rest of the expression is a conditional node (or one graph per outcome where the arms'
    types differ)."""
    rng = np.random.default_rng(6)
    pairs = [(rng.standard_normal(3) * (1 + k % 3), rng.standard_normal(3)) for k in range(8)]
    jf = check(lambda: (gates, {}), [lambda s, k=k: pairs[k % 8] for k in range(24)], min_graph_calls=8)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
    assert "_janus_like" not in jf.explain() and "conditional expression" in jf.explain(), jf.explain()


def scan(x, th):
    k = 0
    while k < x.shape[0] and x[k] < th:  # x[n] is never read: `and` stops at k < n
        k += 1
    return k


def test_a_bounded_scan_reads_no_index_past_its_bound():
    """`while k < n and x[k] < th`: the loop's test is not one truth value of both operands
    (the graph would read x[n] on the last trip, an IndexError eager never meets)."""
    ths = [0.5, 1.5, 2.5, 0.5, 3.5, 1.5, 9.0, 2.5, 9.0, 0.5, 9.0]
    jf = check(lambda: (scan, {}), [lambda s, t=t: (np.arange(4.0), t) for t in ths], min_graph_calls=3)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def rest_after_any(x):
    it = iter(x)
    found = any(v > 0 for v in it)
    return found, list(it)


def test_any_over_an_iterator_the_function_holds_is_eagers():
    """`it = iter(x); any(v > 0 for v in it); list(it)`: eager stops pulling `it` at the first
    true item, so the rest holds the items after it; the graph pulled them all."""
    calls = [lambda s, i=i: (np.array([-1.0, 2.0, 3.0]) * (1 if i % 2 else -1),) for i in range(7)]
    jf = check(lambda: (rest_after_any, {}), calls, min_graph_calls=0)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()
