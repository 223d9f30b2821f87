"""State written inside a loop whose trip count is a graph value (a loop node), and Python
numbers carried through one. Eager and jit side by side after every call, comparing results,
Variables, the caller's arrays and objects; the trip count changes from call to call.

What an iteration writes is carried from one iteration to the next and written back after the
node (`graphgen/loops.py`): Variables, arrays written in place, attributes, globals, closure
cells, and a counter or accumulator that is a Python number before the loop. Arrays the body
makes itself are written in place as usual (`statements.branch_box_write`)."""
import numpy as np
from hypothesis import given, settings, strategies as st

import janus_like as jl
from janus_like import F

from .harness import check, fallback_reasons, load_module


def _has_loop(jf):
    return any(n.op == "loop" for g in jf.compiled for n in g.graph.all_nodes())


def _limits(values, n=2):
    return [lambda s, k=k: (np.full(n, 1.0), np.float64(k)) for k in values]


LIMITS = [3.0, 10.0, 40.0, 3.0, 100.0, 20.0, 1.0, 60.0, 10.0]


class Counter:
    def __init__(self):
        self.n = 0
        self.acc = np.zeros(2)
        self.w = jl.Variable(np.ones(2), name="w")
        self.rate = 0.5


def test_counter_and_accumulator_numbers_are_carried():
    def make():
        def f(x, lim):
            i = 0
            t = 0.0
            while x.sum() < lim:
                x = x * 2.0
                i += 1
                t = t + 0.5
            return x, i, t

        return f, {}

    jf = check(make, _limits(LIMITS), min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_variable_assigned_in_a_while_loop():
    def make():
        v = jl.Variable(np.zeros(2), name="v")

        def f(x, lim):
            while x.sum() < lim:
                x = x * 2.0
                v.assign_add(x)
            return x

        return f, {"v": v}

    jf = check(make, _limits(LIMITS), min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_input_array_written_in_place_through_its_name():
    """`acc += ...` keeps `acc` naming the caller's array: it is carried as that array's state and
    the caller's array is written at the commit."""
    def make():
        def f(x, lim, acc):
            while x.sum() < lim:
                x = x * 2.0
                acc += x
            acc[0] = acc[1] * 0.5
            return x.sum()

        return f, {"acc": np.zeros(2)}

    calls = [lambda s, k=k: (np.full(2, 1.0), np.float64(k), s["acc"]) for k in LIMITS]
    jf = check(make, calls, min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_attributes_variables_and_attribute_arrays():
    def make():
        o = Counter()

        def f(x, lim):
            while x.sum() < lim:
                x = x * 2.0
                o.acc += x * o.rate
                o.w.assign(o.w * 1.5)
                o.rate = o.rate * 0.5
            return x

        return f, {"o": o}

    jf = check(make, _limits(LIMITS), min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_integer_attribute_counted_in_a_loop():
    """The attribute's value is specialised (a guard on its value), so each call sees a new one
    until the JIT relaxes it; every call must still leave what eager leaves."""
    def make():
        o = Counter()

        def f(x, lim):
            while x.sum() < lim:
                x = x * 2.0
                o.n += 1
            return x

        return f, {"o": o}

    check(make, _limits(LIMITS), min_graph_calls=0)


def test_for_over_a_graph_valued_range_writes_the_callers_array():
    def make():
        def f(x, n):
            for j in range(n):
                x[0] += j
                x *= 1.5
            return x.sum()

        return f, {"x": np.ones(3)}

    counts = [2, 0, 3, 1, 2, 4, 0, 3, 1]
    jf = check(make, [lambda s, n=n: (s["x"], n) for n in counts], min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_global_and_nonlocal_written_in_a_loop(tmp_path):
    source = '''
        import numpy as np

        total = 0.0
        scale = np.ones(2)


        def make():
            count = 0

            def f(x, lim):
                global total
                nonlocal count
                while x.sum() < lim:
                    x = x * 2.0
                    total = total + 1.0
                    scale[:] = scale * 1.25
                    count = count + 1
                return x, count, total

            return f
    '''

    def make():
        mod = load_module(tmp_path, source, "loop_globals")
        return mod.make(), {"scale": mod.scale}

    jf = check(make, _limits(LIMITS), min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_conditional_inside_a_loop_writes_state():
    def make():
        o = Counter()

        def f(x, lim):
            i = np.zeros(())
            while i < lim:
                h = x * 2.0
                h += 1.0
                if h.sum() > 10.0 * (i + 1.0):
                    o.acc += h[:2]
                else:
                    o.w.assign(o.w - 0.1)
                i = i + 1.0
            return i

        return f, {"o": o}

    calls = [lambda s, k=k: (np.arange(3.0) * (k % 4), np.float64(k % 3 + 1)) for k in range(12)]
    jf = check(make, calls, min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_temporary_written_in_place_inside_a_branch():
    """An array made in a branch and written in place there is not state of the conditional
    node (this was an internal error: the other branch's output named a node of the first)."""
    def make():
        def f(x, c):
            if c.sum() > 0:
                t = x * 2.0
                t += 1.0
                t[0] = 0.0
                y = t.sum()
            else:
                y = x.sum()
            return y

        return f, {}

    signs = [1, -1, 1, -1, 1, 1, -1, 1]
    jf = check(make, [lambda s, sg=sg: (np.arange(3.0), np.array([sg * 1.0])) for sg in signs], min_graph_calls=4)
    assert any(n.op == "cond" for g in jf.compiled for n in g.graph.all_nodes()), jf.explain()


def test_counter_in_a_differentiated_loop():
    def make():
        def f(w, x, lim):
            with jl.GradientTape() as tape:
                tape.watch(w)
                h = x
                k = 0
                while k < lim:
                    h = F.tanh(h * w)
                    k += 1
                loss = F.sum(h)
            return tape.gradient(loss, w), k

        return f, {}

    calls = [lambda s, n=n: (jl.tensor(np.array([0.5, 0.7])), jl.tensor(np.array([1.0, 2.0])), np.int64(n))
             for n in [1, 2, 3, 1, 3, 2, 2, 1]]
    jf = check(make, calls, min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_name_written_in_place_and_rebound_in_a_loop_stays_eager():
    """Eager writes the caller's array on the first trip only (then `x` names a new array)."""
    def make():
        def f(x, lim):
            i = np.zeros(())
            while i < lim:
                x += 1.0
                x = x * 2.0
                i = i + 1.0
            return x

        return f, {"x": np.ones(2)}

    calls = [lambda s, k=k: (s["x"], np.float64(k % 3 + 1)) for k in range(8)]
    jf = check(make, calls, min_graph_calls=0)
    assert "both written in place and rebound" in jf.explain(), jf.explain()


def test_variable_written_in_a_differentiated_loop_stays_eager():
    def make():
        v = jl.Variable(np.zeros(2), name="v")

        def f(w, lim):
            with jl.GradientTape() as tape:
                tape.watch(w)
                h = w
                while F.sum(h) < lim:
                    h = h * 2.0
                    v.assign_add(h)
            return tape.gradient(F.sum(h), w)

        return f, {"v": v}

    calls = [lambda s, k=k: (jl.tensor(np.array([0.5, 0.7])), np.float64(k)) for k in LIMITS]
    jf = check(make, calls, min_graph_calls=0)
    assert "unsupported-syntax" in fallback_reasons(jf) or "Variable" in jf.explain(), jf.explain()
    assert jf.stats()["graph_calls"] == 0, jf.explain()


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from([0.5, 3.0, 10.0, 40.0, 200.0]), min_size=5, max_size=12),
       st.sampled_from(["acc", "var", "both"]))
def test_random_trip_counts(limits, what):
    def make():
        o = Counter()

        def f(x, lim):
            k = 0
            while x.sum() < lim:
                x = x * 2.0
                if what != "var":
                    o.acc *= 0.5
                    o.acc[k % 2] += 1.0
                if what != "acc":
                    o.w.assign_add(x * 0.01)
                k += 1
            return x, k

        return f, {"o": o}

    check(make, _limits(limits), min_graph_calls=0)


def test_local_aliasing_an_array_written_in_place_stays_eager():
    """`h` starts as the caller's array, which the body writes in place before reading `h`:
    eager's first trip reads the written array through `h`; carrying `h` from its value before
    the loop would read the old one."""
    def make():
        def f(x, lim, acc):
            h = acc
            while x.sum() < lim:
                x = x * 2.0
                acc += 1.0
                h = h * 2.0
            return h

        return f, {"acc": np.zeros(2)}

    calls = [lambda s, k=k: (np.full(2, 1.0), np.float64(k), s["acc"]) for k in LIMITS]
    jf = check(make, calls, min_graph_calls=0)
    assert "written in place inside the loop" in jf.explain(), jf.explain()


def _example():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "fit_until_converged.py"
    spec = importlib.util.spec_from_file_location("fit_until_converged", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fit_until_converged():
    """Gradient descent inside the jitted function until the loss is below a tolerance
    (`examples/fit_until_converged.py`): the trip count depends on the data and the tolerance,
    the Variable, the loss and the counter are carried."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((32, 4))
    y = X @ rng.standard_normal(4)
    example = _example()

    def make():
        fit, w = example.make_fit(4)
        return fit, {"w": w}

    tols = [1e-2, 1e-3, 1e-4, 1e-2, 1e-5, 1e-3, 1e-1, 1e-4]
    jf = check(make, [lambda s, t=t: (X, y, t) for t in tols], min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_fit_until_converged_example_runs_as_graphs():
    lines = []
    stats = _example().main(problems=6, dim=3, rows=12, out=lines.append)
    assert stats["graph_calls"] == 3 and stats["fallbacks"] == 0, lines
    assert "agree" in lines[0]


def test_while_condition_with_an_iteration_cap():
    """`while loss > tol and k < cap`: the condition is one truth value (both operands are
    pure), so the loop is a loop node; operand by operand, each call broke an assertion."""
    def make():
        v = jl.Variable(np.zeros(2), name="v")

        def f(x, lim):
            k = 0
            while x.sum() < lim and k < 4:
                x = x * 2.0
                v.assign_add(x)
                k += 1
            if x.sum() > 10.0 or k == 4:
                v.assign(v * 0.5)
            return x, k

        return f, {"v": v}

    jf = check(make, _limits(LIMITS), min_graph_calls=4)
    assert _has_loop(jf), jf.explain()


def test_in_place_write_after_a_loop_that_may_not_run():
    """After a loop node, a carried array is its entry array when the loop ran zero times: eager
    `x += ...` then also writes what else holds that array (here a dict the function returns).
    The graph cannot tell which object the name refers to, so the write stays eager; so does a
    write to the entry array that the loop's result may be."""
    def make():
        def through_result(x, lim):
            y = x + 0.0
            box = {"a": y}
            while y.sum() < lim:
                y = y * 2.0
            y += x
            return box, y

        return through_result, {}

    def make_entry():
        def through_entry(x, lim):
            y = x + 0.0
            box = [y]
            while y.sum() < lim:
                y = y * 2.0
            box[0] += x
            return box, y

        return through_entry, {}

    for m in (make, make_entry):
        jf = check(m, _limits([1.0, 10.0, 1.0, 40.0, 1.0, 3.0, 1.0]), min_graph_calls=0)
        assert "view-write" in fallback_reasons(jf), jf.explain()


def test_a_freed_loop_entry_does_not_lend_its_id_to_a_written_array():
    """A loop node's result aliases its entry value, recorded by the entry's id. The entry here
    is a temporary, freed after the loop; forty fresh arrays written in place follow, one of
    which got its id, and its write marked the loop's result stale: the signature ran eagerly
    ('view-write'), depending on memory reuse. The entry is now kept alive while generating."""
    def make():
        def f(x, n):
            s = x.sum() * 1.0
            k = 0
            while k < n:
                s = s * 0.5
                k += 1
            out = 0.0
            for j in range(40):
                t = x * float(j)
                t[0] = 1.0
                out = out + t
            return s, out

        return f, {}

    jf = check(make, [lambda st, k=k: (np.arange(3.0) + k, k % 3 + 1) for k in range(12)], min_graph_calls=8)
    assert "view-write" not in fallback_reasons(jf), jf.explain()


def test_a_written_input_a_loop_may_leave_as_it_was_is_not_returned_as_a_copy():
    """`v = x; v[i] += 1.0` writes the caller's x; a loop node that rebinds v may run zero times,
    and then eager returns the caller's x itself. The graph's result is always its own array (the
    commit copies the new value into x): such a result keeps the signature eager instead of
    returning a copy. The same loop over an array the function made stays a graph."""
    def make(index):
        def f(x):
            v = x
            v[index] += 1.0
            k = 0
            while np.max(np.abs(v)) > 2.0 and k < 4:
                v = v * 0.5
                k = k + 1
            return v

        return lambda: (f, {})

    def made():
        def g(x):
            v = x + 0.0
            v[0] += 1.0
            k = 0
            while np.max(np.abs(v)) > 2.0 and k < 4:
                v = v * 0.5
                k = k + 1
            return v

        return g, {}

    scales = [5.0, 5.0, 5.0, 5.0, 0.1, 5.0, 0.1, 0.1]
    calls = [lambda s, i=i, c=c: (c * np.random.default_rng(i).standard_normal((2, 2)),) for i, c in enumerate(scales)]
    for index in (0, np.array([0, 0, 1])):
        jf = check(make(index), calls, min_graph_calls=0)
        assert "data-dependent-python" in fallback_reasons(jf), jf.explain()
    check(made, calls, min_graph_calls=4)


class _Budget:
    def __init__(self):
        self.n = 0

    def take(self, v, th):
        self.n += 1  # counts the checks eager's `and` lets through
        return v < th


def test_a_loop_test_that_writes_state_is_eagers():
    """`while k < 3 and budget.take(...)`: eager's `and` calls `take` only while k < 3; a loop
    node would make the test's writes on the last trip too (the count was one too large)."""
    def step(x, th, st):
        k = 0
        while k < 3 and st["b"].take(float(x[k]), th):
            k += 1
        return k

    ths = [0.5, 1.5, 2.5, 0.5, 3.5, 1.5, 9.0, 0.5]
    jf = check(lambda: (step, {"b": _Budget()}), [lambda s, t=t: (np.arange(4.0), t, s) for t in ths],
               min_graph_calls=0)
    assert "varying-trip-count" in fallback_reasons(jf), jf.explain()
