"""User functions called by library code (map, filter, sorted/min/max with key=,
functools.reduce) and lazy iterators (map, filter, generator expressions): inlined in eager's
order, with what they read guarded; anything else stays eager, and an iterator that leaves the
function is eager's. Every case runs eager and jit side by side (results, state, printed output)."""
import functools
import itertools

import numpy as np

from .harness import call_sequence, check, fallback_reasons, random_array

SCALE = 2.0  # read by _scaled, changed by the call sequences below


def _scaled(x):
    return x * SCALE


def _set_scale(i, switch_at=5):
    global SCALE
    SCALE = 2.0 if i < switch_at else 3.0


def _lists(n, shape=(3,), length=3, switch_at=None):
    def args(state, i):
        if switch_at is not None:
            _set_scale(i, switch_at)
        return ([random_array(10 * i + k, shape) for k in range(length)],)
    return call_sequence(n, args)


def test_map_of_a_module_function_sees_a_changed_global():
    # the bug this guards against: the function ran as plain Python with graph values, so the
    # global it read was baked into the graph unguarded, and the graph kept SCALE = 2
    def make():
        def f(xs):
            return list(map(_scaled, xs))
        return f, {}

    jf = check(make, _lists(9, switch_at=5))
    assert "SCALE" in jf.explain() and jf.stats()["graph_calls"] >= 4, jf.explain()  # guarded, then an input


def test_map_filter_and_genexp_run_in_eagers_order_with_the_loop_body():
    def make():
        log = []

        def g(x):
            print("g", x.shape)
            log.append(x.sum())
            return x * len(log)  # reads what the loop body wrote

        def f(xs):
            out = []
            for y in map(g, xs):
                print("body", len(log))
                log.append(0.0)
                out.append(y)
            for y in (g(x) + 1.0 for x in xs if x.shape[0] > 1):
                print("genexp body", len(log))
                out.append(y)
            for a, b in zip(filter(lambda v: v.shape[0] > 2, xs), map(lambda v: v * 2.0, xs)):
                print("zip body")
                out.append(a + b)
            return out, log
        return f, {}

    check(make, _lists(6))


def test_sorted_min_max_and_reduce_with_user_keys():
    def make():
        def f(xs, names):
            order = sorted(names, key=lambda s: (len(s), s))
            longest = max(names, key=len)  # a builtin key: plain Python
            first = min(names, key=lambda s: s[-1])
            rev = sorted(range(len(xs)), key=lambda i: -i, reverse=True)
            total = functools.reduce(lambda acc, x: acc + np.tanh(x), xs, 0.0)
            prod = functools.reduce(lambda a, b: a * b, xs)
            pairs = list(map(lambda a, b: a - b, xs, xs[1:]))
            kept = list(filter(lambda x: x.shape[0] == 3, xs))
            return order, longest, first, rev, total, prod, pairs, kept
        return f, {}

    calls = call_sequence(6, lambda s, i: ([random_array(i + k, (3,)) for k in range(3)],
                                           ["bb", "a", "ccc", "ab"][: 2 + i % 3]))
    jf = check(make, calls)
    assert jf.stats()["eager_calls"] == 0, jf.explain()


def test_min_max_by_keys_the_graph_computes():
    """Python's scan, side by side: the first extreme wins (ties), a NaN key never replaces the
    best and is never replaced once first; array keys, Python-number keys, mixed constants."""
    def make():
        def f(q, st):
            a = max(range(3), key=lambda i: q[i])
            b = min([0, 2, 1], key=lambda i: float(q[i]))
            c = max(st["actions"], key=lambda k: q[k] if k < 3 else 0.25)
            d = min(1, 2, key=lambda i: q[i] * 2.0)
            return a, b, c, d, q[a] * 2 + b

        return f, {"st": {"actions": [2, 0, 3, 1]}}

    def args(s, i):
        q = random_array(i, (4,))
        if i in (4, 5):
            q[i - 4] = np.nan
        if i == 6:
            q[:] = 0.5
        return q, s["st"]

    jf = check(make, call_sequence(9, args), min_graph_calls=5)
    assert jf.stats()["eager_calls"] == 0, jf.explain()


def best_head(st, x):
    """A dict's (or list's) own lookup as the key: `max(scores, key=scores.get)`."""
    scores = {k: float((x @ w).mean()) + (4.0 if k == "b" else 0.0) for k, w in st["heads"].items()}
    best = max(scores, key=scores.get)  # "b" on every call: speculated
    st["heads"][best] *= 0.9
    losses = [float(((x @ w) ** 2).mean()) for w in st["heads"].values()]
    worst = max(range(len(losses)), key=losses.__getitem__)  # the pick varies: eager's scan as nodes
    for k, w in st["heads"].items():
        st["seen"][k] = float(w.sum())
    near = min(st["seen"], key=st["seen"].__getitem__)  # an input dict's lookup: two items, split
    st["heads"][near] += 0.01
    prior = max(st["prior"], key=st["prior"].__getitem__)  # a dict the step only reads
    return best, worst, near, prior, losses[worst] if worst < 2 else 0.0


def test_min_max_by_a_containers_own_lookup():
    def make():
        heads = {"a": random_array(1, (4,)), "b": random_array(2, (4,))}
        return best_head, {"heads": heads, "seen": {}, "prior": {"a": 0.5, "b": 0.25}}

    jf = check(make, call_sequence(16, lambda s, i: (s, random_array(i + 20, (5, 4)))), min_graph_calls=9)
    assert "unsupported-call" not in fallback_reasons(jf), jf.explain()


def test_max_by_graph_keys_of_arrays_whose_pick_varies_stays_eager():
    # (a pick the warm-up calls agree on is speculated: tests/jit/test_min_max_picks.py)
    def make():
        def f(xs):
            return max(xs, key=lambda x: x.sum()) * 2.0

        return f, {}

    jf = check(make, _lists(6), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and "data-dependent-python" in fallback_reasons(jf), jf.explain()


def test_generator_expressions_have_their_own_scope_and_late_binding():
    def make():
        def f(xs):
            x = "outer"
            scale = 1.0
            gen = (x * scale for x in xs)  # `x` is the genexp's own; `scale` read when pulled
            scale = 3.0
            total = sum(gen)
            nested = [v for v in (a * b for a in xs for b in (1.0, 2.0))]
            return total, x, nested, sum(x.sum() for x in xs)
        return f, {}

    check(make, _lists(6))


def test_iterators_and_sets_that_leave_the_function_are_eagers():
    import janus_like as jl

    def gen(xs):
        return (x * 2.0 for x in xs)

    def mapped(xs):
        return map(np.tanh, xs)

    def a_set(xs):
        return {len(xs)}

    for fn in (gen, mapped, a_set):
        jf = jl.jit(fn)
        for i in range(6):
            xs = [random_array(i, (2,)), random_array(i + 1, (2,))]
            got, want = jf(xs), fn(xs)
            assert type(got) is type(want)
            np.testing.assert_array_equal(np.array(list(got)), np.array(list(want)))
        assert jf.stats()["graph_calls"] == 0 and "unsupported-syntax" in fallback_reasons(jf), jf.explain()


def test_other_library_code_given_a_user_function_is_eager_with_the_reason():
    def make():
        def f(xs):
            return list(itertools.starmap(_scaled_pair, zip(xs, xs)))
        return f, {}

    jf = check(make, _lists(6, switch_at=3), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0
    assert any("from library code" in fb.detail and "_scaled_pair" in fb.detail for fb in jf.fallbacks()), jf.explain()


def _scaled_pair(a, b):
    return a * b * SCALE


def test_map_of_id_over_variables_keys_their_gradients():
    """Parameter groups with gradients keyed by `id(p)`: `map(id, params)` and `id(p)` give the
    Variables' identities (the builtin on the generator's wrappers gave the wrappers', so the
    lookup failed while generating and the step ran eagerly as an internal error)."""
    import janus_like as jl
    from janus_like import F

    def make():
        r = np.random.default_rng(0)
        groups = [{"params": [jl.Variable(r.standard_normal((3, 4)))], "lr": 0.01},
                  {"params": [jl.Variable(r.standard_normal(4))], "lr": 0.1}]

        def step(x):
            every = [p for g in groups for p in g["params"]]
            with jl.GradientTape() as tape:
                loss = F.sum(F.tanh(x @ every[0] + every[1]) ** 2)
            grads = dict(zip(map(id, every), tape.gradient(loss, every)))
            for g in groups:
                for p in g["params"]:
                    p.assign_sub(g["lr"] * grads[id(p)])
            return loss

        return step, groups

    jf = check(make, call_sequence(8, lambda s, i: (random_array(i, (2, 3)),)), min_graph_calls=4)
    assert fallback_reasons(jf) == set(), jf.explain()


def test_reduce_and_map_with_the_operator_modules_functions():
    import operator

    def make():
        def f(xs, w):
            total = functools.reduce(operator.add, xs)  # the operators, on graph values
            scaled = list(map(operator.mul, xs, [w, 2.0 * w, 0.5]))
            return total, functools.reduce(operator.mul, [x.sum() for x in scaled], 1.0)

        return f, {}

    jf = check(make, call_sequence(8, lambda s, i: ([random_array(i + k, (2,)) for k in range(3)], 0.5 + i)),
               min_graph_calls=4)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def test_accumulate_with_a_user_function_or_an_operator():
    """`itertools.accumulate` given a function: discounted returns by a lambda, a running
    product by `operator.mul`, with and without `initial` (it was eager, as library code
    calling a user function)."""
    import operator

    def make():
        def f(rewards, x):
            returns = list(itertools.accumulate(reversed(rewards), lambda g, r: 0.9 * g + r))
            scales = list(itertools.accumulate([x.sum(), 2.0, x.max()], operator.mul))
            started = list(itertools.accumulate(rewards, operator.add, initial=x.min()))
            return returns, scales, started, list(itertools.accumulate([], operator.add))

        return f, {}

    calls = call_sequence(8, lambda s, i: ([float(r) for r in random_array(i, (4,))], random_array(i + 50, (3,))))
    jf = check(make, calls, min_graph_calls=4)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


class _Lin:
    def __init__(self, w):
        self.w = w

    def apply(self, x, scale=1.0, act=None):
        z = scale * (x @ self.w)
        return act(z) if act else z


def test_a_partial_of_a_method_made_in_the_step():
    """`functools.partial(m.apply, scale=0.5, act=np.tanh)` inside the step was an internal error
    (the generator's stand-in for the bound method is not callable)."""
    def make():
        def f(m, x):
            g = functools.partial(m.apply, scale=0.5, act=np.tanh)
            h = functools.partial(m.apply)
            m.w = m.w - 0.01 * (g(x) + h(x)).sum()
            return g(x).sum()
        return f, {"m": _Lin(random_array(7, (4, 4)))}

    jf = check(make, call_sequence(8, lambda s, i: (s["m"], random_array(i, (6, 4)))), min_graph_calls=4)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
