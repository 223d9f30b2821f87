"""Who is who after a call: the graph's results, state writes and arguments must alias one another
as eager's do. Equal values are not enough: eager's `return y, y` hands back one array, and a
later in-place write shows through both; eager's `x * 1` is a new array, and writing into it must
not change the caller's `x`. `side_by_side` compares this after every call (`assert_same_aliasing`);
each test here also asserts the identity it is about, and failed before its fix."""
import logging

import numpy as np

import janus_like as jl
from janus_like import F, optim

from .harness import call_sequence, check, load_module, random_array


def test_a_product_by_one_is_not_the_callers_array(tmp_path):
    """`x * k` with k == 1 is simplified to x in the graph; eager's result is a new array, and
    the input's in-place update after it must not show in it."""
    module = load_module(tmp_path, """
        import numpy as np

        def f(x, st):
            y = x * st["k"]
            x += 1.0
            z = x.astype(np.float64)
            return y, z
    """)
    check(lambda: (module.f, {"st": {"k": 1}}), call_sequence(6, lambda s, i: (random_array(i, (3,)), s["st"])),
          min_graph_calls=2)
    jf = jl.jit(module.f, reassociate=False)
    for i in range(5):
        x = random_array(i, (3,))
        before = x.copy()
        y, z = jf(x, {"k": 1})
        assert y is not x and z is not x
        np.testing.assert_array_equal(y, before)
    assert jf.stats()["graph_calls"] >= 2


def test_merged_common_subexpressions_stay_distinct_objects_and_a_repeated_one_stays_one():
    def make():
        def f(x):
            a = -x
            b = -x
            return a, b, b

        return f, {}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)),)), min_graph_calls=2)
    jf = jl.jit(make()[0], reassociate=False)
    for i in range(5):
        a, b, c = jf(random_array(i, (3,)))
    assert a is not b and b is c and jf.stats()["graph_calls"] >= 2


def test_a_list_or_dict_returned_and_stored_is_one_object():
    def make():
        st = {}

        def f(x):
            box = {"y": x * 2.0}
            hist = [box["y"]]
            st["box"] = box
            return (box, hist), box, hist

        return f, st

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)),)), min_graph_calls=2)
    f, st = make()
    jf = jl.jit(f, reassociate=False)
    for i in range(5):
        (box, hist), box2, hist2 = jf(random_array(i, (3,)))
    assert box is box2 is st["box"] and hist is hist2 and hist[0] is box["y"]
    assert jf.stats()["graph_calls"] >= 2 and all(g._finish is not None for g in jf.graphs())


def test_a_tensor_returned_twice_and_stored_is_one_tensor():
    def make():
        st = {}

        def f(x):
            h = F.tanh(x)
            st["last"] = h
            return h, h

        return f, st

    check(make, call_sequence(6, lambda s, i: (jl.tensor(random_array(i, (3,))),)), min_graph_calls=2)
    f, st = make()
    jf = jl.jit(f)
    for i in range(5):
        a, b = jf(jl.tensor(random_array(i, (3,))))
    assert a is b is st["last"] and jf.stats()["graph_calls"] >= 2


def test_a_counter_variable_keeps_an_array_not_a_numpy_scalar():
    """The optimizer's 0-d step counter: a 0-d array plus one is a NumPy scalar in NumPy; eager's
    assign keeps an array, and so must the commit (`v.numpy()[...] = 0` works on an array only)."""
    def make():
        w = jl.Variable(np.ones(3, np.float32), name="w")
        opt = optim.SGD(0.1)

        def step(x):
            with jl.GradientTape() as tape:
                loss = F.sum(w * x)
            opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
            return loss

        return step, {"w": w, "iterations": opt.iterations}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,), np.float32),)), min_graph_calls=2)
    step, st = make()
    jf = jl.jit(step)
    for i in range(5):
        jf(random_array(i, (3,), np.float32))
    assert type(st["iterations"].numpy()) is np.ndarray and jf.stats()["graph_calls"] >= 2


def test_an_element_of_a_variable_assigned_the_input_is_not_a_view_of_the_input():
    """`c.assign(g); return c[1]`: eager's assign copies g; the result must not change when the
    caller later writes g."""
    def make():
        c = jl.Variable(np.zeros((3, 2)), name="c")

        def f(g):
            c.assign(g)
            return c[1]

        return f, {"c": c}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3, 2)),)), min_graph_calls=2)
    f, _ = make()
    jf = jl.jit(f, reassociate=False)
    for i in range(5):
        g = random_array(i, (3, 2))
        r = jf(g)
        g[:] = 7.0
        np.testing.assert_array_equal(r.numpy(), random_array(i, (3, 2))[1])
    assert jf.stats()["graph_calls"] >= 2


def test_a_tensor_of_a_number_holds_an_array_and_a_tensor_of_an_array_its_own_buffer():
    def make():
        def f(x):
            y = x * 2.0
            return y, jl.tensor(y), jl.tensor(np.float32(float(np.sum(x))))

        return f, {}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)),)), min_graph_calls=2)
    jf = jl.jit(make()[0], reassociate=False)
    for i in range(5):
        y, t, s = jf(random_array(i, (3,)))
    assert not np.shares_memory(y, t.numpy()) and type(s.numpy()) is np.ndarray
    assert jf.stats()["graph_calls"] >= 2


def test_a_flattened_array_is_a_copy_and_a_view_stored_and_returned_is_one_view():
    """NumPy's flatten copies (the graph's was a reshape, a view of the caller's array); `x[:]`
    stored and returned is one view object, and np.squeeze with nothing to squeeze is x itself."""
    def make():
        st = {}

        def f(x):
            flat = x.flatten()
            v = x[:]
            st["v"] = v
            return flat, v, np.squeeze(x)

        return f, st

    check(make, call_sequence(6, lambda s, i: (random_array(i, (2, 3)),)), min_graph_calls=2)
    f, st = make()
    jf = jl.jit(f, reassociate=False)
    for i in range(5):
        x = random_array(i, (2, 3))
        flat, v, same = jf(x)
    assert not np.shares_memory(flat, x) and v is st["v"] and np.shares_memory(v, x) and same is x
    assert jf.stats()["graph_calls"] >= 2


def test_a_logged_product_by_one_shows_the_values_before_the_commit(tmp_path):
    """A deferred log call formats its arguments when it runs, after the commit: the simplified
    `x * k` it logs must be a copy taken before the commit writes x."""
    module = load_module(tmp_path, """
        import logging
        LOG = logging.getLogger("identity_probe")

        def f(x, st):
            y = x * st["k"]
            LOG.warning("y=%s", y)
            x += 1.0
            return x
    """)
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    module.LOG.addHandler(Keep())
    module.LOG.propagate = False
    jf = jl.jit(module.f, reassociate=False)
    for i in range(5):
        x = np.full(2, float(i))
        jf(x, {"k": 1})
        assert seen[-1] == f"y={np.full(2, float(i))}"
    assert jf.stats()["graph_calls"] >= 2, jf.explain()


def _clip_module(tmp_path):
    return load_module(tmp_path, """
        import math

        import numpy as np

        def clipped(a, c):
            n = math.sqrt(float(np.sum(a * a)))
            if n > c:
                return a * (c / n)
            return a

        def of_input(x):
            x[np.array([0, 0, 1])] += 1.0
            return clipped(x, 3.0)

        def of_local(x, y):
            h = y + 0.0
            box = {"a": h}
            h = clipped(h, 3.0)
            return h, box

        def of_local_twice(x, y):
            h = y + 0.0
            box = {"a": h}
            h = clipped(clipped(h, 3.0), 2.0 + float(x[0, 0] > 0.5))
            return h, box
    """)


def _scales(i):
    return 0.5 if i % 3 else 4.0  # the clip binds on every third call


def test_a_helper_returning_its_argument_or_a_new_array_by_the_data_is_the_callers_array_when_eager_is(tmp_path):
    """`return a` after one outcome of a data-dependent branch, `a * s` after the other: eager's
    result is the caller's `x` (written in place) or a new array. A conditional node's result is
    always a new array, so such a result is split into one graph per outcome instead."""
    module = _clip_module(tmp_path)
    calls = call_sequence(9, lambda s, i: (random_array(i, (2, 2)) * _scales(i),))
    jf = check(lambda: (module.of_input, {}), calls, min_graph_calls=4)
    for i in range(6):
        x = random_array(i, (2, 2)) * _scales(i)
        out = jf(x)
        assert (out is x) == (_scales(i) == 0.5), i


def test_a_value_stored_before_a_branch_that_may_keep_it_is_one_object_with_the_result(tmp_path):
    """`box = {"a": h}; h = clipped(h, c); return h, box` of a Tensor h: after the outcome that
    keeps h, eager's h and box["a"] are one Tensor (the graph built two). Of an array, the one
    the conditional node passes through is eager's object: one graph."""
    module = _clip_module(tmp_path)
    for wrap, graphs in ((jl.tensor, 2), (np.asarray, 1)):
        calls = call_sequence(9, lambda s, i: (random_array(i, (2, 2)),
                                               wrap(random_array(20 + i, (2, 2)) * _scales(i))))
        jf = check(lambda: (module.of_local, {}), calls, min_graph_calls=4)
        for i in range(6):
            h, box = jf(random_array(i, (2, 2)), wrap(random_array(20 + i, (2, 2)) * _scales(i)))
            assert (h is box["a"]) == (_scales(i) == 0.5), i
        assert len(jf.graphs()) == graphs, jf.explain()


def test_a_value_two_branches_may_keep_is_one_object_with_what_was_stored(tmp_path):
    """The same through two conditionals, the second merging the first's result (either h or a
    new Tensor) with a new one: eager's result is box["a"] after the outcomes that keep h in both
    (the graph's was a new Tensor: found by the `thorough` profile of test_either_values.py)."""
    module = _clip_module(tmp_path)
    calls = call_sequence(12, lambda s, i: (random_array(i, (2, 2)),
                                            jl.tensor(random_array(20 + i, (2, 2)) * _scales(i))))
    jf = check(lambda: (module.of_local_twice, {}), calls, min_graph_calls=4)
    for i in range(6):
        x, y = random_array(i, (2, 2)), jl.tensor(random_array(20 + i, (2, 2)) * _scales(i))
        h, box = jf(x, y)
        eager_h, eager_box = module.of_local_twice(x, y)
        assert (h is box["a"]) == (eager_h is eager_box["a"]), i


def times_one_in_a_branch(x, k, st):
    if k == 0:
        v = x * 1  # a new array (the simplification pass took it as x)
    else:
        v = x + 0
    st["v"] = v
    return x.sum()


def same_array_in_one_branch(k, st):
    v = np.zeros(3)
    if k == 0:
        w = v  # one object with st["v"] after this outcome, two after the other
    else:
        w = np.ones(3)
    st["v"] = v
    st["w"] = w
    return w.sum()


def test_a_branchs_new_array_is_not_the_array_it_was_computed_from():
    st = {}
    jf = check(lambda: (times_one_in_a_branch, {}), [lambda s, i=i: (np.arange(3.0) + i, i % 3, s) for i in range(9)],
               min_graph_calls=3)
    x = np.arange(3.0)
    jf(x, 0, st)
    assert st["v"] is not x


def test_a_constant_a_branch_may_pass_on_is_one_object_with_it_by_the_outcome():
    check(lambda: (same_array_in_one_branch, {}), [lambda s, i=i: (i % 3, s) for i in range(9)], min_graph_calls=2)
