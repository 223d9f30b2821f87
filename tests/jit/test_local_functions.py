"""Functions defined inside jitted code (`def` and `lambda`), eager and jit side by side: they are
inlined where called, read their free names from the defining frame at the time of the call
(Python's late binding), evaluate defaults at definition, recurse, run under a GradientTape, and
write to the enclosing function's containers. What they cannot do in a graph (escape through the
result, be called by library code other than map/filter/sorted/min/max/reduce) keeps the
signature eager, named."""
import itertools

import numpy as np

import janus_like as jl
from janus_like import F

from .harness import call_sequence, check, fallback_reasons, random_array


def _xs(n=6, shape=(2, 3)):
    return call_sequence(n, lambda s, i: (random_array(i, shape),))


def test_a_nested_helper_closing_over_locals_and_arguments():
    def make():
        w = random_array(9, (3, 3))

        def f(x):
            scale = np.sum(x) * 0.1

            def layer(h, bias=0.5):
                z = h @ w + bias  # w: the enclosing function's closure; bias: a default
                return np.tanh(z) * scale

            return layer(layer(x), bias=-0.25)

        return f, {}

    jf = check(make, _xs())
    assert jf.stats()["graph_calls"] == 3, jf.explain()


def test_late_binding_and_defaults_evaluated_at_definition():
    def make():
        def f(x):
            k = 2.0
            times_k = lambda z, k0=k: z * k + k0  # noqa: E731  k read at the call, k0 fixed now
            first = times_k(x)
            k = 3.0
            second = times_k(x)
            shift = 1.0
            return first, second, times_k(x) + shift

        return f, {}

    jf = check(make, _xs())
    assert jf.stats()["graph_calls"] == 3, jf.explain()


def test_a_recursive_local_function_over_a_tree():
    def make():
        w = random_array(1, (3, 3)) * 0.5

        def f(tree):
            def walk(node):
                if isinstance(node, tuple):
                    return np.tanh(walk(node[0]) + walk(node[1]))
                return node @ w

            return walk(tree)

        return f, {}

    def tree(s, i):
        a, b, c = (random_array(i + k, (1, 3)) for k in range(3))
        return ((a, (b, c)),) if i % 4 < 3 else (((a, b), c),)  # the shape changes at call 3

    jf = check(make, call_sequence(8, tree))
    assert jf.stats()["graph_calls"] >= 3, jf.explain()


def test_a_loss_closure_under_a_gradient_tape():
    def make():
        w = jl.Variable(random_array(0, (3, 2)), name="w")

        def step(x, y):
            def loss_fn():
                return F.mean(F.square(x @ w - y))

            with jl.GradientTape() as tape:
                loss = loss_fn()
            w.assign_sub(0.1 * tape.gradient(loss, w))
            return loss

        return step, w

    jf = check(make, call_sequence(6, lambda s, i: (random_array(i, (4, 3)), random_array(i + 50, (4, 2)))))
    assert jf.stats()["graph_calls"] == 3, jf.explain()


def test_a_local_function_writes_to_an_enclosing_container_and_shadows_a_name():
    def make():
        def f(x):
            seen = []
            h = x * 2.0

            def record(v):
                h = v + 1.0  # local to record: the enclosing h is unchanged
                seen.append(np.sum(h))
                return h

            out = record(x) + record(h)
            return out, seen, h

        return f, {}

    jf = check(make, _xs())
    assert jf.stats()["graph_calls"] == 3, jf.explain()


def test_a_free_name_bound_after_the_call_raises_as_eager():
    def make():
        def f(x):
            g = lambda: x * later  # noqa: E731
            y = g()  # NameError eagerly: `later` is not bound yet
            later = 2.0
            return y * later

        return f, {}

    jf = check(make, _xs(4), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0


def test_what_cannot_be_a_graph_is_eager_with_the_reason():
    def make_escape():
        def f(x):
            return lambda z: z * x  # the function escapes: eager's result

        return f, {}

    def make_map():
        def f(xs):
            return list(itertools.starmap(lambda a, z: a + np.tanh(z), zip(xs, xs)))[-1]  # library code calling it

        return f, {}

    jf = check(make_escape, _xs(5), min_graph_calls=0)
    assert "unsupported-syntax" in fallback_reasons(jf), jf.explain()
    jf = check(make_map, call_sequence(5, lambda s, i: ([random_array(i, (2,)), random_array(i + 1, (2,))],)),
               min_graph_calls=0)
    assert any("from library code" in fb.detail for fb in jf.fallbacks()), jf.explain()


def test_lambdas_made_in_comprehensions_and_generator_expressions():
    """A comprehension with a lambda in it has its own scope, as in Python: the lambdas read the
    comprehension's names when called (all see the last i), defaults are evaluated per item,
    the enclosing function's same-named local is untouched. Before, such a comprehension kept
    the signature eager, and a lambda with a default (`i=i`) made the warm-up call raise
    NameError in the profiler's copy of it (the copy evaluated the default where i does not
    exist)."""
    def make():
        def f(x, xs):
            i = 10.0
            late = [lambda: x * i for i in range(3)]  # noqa: B023
            bound = [lambda i=i: x * i for i in range(3)]
            table = {k: (lambda z: z + len(k)) for k in ("a", "bb")}  # noqa: B023
            called = [(lambda z: z * i)(x) for i in range(3)]
            pairs = [lambda: x * i + j for i in range(2) for j in range(3) if i != j]  # noqa: B023
            orders = [sorted(range(3), key=lambda a: (a * k) % 3) for k in range(1, 3)]
            lazy = list((lambda: x - i) for i in range(2))  # noqa: B023
            total = sum(g() for g in bound)
            return ([g() for g in late], [g() for g in bound], table["bb"](x), called, [g() for g in pairs],
                    orders, [g() for g in lazy], total, i, xs[0] * len(xs))

        return f, {}

    calls = call_sequence(6, lambda s, i: (random_array(i, (3,)), [random_array(i + k, (2,)) for k in range(3)]))
    jf = check(make, calls)
    assert jf.stats()["graph_calls"] == 3, jf.explain()


def _helpers():
    k, number = 2.0, float
    g = lambda z, k=k: z * k  # noqa: E731

    def h(z, m: number = k, *, n: number = 1.0) -> number:
        return z + m * n

    return g, h


def test_profiled_copies_keep_defaults_and_annotations_of_the_original():
    """The profiler's instrumented copy of a function is built without evaluating its defaults
    and annotations again (they read the enclosing function's locals, which do not exist where
    the copy is built: NameError before); the copy gets the original's evaluated defaults."""
    from janus_like.profiler.instrument import _compile, instrumented

    class Hooks:
        def __getattr__(self, name):
            return lambda key, value, *rest: value

    g, h = _helpers()
    for fn in (g, h):
        code = _compile(fn)
        assert code.co_argcount == fn.__code__.co_argcount and code.co_name == fn.__code__.co_name
    copy = instrumented(h, Hooks())
    assert copy is not None and copy(1.0) == h(1.0) == 3.0 and copy(1.0, n=2.0) == h(1.0, n=2.0)
    assert instrumented(g, Hooks())(4.0) == 8.0
