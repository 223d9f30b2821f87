"""float64 scalar chains computed as Python floats (executor/floats.py) and array writes into a
dead array's own buffer (executor/buffers.py): side by side against eager with results, state,
arguments and warnings compared after every call, on call sequences with values that overflow,
NaN and infinite inputs, zero divisors and underflow NumPy is asked to report, so a value, a
type or a warning that differs would show."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from .harness import call_sequence, check, fallback_reasons, load_module, random_array

BODIES = {
    "returns": "ret = np.zeros(len(r))\n    g = 0.0\n    for t in range(len(r) - 1, -1, -1):\n"
               "        g = r[t] + 0.99 * g * (1.0 - d[t])\n        ret[t] = g\n    return ret, g",
    "gae": "adv = np.zeros(len(r))\n    last = 0.0\n    for t in range(len(r) - 1, -1, -1):\n"
           "        delta = r[t] + 0.9 * v[t + 1] * (1 - d[t]) - v[t]\n"
           "        last = delta + 0.9 * 0.95 * (1 - d[t]) * last\n        adv[t] = last\n"
           "    return adv, adv + v[:-1]",
    "division": "out = np.empty(len(r))\n    for t in range(len(r)):\n        out[t] = r[t] / (d[t] - 0.5) - -v[t]\n"
                "    return out, r[0] / d[0]",
    "reduction_operand": "m = r.sum()\n    s = 0.0\n    for t in range(len(r)):\n"
                         "        s = s + (r[t] - m) * (r[t] - m)\n"
                         "    return s / len(r), float(s), m",
    "matrix_reads": "q = st['q']\n    a = int(d[0] > 0.5)\n    q[a, 1] += 0.1 * (r[0] + 0.9 * q[1 - a, 0] - q[a, 1])\n"
                    "    return q[a, 1] * 2.0, q[-1, -1] - q[0, 0]",
    "float32_and_int_targets": "f = np.zeros(len(r), np.float32)\n    k = np.zeros(len(r), np.int64)\n"
                               "    for t in range(len(r)):\n        f[t] = (r[t] * 3.0 + 1e-3) * r[t] - 2.0\n"
                               "        k[t] = r[t] * 10.0 - 1.0\n"
                               "    return f, k",
    "branch_reads_value": "g = r[0] * 2.0 + r[1]\n    if g > 0:\n        return g - 1.0, r[2] * r[3]\n"
                          "    return g + 1.0, r[2] * r[3]",
    "state_written_after": "s = 0.0\n    for t in range(len(r)):\n        s = s + r[t] * r[t]\n"
                           "    st['w'] -= 0.01 * s * st['w']\n    st['n'] += 1\n    return s",
    "reciprocal_of_overflow": "s = 0.0\n    for t in range(len(r)):\n        s = s + 1.0 / (r[t] * 1e300 + 1.0) * 2.0\n"
                              "    return s",
    "writes_and_views": "a = np.zeros(len(r))\n    head = a[:2]\n    for t in range(len(r)):\n"
                        "        a[t] = r[t] * 2.0 + 1.0\n    b = a.copy()\n    b[0] = r[0] - 1.0\n    keep = b\n"
                        "    b[1] = r[1] - 2.0\n    return a, head, keep, b",
}


def _r(i, size=8):
    """Rewards of every kind: ordinary, overflowing when scaled, NaN, infinite, and zeros."""
    r = random_array(i, (size,))
    kind = i % 7
    if kind == 3:
        r[2] = 1e308  # overflows once scaled or added
    elif kind == 4:
        r[5] = np.nan
    elif kind == 5:
        r[1] = -np.inf
    return r


def _d(i, size=8):
    d = (random_array(50 + i, (size,)) > 0.8).astype(float)
    if i % 7 == 6:
        d[:] = 0.5  # zero divisors in "division"
        d[0] = 0.0
    return d


def _run(tmp_path, name, body, n=15, min_graph_calls=6, size=8, **jit_options):
    module = load_module(tmp_path, f"import numpy as np\n\n\ndef f(r, d, v, st):\n    {body}\n", name)

    def make():
        return module.f, {"st": {"q": np.arange(4.0).reshape(2, 2), "w": np.ones(3), "n": 0}}

    def args(s, i):
        return _r(i, size), _d(i, size), random_array(100 + i, (size + 1,)), s["st"]

    return check(make, call_sequence(n, args), min_graph_calls=min_graph_calls, **jit_options)


def _python_float_plans(jf):
    return [g for g in getattr(jf, "compiled", jf.graphs()) if g.plan is not None and "UNDER_OK()" in g.plan.source]


@pytest.mark.parametrize("name", sorted(BODIES))
def test_chains_side_by_side(tmp_path, name):
    jf = _run(tmp_path, name, BODIES[name])
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
    if name not in ("branch_reads_value",):
        assert _python_float_plans(jf), jf.explain()


def test_the_loops_plan_reads_lists_and_writes_in_place(tmp_path):
    jf = _run(tmp_path, "returns", BODIES["returns"], size=24)  # 24 reads of 24 elements: one tolist() each
    src = _python_float_plans(jf)[0].plan.source
    assert ".tolist()" in src and ".item(" not in src, src
    assert src.count(".copy(") == 1, src  # the zeros constant only: each later write is in place
    assert len(re.findall(r"if u\d+ - u\d+:", src)) == 1, src  # one finite check: the last value covers the rest


def test_failed_checks_relax_to_numpy_scalars(tmp_path):
    """Calls whose values overflow every time: each fails the finite check and runs eagerly
    (with eager's warnings, compared by the harness), and the signature's next graph keeps
    NumPy scalars."""
    module = load_module(tmp_path, "import numpy as np\n\n\ndef f(r):\n    s = 0.0\n    for t in range(len(r)):\n"
                                   "        s = s * 1e300 + r[t]\n    return s\n", "overflowing")

    def args(s, i):
        return (random_array(i, (6,)) + 10.0,)

    jf = check(lambda: (module.f, {}), call_sequence(12, args), min_graph_calls=1)
    s = jf.stats()
    assert s["assert_failures"] >= 2 and s["regenerations"] >= 1 and s["graph_calls"] >= 5, jf.explain()
    assert any(not g.graph.python_floats for g in jf.compiled), jf.explain()
    assert "finite" in {a.kind for g in jf.compiled for a in g.assumptions}


def test_underflow_reported_when_numpy_is_asked_to(tmp_path):
    module = load_module(tmp_path, "import numpy as np\n\n\ndef f(r):\n    s = 1.0\n    for t in range(len(r)):\n"
                                   "        s = s * r[t] + 0.0\n    return s\n", "underflowing")
    import janus_like as jl

    jf = jl.jit(module.f)
    tiny = np.full(4, 1e-100)
    for _ in range(6):
        assert jf(tiny) == module.f(tiny)
    assert jf.stats()["graph_calls"] >= 1
    for mode in ("warn", "raise"):
        with np.errstate(under=mode):
            if mode == "warn":
                with pytest.warns(RuntimeWarning, match="underflow"):
                    got = jf(tiny)
                assert got == module.f(tiny)
            else:
                with pytest.raises(FloatingPointError):
                    jf(tiny)


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-320,
                                                                                                  1e308])),
                       min_size=18, max_size=18),
       gamma=st.sampled_from([0.0, 0.5, 0.99, 1e10, -2.0]))
def test_any_values_give_eagers_results_and_warnings(tmp_path_factory, values, gamma):
    module = load_module(tmp_path_factory.mktemp("floats"),
                         "import numpy as np\n\n\ndef f(r, d):\n    ret = np.zeros(len(r))\n    g = 0.0\n"
                         "    for t in range(len(r)):\n        g = r[t] + d[t] * g - g / (d[t] + 2.0)\n"
                         "        ret[t] = g\n"
                         "    return ret, g * 2.0\n", "hypothesis_floats")
    r = np.array(values[:9])
    d = np.where(np.isfinite(values[9:]), gamma, np.nan)

    def args(s, i):
        return (np.ones(9), np.full(9, 0.5)) if i < 6 else (r.copy(), d.copy())

    check(lambda: (module.f, {}), call_sequence(9, args), min_graph_calls=3)


def test_a_value_is_checked_before_numpy_reads_it(tmp_path):
    """An overflowing chain value read by an array op that would warn itself (`w * inf` with a
    zero in w): the check comes before that op, so the call warns exactly as eager, once each."""
    import warnings

    import janus_like as jl

    module = load_module(tmp_path, "import numpy as np\n\n\ndef f(r, w):\n    s = 0.0\n    for t in range(len(r)):\n"
                                   "        s = (s + r[t]) * r[t]\n    return w * s\n", "observed")
    jf = jl.jit(module.f)
    w = np.array([0.0, 1.0])
    calls = [random_array(i, (5,)) for i in range(6)] + [np.array([1.0, 1e200, 2.0, 3.0, 4.0])]
    for r in calls:
        seen = []
        for fn in (module.f, jf):
            with warnings.catch_warnings(record=True) as shown:
                warnings.simplefilter("always")
                out = fn(r, w)
            seen.append((out, sorted(str(x.message).replace("scalar ", "") for x in shown)))
        np.testing.assert_array_equal(seen[0][0], seen[1][0])
        assert seen[0][1] == seen[1][1]
    assert jf.stats()["graph_calls"] >= 3 and _python_float_plans(jf)


def test_an_index_write_takes_its_arrays_buffer_only_when_nothing_reads_it_after():
    """executor/buffers.plan_reuse on index writes: into x's own buffer when x is the graph's
    own array and dead after the write; never into an input, a constant, an output, a value
    read later, or one some node may hold a view of."""
    from janus_like import ir
    from janus_like.executor.buffers import plan_reuse

    f64 = np.dtype("float64")

    def write(x, value, k):
        return ir.Node("index_update", (x, value), {"index": ((k,), True)}, ((8,), f64))

    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "arg0"}, ((8,), f64))
    c = ir.Node(ir.CONST, (), {"value": np.zeros(8)}, ((8,), f64))
    fresh = ir.Node("mul", (x, 2.0), {}, ((8,), f64))
    w_input, w_const, w_fresh = write(x, 1.0, 0), write(c, 1.0, 0), write(fresh, 1.0, 0)
    chained = write(w_fresh, 2.0, 1)  # w_fresh is dead after this: in place
    kept = write(chained, 3.0, 2)  # chained is read again below: a copy
    later = ir.Node("sum", (chained,), {"axis": None, "keepdims": False, "dtype": None}, ((), f64))
    viewed = ir.Node("mul", (x, 3.0), {}, ((8,), f64))
    view = ir.Node("getitem", (viewed,), {"index": ((("slice", 0, 4, None),), True)}, ((4,), f64))
    w_viewed = write(viewed, 1.0, 5)
    out = ir.Node("mul", (x, 4.0), {}, ((8,), f64))
    w_out = write(out, 1.0, 6)
    g = ir.Graph("t", [x, c, fresh, w_input, w_const, w_fresh, chained, kept, later, viewed, view, w_viewed, out,
                       w_out], [w_input, w_const, kept, later, view, w_viewed, out, w_out])
    reuse = plan_reuse(g)
    assert reuse.get(w_fresh.id) == 0 and reuse.get(chained.id) == 0, reuse
    assert not {w_input.id, w_const.id, kept.id, w_viewed.id, w_out.id} & set(reuse), reuse


def test_powers_warn_as_numpys_operator(tmp_path):
    """`x ** 2`, `x ** 0.5` and `x ** -1` on arrays are NumPy's operator, which runs np.square,
    np.sqrt and np.reciprocal: its warnings name those (found by probing: the plan's np.power
    said "overflow encountered in power" where eager said "... in square")."""
    module = load_module(tmp_path, "import numpy as np\n\n\ndef f(x, k):\n    y = x * 3.0\n"
                                   "    return (y ** 2).sum(), y ** 0.5, (x - 1.0) ** -1, k ** 2, x ** 2.0, "
                                   "x[0] ** 2\n",
                         "powers")

    def args(s, i):
        x = random_array(i, (5,))
        if i % 3 == 2:
            x[0], x[1], x[2] = 1e300, -4.0, 1.0  # overflow, a negative square root, a zero reciprocal
        return x, np.arange(3) + i

    check(lambda: (module.f, {}), call_sequence(10, args), min_graph_calls=4)


def test_a_power_read_from_the_arguments_warns_as_numpys_operator(tmp_path):
    """An exponent the warm-up saw vary is an input of the graph; a Python number there still
    takes NumPy's operator (`x ** p` with p = 0.5 warns "in sqrt", as eagerly; the plan's
    np.power said "in power")."""
    module = load_module(tmp_path, "import numpy as np\n\n\ndef f(x, p):\n    return x ** p\n", "power_arg")
    exponents = [2, 3, 2, 3, 2, 0.5, -1.0, 2.0, 0.5]

    def args(s, i):
        return np.array([-1.0, 4.0, 0.0, 1e300]), exponents[i]

    check(lambda: (module.f, {}), call_sequence(len(exponents), args), min_graph_calls=3)
