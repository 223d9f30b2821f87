"""Differential testing: run `f` eagerly and `jit(f)` side by side on the same call sequence and
compare outputs, printed output, every piece of reachable state and the NumPy global RNG after
every call."""
from __future__ import annotations

import contextlib
import io
import os
import random
import warnings

import numpy as np

import janus_like as jl
from janus_like.executor import AssertFailed, interpret
from janus_like.ops.draws import restore, state_of

from .compare import (_same_text, assert_same, assert_same_aliasing,  # noqa: F401 (re-exported)
                      with_dead_values, within)


def random_array(seed, shape, dtype=np.float64, scale=1.0):
    """Deterministic normal samples for call sequences."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def assumption_kinds(jf):
    """Kinds of every assumption made by the graphs a `check()`ed JitFunction compiled."""
    return {a.kind for g in jf.compiled for a in g.assumptions}


def call_sequence(n, fn):
    """`n` calls for side_by_side; call i gets its arguments from fn(state, i)."""
    return [lambda s, i=i: fn(s, i) for i in range(n)]


def side_by_side(make, calls, *, check_interpreter=True, **jit_options):
    """`make()` -> (fn, state) built deterministically; `calls` is a list of `state -> args`.
    Returns the JitFunction so tests can look at stats(). Arrays' strides are compared too (on
    axes longer than 1), unless `layouts=False`."""
    flags = "strides" if jit_options.pop("layouts", True) else True
    fn_e, state_e = make()
    fn_j, state_j = make()
    jit_options.setdefault("reassociate", False)  # bit-exact comparison; reassociation has its own tests
    jf = jl.jit(fn_j, **jit_options)
    np.random.seed(12345)
    random.seed(12345)
    rng_e = rng_j = (np.random.get_state(), random.getstate())  # both global generators, per side
    for i, call in enumerate(calls):
        args_e, args_j = call(state_e), call(state_j)
        _set_rngs(rng_e)
        out_e, err_e, text_e = _run(fn_e, args_e)
        rng_e = (np.random.get_state(), random.getstate())
        _set_rngs(rng_j)
        out_j, err_j, text_j = _run(jf, args_j)
        rng_j = (np.random.get_state(), random.getstate())
        where = f"call {i}"
        assert (err_e is None) == (err_j is None), f"{where}: eager raised {err_e!r}, jit raised {err_j!r}"
        if err_e is not None:
            same = _message(err_e, fn_e) == _message(err_j, fn_j)
            assert type(err_e) is type(err_j) and same, f"{where}: {err_e!r} vs {err_j!r}"
        _same_text(text_e, text_j, where)
        assert_same(out_e, out_j, f"{where} result", flags=flags)
        assert_same(state_e, state_j, f"{where} state", flags=flags)
        assert_same(args_e, args_j, f"{where} args", flags=flags)
        assert_same_aliasing((out_e, state_e, args_e), (out_j, state_j, args_j), where)
        _rng_equal(rng_e, rng_j, where)
    if check_interpreter:
        check_plans_match_interpreter(jf)
    return jf


def _set_rngs(states):
    np.random.set_state(states[0])
    random.setstate(states[1])


def _rng_equal(a, b, where):
    (na, pa), (nb, pb) = a, b
    assert na[0] == nb[0] and np.array_equal(na[1], nb[1]) and na[2:] == nb[2:], f"{where}: global RNG state differs"
    assert pa == pb, f"{where}: the random module's state differs"


def _message(err, fn):
    """The error's text with the program's file name made neutral: `make()` loads eager's and the
    jit's copies of a program from two files, and an error that names the user's line names its file."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return str(err)
    return str(err).replace(os.path.basename(code.co_filename), "<program>")


def _run(fn, args):
    """The call's result, its exception, and what it printed and warned (the set of distinct
    warnings: the filters stay the test's, and a fresh record shows each once per place)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings(record=True) as shown:
        try:
            out = fn(*args)
            err = None
        except Exception as exc:  # compared against the other side
            out, err = None, exc
    # NumPy words a floating-point warning by where it arose: "overflow encountered in scalar
    # multiply" of NumPy scalars is eager's "... in multiply" of 0-d arrays: the same warning
    said = sorted({f"{w.category.__name__}: {str(w.message).replace('scalar ', '')}" for w in shown})
    return out, err, buf.getvalue() + "".join(f"\n[warning] {w}" for w in said)


def check_plans_match_interpreter(jf, graphs=None):
    """The fast plan and the reference interpreter agree on every cached graph (on zero-state
    inputs taken from the last successful guard evaluation is not available, so we replay the
    graph on its constant/input values recorded by running the guard on fresh args)."""
    compared = 0
    for g in (jf.graphs() if graphs is None else graphs):
        if g.plan is None or getattr(g, "last_slots", None) is None:
            continue
        compared += 1
        # explicit Generators (F.dropout) advance when a graph runs: replay both from one state
        gens = list(getattr(g, "generators", ())) + [g.last_slots[k] for k in getattr(g, "generator_slots", ())]
        saved, saved_gens = np.random.get_state(), [state_of(gen) for gen in gens]
        # the slots hold the inputs of the last successful run, possibly written since by that
        # run's commit: a replay may then fail an assert — both executors must fail it alike
        ref, ref_err = _outcome(lambda: interpret(g.graph, g.last_slots, getattr(g, "devices", None)))
        np.random.set_state(saved)
        for gen, st in zip(gens, saved_gens):
            restore(gen, st)
        fast, fast_err = _outcome(lambda: g.plan(g.last_slots))
        np.random.set_state(saved)
        for gen, st in zip(gens, saved_gens):
            restore(gen, st)
        if ref_err is None and isinstance(fast_err, AssertFailed) \
                and getattr(fast_err.assumption, "kind", "") == "finite":
            continue  # the plan's Python floats met a value that is not finite: the call would run eagerly
        assert type(ref_err) is type(fast_err), f"interpreter raised {ref_err!r}, plan raised {fast_err!r}"
        if ref_err is not None:
            continue
        assert len(ref) == len(fast)
        for r, f in zip(ref, fast):
            assert_same(r, f, "plan vs interpreter")
    return compared


def _outcome(run):
    try:
        return run(), None
    except Exception as exc:  # compared between the two executors
        return None, exc


def graph_calls(jf):
    return jf.stats()["graph_calls"]


# ---------------------------------------------------------------------------------------------
# Helpers for the wider differential suite (test_assumptions, test_state, test_fallbacks, ...).
# None of them changes what `side_by_side` compares; they add checks around it.

class GraphRecorder:
    """Context manager that records every graph compiled while it is active (including graphs the
    JIT later drops from its cache after a regeneration), so tests can verify all of them."""

    def __init__(self):
        self.compiled = []

    def __enter__(self):
        import janus_like.executor as ex

        self._ex = ex
        self._orig = ex.CompiledGraph
        recorder = self

        class Recording(self._orig):
            def __init__(self, *a, **k):
                super().__init__(*a, **k)
                recorder.compiled.append(self)

        ex.CompiledGraph = Recording
        return self

    def __exit__(self, *exc):
        self._ex.CompiledGraph = self._orig
        return False


def verify_graphs(graphs) -> int:
    """`ir.verify` on every graph (CompiledGraph or ir.Graph); returns how many were checked."""
    from janus_like import ir

    n = 0
    for g in graphs:
        ir.verify(getattr(g, "graph", g))
        n += 1
    return n


def verify_all_graphs(jf) -> int:
    """`ir.verify` on every graph cached by a JitFunction."""
    return verify_graphs(jf.graphs())


def plans_compared(jf) -> int:
    """How many cached graphs `check_plans_match_interpreter` really compares (plan + last_slots)."""
    return sum(1 for g in jf.graphs() if g.plan is not None and getattr(g, "last_slots", None) is not None)


def check(make, calls, *, min_graph_calls=1, **jit_options):
    """`side_by_side` plus: every graph compiled during the run passes `ir.verify`, at least
    `min_graph_calls` calls ran as a graph, and (when graphs ran) the plan-vs-interpreter check
    compared at least one graph. Returns (jf, compiled graphs)."""
    with GraphRecorder() as rec:
        jf = side_by_side(make, calls, **jit_options)
    verify_graphs(rec.compiled)
    # graphs dropped from the cache by a regeneration are compared too
    compared = check_plans_match_interpreter(jf, rec.compiled)
    if min_graph_calls:
        assert graph_calls(jf) >= min_graph_calls, jf.explain()
        assert compared > 0 or jit_options.get("mode", "plan") != "plan", jf.explain()
    jf.compiled = rec.compiled
    return jf


def fallback_reasons(jf):
    return {fb.reason for fb in jf.fallbacks()}


def const_calls(n, *args):
    """n calls that all pass the same state-independent args."""
    return [lambda s: args] * n


_module_counter = iter(range(1, 1 << 30))


def load_module(directory, source: str, name: str = "jit_prog"):
    """Write `source` to a fresh .py file under `directory` and import it (the JIT reads real
    source files). Each call makes a distinct module, so two calls give independent globals."""
    import importlib.util
    import pathlib
    import sys
    import textwrap

    mod_name = f"{name}_{next(_module_counter)}"
    path = pathlib.Path(directory) / f"{mod_name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    return module


class LiveGlobals(dict):
    """A dict view of some of a module's globals, read live, so `side_by_side` compares them as
    reachable state after every call."""

    def __init__(self, module, names):
        super().__init__()
        self._module, self._names = module, list(names)

    def keys(self):
        return list(self._names)

    def items(self):
        return [(n, self._module.__dict__[n]) for n in self._names]

    def __len__(self):
        return len(self._names)

    def __iter__(self):
        return iter(self._names)


class LiveCells(LiveGlobals):
    """The same view of a function's closure cells (the variables its `nonlocal` writes)."""

    def __init__(self, fn, names):
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        super().__init__(None, names)
        self._cells = {n: cells[n] for n in names}

    def items(self):
        return [(n, self._cells[n].cell_contents) for n in self._names]


# ways to see a Variable's array from outside the executor (tests of arrays the plan writes in place)
HOLDS = ("array", "view", "weakref", "slots")


def chain_program(draw, head, names, forms, first_result):
    """A generated function (for a hypothesis `st.composite`): `head` (its def line and set-up
    lines), then 2-8 lines `tK = form(...)` over `names` and the earlier t's, maybe an update of
    Variable `a`, returning one to three of the names from index `first_result` on."""
    from hypothesis import strategies as st

    names, lines = list(names), list(head)
    for n in range(draw(st.integers(2, 8))):
        form = draw(st.sampled_from(forms))
        args = [draw(st.sampled_from(names)) for _ in range(form.count("{}"))]
        lines.append(f"    t{n} = {form.format(*args)}")
        names.append(f"t{n}")
    if draw(st.booleans()):
        lines.append(f"    a.assign(a * 0.9 + {draw(st.sampled_from(names))})")
    ret = draw(st.lists(st.sampled_from(names[first_result:]), min_size=1, max_size=3))
    lines.append(f"    return ({', '.join(ret)},)")
    return "\n".join(lines) + "\n"


def numpy_step(directory, name, params, body):
    """`step(<params>)` with `body` (its lines after the first indented by four spaces) in a
    module of its own that imports numpy as np (`load_module`)."""
    return load_module(directory, f"import numpy as np\n\n\ndef step({params}):\n    {body}\n", name).step


def load_with_helpers(directory, source: str, helpers_source: str):
    """`load_module(source)` whose global `helpers` is a fresh module of `helpers_source` (a
    user's module read through `helpers.NAME`)."""
    module = load_module(directory, source)
    module.helpers = load_module(directory, helpers_source, "helpers")
    return module


from .held import assert_held_unchanged, held_then_written, hold  # noqa: E402,F401  (re-exported)
