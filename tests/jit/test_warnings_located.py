"""Warnings NumPy raises while a graph runs name the user's file and line, match filters by
module and line, and share the user module's registry (executor/located.py).

Eager and jit run the same calls on the same module (or twin modules, where the registry must be
each side's own); every warning each side shows is compared.
"""
import warnings

import numpy as np

import janus_like as jl

from .harness import check, load_module

STEP = """
import numpy as np

def step(x, st):
    a = x * 2.0
    y = np.log(a)
    st["s"] = st["s"] + y.sum()
    if st["s"] > 1e9:
        st["s"] = 0.0
    return float(y[1])
"""


def _calls():
    xs = [np.full(4, 1.0 + i) for i in range(10)]
    for i in (5, 8):
        xs[i][0] = -1.0  # log of a negative: NumPy warns, as a graph call
    return xs


def _shown(fn, action="always", module_filter=None):
    out, st = [], {"s": 0.0}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter(action)
        if module_filter:
            warnings.filterwarnings("ignore", module=module_filter)
        for i, x in enumerate(_calls()):
            n = len(w)
            fn(x, st)
            out += [(i, r.category, str(r.message), r.filename, r.lineno) for r in w[n:]]
    return out, st


def test_a_graphs_warning_names_the_users_file_and_line(tmp_path):
    mod = load_module(tmp_path, STEP)
    jf = jl.jit(mod.step)
    (eager, st_e), (jit, st_j) = _shown(mod.step), _shown(jf)
    assert jf.stats()["graph_calls"] >= 6
    assert eager and eager == jit, (eager, jit)
    assert jit[0][3] == mod.__file__ and jit[0][4] == 6
    np.testing.assert_equal(st_e, st_j)


def test_filters_by_module_match_graph_warnings(tmp_path):
    mod = load_module(tmp_path, STEP)
    jf = jl.jit(mod.step)
    assert _shown(mod.step, module_filter=mod.__name__)[0] == []
    assert _shown(jf, module_filter=mod.__name__)[0] == []
    assert jf.stats()["graph_calls"] >= 6


def test_a_warning_then_a_fallback_shows_once_under_the_default_action(tmp_path):
    source = STEP.replace("if st[\"s\"] > 1e9:", "if y[0] > -1e9:")  # NaN on the warning calls: the branch flips
    eager_mod, jit_mod = load_module(tmp_path, source), load_module(tmp_path, source)
    jf = jl.jit(jit_mod.step)
    eager, _ = _shown(eager_mod.step, action="default")
    jit, _ = _shown(jf, action="default")
    assert jf.stats()["fallbacks"] >= 1 and jf.stats()["graph_calls"] >= 4, jf.explain()
    assert [w[:3] + (w[4],) for w in eager] == [w[:3] + (w[4],) for w in jit] and len(eager) == 1, (eager, jit)


def test_generating_a_graph_leaves_warnings_already_shown_as_shown(tmp_path):
    """The JIT's own sample computations and constant folding silence warnings without marking
    the filters changed (janus_like/quiet.py), which emptied every module's registry."""
    mod = load_module(tmp_path, STEP + """
import warnings

def old_api():
    warnings.warn("old_api is deprecated", UserWarning)
""")
    jf = jl.jit(mod.step)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("default")
        mod.old_api()
        st = {"s": 0.0}
        for x in _calls()[:5]:
            jf(x, st)
        mod.old_api()
    assert jf.stats()["graphs_generated"] == 1
    assert [str(r.message) for r in w] == ["old_api is deprecated"]


def test_an_op_under_another_errstate_is_not_merged_with_the_plain_one():
    """Common subexpressions keep apart what `np.errstate` makes differ: `np.log(x)` under
    `divide="ignore"` and the plain one after it (which warns), `1 / x` and the same under
    `divide="raise"` (which raises)."""
    def make():
        def step(x, st):
            st["n"] += 1
            with np.errstate(divide="ignore"):
                y = np.log(x)
            z = np.log(x)
            q = 1.0 / x
            with np.errstate(divide="raise"):
                r = 1.0 / x
            return y + z + q + r

        return step, {"n": 0}

    calls = [lambda s, i=i: (np.array([1.0 + i, 0.0 if i in (5, 7) else 2.0]), s) for i in range(9)]
    jf = check(make, calls, min_graph_calls=4)
    assert jf.stats()["fallbacks"] >= 1  # (the raising calls)


def test_the_warm_up_copy_of_a_function_compares_with_a_literal_without_a_syntax_warning(tmp_path):
    """`n is not 3` warns once, when the user's module is compiled; the warm-up's instrumented
    copy of the function compiled it again and showed the SyntaxWarning a second time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        mod = load_module(tmp_path, "def step(x, n):\n    return x * 2.0, n is not 3\n")
    jf = jl.jit(mod.step)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for k in range(6):
            jf(np.ones(2), k)
    assert not [r for r in w if issubclass(r.category, SyntaxWarning)], [str(r.message) for r in w]


def test_a_call_that_falls_back_runs_its_graph_once(tmp_path):
    """A graph run that fails (here an assert: the branch flips on the NaN calls) is not run a
    second time before eager: under the "always" action the graph's warning shows once before
    eager's, and an `np.seterrcall` handler is called once by each."""
    source = STEP.replace("if st[\"s\"] > 1e9:", "if y[0] > -1e9:")
    eager_mod, jit_mod = load_module(tmp_path, source), load_module(tmp_path, source)
    jf = jl.jit(jit_mod.step)
    eager, _ = _shown(eager_mod.step)
    jit, _ = _shown(jf)
    assert jf.stats()["fallbacks"] == 2 and jf.stats()["graph_calls"] >= 4, jf.explain()
    eager, jit = [w[:3] + (w[4],) for w in eager], [w[:3] + (w[4],) for w in jit]  # (twin modules' files)
    assert len(eager) == 2 and jit == [w for w in eager for _ in range(2)], (eager, jit)
    handled = []
    old = np.seterrcall(lambda kind, flag: handled.append(kind))
    try:
        with np.errstate(all="call"):
            for x in _calls()[:6]:
                jf(x, {"s": 0.0})
    finally:
        np.seterrcall(old)
    assert handled == ["invalid value"] * 2, handled
