"""NumPy's array constructors and scalar types on graph values (graphgen/conversions.py), eager
and jit side by side: np.asarray / np.array of a Python number, a NumPy scalar, an array or a
Tensor, np.float32(x) and friends, and np.array([...]) of lists holding graph values.

The Python type a conversion gives (Python float, NumPy scalar, 0-d array) decides later
promotions, so every form is checked on a call sequence with float32, float64 and int inputs
and a shape change, with its result used in arithmetic against a float32 array.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F

from .harness import call_sequence, check, load_module, random_array

# l: a Python float, n: a Python int, m: a NumPy scalar of x's dtype, x: the array
_PRELUDE = "l = float(np.sum(x)); n = int(np.argmax(x)); m = x.mean()"
FORMS = {
    "asarray of a Python float": "np.asarray(l) * x32",
    "asarray of a Python int": "np.asarray(n) * x32",
    "asarray of a NumPy scalar": "np.asarray(m)",
    "asarray of an array": "np.asarray(x)",
    "asarray with a dtype": "np.asarray(l, dtype=np.float32) * x32",
    "asarray with a positional dtype": "np.asarray(x, np.float32) * x32",
    "asarray of a scalar, as float64": "np.asarray(m, dtype=np.float64) * x32",
    "array of a Python float": "np.array(l) * x32",
    "array of a NumPy scalar": "np.array(m) * x32",
    "array of an array, as float32": "np.array(x, dtype=np.float32)",
    "float32 of a Python float": "np.float32(l) * x32",
    "float64 of a NumPy scalar": "np.float64(m) * x32",
    "float64 of an array": "np.float64(x) * x32",
    "int64 of a Python int": "np.int64(n) + x32",
    "bool_ of a Python int": "np.bool_(n)",
    "list of Python floats": "np.array([l, 2 * l, 0.5])",
    "list of NumPy scalars": "np.array([m, m + 1]) * x32[:2]",
    "list of a float and a scalar": "np.array([l, m])",
    "list of ints": "np.array([n, n + 1, 3])",
    "list with a dtype": "np.array([l, m, n], dtype=np.float32)",
    "nested list": "np.array([[l, 1.0], [m, n]])",
    "tuple": "np.array((l, m))",
    "list of arrays": "np.array([x, x * 2])",
    "list of an array and a constant row": "np.array([x[:2], [1.0, 2.0]])",
}


def _module(tmp_path, body):
    return load_module(tmp_path, f"""
        import numpy as np

        def f(x):
            x32 = np.ones(x.shape, np.float32)
            {_PRELUDE}
            return {body}
    """)


def _calls():
    seq = [(4, np.float32)] * 5 + [(4, np.float64)] * 3 + [(6, np.float32)] * 3 + [(4, np.int64)] * 3
    return [lambda s, n=n, dt=dt, i=i: (random_array(i, (n,), np.float64, 3.0).astype(dt),)
            for i, (n, dt) in enumerate(seq)]


@pytest.mark.parametrize("form", list(FORMS))
def test_conversion_matches_eager(tmp_path, form):
    module = _module(tmp_path, FORMS[form])
    jf = check(lambda: (module.f, {}), _calls())
    assert not jf.fallbacks(), jf.explain()
    assert jf.stats()["graph_calls"] == len(_calls()) - 3, jf.explain()  # every call after warm-up


def test_asarray_of_a_python_float_keeps_float64_promotion(tmp_path):
    """The bug this module fixed: np.asarray(loss) stayed a (weak) Python float in the graph, so
    `np.asarray(loss) * float32_array` came out float32 where NumPy gives float64."""
    module = _module(tmp_path, "np.asarray(l) * x32")
    jf = jl.jit(module.f)
    x = np.arange(4, dtype=np.float32)
    outs = [jf(x) for _ in range(5)]
    assert jf.stats()["graph_calls"] == 2
    assert all(o.dtype == np.float64 for o in outs)


def test_conversions_cut_the_tape_as_eager_does():
    """np.asarray / np.array of a Tensor is an ndarray: eagerly no gradient flows through it,
    and none may in the graph either."""
    def make():
        w = jl.Variable(random_array(0, (3,)), name="w")

        def step(x):
            with jl.GradientTape() as tape:
                h = F.tanh(x * w)
                y = F.sum(h * np.asarray(h)) + F.sum(np.array([F.sum(h), 1.0]) * w[:2])
            g = tape.gradient(y, w)
            w.assign_sub(0.1 * g)
            return y, g

        return step, w

    check(make, [lambda s, i=i: (random_array(i, (3,)),) for i in range(6)])


@pytest.mark.parametrize("body", ["jl.tensor([l, m]) * x32[0]", "jl.tensor(l) * x32", "jl.Tensor(x, np.float32)",
                                  "jl.tensor(np.float32(l))", "jl.tensor([[n, 1], [2, n]])"])
def test_tensors_made_from_graph_values(tmp_path, body):
    module = load_module(tmp_path, f"""
        import numpy as np
        import janus_like as jl

        def f(x):
            x32 = np.ones(x.shape, np.float32)
            {_PRELUDE}
            return {body}
    """)
    jf = check(lambda: (module.f, {}), _calls())
    assert not jf.fallbacks(), jf.explain()


def test_a_new_tensor_cuts_the_tape_as_eager_does():
    """Tensor(h) copies h's values into a new Tensor the tape has not seen: eagerly no gradient
    flows back through it, and none may in the graph (it used to be h's own node there)."""
    def make():
        w = jl.Variable(random_array(0, (3,)), name="w")

        def step(x):
            with jl.GradientTape() as tape:
                h = F.tanh(x * w)
                y = F.sum(jl.tensor(h) * w) + F.sum(jl.Tensor(h * 2.0) * h)
            g = tape.gradient(y, w)
            w.assign_sub(0.1 * g)
            return y, g

        return step, w

    check(make, [lambda s, i=i: (random_array(i, (3,)),) for i in range(6)])


def test_unsupported_arguments_are_named(tmp_path):
    module = load_module(tmp_path, """
        import numpy as np

        def f(x):
            return np.array([float(x.sum())], ndmin=2)
    """)
    jf = jl.jit(module.f)
    for _ in range(5):
        np.testing.assert_array_equal(jf(np.ones(3)), np.array([[3.0]]))
    (fb,) = jf.fallbacks()
    assert fb.reason == "unsupported-call" and "ndmin" in fb.detail


# ------------------------------------------------------------------ generated lists
_LEAVES = {"pyfloat": "l", "pyint": "n", "pybool": "(n > 1)", "scalar": "m", "scalar64": "np.float64(m)",
           "const": "1.5", "intconst": "2"}


@st.composite
def nested_lists(draw, depth=2):
    """Source text of a list (or nested list of equal-length rows) of graph scalars and constants."""
    width = draw(st.integers(1, 3))
    if depth > 1 and draw(st.booleans()):
        rows = draw(st.integers(1, 3))
        return "[" + ", ".join(
            "[" + ", ".join(_LEAVES[draw(st.sampled_from(sorted(_LEAVES)))] for _ in range(width)) + "]"
            for _ in range(rows)) + "]"
    return "[" + ", ".join(_LEAVES[draw(st.sampled_from(sorted(_LEAVES)))] for _ in range(width)) + "]"


@settings(max_examples=20, deadline=None)
@given(rows=nested_lists(), dtype=st.sampled_from([None, "np.float32", "np.float64", "np.int64"]))
def test_generated_array_literals_match_eager(tmp_path_factory, rows, dtype):
    body = f"np.array({rows}{'' if dtype is None else ', dtype=' + dtype}) * x32[0]"
    module = _module(tmp_path_factory.mktemp("conv"), body)
    jf = check(lambda: (module.f, {}), _calls())
    assert not jf.fallbacks(), (body, jf.explain())


@pytest.mark.parametrize("convert", ["np.asarray(y)", "np.asanyarray(y)", "y.numpy()", "np.array(y)",
                                     "np.asarray(y, dtype=np.float64)"])
@pytest.mark.parametrize("write", ["a += 1.0", "a[0] = 7.0", "np.add(a, 1.0, out=a)", ""])
def test_an_ndarray_sharing_a_tensors_buffer(tmp_path, convert, write):
    """`np.asarray(t)` and `t.numpy()` of a CPU Tensor are its buffer: eager's write through them
    changes the Tensor (held in state here), so such a write keeps the step eager; a copy
    (`np.array(t)`, another dtype) and a read are staged."""
    module = load_module(tmp_path, "import numpy as np\n\ndef f(m, t):\n    y = t * 1.0\n    m['last'] = y\n"
                                   f"    a = {convert}\n    {write or 'pass'}\n    return a * 2.0, y\n")

    def make():
        return module.f, {"m": {}}

    copies = convert.startswith("np.array(") or "float64" in convert
    jf = check(make, call_sequence(6, lambda s, i: (s["m"], jl.tensor(random_array(i, (3,)).astype(np.float32)))),
               min_graph_calls=0)
    assert (jf.stats()["graph_calls"] > 0) == (copies or not write), jf.explain()
