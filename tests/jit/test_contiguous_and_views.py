"""`np.ascontiguousarray(x)` and `x.view()` of graph arrays run as graph nodes that make the
call when the graph runs: eager's objects (x itself when it is C-ordered, a copy of a
transpose, a new array on x's memory), side by side against eager with results, state, arguments
and who shares memory with whom compared after every call. A write through such a result (it may
be the input itself) keeps the step eager, as does a view that reinterprets the bytes.

`ravel()` is NumPy's view of a C-ordered array and a copy of any other (of a strided 1-d array
too, where a reshape would be a view), and `np.einsum` of one array that only permutes its axes
is a view of it (a later write shows through it)."""
import numpy as np
import pytest

from .harness import call_sequence, check, fallback_reasons, load_module, random_array

BODIES = {
    "transposed_operand": "a = np.ascontiguousarray(x.T)\n    return a @ m, a.sum(axis=1)",
    "input_itself": "return np.ascontiguousarray(x), np.ascontiguousarray(m)",
    "zero_d": "return np.ascontiguousarray(x.sum()) * 2",
    "dtype": "return np.ascontiguousarray(x.T, dtype=np.float32), np.ascontiguousarray(m, np.float64), "
             "np.ascontiguousarray(m * 2, dtype='float64')",
    "twice": "a = np.ascontiguousarray(x.T)\n    b = np.ascontiguousarray(x.T)\n    return a, b, x.view(), x.view()",
    "state_rebound": "y = np.ascontiguousarray(st['w'])\n    st['w'] = st['w'] * 0.5 + x[0, 0]\n    return y",
    "state_view": "v = st['w'].view()\n    st['w'] = st['w'] * 0.5\n    return v.sum() + x.sum(), v",
    "views": "y = (x * 2).view()\n    return y + 1, x.view(np.float64), x.view(dtype=x.dtype).shape",
    "ravel": "r = x[0, ::2].ravel()\n    st['keep'] = r\n    return r, np.ravel(x[:, 1]), x.ravel(), x.T.ravel(), "
             "np.ravel(st['w'])",
}
# `a.view()` of an array is `a[...]` in the graph: a view the generator refreshes after writes to
# its base and writes through, as any slice (a `st["v"] = h.view()[2]` read after `h[:] = 1.0`
# returned the row from before the write: refreshing a slice of an opaque view read its old node)
VIEW_WRITES = {
    "write_through_view": "y = st['w'].view()\n    y[0] = x[0, 0]\n    return y",
    "read_after_base_written": "v = st['w'].view()\n    st['w'] *= 0.5\n    return v.sum() + x.sum(), v",
    "row_of_view_after_base_written": "st['v'] = st['w'].view()[2]\n    st['w'][:] = x\n    return st['v'].sum()",
}
EINSUM = {
    "permuted": "t = np.einsum('ij->ji', x)\n    return t, np.einsum('ij', m), t @ m, np.einsum('ij,ij->i', x, m), "
                "np.einsum('...ij->...ji', m), np.einsum('i...->...i', x)",
    "state_permuted": "t = np.einsum('ji', st['w'])\n    st['keep'] = t\n    return t.sum() + x.sum()",
}
STILL_EAGER = {
    # a slice of a transposed, reshaped or flipped view read after its base was written: the
    # slice was recomputed from the view's old node (a wrong result), and now goes stale with it
    "slice_of_transpose_after_base_written": "st['v'] = st['w'].T[1]\n    st['w'][:] = x\n    return st['v'].sum()",
    "slice_of_reshape_after_base_written": "v = st['w'].reshape(4, 3)[1:]\n    st['w'][0] = 2.0\n"
                                           "    return v.sum()",
    "slice_of_flip_after_base_written": "st['v'] = np.flip(st['w'])[1:]\n    st['w'][:] = m\n"
                                        "    return st['v'].sum()",
    "view_of_transpose_written": "t = st['w'].T.view()\n    t[0] += x[0, 0]\n    return st['w'].sum(), t",
    "write_through": "y = np.ascontiguousarray(st['w'])\n    y += x[0, 0]\n    return y",
    "reinterpret": "return (x * 2).view(np.int64)",
    "einsum_read_after_base_written": "t = np.einsum('ij->ji', st['w'])\n    st['w'] += 1.0\n"
                                      "    return t.sum() + x.sum()",
    "einsum_diagonal": "return np.einsum('ii->i', x[:, :3])",
    "ravel_read_after_base_written": "st['w'][0, 0] = 1.0\n    z = st['w'].ravel()\n    st['w'][0, 1] = x[0, 0]\n"
                                     "    return z",
}


def _run(tmp_path, name, body, min_graph_calls):
    module = load_module(tmp_path, f"import numpy as np\n\n\ndef f(x, m, st):\n    {body}\n", name)

    def make():
        return module.f, {"st": {"w": np.arange(12.0).reshape(3, 4)}}

    calls = call_sequence(8, lambda s, i: (random_array(i, (3, 4)), random_array(50 + i, (3, 4)), s["st"]))
    return check(make, calls, min_graph_calls=min_graph_calls)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_contiguous_copies_and_views_side_by_side(tmp_path, name):
    jf = _run(tmp_path, name, BODIES[name], 4)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()
    # (views of the inputs, `np.ascontiguousarray(x)` of a C-ordered x among them, are the
    # commit's, taken from the inputs as eager's are: some of these graphs have no nodes)
    assert jf.stats()["graph_calls"] >= 4, jf.explain()


@pytest.mark.parametrize("name", sorted(VIEW_WRITES))
def test_views_of_arrays_written_through_and_after_side_by_side(tmp_path, name):
    jf = _run(tmp_path, name, VIEW_WRITES[name], 4)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()


@pytest.mark.parametrize("name", sorted(EINSUM))
def test_einsum_permutations_of_one_array_are_views_side_by_side(tmp_path, name):
    jf = _run(tmp_path, name, EINSUM[name], 4)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()


@pytest.mark.parametrize("name", sorted(STILL_EAGER))
def test_writes_through_them_and_reinterpreting_views_stay_eager(tmp_path, name):
    jf = _run(tmp_path, name, STILL_EAGER[name], 0)
    assert jf.stats()["graph_calls"] == 0 and fallback_reasons(jf), jf.explain()
