"""NumPy's own arguments that a table entry does not implement: `np.max(x, initial=5)`,
`np.mean(x, dtype=np.float64)`, `np.reshape(x, s, order="F")`, `x.sum(where=m)`. Each is another
computation than the op behind the table entry; the entry must not drop the argument. Eagerly a
Tensor runs NumPy itself on its data; in a graph the call is a node calling NumPy's own function
(`graphgen/numpy_calls.library_node`), unless the function gives a view of an operand
(`np.reshape(x, s, order="F")`) or a result shaped by the data, and those leave the signature
eager with the `unsupported-call` reason naming the function and the argument. Side by side
against eager, with float32 inputs (dtype and layout must match too)."""
import inspect

import numpy as np
import pytest

import janus_like as jl
from janus_like.tensor import _FUNCTIONS, _MIN_POSITIONAL, _SIGNATURES

from .harness import check, fallback_reasons, load_module

# (body of `f(x)`, whether a graph runs it): the unimplemented arguments, and beside them calls
# that are implemented (also positionally) so the check is not simply "any keyword goes eager"
CASES = [
    ("np.max(x, initial=5.0)", True), ("np.max(x, 0, None, True)", True), ("np.sum(x, where=x > 0)", True),
    ("np.sum(x, initial=3.0)", True), ("np.sum(x, 0, np.float64)", True), ("np.mean(x, dtype=np.float64)", True),
    ("np.mean(x, 1, np.float64)", True), ("np.mean(x, where=x > 0)", True), ("np.mean(x, 1, keepdims=True)", True),
    ("np.reshape(x, (-1,), order='F')", False), ("np.reshape(x, (-1,), order='C')", True),
    ("np.take(x, np.array([0, 9]), axis=1, mode='clip')", False), ("np.take(x, np.array([0, 2]), 1)", True),
    ("np.argmax(x, axis=1, keepdims=True)", True), ("np.concatenate([x, x], axis=0, dtype=np.float64)", True),
    ("np.stack([x, x], 1, dtype=np.float64)", True), ("np.zeros_like(x, shape=(2, 2))", True),
    ("np.zeros_like(x, np.float64)", True), ("np.clip(x, -0.5, 0.5, dtype=np.float64)", True),
    ("np.clip(x, -0.5, 0.5)", True), ("np.where(x > 0)[0]", True), ("np.copy(x, order='F') @ x.T", True),
    ("np.einsum('ij,ij,ij->i', x, x, x)", True), ("np.min(x, axis=1, where=x > 0, initial=9.0)", True),
    ("x.sum(where=x > 0)", True), ("x.max(initial=9.0)", True), ("x.mean(dtype=np.float64)", True),
    ("x.sum(0, np.float64)", True), ("x.max(0, None, True)", True), ("x.max(0, keepdims=True)", True),
    ("x.reshape((-1,), order='F')", False), ("x.astype(np.float64, copy=False) * 2", True),
    ("x.argmax(axis=0, keepdims=True)", True), ("x.cumsum(axis=0)", True), ("x.cumsum(0, out=x)", False),
    ("x.std(axis=0)", True),
    ("np.var(x, 1, keepdims=True)", True), ("x.var(0, ddof=1)", True), ("np.std(x, dtype=np.float64)", True),
    ("x.var(0, np.float64)", True),
    ("x.T.copy(order='K')", False), ("x.min(axis=1, initial=-9.0)", True),
    # ufuncs of ops/more_math.py (operator forms too)
    ("x // 0.5 + x % 0.3 - 2.0 % (x + 9.0)", True), ("np.floor(x) * np.ceil(x) + np.rint(x)", True),
    ("np.log1p(np.abs(x)) + np.expm1(x * 0.1) - np.log2(x * x + 1) * np.log10(x * x + 2)", True),
    ("np.reciprocal(x + 10.0) + np.arctan(x) + np.sinh(x) - np.cosh(x)", True),
    ("np.tan(x) + np.arcsin(x * 0.1) * np.arccos(x * 0.1) + np.arctan2(x, x + 3.0)", True),
    ("np.nan_to_num(np.log(x), nan=-1.0, posinf=9.0) + np.tile(x[0], (4, 1)).sum()", True),
    ("np.nan_to_num(x, copy=False)", False), ("np.tile(x, reps=(1, 2))", True),
    ("np.cumsum(x, 1, np.float64) + np.prod(x, 0, keepdims=True) + np.sort(x, 0)[::-1] + np.round(x, 1)", True),
    ("np.prod(x, initial=2.0)", True), ("np.prod(x, where=x > 0)", True), ("np.sort(x, kind='stable')", True),
    ("np.diff(x, prepend=0.0)", True), ("np.diff(x, 2, 0).sum() + np.triu(x, 1) - np.tril(x, k=-1)", True),
    ("np.hypot(x, x.T[:1].T) + np.atleast_3d(x)[..., 0]", True), ("np.round(x, out=x)", False),
    ("np.multiply.reduce(x, 1, initial=2.0)", True), ("np.add.accumulate(x, 1, np.float64)", True),
    ("np.add.accumulate(x, None)", False), ("np.add.accumulate(x, axis=None)", False),
    ("x.copy().sort(axis=None)", False), ("x.copy().sort(kind='stable')", False),
    ("x.prod(0, np.float64)", True), ("x.astype(np.float64, order='F')", False),
    ("(x * 3).astype(np.int64) // 2 + (x * 3).astype(np.int64) % 4", True),
    ("np.where(np.isfinite(x) & ~np.isnan(x), x, 0.0) + np.isinf(x)", True),
    ("np.floor_divide(x, 2.0, dtype=np.float64)", True),
    # statistics.py: a NaN check, a gradient norm; `not` of a graph value
    ("np.any(np.isnan(x))", True), ("np.all(x > -10, axis=0)", True), ("x.any()", True),
    ("(x > 0).all(axis=0, keepdims=True)", True), ("np.any(x > 0, where=x < 1)", True),
    ("np.linalg.norm(x)", True), ("np.linalg.norm(x, axis=1, keepdims=True)", True),
    ("np.linalg.norm(x, ord=None) * 2", True), ("np.linalg.norm(x, ord=2)", True),
    ("x if not np.isnan(np.sum(x)) else x * 0", True), ("not np.all(x > 0)", True),
    # full_like: a fresh buffer per call, written into (label smoothing targets)
    ("np.full_like(x, 0.25) + np.full_like(x, 2, dtype=np.int64)", True),
    ("np.full_like(x, float(x[0, 0])) * x", True), ("np.full_like(x, 1.0, shape=(2,))", True),
]


@pytest.mark.parametrize("body,as_graph", CASES, ids=[c[0] for c in CASES])
def test_arguments_side_by_side(tmp_path, body, as_graph):
    source = f"import numpy as np\n\n\ndef f(x):\n    return {body}\n"

    def make():
        return load_module(tmp_path, source, "args_probe").f, {}

    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal((3, 4)).astype(np.float32) * 2,)
             for k in range(7)]
    jf = check(make, calls, min_graph_calls=3 if as_graph else 0)
    if not as_graph:
        assert fallback_reasons(jf) == {"unsupported-call"}, jf.explain()
        # (no op, or NumPy's own call fails on these arguments: `np.add.accumulate(x, None)`)
        assert "has no graph op" in jf.explain() or "of graph values" in jf.explain(), jf.explain()


def test_full_like_buffers_are_not_shared():
    """Two equal `np.full_like` calls are two buffers: a write into one (label smoothing's
    `t[0, y] += 1 - eps`) leaves the other alone, as eagerly."""
    def make():
        def f(x, y):
            t = np.full_like(x, 0.5)
            u = np.full_like(x, 0.5)
            t[0, y] += 1.0
            return t * x, u

        return f, {}

    check(make, [lambda s, k=k: (np.random.default_rng(k).standard_normal((3, 4)), k % 4) for k in range(7)],
          min_graph_calls=3)


@pytest.mark.parametrize("body,reason", [
    ("x * round(float(x[0, 0]), 1)", None),  # a PY_OP on the Python float (was an internal error, then eager)
    ("x * round(x[0, 0], 1) + round(x[1, 1])", None),  # NumPy's own round of a NumPy scalar (was eager)
    ("x * 2 if hasattr(x, 'cumsum') else x", None),  # ndarray has the method: eager's branch, as a graph
    ("x.strides[0] * x", "unsupported-call"),
    # NumPy functions with no graph op that turn their argument into an array: they made object
    # arrays holding the generator's symbolic values
    ("np.full((2, 2), x[0, 0]) + x[:2, :2]", None),  # np.full of a graph value (ran eagerly before)
    ("np.require(x, requirements='C') * 2", "unsupported-call"),
    # `&`, `|`, `^`, `~`, `<<`, `>>` are NumPy's bitwise ops on integer arrays (they were the logical
    # ops: booleans; then no graph op), the logical ones on booleans
    ("(x * 10).astype(np.int64) & 5", None), ("~(x * 10).astype(np.int64)", None),
    ("(x * 10).astype(np.int64) >> 1", None), ("((x > 0) & (x < 1)) ^ (x > 0.5) | ~(x > 2)", None),
    ("(np.arange(12).reshape(3, 4) ^ 1) + ((x > 0) | (x * 4).astype(np.int8)) * (np.uint8(3) << (x > 1))", None),
    ("np.bitwise_xor((x * 8).astype(np.int32), 6) + np.invert(x > 0) + np.left_shift(1, (x > 0).astype(int))", None),
    ("x & 1", "unsupported-syntax"), ("(x > 0) << 1.5", "unsupported-syntax"),  # floats: eager (its TypeError)
    ("x * (int(x[0, 0] * 10) & 3) + (int(x[0, 0] * 10) ^ 5) - ~int(x[1, 1] * 10)"
     " + (int(abs(x[0, 0]) * 10) >> 1)", None),  # Python ints: Python's operators
    ("x.ptp()", "user-error"),  # not an ndarray method in NumPy 2: eager's AttributeError (an internal error)
])
def test_python_functions_and_attributes_of_arrays(tmp_path, body, reason):
    source = f"import numpy as np\n\n\ndef f(x):\n    return {body}\n"

    def make():
        return load_module(tmp_path, source, "py_probe").f, {}

    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal((3, 4)),) for k in range(6)]
    jf = check(make, calls, min_graph_calls=0 if reason else 3)
    assert fallback_reasons(jf) == ({reason} if reason else set()), jf.explain()


def test_the_reason_names_the_function_and_the_argument(tmp_path):
    mod = load_module(tmp_path, "import numpy as np\n\n\ndef f(x):\n    return np.reshape(x, (-1,), order='F')\n",
                      "why")
    jf = jl.jit(mod.f)
    for _ in range(5):
        jf(np.ones((3, 2)))
    assert "numpy.reshape with order= has no graph op" in jf.explain(), jf.explain()


@pytest.mark.parametrize("call", [
    lambda a: np.max(a, initial=5.0), lambda a: np.sum(a, where=a > 0), lambda a: np.mean(a, 0, np.float64),
    lambda a: np.reshape(a, (-1,), order="F"), lambda a: np.take(a, [0, 9], axis=1, mode="clip"),
    lambda a: np.argmax(a, axis=1, keepdims=True), lambda a: np.concatenate([a, a], dtype=np.float32),
    lambda a: np.zeros_like(a, shape=(2, 2)), lambda a: np.where(a > 0),
    lambda a: np.einsum("ij,ij,ij->i", a, a, a), lambda a: np.min(a, axis=1, initial=-9.0), lambda a: 0.25 in a,
    lambda a: 7.0 in a, lambda a: np.full_like(a, 3), lambda a: np.full_like(a, -0.0, dtype=np.int32),
])
def test_a_tensor_computes_what_numpy_computes(call):
    data = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    want = call(data)
    got = call(jl.tensor(data))
    got = tuple(np.asarray(g) for g in got) if isinstance(want, tuple) else np.asarray(got)
    if isinstance(want, tuple):
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
    else:
        assert got.dtype == np.asarray(want).dtype and np.array_equal(got, want)


def test_the_table_says_what_each_entry_implements():
    """Every entry has a signature row; every argument it takes positionally and every keyword
    it implements is a parameter of NumPy's function of that position and name."""
    assert set(_FUNCTIONS) <= set(_SIGNATURES)
    # spellings older NumPy versions take; np.pad's mode-specific keywords come through **kwargs
    legacy = {np.reshape: {"newshape"}, np.pad: {"constant_values"}}
    for func, (npos, keywords, defaults) in _SIGNATURES.items():
        params = list(inspect.signature(func).parameters.values())
        names = {p.name for p in params}
        assert keywords <= names | legacy.get(func, set()), func.__name__
        assert set(defaults) <= names, func.__name__
        if params[0].kind is inspect.Parameter.VAR_POSITIONAL:  # einsum(subscripts, *operands)
            continue
        arrays = _MIN_POSITIONAL.get(func, 1)
        for p in params[arrays:npos]:
            assert p.name in keywords, f"{func.__name__}: positional {p.name} is not implemented"


class _Counter:
    def __init__(self):
        self.count = 0
        self.acc = np.zeros(())


@pytest.mark.parametrize("module", ["numpy_helpers", "mathlib", "operators"])
def test_a_user_module_named_like_a_library_is_user_code(tmp_path, monkeypatch, module):
    """A module named `numpy_helpers` is the user's, not NumPy's: its functions are inlined (they
    write the object's state in the graph), never called on graph values as library code (which
    left a graph value in the user's object)."""
    (tmp_path / f"{module}.py").write_text("def bump(o, a):\n    o.count = o.count + 1\n"
                                          "    o.acc = o.acc + a.sum()\n    return a * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    source = f"import numpy as np\nfrom {module} import bump\n\n\ndef f(x, o):\n    return bump(o, x) + 1\n"

    def make():
        return load_module(tmp_path, source, "user_code").f, {"o": _Counter()}

    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal((3, 4)), s["o"]) for k in range(7)]
    check(make, calls, min_graph_calls=3)


@pytest.mark.parametrize("tensor", [False, True])
def test_out_of_a_wider_result(tmp_path, tensor):
    """`np.add(v, wider, out=v)`: an ndarray keeps its dtype (NumPy casts into it); a Tensor takes
    the result as it is, as its eager `out=` and `+=` do (the graph cast it to float32)."""
    source = ("import numpy as np\n\n\ndef f(x, y, w):\n    v = y + 0.0\n    np.add(v, np.dot(x, w), out=v)\n"
              "    return v, np.sum(v)\n")

    def make():
        return load_module(tmp_path, source, "wider_out").f, {}

    def call(state, k):
        r = np.random.default_rng(k)
        y = r.standard_normal((2, 3)).astype(np.float32)
        return r.standard_normal((2, 3)).astype(np.float32), jl.tensor(y) if tensor else y, np.ones((3, 3))

    check(make, [lambda s, k=k: call(s, k) for k in range(6)], min_graph_calls=3)
