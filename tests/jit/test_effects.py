"""Effects under the JIT: print and logging deferred to after the commit (showing state as of
the print, log records naming the user's line), and exceptions from user code that surface
exactly as eager and leave nothing behind. Random draws are in test_rng_effects.py.

Each test compares eager and jit side by side after every call and checks that graphs ran.
"""
import collections

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import janus_like as jl

from .harness import call_sequence, check, load_module, random_array


# ------------------------------------------------------------------ print
def test_print_once_in_order_after_commit():
    def make():
        v = jl.Variable(np.zeros(2))

        def f(x, step):
            print("start", step)
            v.assign_add(x)
            loss = np.sum(v * v)
            print(f"step {step}: loss={float(loss):.4f} mean={np.mean(x)} {v!r} {loss}")
            print("done", end="|")
            return loss

        return f, {"v": v}

    jf = check(make, call_sequence(8, lambda s, i: (random_array(i, (2,)), 7)))
    assert jf.stats()["graph_calls"] == 5


def test_str_format_of_graph_values_like_an_f_string():
    # "{:.4f}".format(loss) formatted the graph's symbol while generating: an internal error
    def make():
        v = jl.Variable(np.zeros(2))

        def f(x, step):
            v.assign_add(x)
            loss = np.sum(v * v)
            line = "step {0} loss {1:.4f} {x!r} {1:>9.2e}".format(step, float(loss), x=x.sum())
            line += " | {} {}".format(f"{float(loss):.2f}", "done")  # an f-string's text inside (it was its repr)
            print("{0}|{0}".format(loss))
            v.assign(v * 0.5)  # after the print: it shows the values before
            return line, "{:.3f}".format(float(v[0]))

        return f, {"v": v}

    jf = check(make, call_sequence(8, lambda s, i: (random_array(i, (2,)), i)), min_graph_calls=3)
    assert jf.stats()["fallbacks"] <= 2, jf.explain()

    for text in ("{0.shape} {1}", "{} {1}", "{1} {}"):  # reaching into a value stays eager; mixed numbering raises
        check(lambda: ((lambda x: text.format(x * 2.0, 3)), {}), call_sequence(5, lambda s, i: (random_array(i, (2,)),)),
              min_graph_calls=0)
    for use in (lambda t: str(t), lambda t: "{:>12}".format(t)):  # the f-string's text is needed now: eager
        check(lambda: ((lambda x: use(f"{float(x.sum()):.3f}")), {}),
              call_sequence(5, lambda s, i: (random_array(i, (2,)),)), min_graph_calls=0)


def test_percent_formatting_of_graph_values_like_eager():
    # "step %d loss %.4f" % (step, loss): each directive applied to its value when the text is made
    def make():
        st = {"w": np.ones(3), "log": []}

        def f(x, step):
            st["w"] -= 0.1 * x
            loss = np.sum(st["w"] ** 2)
            st["log"].append("step %5d loss %.4f (%s) %r %-8.2e|%x%%" % (step, loss, loss, x[:1], loss, step))
            print("%s: %g" % ("w", st["w"][0]))
            line = "%s / %d" % (f"{float(loss):.2f}", int(step))  # an f-string's text for %s
            note = "%s!" % (f"{x[0]:.1f}",)  # only text made from graph values
            return line, note, "%.3f" % float(st["w"][1]), "%i" % loss
        return f, st

    jf = check(make, call_sequence(8, lambda s, i: (random_array(i, (3,)), i)), min_graph_calls=4)
    assert jf.stats()["fallbacks"] == 0, jf.explain()


@settings(max_examples=30, deadline=None)
@given(flags=st.sampled_from(["", "-", "+", " ", "#", "0", "-+"]), width=st.sampled_from(["", "1", "9"]),
       precision=st.sampled_from(["", ".0", ".3", "."]), kind=st.sampled_from(list("diouxXeEfFgGcrsa")),
       value=st.sampled_from(["x[0]", "x.sum()", "float(x[1])", "int(x[1] * 7)", "x[:1]", "np.float32(x[0])",
                              "x.sum() > 0", "len(x) + 64"]))
def test_percent_directives_give_eagers_text(tmp_path_factory, flags, width, precision, kind, value):
    directive = f"%{flags}{width}{precision}{kind}"
    module = load_module(tmp_path_factory.mktemp("percent"), "import numpy as np\n\n\ndef f(x):\n"
                         f"    return '<' + {directive!r} % ({value},) + '>'\n", "percent_any")
    check(lambda: (module.f, {}), call_sequence(6, lambda s, i: (random_array(i, (3,)) * 10 ** (i % 3),)),
          min_graph_calls=0)  # (some directives raise for some values, eagerly and in the graph)


@pytest.mark.parametrize("template, args", [
    ("%d %d", "(x.sum(),)"),  # too few values: eager's TypeError
    ("%d", "(x.sum(), 1)"),  # too many
    ("%(a)s", "{'a': x.sum()}"),  # a mapping
    ("%*d", "(3, x.sum())"),  # a width from the values
    ("%d %q", "(x.sum(), 1)"),  # a directive Python rejects
    ("%5s", "(f'{x.sum():.2f}',)"),  # a width for text made from graph values
])
def test_percent_formatting_that_stays_eager_or_raises_as_eager(tmp_path, template, args):
    module = load_module(tmp_path, f"def f(x):\n    return {template!r} % {args}\n", "percent_eager")
    jf = check(lambda: (module.f, {}), call_sequence(5, lambda s, i: (random_array(i, (2,)),)), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and jf.stats()["warmup_calls"] + jf.stats()["eager_calls"] == 5, \
        jf.explain()


def test_print_of_arrays_and_tensors():
    def make():
        def f(x, t):
            y = np.tanh(x)
            print(y, t, t * 2.0, y.shape, str(y.dtype), sep=" / ")
            print("sum:", np.sum(y), "as float:", float(np.sum(y)))
            return y

        return f, {}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)), jl.tensor(random_array(i + 9, (2,))))))


def test_print_shows_a_value_as_it_was_before_an_in_place_write():
    """`print(y)` then `y += 1.0`: the deferred print shows y before the write, for an ndarray,
    a Tensor and a view of a local array (the graph's print once showed the written value)."""
    def make():
        def f(x, t):
            y, z, w = x * 1.0, t * 1.0, np.zeros((2, 3))
            row = w[0]
            print(y, z, row, [y, {"z": z}])
            y += 1.0
            z += 1.0
            w[0] += x
            return y, z, row

        return f, {}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)), jl.tensor(random_array(i + 9, (3,))))),
          min_graph_calls=2)


def test_print_tensor_made_from_graph_value():
    def make():
        def f(x):
            print(jl.tensor(np.tanh(x)))
            return x

        return f, {}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)),)))


def test_print_that_raises_leaves_later_writes_undone():
    def make():
        v = jl.Variable(np.zeros(2))

        def f(x):
            print(f"sum={np.sum(x):d}")  # a float has no 'd' format: ValueError eagerly, before the write
            v.assign_add(x)
            return v

        return f, {"v": v}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (2,)),)), min_graph_calls=0)


def test_print_not_emitted_when_call_raises():
    def make():
        def f(x, idx):
            print("before", np.sum(x))
            return x[idx]

        return f, {}

    calls = call_sequence(5, lambda s, i: (random_array(i, (3,)), 1)) + [lambda s: (random_array(9, (3,)), 7)] + call_sequence(2, lambda s, i: (random_array(i, (3,)), 2))
    check(make, calls)


# ------------------------------------------------------------------ exceptions from user code
def test_shape_mismatch_raises_like_eager_and_leaves_state():
    def make():
        v = jl.Variable(np.zeros(3))

        def f(x, w):
            v.assign_add(np.ones(3))
            return x @ w

        return f, {"v": v}

    good = lambda s, i: (random_array(i, (2, 3)), random_array(i, (3, 4)))  # noqa: E731
    calls = call_sequence(5, good) + [lambda s: (random_array(1, (2, 3)), random_array(2, (5, 4)))] + call_sequence(3, good)
    jf = check(make, calls)
    assert jf.stats()["graph_calls"] >= 4


def test_index_error_after_state_write_leaves_state_untouched():
    """Eager: the write happens, then the IndexError. The graph must do the same (commit nothing
    from an abandoned graph, and let the eager re-run make its partial write)."""
    def make():
        def f(x, buf, i):
            buf[0] = buf[0] + 1.0
            return x[i]

        return f, {"buf": np.zeros(2)}

    calls = call_sequence(5, lambda s, i: (random_array(i, (4,)), s["buf"], 2)) + [lambda s: (random_array(0, (4,)), s["buf"], 9)] \
        + call_sequence(3, lambda s, i: (random_array(i, (4,)), s["buf"], 1))
    check(make, calls)


def test_explicit_raise_on_somecall_sequence():
    class Bad(ValueError):
        pass

    def make():
        v = jl.Variable(np.zeros(2))

        def f(x, limit):
            v.assign_add(x)
            if limit < 0:
                raise Bad(f"negative limit {limit}")
            return v * limit

        return f, {"v": v}

    calls = call_sequence(5, lambda s, i: (random_array(i, (2,)), 2)) + [lambda s: (random_array(5, (2,)), -1)] + call_sequence(3, lambda s, i: (random_array(i, (2,)), 2))
    check(make, calls)


def test_exception_from_data_dependent_check():
    """`assert` on a computed value that fails only on some calls."""
    def make():
        def f(x):
            y = np.tanh(x)
            assert np.sum(y) > -10.0, "sum too small"
            return y * 2.0

        return f, {}

    calls = call_sequence(5, lambda s, i: (random_array(i, (3,)),)) + [lambda s: (np.full(3, -100.0) * np.arange(1, 4),)]
    calls += [lambda s: (np.full(30, -100.0),)] + call_sequence(2, lambda s, i: (random_array(i, (3,)),))
    check(make, calls)


def test_exception_from_callee_key_error():
    def make():
        def lookup(d, k):
            return d[k] * 2.0

        def f(d, k):
            return lookup(d, k) + 1.0

        return f, {}

    d = {"a": np.ones(2), "b": np.zeros(2)}
    calls = [lambda s: (d, "a")] * 5 + [lambda s: (d, "zz")] + [lambda s: (d, "b"), lambda s: (d, "a")]
    check(make, calls)


def test_divide_by_zero_warning_values_match():
    def make():
        def f(x):
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.log(x) / x

        return f, {}

    check(make, call_sequence(6, lambda s, i: (np.array([0.0, 1.0, -1.0, 2.0 + i]),)))


def test_value_merged_from_cond_keeps_alias_to_argument():
    def make():
        def f(x):
            v = x * 1.0
            if np.sum(x) > 0:
                v = v * 2.0
            else:
                v = x  # v aliases the argument in this arm
            v += 1.0  # eagerly: writes x when the else arm ran
            return v

        return f, {}

    signs = [1, -1, 1, -1, -1, 1]
    # found by test_generated_programs: the merged value used to lose its alias to x, so the write
    # was dropped. Now either a graph that writes x, or a named fallback.
    jf = check(make, [lambda s, sg=sg: (np.full(2, float(sg)),) for sg in signs], min_graph_calls=0)
    assert jf.stats()["graph_calls"] > 0 or jf.fallbacks(), jf.explain()


def test_print_before_write_shows_old_state():
    class Obj:
        def __init__(self):
            self.a = np.zeros(2)
            self.items = [1]

    def make():
        v = jl.Variable(np.zeros(2))

        def f(x, o):
            print("before", v, o.a, o.items)
            v.assign_add(x)
            o.a += x
            o.items.append(2)
            print("after", v, o.a, o.items)
            return x

        return f, {"v": v, "o": Obj()}

    check(make, call_sequence(6, lambda s, i: (np.ones(2), s["o"])))


def test_print_before_write_variable_only_value_copy():
    """Printing a computed value (not the state object itself) before the write is fine."""
    def make():
        v = jl.Variable(np.zeros(2))

        def f(x):
            print("before", np.sum(v * 1.0))
            v.assign_add(x)
            print("after", np.sum(v * 1.0))
            return x

        return f, {"v": v}

    check(make, call_sequence(6, lambda s, i: (np.ones(2),)))


def printed_with_options(x):
    np.set_printoptions(precision=2)  # NumPy's global state: set on every call, as eagerly
    print(x * 1.23456)
    np.set_printoptions(precision=8)
    return x


def quiet_division(x):
    old = np.seterr(divide="ignore")
    y = 1.0 / x
    np.seterr(**old)
    return y


def test_numpys_global_state_set_inside_the_function_stays_eager():
    # np.set_printoptions / np.seterr ran once, while the graph was generated: the graph's
    # prints had the default precision and its divisions warned where eager's did not
    import warnings

    from .harness import fallback_reasons

    jf = check(lambda: (printed_with_options, None), [lambda s, k=k: (random_array(k, (3,)),) for k in range(6)],
               min_graph_calls=0)
    assert fallback_reasons(jf) == {"unsupported-call"}, jf.explain()
    jf = jl.jit(quiet_division)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning fails the test
        for _ in range(6):
            jf(np.array([0.0, 2.0]))


def test_a_logged_record_names_the_users_function_and_line():
    """Logging from a graph runs at the commit; its record names the line and function of the
    call in the user's code, as eager's record does (logging finds its caller on the stack, where
    the graph's commit function was)."""
    import logging

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append((record.funcName, record.lineno, record.pathname, record.getMessage()))

    logger = logging.getLogger("janus_like.tests.caller")
    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    logger.propagate = False

    def logged_step(w, i):
        if i % 4 == 0:
            logger.info("step %d", i)
        w -= 0.1 * w
        return w.sum()

    def run(fn):
        records.clear()
        w = np.ones(3)
        for i in range(12):
            fn(w, i)
        return list(records)

    eager = run(logged_step)
    jf = jl.jit(logged_step, choose="graph")
    assert run(jf) == eager and eager[0][0] == "logged_step", (eager, run(jf))
    assert jf.stats()["graph_calls"] > 0, jf.explain()


def test_percent_formatting_of_input_objects_like_eager():
    """`"%s" % (st["h"],)` of a list, a dict or a tuple read from the state: the deferred text
    of each (before, the graph's own wrapper's text), and a state tuple on the right is unpacked
    as eager unpacks it (`"%s-%s" % st["pair"]`)."""
    def make():
        st = {"h": [1.0, 2.0], "d": {"a": 1}, "pair": (1, 2.5)}

        def f(x):
            st["h"].append(float(x.sum()))
            a = "%s and %r" % (st["h"], st["d"])
            b = "%s-%s" % st["pair"]
            print("hist: %s" % (st["h"],))
            return a, b, "%d %s" % (3, st["pair"]), x * 2
        return f, st

    check(make, call_sequence(7, lambda s, i: (random_array(i, (3,)),)), min_graph_calls=3)


def test_text_of_an_input_namedtuple_names_its_class():
    """`str(st["p"])`, `repr`, f-strings and `print` of a namedtuple from the inputs: `P(a=1.0, b=2)`
    as eager gives (before, the plain tuple's `(1.0, 2)`)."""
    point = collections.namedtuple("Point", "a b")

    def make():
        st = {"p": point(1.0, 2)}

        def f(x):
            print(st["p"])
            return str(st["p"]), repr(st["p"]), f"{st['p']}!", x * 2
        return f, st

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)),)), min_graph_calls=3)
