"""Steps calling NumPy functions that have no graph op of their own (np.median, np.percentile,
np.allclose, np.isclose, the nan-reductions, np.cumprod, np.linalg.det, ...; `ops/library.py`)
and `bool()` of a graph value run as graphs, whose nodes call NumPy's function itself: side by
side against eager, the results (values and Python types), warnings, errors and state after every
call, `x.tolist()` of a graph array of up to 256 elements, and ndarray methods that are NumPy's
function of the array (`x.argsort(axis=1)`, `x.take(k)`, `x.trace()`), functions giving tuples
(`np.linalg.svd`, `np.histogram`: NumPy's named tuple or tuple, an item node each) and ufuncs
without an op (`np.fmax`, `np.modf`). Calls that would write an operand or whose result's shape
the graph computes stay eager."""
import numpy as np
import pytest

import janus_like as jl

from .harness import call_sequence, check, fallback_reasons, load_module, random_array

BODIES = {
    "robust_statistics": "g = m * x\n"
                         "    return np.median(g), np.median(g, axis=0), np.percentile(g, [10, 90], axis=1), "
                         "np.quantile(np.abs(g), 0.99), np.percentile(g, st['q'])",
    "clipping_by_percentile": "g = m * x\n    c = np.percentile(np.abs(g), 90)\n"
                              "    st['w'] -= 0.1 * np.clip(g, -c, c)\n    return float(c)",
    "closeness": "y = m * x\n    return np.isclose(y, y + 1e-9), np.allclose(y, m * x), "
                 "np.allclose(y, y + 1.0, atol=st['q'] / 10), np.isclose(y.sum(), 0.5), np.array_equal(y, y)",
    "converged_branch": "y = m * x\n    if np.allclose(y, st['w'], atol=10.0):\n        y = y * 2\n"
                        "    st['w'] = y\n    return y",
    "nan_reductions": "y = np.where(m > 0.5, np.nan, m * x)\n"
                      "    return np.nanmean(y), np.nansum(y, axis=1), np.nanmax(y, axis=0), np.nanstd(y), "
                      "np.nanargmin(y[0] + 0.0 * x), np.nanmedian(y)",
    "all_nan_warns": "y = np.where(m > -1.0, np.nan, m)\n    return np.nanmean(y, axis=1), np.nanmax(x * 0 + y[0])",
    "products_and_shapes": "return np.cumprod(m, axis=1), np.ptp(m * x), np.count_nonzero(m > 0.5), "
                           "np.count_nonzero(m > 0.5, axis=0), np.average(m, axis=0, weights=x[:3] ** 2 + 0.1), "
                           "np.repeat(x, 2), np.append(x, m[0]), np.delete(m * x, 1, axis=0), np.trace(m[:, :3])",
    "lookups": "edges = np.cumsum(np.abs(x)) + 0.0\n"
               "    return np.searchsorted(edges, m[0]), np.digitize(m[1], edges), np.interp(m[2], edges, x), "
               "np.partition(m * x, 2, axis=1), np.argpartition(x, 1)",
    "linear_algebra": "a = m[:, :3] @ m[:, :3].T + np.eye(3) * (1.0 + x[0] ** 2)\n"
                      "    return np.linalg.det(a), np.linalg.cholesky(a), np.linalg.eigvalsh(a), "
                      "np.linalg.pinv(m * x), np.linalg.matrix_rank(a), np.kron(x[:2], x[2:]), np.inner(m, x), "
                      "np.cov(m), np.corrcoef(m * x)",
    "truth_values": "bad = bool(np.any(np.abs(m * x) > 0.9))\n"
                    "    return bad, bool(x.sum()), bool(float(x[0]) > 0), bool(np.all(m > -5.0))",
    "python_lists": "p = np.exp(x) / np.exp(x).sum()\n    st['log'].append(p.tolist())\n"
                    "    return (m > 0).tolist(), (m * 2).astype(np.int32).tolist(), p.sum().tolist(), "
                    "sum(x.tolist()), np.zeros((2, 0)).tolist(), m[:, :, None].tolist()",
    "array_methods": "y = m * x\n    k = np.argsort(x)\n"
                     "    return y.argsort(axis=1)[:, -2:], y.argpartition(1, axis=0), y[:, :3].trace(), "
                     "y.take(k[:2]), y.take(k[1:], axis=1), y.repeat(2, axis=0), y.cumprod(axis=1), "
                     "np.sort(x).searchsorted(y[0]), "
                     "(k % 2).choose([x, -x])",
    "array_attributes": "y = m * x\n    st['log'].append(y.nbytes + x.itemsize)\n"
                        "    return y, y.mT, y.mT @ x[:3], y.conj(), y.conjugate(), "
                        "y.compress([True, False, True], axis=0), (y > 0).nbytes, m[None].mT.shape",
    "gathers": "q = m * x\n    a = np.argmax(q, axis=1)\n"
               "    g = np.zeros_like(q)\n    np.put_along_axis(g, a[:, None], -1.0, axis=1)\n"
               "    np.put_along_axis(st['w'], a[:, None] % 2, q[:, 1:2], -1)\n"
               "    np.put_along_axis(q, np.argsort(q, axis=0)[:1], x[None] * 10, 0)\n"
               "    s = x[:, None] * x\n    np.fill_diagonal(s, -np.inf)\n    np.fill_diagonal(st['w'], x[1:])\n"
               "    t, c = np.zeros((6, 3)), np.ones((2, 2, 2))\n    np.fill_diagonal(t, x[:1] * 3)\n"
               "    np.fill_diagonal(c, x[0])\n"
               "    return s, t, c, g, q, np.take_along_axis(st['w'], a[:, None], 1), "
               "np.take_along_axis(q, a[:, None], axis=1)[:, 0], "
               "np.compress([True, False, True], q, axis=0), np.choose(a % 2, [q[:, 0], q[:, 1]])",
    "tuple_results": "y = m * x\n    u, s, vh = np.linalg.svd(y, full_matrices=False)\n"
                     "    a = y[:, :3] @ y[:, :3].T + np.eye(3)\n    e = np.linalg.eigh(a)\n"
                     "    i, j = np.unravel_index(np.argmax(y), y.shape)\n"
                     "    return u * s, vh, np.linalg.svd(y), e.eigenvalues, e, np.linalg.qr(a), "
                     "np.linalg.slogdet(a), np.histogram(x, 3), np.histogram(y, [0.0, 0.5, 1.0], weights=y), "
                     "np.meshgrid(x, m[0], indexing='ij'), y[i, j] + i, np.gradient(y), np.gradient(x, 0.5), "
                     "np.polyfit(x, m[0], 1), np.linalg.matrix_power(a, 3), np.linalg.multi_dot([m.T, m, x])",
    "ufuncs_without_ops": "y = m * x\n    f, k = np.modf(y * 3)\n    q, r = np.divmod(y, 0.3)\n"
                          "    return np.fmax(y, 0.1), np.fmin(y, x), f, k, q, r, np.frexp(y), np.trunc(y), "
                          "np.copysign(x, m), np.exp2(x), np.arctanh(np.clip(y, -0.9, 0.9)), np.cbrt(y), "
                          "np.logical_xor(y > 0, m > 0), np.heaviside(y, 0.5), np.exp(y, dtype=np.float32), "
                          "np.add(x, 1, dtype=np.float64), np.deg2rad(x), np.signbit(y)",
    "array_views": "y = m * x\n    d = y[:, :3].diagonal()\n    st['log'].append(float(d.sum()))\n"
                   "    f = np.fft.rfft(y, axis=1)\n"
                   "    return d, np.diagonal(m, 1), m.diagonal(), m.T.diagonal(-1), y.real, y.imag, f.real, f.imag, "
                   "np.real(f) * 2, np.imag(x), np.fft.irfft(f, n=4, axis=1), np.fft.fftshift(x), "
                   "np.abs(np.fft.fft(x)), np.fft.fft2(m).real.sum(), "
                   "np.lib.stride_tricks.sliding_window_view(y, 2, axis=1) @ x[:2], "
                   "np.lib.stride_tricks.sliding_window_view(m, (2, 3)).sum(axis=(2, 3)), "
                   "np.diag(y), np.diag(y, 1), np.diag(x), np.diag(x[1:], k=-1) @ x, np.diagflat(x[:2])",
    "ufunc_methods": "y = m * x\n"
                     "    return np.maximum.accumulate(y, axis=1), np.minimum.reduce(y, axis=0), "
                     "np.add.reduce(y, axis=1, where=y > 0), np.multiply.outer(x, m[0]), "
                     "np.add.reduceat(x, [0, 2]), np.logical_or.reduce(y > 0.5, axis=1), np.maximum.outer(x, x)",
    "python_numbers": "losses = [float(x[0]), float(x[1]), float(np.sum(m))]\n"
                      "    return np.median(losses), np.percentile(losses, 75)",
}


def test_scipy_special_functions_side_by_side(tmp_path):
    """SciPy's logsumexp and softmax (Python functions, not ufuncs) as library nodes; its
    ufuncs (expit, xlogy) as NumPy's ufuncs without an op are."""
    pytest.importorskip("scipy.special")
    source = "import numpy as np\nfrom scipy import special\nfrom scipy.special import logsumexp, softmax\n\n\n" \
             "def f(x, m, st):\n    z = m * x\n    p = softmax(z, axis=1)\n    st['w'] -= 0.1 * p\n" \
             "    return z - logsumexp(z, axis=1, keepdims=True), logsumexp(z, b=p), special.log_softmax(z), " \
             "special.expit(z), special.xlogy(p, p), logsumexp(z, axis=0, return_sign=True)\n"
    module = load_module(tmp_path, source, "scipy_special")
    calls = call_sequence(8, lambda s, i: (random_array(i, (4,)), random_array(50 + i, (3, 4)), s["st"]))
    jf = check(lambda: (module.f, {"st": {"w": np.zeros((3, 4))}}), calls, min_graph_calls=5)
    assert jf.stats()["fallbacks"] == 0, jf.explain()


@pytest.mark.parametrize("name", sorted(BODIES))
def test_numpy_functions_without_ops_side_by_side(tmp_path, name):
    module = load_module(tmp_path, f"import numpy as np\n\n\ndef f(x, m, st):\n    {BODIES[name]}\n", name)

    def make():
        return module.f, {"st": {"q": 75.0, "w": np.zeros((3, 4)), "log": []}}

    calls = call_sequence(8, lambda s, i: (random_array(i, (4,)), random_array(50 + i, (3, 4)), s["st"]))
    jf = check(make, calls, min_graph_calls=4)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()
    if name not in ("truth_values", "python_lists"):
        assert any(n.op == "numpy_call" for g in jf.graphs() for n in g.graph.all_nodes()), jf.explain()


def test_errors_and_types_are_eagers(tmp_path):
    """A percentile the graph computes out of [0, 100] (call 5) and a matrix that is not positive
    definite (call 8) raise eager's error for the user; the Python types of the results (a
    Python bool, a count, NumPy scalars, an array) are eager's."""
    module = load_module(tmp_path, """
        import numpy as np

        def f(x, q, shift):
            p = np.percentile(x, q * 50.0)
            L = np.linalg.cholesky(np.outer(x, x) + np.eye(4) * shift)
            return p, L, np.allclose(x, x), np.count_nonzero(x), np.median(x), np.isclose(x[0], x[0]), \
                np.nanmean(x, keepdims=True)
    """)
    qs = [1.0, 1.5, 0.5, 1.2, 1.9, 2.5, 1.0, 1.1, 1.3, 1.4, 1.6]
    calls = call_sequence(len(qs), lambda s, i: (random_array(i, (4,)), qs[i], -50.0 if i == 8 else 1.0))
    jf = check(lambda: (module.f, {}), calls, min_graph_calls=6)
    assert "user-error" in fallback_reasons(jf), jf.explain()
    out, eager = jf(random_array(0, (4,)), 1.0, 1.0), module.f(random_array(0, (4,)), 1.0, 1.0)
    assert [type(v) for v in out[2:]] == [type(v) for v in eager[2:]]
    assert [type(v) for v in out[2:]][:1] + [type(v) for v in out[4:]] == [bool, np.float64, np.bool_, np.ndarray]


@pytest.mark.parametrize("body, detail", [
    ("y = x * 2\n    np.median(y, overwrite_input=True)\n    return y", "overwrite_input"),
    ("y = x * 2\n    out = np.zeros(4)\n    np.cumprod(y, out=out)\n    return out", "cumprod"),
    ("return np.repeat(x, (x > 0).astype(np.int64))", "repeats"),
    ("return np.delete(x, np.argmax(x))", "obj"),
    ("return np.outer(x, np.ones(80)).tolist()", "at most 256"),
    ("return np.meshgrid(x * 2, x, copy=False)", "copy=False"),
    ("return np.linalg.eig(np.outer(x, x))", "eig"),
])
def test_calls_that_write_or_shape_from_data_stay_eager(tmp_path, body, detail):
    module = load_module(tmp_path, f"import numpy as np\n\n\ndef f(x):\n    {body}\n", f"eager_{len(detail)}")
    calls = call_sequence(6, lambda s, i: (random_array(i, (4,)),))
    jf = check(lambda: (module.f, {}), calls, min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and fallback_reasons(jf) & {"unsupported-call", "data-dependent-python"}
    assert detail in jf.explain(), jf.explain()


@pytest.mark.parametrize("body", [
    "a = np.outer(x, x)\n    d = a.diagonal()\n    d += 1.0\n    return d",  # read-only: eager's error
    "f = np.fft.fft(x)\n    r = f.real\n    r[0] = 5.0\n    return f, r",  # a write through the view
    "a = np.outer(x, x)\n    d = a.diagonal()\n    a[0, 0] = -1.0\n    return d.sum(), d",  # then of its base
    "y = x * 2\n    r, i = y.real, y.imag\n    y += 1.0\n    return r, i, y",
    "return x.diagonal()",  # eager's error: a 1-d array has no diagonal
    "a = np.outer(x, x)\n    d = np.diag(a)\n    d[0] = 1.0\n    return d",  # np.diag's view is read-only
    "return np.diag(np.ones((2, 2, 2)) * x[0])",  # eager's error: 1- or 2-d only
    "q = np.outer(x, x)\n    np.put_along_axis(q, np.argmax(q, 0)[None], 0.0, 2)\n    return q",  # AxisError
    "q = np.outer(x, x)\n    np.put_along_axis(q, np.argmax(q, 0), 0.0, 1)\n    return q",  # ndim differs
    "y = x * 2\n    np.fill_diagonal(y, 0.0)\n    return y",  # eager's error: at least 2-d
    "y = np.ones((2, 3, 2))\n    np.fill_diagonal(y, x[0])\n    return y",  # eager's: axes of one length
    "q = np.outer(x, x)\n    np.fill_diagonal(q, x[:2])\n    return q",  # NumPy repeats the values: eager
])
def test_views_written_or_read_after_a_write_are_eagers(tmp_path, body):
    """`x.diagonal()`, `x.real`, `x.imag` are NumPy's views of x when the graph runs: a write
    through one, or a read of one after a write to x, is eager's (or the call is eager); so are
    np.put_along_axis's and np.fill_diagonal's errors."""
    module = load_module(tmp_path, f"import numpy as np\n\n\ndef f(x):\n    {body}\n", f"views_{len(body)}")
    check(lambda: (module.f, {}), call_sequence(6, lambda s, i: (random_array(i, (4,)),)), min_graph_calls=0)


def test_a_variable_assigned_a_view_gets_its_own_array(tmp_path):
    """A Variable assigned `a.diagonal()` copies it, as eagerly (ir.ALIASING_OPS): its array
    shares no memory with `a.real`, a view of the same array kept in the state."""
    module = load_module(tmp_path, """
        import numpy as np

        def f(x, st):
            a = np.outer(x, x) + st["v"].numpy()[0]
            st["v"].assign(a.diagonal())
            st["w"] = a.real
            return st["v"].numpy().sum()
    """)
    calls = call_sequence(6, lambda s, i: (random_array(i, (4,)), s["st"]))
    check(lambda: (module.f, {"st": {"v": jl.Variable(np.zeros(4))}}), calls, min_graph_calls=2)


def test_a_tensor_under_a_tape_stays_eager_and_without_one_is_a_constant(tmp_path):
    """Eagerly a Tensor's NumPy function without an op is a constant (a warning under a tape):
    under a tape the step stays eager (an array's function under a tape is a node); without one
    the graph gives eager's Tensor."""
    module = load_module(tmp_path, """
        import numpy as np
        import janus_like as jl

        def taped(x, v):
            with jl.GradientTape() as tape:
                loss = jl.F.sum(v * x) + np.median(v * x)
            return loss, tape.gradient(loss, v)

        def taped_arrays(x, v, rng):
            with jl.GradientTape() as tape:
                loss = jl.F.sum(v * x) * np.median(x)  # an array's median: no Tensor, no warning
            return loss, tape.gradient(loss, v), callable(rng.normal)

        def plain(x, v):
            t = v * x
            return np.cumprod(t, axis=1), np.median(t), np.linalg.svd(t), np.modf(t), np.fmax(t, x)
    """)
    make = lambda: (module.taped, {"v": jl.Variable(random_array(9, (3, 4)))})
    calls = call_sequence(6, lambda s, i: (random_array(i, (3, 4)), s["v"]))
    jf = check(make, calls, min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and "GradientTape" in jf.explain(), jf.explain()
    make = lambda: (module.taped_arrays, {"v": jl.Variable(random_array(9, (3, 4))), "rng": np.random.default_rng(1)})
    jf = check(make, call_sequence(6, lambda s, i: (random_array(i, (3, 4)), s["v"], s["rng"])), min_graph_calls=3)
    jf = check(lambda: (module.plain, {"v": jl.Variable(random_array(9, (3, 4)))}), calls, min_graph_calls=3)
    assert isinstance(jf(random_array(0, (3, 4)), jl.Variable(random_array(9, (3, 4))))[0], jl.Tensor)
