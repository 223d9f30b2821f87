"""The plan's SGD step on gathered rows (executor/rows.py): `table - c * getitem_grad(g, ids)`
on the touched rows only when the ids are distinct, the four dense passes otherwise. The same
bits as the dense passes (the interpreter's), the sign of zero and NaN included; end to end, an
embedding's SGD step agrees with eager."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from janus_like import F, GradientTape, Variable, ir, optim
from janus_like.executor import compile_plan

from .harness import call_sequence, check
from .test_scalar_forms import _check

F32, I64 = np.dtype(np.float32), np.dtype(np.int64)
SPECIAL = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 3e38]
INDEX = ((("slot", 0),), True)


def _pattern(scale, *, scale_first=True, unique=False, rows=6, k=3, width=4, dtype=F32, extra_reader=False):
    """(nodes, outputs) of `w - scale * getitem_grad(g, w, idx)` (`w - getitem_grad(...)` when
    scale is None)."""
    w = ir.Node(ir.INPUT, (), {"slot": 0, "name": "w"}, ((rows, width), dtype))
    g = ir.Node(ir.INPUT, (), {"slot": 1, "name": "g"}, ((k, width), dtype))
    idx = ir.Node(ir.INPUT, (), {"slot": 2, "name": "idx"}, ((k,), I64))
    z = ir.Node("getitem_grad", (g, w, idx), {"index": INDEX, **({"unique": True} if unique else {})}, ((rows, width), dtype))
    m = None if scale is None else ir.Node("mul", (scale, z) if scale_first else (z, scale), {}, ((rows, width), dtype))
    s = ir.Node("sub", (w, m if m is not None else z), {}, ((rows, width), dtype))
    return [w, g, idx, z] + ([m] if m is not None else []) + [s], [s] + ([m] if extra_reader else [])


@settings(deadline=None)
@given(rows=st.integers(1, 12), width=st.sampled_from([1, 3]), ids=st.lists(st.integers(-13, 13), min_size=1, max_size=8),
       w_special=st.lists(st.sampled_from(SPECIAL), max_size=4), g_special=st.lists(st.sampled_from(SPECIAL), max_size=4),
       scale=st.sampled_from([None, 0.05, np.float32(0.5), 3.0]), scale_first=st.booleans(),
       dtype=st.sampled_from([F32, np.dtype(np.float64)]), assign=st.booleans(), seed=st.integers(0, 2**16))
@example(rows=3, width=1, ids=[0, 2], w_special=[-0.0, -0.0, -0.0], g_special=[-0.0, -0.0], scale=0.05,
         scale_first=True, dtype=F32, assign=False, seed=0)
@example(rows=3, width=1, ids=[2, -1], w_special=[], g_special=[], scale=None, scale_first=True,
         dtype=F32, assign=False, seed=0)
def test_the_plan_gives_the_interpreters_bits(rows, width, ids, w_special, g_special, scale, scale_first, dtype,
                                             assign, seed):
    """Against the interpreter's four passes: distinct ids (the touched rows), repeated or
    negative ids (-1 names the last row: the four passes) and ids out of range (both raise
    IndexError); a unique index (which the graph assigns) when the ids are distinct."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, width)).astype(dtype)
    w.reshape(-1)[:len(w_special)] = w_special[:w.size]
    g = rng.standard_normal((len(ids), width)).astype(dtype)
    g.reshape(-1)[:len(g_special)] = g_special[:g.size]
    unique = assign and len(set(ids)) == len(ids) and min(ids) >= 0
    nodes, outputs = _pattern(scale, scale_first=scale_first, unique=unique, rows=rows, k=len(ids), width=width,
                              dtype=np.dtype(dtype))
    before = w.copy()
    with np.errstate(all="ignore"):
        src = _check(nodes, outputs, [w, g, np.array(ids, np.int64)])
    assert "SGD_ROWS" in src and w.tobytes() == before.tobytes()  # the table itself is never written


@pytest.mark.parametrize("ids", [[0, 5, 2], [1, 1, 4], [0, -1, 5], [2, 6, 0]])
@pytest.mark.parametrize("scale", [0.1, None])
def test_the_plan_takes_the_form_and_agrees_with_the_interpreter(ids, scale):
    rng = np.random.default_rng(1)
    slots = [rng.standard_normal((6, 4)).astype(np.float32), np.array([[-0.0] * 4, [1.0] * 4, [np.inf] * 4], np.float32),
             np.array(ids)]
    with np.errstate(all="ignore"):
        src = _check(*_pattern(scale), slots)
    assert "SGD_ROWS" in src and "NP_subtract" not in src


@pytest.mark.parametrize("scale, extra_reader", [(-0.1, False), (0.0, False), (np.inf, False), (0.1, True)])
def test_other_scales_and_a_product_read_elsewhere_keep_the_dense_passes(scale, extra_reader):
    """A scale that is not positive and finite (c * 0.0 would not be +0.0), or a product that
    something else reads, keeps the four passes."""
    nodes, outputs = _pattern(scale, extra_reader=extra_reader)
    plan = compile_plan(ir.Graph("g", nodes, outputs, 3, False))
    assert "SGD_ROWS" not in plan.source


def test_an_embeddings_sgd_step_agrees_with_eager():
    """Word ids distinct, repeated, negative (the last row) and out of range, side by side with
    eager; the plans take the form."""
    def make():
        emb = Variable(np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32), name="emb")
        w = Variable(np.random.default_rng(1).standard_normal((3, 3)).astype(np.float32), name="w")
        opt = optim.SGD(0.1)

        def step(ids):
            with GradientTape() as tape:
                loss = F.sum(F.tanh(emb[ids] @ w))
            opt.apply_gradients(zip(tape.gradient(loss, [emb, w]), [emb, w]))
            return loss

        return step, (emb, w)

    ids = [[1, 4, 0], [2, 5, 3], [6, 0, 1], [4, 4, 0], [2, -1, 6], [3, 2, 1], [0, 9, 1], [5, 3, 2], [1, 0, 6]]
    calls = call_sequence(len(ids), lambda s, i: (np.array(ids[i]),))
    for reassociate in (False, True):
        jf = check(make, calls, min_graph_calls=3, reassociate=reassociate)
        assert any("SGD_ROWS" in g.plan.source for g in jf.compiled if g.plan is not None), jf.explain()


class _Region:
    """What `rows.region_rows` asks of a recursion region: its gradient of a captured array,
    as gathered rows (`ops.recursion._Rows`) or dense (already made for another reader)."""

    def __init__(self, grad):
        self.grad = grad

    def sparse_grad(self, g, index):
        return self.grad


@settings(deadline=None)
@given(rows=st.integers(1, 10), ids=st.lists(st.integers(0, 9), min_size=1, max_size=8),
       w_special=st.lists(st.sampled_from(SPECIAL), max_size=4),
       g_special=st.lists(st.sampled_from(SPECIAL), max_size=4), scale=st.sampled_from([None, 0.05, 3.0]),
       scale_first=st.booleans(), dense=st.booleans(), seed=st.integers(0, 2**16))
@example(rows=3, ids=[0, 2], w_special=[-0.0, -0.0, -0.0], g_special=[-0.0, -0.0], scale=0.05, scale_first=True,
         dense=False, seed=0)
def test_a_regions_gathered_rows_give_the_dense_gradients_bits(rows, ids, w_special, g_special, scale, scale_first,
                                                              dense, seed):
    """`region_rows(w, region, g, j, c, first)` against `w - c * G`, G the region's zeros with
    the rows added at the ids (add.at's order): repeated ids, -0.0, inf and NaN included."""
    from janus_like.executor.rows import region_rows
    from janus_like.ops.recursion import _Rows

    ids = [i % rows for i in ids]
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, 3)).astype(np.float32)
    g = rng.standard_normal((len(ids), 3)).astype(np.float32)
    w.flat[:len(w_special)] = w_special
    g.flat[:len(g_special)] = g_special
    grad = _Rows(np.array(ids, np.intp), g, w)
    full = grad.dense()
    with np.errstate(all="ignore"):
        want = w - (full if scale is None else np.multiply(scale, full) if scale_first else np.multiply(full, scale))
        got = region_rows(w.copy(), _Region(full if dense else grad), None, 0, scale, scale_first)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))  # bit for bit
