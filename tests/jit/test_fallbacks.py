"""Code the generator cannot convert stays eager with a named reason and its source line; the
result is always eager's. Also: the kill switch, event logs, whose error a graph error is, and
the interpreter mode. The ways a function reaches `jit` are in test_entry_points.py."""
import inspect
import itertools
import operator
import zlib

import numpy as np
import pytest

import janus_like as jl

from .harness import call_sequence, check, fallback_reasons, load_module, random_array, side_by_side


def _site_of(fn, marker):
    """'test_fallbacks.py:<line>' of the first source line of `fn` containing `marker`."""
    lines, first = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if marker in text:
            return f"test_fallbacks.py:{first + k}"
    raise AssertionError(marker)


def _assert_fallback(jf, reason, site):
    fbs = [fb for fb in jf.fallbacks() if fb.reason == reason]
    assert fbs, jf.explain()
    assert any(fb.site == site for fb in fbs), (site, [fb.site for fb in fbs], jf.explain())
    text = jf.explain()
    assert f"[{reason}]" in text and site in text, text


# ------------------------------------------------------------------ named fallback reasons
def _try_fn(x):
    try:  # MARK
        y = {"a": x}["b"]  # a handler the warm-up enters
    except KeyError:
        y = x
    return y * 2.0


def _helper_gen(x):
    for k in range(3):
        yield x * k


def _uses_generator(x):
    total = np.zeros_like(x)
    for part, _ in zip(_helper_gen(x), range(3)):  # MARK (a for loop over the call itself, or list() of it, runs in the graph)
        total = total + part
    return total


def _uses_lambda(x):
    return sum(itertools.starmap(lambda a, b: a * b, [(x, x), (x, x)])) + 1.0  # MARK  library code calling it


def _uses_unsupported_library(x):
    checksum = zlib.crc32(b"abc")  # MARK
    return x * (checksum % 7)


def _uses_unsupported_numpy(x):
    return np.packbits(x > 0).sum() + 1.0  # MARK


class _Point:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):  # (a dunder of its own: objects of a plain class are made in graphs)
        return isinstance(other, _Point) and self.v is other.v

    __hash__ = None


def _constructs_object(x):
    p = _Point(x * 2.0)  # MARK
    return p.v + 1.0


def _masked(x):
    kept = x[..., x > 0.5]  # MARK (a mask after an Ellipsis: x[mask] itself is a graph of unknown sizes)
    return kept.sum() + len(kept)


@pytest.mark.parametrize("fn,reason", [
    (_try_fn, "try"),
    (_uses_generator, "generator"),
    (_uses_lambda, "unsupported-call"),
    (_uses_unsupported_library, "unsupported-call"),
    (_uses_unsupported_numpy, "unsupported-call"),
    (_constructs_object, "object-construction"),
    (_masked, "data-dependent-shape"),
], ids=["try", "generator", "lambda", "library-call", "numpy-call", "object", "mask"])
def test_unconvertible_code_stays_eager_with_reason_and_line(fn, reason):
    jf = side_by_side(lambda: (fn, {}), call_sequence(7, lambda s, i: (np.abs(random_array(i, (3,))) + 0.1,)))
    s = jf.stats()
    assert s["graph_calls"] == 0 and s["eager_calls"] == 4, jf.explain()
    _assert_fallback(jf, reason, _site_of(fn, "# MARK"))
    # the reason is recorded once per signature, not once per call
    assert sum(fb.count for fb in jf.fallbacks() if fb.reason == reason) == 1, jf.explain()


def test_top_level_generator_function_runs_eagerly():
    def gen(x):
        for k in range(2):
            yield x + k

    jf = jl.jit(gen)
    for i in range(6):
        x = random_array(i, (2,))
        got, want = list(jf(x)), list(gen(x))
        assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))
    assert jf.stats()["graph_calls"] == 0
    assert "generator" in fallback_reasons(jf), jf.explain()


def _picks_by_counter(state):
    x = state["items"][state["step"] % 2]  # MARK
    state["step"] += 1
    return x * 2.0


def test_a_list_indexed_by_a_changing_counter_names_its_line():
    """The counter varies, so it is a graph value; indexing a Python list with it cannot be
    speculated. It is kept as a value first (jit/generation._compiled), a graph a call, none run
    twice; after four it is an input again and the step runs eagerly. The reason names the line
    that does it (a helper raising without a site gets the statement's)."""
    def make():
        return _picks_by_counter, {"items": [random_array(0, (3,)), random_array(1, (3,))], "step": 0}

    jf = side_by_side(make, [lambda state: (state,)] * 10)
    assert jf.stats()["graph_calls"] == 4 and not [g for e in jf._entries.values() for g in e.graphs], jf.explain()
    _assert_fallback(jf, "data-dependent-python", _site_of(_picks_by_counter, "# MARK"))


def _doubles(x):
    def gen():  # a generator defined inside: the helper itself is an ordinary function
        yield x
    return x * 2.0 if gen is not None else x


def _yields(x):
    yield x * 2.0


def test_a_helper_is_a_generator_by_its_own_body_only():
    def uses_doubles(x):
        return np.tanh(_doubles(x))

    def uses_yields(x):
        return np.tanh(next(_yields(x)))

    calls = [lambda state, i=i: (random_array(i, (3,)),) for i in range(6)]
    jf = side_by_side(lambda: (uses_doubles, None), calls)
    assert jf.stats()["graph_calls"] > 0, jf.explain()
    jf = side_by_side(lambda: (uses_yields, None), calls)
    assert jf.stats()["graph_calls"] == 0 and "generator" in fallback_reasons(jf), jf.explain()


def test_unconvertible_helper_only_on_some_signatures():
    """A fallback is per signature: a shape that avoids the unconvertible path still compiles."""
    def make():
        def f(x):
            if x.shape[0] > 3:
                return np.packbits(x > 0) * 1.0
            return np.tanh(x)

        return f, {}

    sizes = [2, 2, 2, 2, 5, 5, 2, 5]
    jf = check(make, [lambda s, n=n, i=i: (random_array(i, (n,)),) for i, n in enumerate(sizes)])
    assert "unsupported-call" in fallback_reasons(jf)
    assert jf.stats()["graph_calls"] >= 2


def test_disable_env_var_gives_pure_eager(monkeypatch):
    monkeypatch.setenv("JANUS_LIKE_DISABLE", "1")

    def make():
        v = jl.Variable(np.zeros(2))

        def f(x):
            v.assign_add(x)
            return np.tanh(v * 2.0)

        return f, {"v": v}

    jf = side_by_side(make, call_sequence(8, lambda s, i: (random_array(i, (2,)),)))
    s = jf.stats()
    assert s["eager_calls"] == 8 and s["warmup_calls"] == 0 and s["graphs_generated"] == 0, jf.explain()


def test_disable_env_var_read_per_call(monkeypatch):
    def f(x):
        return x * 2.0

    jf = jl.jit(f)
    for i in range(5):
        jf(np.ones(2))
    assert jf.stats()["graph_calls"] == 2
    monkeypatch.setenv("JANUS_LIKE_DISABLE", "1")
    jf(np.ones(2))
    assert jf.stats()["graph_calls"] == 2 and jf.stats()["eager_calls"] == 1
    monkeypatch.setenv("JANUS_LIKE_DISABLE", "0")
    jf(np.ones(2))
    assert jf.stats()["graph_calls"] == 3


# ------------------------------------------------------------------ logs
def _log_lines(err, topic):
    return [line for line in err.splitlines() if line.startswith(f"[janus_like:{topic}]")]


def test_logs_guard_failures_fallbacks_and_regenerations(monkeypatch, capsys):
    monkeypatch.setenv("JANUS_LIKE_LOGS", "assumptions,fallbacks,regen")

    class Cfg:
        scale = 1.0

    def f(cfg, x):
        return x * cfg.scale

    jf = jl.jit(f)
    cfg = Cfg()
    for i in range(8):
        cfg.scale = 1.0 if i < 4 else float(i)
        np.testing.assert_array_equal(jf(cfg, np.ones(2)), np.ones(2) * cfg.scale)
    err = capsys.readouterr().err
    s = jf.stats()
    assert s["guard_failures"] == 2 and s["regenerations"] == 1, jf.explain()
    # one line per guard failure, one per regeneration decision (+ the regenerated graph)
    assert len(_log_lines(err, "assumptions")) == s["guard_failures"], err
    assert any("relaxing value" in line for line in _log_lines(err, "regen")), err
    assert _log_lines(err, "fallbacks"), err
    # nothing else is printed: every line belongs to a requested topic
    assert all(line.split("]")[0][len("[janus_like:"):] in ("assumptions", "fallbacks", "regen")
               for line in err.splitlines()), err


def test_logs_assert_failures(monkeypatch, capsys):
    """A failed assert node (a branch guess) is an assumption event too: one log line each."""
    monkeypatch.setenv("JANUS_LIKE_LOGS", "assumptions")

    def f(x):
        s = np.sum(x)
        if s > 0:
            y = x * 2.0
        else:
            y = x - 1.0
        return y

    jf = jl.jit(f)
    for sign in (1, 1, 1, 1, -1, -1, 1):
        jf(np.ones(2) * sign)
    err = capsys.readouterr().err
    assert jf.stats()["assert_failures"] == 2, jf.explain()
    assert len(_log_lines(err, "assumptions")) == 2, err


def test_logs_off_by_default(monkeypatch, capsys):
    monkeypatch.delenv("JANUS_LIKE_LOGS", raising=False)

    def f(x):
        try:
            return x + 1
        except ValueError:
            return x

    jf = jl.jit(f)
    for _ in range(5):
        jf(np.ones(2))
    assert capsys.readouterr().err == ""


def test_fallback_describe_names_reason_hint_and_site():
    jf = side_by_side(lambda: (_try_fn, {}), call_sequence(5, lambda s, i: (np.ones(2),)))
    fb = next(fb for fb in jf.fallbacks() if fb.reason == "try")
    text = fb.describe()
    assert text.startswith(f"[try] at {_site_of(_try_fn, '# MARK')}"), text
    assert "Hint:" in text
    assert jl.explain(jf) == jf.explain()
    assert "is not jitted" in jl.explain(_try_fn)


def test_interpreter_mode_matches_eager():
    def make():
        def f(x, v):
            v.assign_add(x)
            if np.sum(x) > 0:
                y = x * 2.0
            else:
                y = x - 1.0
            return y

        return f, {"v": jl.Variable(np.zeros(3))}

    signs = [1, 1, 1, 1, -1, -1, 1]
    jf = side_by_side(make, [lambda s, sg=sg, i=i: (np.abs(random_array(i, (3,))) * sg, s["v"]) for i, sg in enumerate(signs)],
                      mode="interpret")
    assert jf.stats()["graph_calls"] >= 1


_DUP_SRC = """
import numpy as np


def f(x):
    if np.sum(x) > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y
"""


def test_identical_functions_in_two_files_each_profiled(tmp_path):
    first = load_module(tmp_path, _DUP_SRC, "dup")
    second = load_module(tmp_path, _DUP_SRC, "dup")
    for mod in (first, second):
        jf = side_by_side(lambda mod=mod: (mod.f, {}), call_sequence(8, lambda s, i: (np.abs(random_array(i, (2,))),)))
        assert jf.stats()["graph_calls"] == 5, jf.explain()


def test_a_graph_error_eager_does_not_raise_is_an_internal_error_and_stops_that_graph(monkeypatch):
    """The user's error is one eager raises too; a graph that raises where eager does not is a
    janus_like defect: named so, the eager result returned, and the signature eager from then."""
    from janus_like import executor as ex

    tries = []

    def broken(self, args):
        tries.append(1)
        return ex.RAISED, RuntimeError("boom")

    def make():
        def f(x, scale):
            return np.tanh(x) * (1.0 / scale)
        return f, {}

    monkeypatch.setattr(ex.CompiledGraph, "try_run", broken)
    x = random_array(0, (4,))
    calls = [lambda s: (x, 2.0)] * 7
    jf = side_by_side(make, calls, check_interpreter=False)
    fbs = [fb for fb in jf.fallbacks() if fb.reason == "internal-error"]
    assert len(fbs) == 1 and "boom, where eager did not" in fbs[0].detail, jf.explain()
    assert len(tries) == 1, jf.explain()  # after it, no graph for that signature
    assert "user-error" not in fallback_reasons(jf)
    assert jf.stats()["eager_calls"] == 4


def test_an_error_eager_raises_too_stays_the_users():
    def make():
        def f(x, idx):
            return x[idx] * 2.0
        return f, {}

    x = random_array(0, (4,))
    ok, bad = np.array([0, 1]), np.array([0, 9])  # index 9: IndexError in the graph and in eager
    calls = [lambda s: (x, ok)] * 5 + [lambda s: (x, bad), lambda s: (x, ok)]
    jf = check(make, calls)
    assert "user-error" in fallback_reasons(jf) and "internal-error" not in fallback_reasons(jf)


def test_a_float_index_raises_numpys_error_while_generating():
    """`M[k % 3]` of a float k: NumPy's IndexError, so the user's error (it was a TypeError of
    the generator's, reported as a janus_like defect)."""
    def make():
        def f(m, k):
            return m[k % 3] * 2
        return f, {}

    calls = [lambda s: (np.ones((3, 4)), 1)] * 5 + [lambda s, i=i: (np.ones((3, 4)), 2.0) for i in range(3)]
    jf = check(make, calls)
    assert "user-error" in fallback_reasons(jf) and "internal-error" not in fallback_reasons(jf), jf.explain()


def test_an_augmented_assignment_reads_its_target_first():
    """`s += ... int("nnnn")` of an unbound s: Python raises UnboundLocalError before it
    evaluates the value (the generator raised int()'s ValueError first, reported as a janus_like
    defect)."""
    def make():
        def f(x, st):
            st["b"] += float(x[0])  # (a target that exists: read first too)
            s += float(x[0]) + int("n" * len(x))  # noqa: F821
            return s
        return f, {"b": 0.0}

    jf = check(make, [lambda s, i=i: (np.ones(4) * i, s) for i in range(6)], min_graph_calls=0)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_an_error_raised_while_generating_that_eager_raises_too_stays_the_users():
    """`1 / (len(x) - 3)` is folded while generating (len(x) is fixed by the shape guard): for
    a length-3 input generation raises ZeroDivisionError. Eager raises it too, so it is the
    user's error at the user's line, not a janus_like defect."""
    def make():
        def f(x):
            return x * (1 / (len(x) - 3))
        return f, {}

    calls = [lambda s: (np.ones(4),)] * 5 + [lambda s: (np.ones(3),)] * 2 + [lambda s: (np.ones(4),)]
    jf = check(make, calls)
    (fb,) = jf.fallbacks()
    assert fb.reason == "user-error" and "ZeroDivisionError" in fb.detail, jf.explain()
    assert fb.site.startswith("test_fallbacks.py:"), fb.site
    assert jf.stats()["graph_calls"] == 3  # the length-4 signature still runs as a graph


def test_a_generator_error_eager_does_not_raise_is_an_internal_error(monkeypatch):
    from janus_like.graphgen import evaluator

    def make():
        def f(x):
            return x * 2.0
        return f, {}

    def broken(self, args):
        raise KeyError("generator defect")

    monkeypatch.setattr(evaluator.Generator, "generate", broken)
    jf = side_by_side(make, [lambda s: (np.ones(3),)] * 6, check_interpreter=False)
    (fb,) = jf.fallbacks()
    assert fb.reason == "internal-error" and "generator defect" in fb.detail, jf.explain()
    assert jf.stats()["eager_calls"] == 3


def test_events_are_bounded_on_a_stream_of_one_off_shapes(monkeypatch):
    """A call no graph takes makes events (an assumption that failed, a fallback): a long stream
    of one-off shapes keeps the first EVENTS_KEPT and counts the rest, and logging still prints
    every one."""
    import importlib

    monkeypatch.setattr(importlib.import_module("janus_like.jit.explain"), "EVENTS_KEPT", 12)

    def total(t):  # a nested pair's leaves summed: one graph per nesting
        return t * 2.0 if not isinstance(t, tuple) else total(t[0]) + total(t[1])

    def nest(n):
        return np.ones(2) if n == 0 else (nest(n - 1), np.ones(2)) if n % 2 else (np.ones(2), nest(n - 1))

    jf = jl.jit(total, max_graphs=2)
    for n in range(40):
        np.testing.assert_array_equal(jf(nest(n)), np.full(2, 2.0 * (n + 1)))
    assert len(jf.events) == 12 and jf.events_dropped > 20, (len(jf.events), jf.events_dropped, jf.explain())
    assert all(isinstance(text, str) for _, _, text in jf.events)
    monkeypatch.setenv("JANUS_LIKE_LOGS", "assumptions")
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        jf(nest(41))
    assert "[janus_like:assumptions]" in err.getvalue() and "expected" in err.getvalue()


class _Held:
    def __init__(self):
        self._lr = 0.1

    lr = property(operator.attrgetter("_lr"))  # a property whose getter is not a Python function


def test_a_property_whose_getter_is_not_a_python_function_stays_eager_with_a_reason():
    def step(g, o):
        return g * o.lr
    jf = side_by_side(lambda: (step, _Held()), call_sequence(6, lambda s, i: (np.ones(2) * i, s)))
    assert "internal-error" not in fallback_reasons(jf) and "no-source" in fallback_reasons(jf), jf.explain()


def early_return_step(x, k, st):
    for p in st["ps"]:
        if float(p.sum()) > -1.0:
            return x * 2
        p *= 0.5
    st["ps"].append(x * max(1, k)[::-1])  # raises (an int is not subscriptable), eager too
    return x


def test_a_split_outcome_whose_path_raises_runs_eagerly_on_the_calls_that_take_it():
    """A `return` in a data-dependent branch is split into one graph per outcome; the first graph
    takes the outcome the warm-up saw most, which here raises on its path while the generating
    call takes the other outcome. That was reported as an internal error, and the signature went
    eager for good; the path's calls now run eagerly (raising eager's error) and the other
    outcome's graph runs."""
    sums = [-6, -6, -6, 1, 1, 1, -6, 1, 1, 1]

    def call(st, i):
        st["ps"][0][:] = sums[i] / 3
        return np.ones(4) * i, 2, st

    jf = side_by_side(lambda: (early_return_step, {"ps": [np.full(3, -1.0), np.full(3, -1.0)]}),
                      [lambda st, i=i: call(st, i) for i in range(len(sums))])
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
    assert jf.counters["graph_calls"] >= 3, jf.explain()
