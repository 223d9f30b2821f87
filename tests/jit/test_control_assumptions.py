"""Control-flow assumptions: branches on computed values (assert, then a conditional node) and
while-loop trip counts (asserts, then a loop node), each broken mid-sequence, side by side with
eager."""
import numpy as np

from .harness import assumption_kinds, check, fallback_reasons, random_array


def _has_loop_node(jf):
    return any(n.op == "loop" for g in jf.compiled for n in g.graph.all_nodes())


# ------------------------------------------------------------------ branch on a computed value
def test_branch_on_computed_value_flips_then_becomes_cond():
    def make():
        def f(x):
            s = np.sum(x)
            if s > 0:
                y = x * 2.0
            else:
                y = x - 1.0
            return y + s

        return f, {}

    signs = [1, 1, 1, 1, 1, -1, -1, 1, -1, 1, -1, -1, 1]
    calls = [lambda s, sg=sg, i=i: (np.abs(random_array(i, (4,))) * sg,) for i, sg in enumerate(signs)]
    jf = check(make, calls)
    s = jf.stats()
    assert s["assert_failures"] >= 2, jf.explain()
    assert s["regenerations"] >= 1, jf.explain()
    assert any(n.op == "cond" for g in jf.graphs() for n in g.graph.nodes), jf.explain()
    assert "branch" in assumption_kinds(jf)
    # after relaxing, both outcomes run as a graph: the last 5 calls were all graph calls
    assert s["graph_calls"] >= 5 + 2, jf.explain()


def test_branch_seen_both_ways_in_warmup_is_cond_from_the_start():
    def make():
        def f(x):
            if np.max(x) > 0.5:
                x = np.tanh(x)
            else:
                x = np.exp(x)
            return x * 3.0

        return f, {}

    vals = [np.full(3, v) for v in (1.0, 0.0, 1.0, 0.0, 1.0, 2.0, -1.0, 0.1)]
    jf = check(make, [lambda s, v=v: (v.copy(),) for v in vals])
    assert jf.stats()["assert_failures"] == 0 and jf.stats()["graph_calls"] == 5, jf.explain()
    assert any(n.op == "cond" for g in jf.graphs() for n in g.graph.nodes), jf.explain()


def test_regenerated_cond_graph_printout_contains_cond():
    def make():
        def f(x):
            s = np.sum(x)
            if s > 0:
                y = x * 2.0
            else:
                y = x - 1.0
            return y + s

        return f, {}

    signs = [1, 1, 1, 1, -1, -1, 1, -1]
    jf = check(make, [lambda s, sg=sg, i=i: (np.abs(random_array(i, (4,))) * sg,) for i, sg in enumerate(signs)])
    assert jf.stats()["regenerations"] >= 1, jf.explain()
    printed = [str(g.graph) for g in jf.graphs()]
    assert any("= cond " in p and "then:" in p and "else:" in p for p in printed), "\n".join(printed)


def test_branch_with_return_in_both_arms_falls_back_correctly():
    """`return` inside a data-dependent branch cannot become a cond: after the speculated outcome
    keeps failing, the signature runs eagerly, always with the eager result."""
    def make():
        def f(x):
            if np.sum(x) > 0:
                return x * 2.0
            return x - 1.0

        return f, {}

    signs = [1, 1, 1, 1, -1, -1, 1, -1, 1]
    calls = [lambda s, sg=sg, i=i: (np.abs(random_array(i, (4,))) * sg,) for i, sg in enumerate(signs)]
    jf = check(make, calls)
    assert jf.stats()["assert_failures"] >= 2, jf.explain()
    assert "assumption" in fallback_reasons(jf)


def test_python_scalar_from_array_branch():
    """float(x.sum()) makes a Python value that depends on array contents; a branch on it is
    speculated like any computed branch."""
    def make():
        def f(x):
            total = float(np.sum(x))
            if total > 1.0:
                scale = 0.5
            else:
                scale = 2.0
            return x * scale

        return f, {}

    vals = [3.0, 3.0, 3.0, 3.0, 0.0, 3.0, 0.0, 0.0, 3.0]
    jf = check(make, [lambda s, v=v, i=i: (np.full(2, v / 2) + 0.01 * i,) for i, v in enumerate(vals)])
    assert jf.stats()["graph_calls"] >= 2, jf.explain()


# ------------------------------------------------------------------ while loop trip count
def test_while_loop_trip_count_stable_then_different():
    def make():
        def f(x):
            n = 0
            while np.max(np.abs(x)) > 1.0:
                x = x * 0.5
                n += 1
            return x, n

        return f, {}

    # scale 6 -> 3 halvings; scale 20 -> 5 halvings
    scales = [6.0] * 6 + [20.0] + [6.0] + [20.0, 20.0, 20.0, 6.0]
    calls = [lambda s, sc=sc, i=i: (np.array([sc, -sc * 0.9, 0.1 * i]),) for i, sc in enumerate(scales)]
    jf = check(make, calls)
    s = jf.stats()
    assert "trip_count" in assumption_kinds(jf)
    assert s["assert_failures"] >= 1, jf.explain()
    assert s["graph_calls"] >= 4, jf.explain()
    if s["regenerations"]:  # relaxed: a loop node, or (without loop nodes) an eager signature
        assert _has_loop_node(jf) or "varying-trip-count" in fallback_reasons(jf), jf.explain()


def test_while_loop_varying_during_warmup():
    def make():
        def f(x):
            while np.sum(x) < 10.0:
                x = x + 1.0
            return x

        return f, {}

    starts = [0.0, 5.0, 8.0, 0.0, 9.0]
    jf = check(make, [lambda s, v=v: (np.full(2, v),) for v in starts], min_graph_calls=0)
    if _has_loop_node(jf):
        assert jf.stats()["graph_calls"] == 2, jf.explain()
    else:
        assert jf.stats()["graph_calls"] == 0
        assert "varying-trip-count" in fallback_reasons(jf), jf.explain()


def _squash(a):
    return np.tanh(a) * 0.5


def test_helper_call_inside_cond_arm_becomes_cond():
    def make():
        def f(x):
            if np.sum(x) > 0:
                y = _squash(x)
            else:
                y = x * 2.0
            return y

        return f, {}

    signs = [1, -1, 1, -1, 1, -1]
    jf = check(make, [lambda s, sg=sg, i=i: (np.abs(random_array(i, (3,))) * sg,) for i, sg in enumerate(signs)])
    assert any(n.op == "cond" for g in jf.compiled for n in g.graph.nodes), jf.explain()


def test_helper_call_inside_cond_arm_is_correct():
    """Whatever the JIT does with it, the result is eager's and the reason is named."""
    def make():
        def f(x):
            if np.sum(x) > 0:
                y = _squash(x)
            else:
                y = x * 2.0
            return y

        return f, {}

    signs = [1, -1, 1, -1, 1, -1]
    jf = check(make, [lambda s, sg=sg, i=i: (np.abs(random_array(i, (3,))) * sg,) for i, sg in enumerate(signs)],
               min_graph_calls=0)
    assert jf.stats()["graph_calls"] > 0 or jf.fallbacks(), jf.explain()


# ------------------------------------------------------------------ break / continue on a computed value
def _early_exit(kind):
    def make():
        def f(x):
            y = x * 1.0
            for i in range(3):
                if np.sum(y) > 100.0:  # an early exit that most calls never take (a NaN guard, say)
                    if kind == "break":
                        break
                    continue
                y = y * 0.5 + 1.0
            return y

        return f, {}
    return make


def test_break_and_continue_on_a_computed_value_are_speculated():
    """A break or continue of an unrolled loop inside a branch on a graph value cannot be a
    conditional node's output. The outcome the warm-up saw more often is speculated (an assert
    per iteration); calls that take the other one fall back, and after repeated failures the
    signature stays eager. The graph used to end the loop unconditionally (wrong results). A
    branch that flips between iterations of one call (a convergence test) fails its assert on
    every such call: the signature then stays eager."""
    sums = [1, 1, 400, 1, 1, 1, 1, 400, 1, 1, 400, 1, 1, 1]  # the exit taken on some calls
    calls = [lambda s, t=t, i=i: (random_array(i, (4,)) * 0.1 + t / 4.0,) for i, t in enumerate(sums)]
    for kind in ("break", "continue"):
        jf = check(_early_exit(kind), calls)
        s = jf.stats()
        assert s["graph_calls"] >= 3 and s["assert_failures"] >= 1, jf.explain()
        assert "branch" in assumption_kinds(jf), jf.explain()


def test_break_of_a_loop_inside_a_branch_on_a_computed_value():
    """The unrolled loop lies wholly inside the conditional node's branch: its break is the
    branch's own control flow (a Python-value test), and the branch still becomes a node."""
    def make():
        def f(x):
            y = x * 1.0
            if np.sum(x) > 0.0:
                for i in range(4):
                    if i == 2:
                        break
                    y = y * 0.5 + 1.0
            else:
                y = y - 1.0
            return y

        return f, {}

    signs = [1, -1, 1, -1, -1, 1, 1, -1]
    calls = [lambda s, sg=sg, i=i: (np.abs(random_array(i, (4,))) * sg,) for i, sg in enumerate(signs)]
    jf = check(make, calls)
    assert any(n.op == "cond" for g in jf.graphs() for n in g.graph.nodes), jf.explain()
    assert jf.stats()["graph_calls"] >= 4, jf.explain()
