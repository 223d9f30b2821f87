"""The plan's forms for values of one element (executor/scalars.py): rank-0 arithmetic as Python
operators, reductions of a one-element array as its element, indexes by (1,)-shaped integer
arrays as scalar indices. Each gives the interpreter's bits (the sign of zero and NaN included),
types and dtypes, and raises where it raises; end to end, a batch-1 step agrees with eager."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from janus_like import F, GradientTape, Variable, ir, optim
from janus_like.executor import compile_plan, interpret

from .harness import call_sequence, check, const_calls

F32, F64, I64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)
SPECIAL = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 3e38, 1e-45]


def _in(slot, shape, dtype=F32):
    return ir.Node(ir.INPUT, (), {"slot": slot, "name": f"a{slot}"}, (tuple(shape), np.dtype(dtype)))


def _op(op, *inputs, shape, dtype=F32, **params):
    return ir.Node(op, tuple(inputs), params, (tuple(shape), np.dtype(dtype)))


def _const(value):
    value = np.asarray(value)
    return ir.Node(ir.CONST, (), {"value": value}, (value.shape, value.dtype))


def _bits_equal(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b), (a, b)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), (a, b)
    else:
        assert a == b


def _check(nodes, outputs, slots):
    g = ir.Graph("g", list(nodes), list(outputs), sum(1 for n in nodes if n.op == ir.INPUT), False)
    ir.verify(g)
    plan = compile_plan(g)
    try:
        ref, ref_err = interpret(g, slots), None
    except Exception as exc:
        ref, ref_err = None, exc
    try:
        fast, fast_err = plan(slots), None
    except Exception as exc:
        fast, fast_err = None, exc
    assert type(ref_err) is type(fast_err), (ref_err, fast_err)
    if ref_err is None:
        for r, f in zip(ref, fast):
            _bits_equal(r, f)
    return plan.source


def _scalar(value, dtype, kind):
    """value as a NumPy scalar of dtype, or as a 0-d array (a tensor's data before its first update)."""
    with np.errstate(all="ignore"):
        x = np.dtype(dtype).type(value)
    return np.array(x) if kind == "array" else x


@settings(deadline=None)
@given(a=st.sampled_from(SPECIAL), b=st.sampled_from(SPECIAL), number=st.sampled_from([1, -0.0, 0.5, 2, 1e300]),
       dtypes=st.sampled_from([(F32, F32), (F32, F64), (F64, F64)]), kinds=st.sampled_from(["scalar", "array"]))
def test_rank0_arithmetic_is_the_ufuncs_bit_for_bit(a, b, number, dtypes, kinds):
    x, y = _in(0, (), dtypes[0]), _in(1, (), dtypes[1])
    out = np.result_type(*dtypes)
    nodes = [x, y]
    for op in ("add", "sub", "mul", "div"):
        nodes.append(_op(op, x, y, shape=(), dtype=out))
        nodes.append(_op(op, number, x, shape=(), dtype=dtypes[0]))  # a Python number keeps x's dtype
        nodes.append(_op(op, x, number, shape=(), dtype=dtypes[0]))
    nodes.append(_op("neg", y, shape=(), dtype=dtypes[1]))
    src = _check(nodes, nodes[2:], [_scalar(a, dtypes[0], kinds), _scalar(b, dtypes[1], kinds)])
    assert f"(v{x.id} + v{y.id})" in src and f"(-v{y.id})" in src and "NP_" not in src


@pytest.mark.parametrize("kind", ["scalar", "array"])
def test_an_int64_counter_is_incremented_by_operator_and_a_python_number_input_is_not(kind):
    c = _in(0, (), I64)
    py = ir.Node(ir.INPUT, (), {"slot": 1, "name": "n", "python": True}, ((), I64))  # an int argument
    inc, dec, twice = _op("add", c, 1, shape=(), dtype=I64), _op("sub", c, 3, shape=(), dtype=I64), \
        _op("mul", py, 2, shape=(), dtype=I64)
    src = _check([c, py, inc, dec, twice], [inc, dec, twice], [_scalar(41, I64, kind), 7])
    assert f"(v{c.id} + 1)" in src and f"(v{c.id} - 3)" in src
    assert f"(v{py.id} * 2)" not in src  # 7 * 2 would be a Python int, the ufunc gives np.int64
    assert "NP_true_divide" in _check([c, _op("div", c, 2, shape=(), dtype=F64)], [], [np.int64(3)])


@settings(deadline=None)
@given(value=st.sampled_from(SPECIAL), shape=st.sampled_from([(1,), (1, 1), (1, 1, 1)]),
       dtype=st.sampled_from([F32, F64]), axis_all=st.booleans())
def test_one_element_reductions_are_the_element(value, shape, dtype, axis_all):
    x = _in(0, shape, dtype)
    axis = None if axis_all else tuple(range(len(shape)))
    outs = [_op(op, x, shape=(), dtype=dtype, axis=axis, keepdims=False) for op in ("sum", "mean", "max", "min")]
    src = _check([x] + outs, outs, [np.full(shape, value, dtype)])
    assert "reduce" not in src  # sum and mean keep their 0.0 start: -0.0 sums to 0.0
    kept = _op("sum", x, shape=(1,) * len(shape), dtype=dtype, axis=None, keepdims=True)
    assert "reduce" in _check([x, kept], [kept], [np.full(shape, value, dtype)])


@settings(deadline=None)
@given(label=st.integers(-3, 2), row=st.sampled_from([0, -1]), dtype=st.sampled_from([np.int64, np.int32, np.uint8]),
       g=st.sampled_from(SPECIAL), const_g=st.booleans())
def test_single_element_gathers_and_scatters_match_the_interpreter(label, row, dtype, g, const_g):
    """x[rows, labels] and its gradient with (1,)-shaped index arrays, a constant row among them;
    a label out of range raises IndexError in both."""
    x = _in(0, (1, 2))
    labels = _in(1, (1,), dtype)
    rows = _const(np.array([row]))
    index = ((("slot", 0), ("slot", 1)), False)
    gather = _op("getitem", x, rows, labels, shape=(1,), index=index)
    seed = _const(np.array([g], np.float32)) if const_g else _in(2, (1,))
    onehot = _op("getitem_grad", seed, x, rows, labels, shape=(1, 2), index=index)
    unique = _op("getitem_grad", seed, x, rows, labels, shape=(1, 2), index=index, unique=True)
    one_axis = _op("getitem", labels, labels, shape=(1,), dtype=dtype, index=((("slot", 0),), True))
    nodes = [x, labels, rows, seed, gather, onehot, unique, one_axis]
    slots = [np.array([[1.25, -0.0]], np.float32), np.array([label % 256 if dtype == np.uint8 else label], dtype),
             np.array([g], np.float32)]
    src = _check(nodes, nodes[4:], slots[:2] + ([] if const_g else slots[2:]))
    assert f"v{x.id}[{row}, v{labels.id}[0]][None]" in src and f"v{labels.id}[v{labels.id}[0]][None]" in src
    assert "+= " in src and "] = " in src  # add.at's 0 + g (-0.0 becomes 0.0), assignment when unique


def test_other_indexes_keep_numpys_fancy_indexing():
    x = _in(0, (3, 2))
    two = _in(1, (2,), I64)
    one = _in(2, (1,), I64)
    sliced = _op("getitem", x, one, shape=(1, 2), index=((("slot", 0), ("slice", None, None, None)), False))
    partial = _op("getitem", x, one, shape=(1, 2), index=((("slot", 0),), True))
    wide = _op("getitem", x, two, two, shape=(2,), index=((("slot", 0), ("slot", 1)), False))
    src = _check([x, two, one, sliced, partial, wide], [sliced, partial, wide],
                 [np.arange(6, dtype=np.float32).reshape(3, 2), np.array([2, 0]), np.array([1])])
    assert "[None]" not in src


@pytest.mark.parametrize("reassociate", [False, True])
def test_a_batch_one_step_agrees_with_eager_and_a_bad_label_falls_back(reassociate):
    """A batch-1 cross-entropy step with a step counter, run side by side with eager, one call
    with a label out of range (eager's IndexError, state untouched) and one negative label."""
    def make():
        rng = np.random.default_rng(0)
        w = Variable(rng.standard_normal((4, 3)).astype(np.float32), name="w")
        opt = optim.SGD(0.1)

        def step(x, y):
            with GradientTape() as tape:
                logp = F.log_softmax(x @ w)
                loss = -F.mean(logp[np.arange(1), y])
            opt.apply_gradients([(tape.gradient(loss, [w])[0], w)])
            return loss * 2.0 - 1

        return step, {"w": w, "opt": opt}

    x = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)
    calls = const_calls(6, x, np.array([1])) + const_calls(1, x, np.array([7])) + const_calls(2, x, np.array([-1]))
    jf = check(make, calls, min_graph_calls=4, reassociate=reassociate)
    assert any("[0, v" in g.plan.source and "[None]" in g.plan.source for g in jf.graphs())


@settings(deadline=None)
@given(shape=st.sampled_from([(2,), (1, 2), (2, 1), (1, 1, 2)]), a=st.sampled_from(SPECIAL), b=st.sampled_from(SPECIAL),
       dtype=st.sampled_from([F32, F64]))
def test_a_two_class_softmaxs_max_and_sum_are_held_as_scalars(shape, a, b, dtype):
    """log_softmax and softmax over an axis of 2 with one row: the keepdims max and the sum of
    exps are NumPy scalars in the plan, the readers' values, shapes and dtypes unchanged."""
    axis = shape.index(2)
    kept = tuple(1 for _ in shape)
    x = _in(0, shape, dtype)
    m = _op("max", x, shape=kept, dtype=dtype, axis=axis, keepdims=True)
    z = _op("sub", x, m, shape=shape, dtype=dtype)
    e = _op("exp", z, shape=shape, dtype=dtype)
    s = _op("sum", e, shape=kept, dtype=dtype, axis=axis, keepdims=True)
    ls = _op("log", s, shape=kept, dtype=dtype)
    logp = _op("sub", z, ls, shape=shape, dtype=dtype)
    p = _op("div", e, s, shape=shape, dtype=dtype)
    one = _const(np.ones(kept, dtype))
    inv = _op("div", one, s, shape=kept, dtype=dtype)
    value = np.array([a, b], dtype).reshape(shape)
    with np.errstate(all="ignore"):
        src = _check([x, one, m, z, e, s, ls, logp, p, inv], [logp, p, inv], [value])
    assert f"(v{e.id}[" in src and "0:1" not in src and "reduce" not in src


@settings(deadline=None)
@given(shape=st.sampled_from([(2,), (1, 2), (1, 1, 2)]), a=st.sampled_from(SPECIAL), b=st.sampled_from(SPECIAL),
       dtype=st.sampled_from([F32, F64]), op=st.sampled_from(["max", "min"]))
@example(shape=(2,), a=0.0, b=-0.0, dtype=F32, op="max")
@example(shape=(1, 2), a=-0.0, b=0.0, dtype=F64, op="min")
@example(shape=(2,), a=np.nan, b=1.5, dtype=F32, op="max")
@example(shape=(2,), a=1.5, b=np.nan, dtype=F32, op="min")
def test_a_pair_max_or_min_held_as_a_scalar_picks_the_reduces_element(shape, a, b, dtype, op):
    """The scalar max (min) of a pair is a comparison of its two elements, not a ufunc call:
    read through a product with ones, the chosen element's bits show (0.0 against -0.0, NaN
    on either side, infinities)."""
    axis = shape.index(2)
    kept = tuple(1 for _ in shape)
    x = _in(0, shape, dtype)
    m = _op(op, x, shape=kept, dtype=dtype, axis=axis, keepdims=True)
    ones = _const(np.ones(shape, dtype))
    shown = _op("mul", ones, m, shape=shape, dtype=dtype)
    z = _op("sub", x, m, shape=shape, dtype=dtype)
    value = np.array([a, b], dtype).reshape(shape)
    with np.errstate(all="ignore"):
        src = _check([x, ones, m, shown, z], [shown, z], [value])
    assert "NP_maximum" not in src and "NP_minimum" not in src and " := " in src


def test_pair_reductions_read_as_arrays_stay_arrays():
    """An output, a reader that needs the (1, 1) shape, or one that would promote keeps the
    array."""
    x = _in(0, (1, 2))
    wide = _in(1, (1, 2), F64)
    e = _op("exp", x, shape=(1, 2))
    sums = [_op("sum", e, shape=(1, 1), axis=1, keepdims=True) for _ in range(3)]
    out_only = sums[0]
    reshaped = ir.Node("reshape", (sums[1],), {"shape": (1,)}, ((1,), F32))
    promoted = _op("add", wide, sums[2], shape=(1, 2), dtype=F64)
    src = _check([x, wide, e] + sums + [reshaped, promoted], [out_only, reshaped, promoted],
                 [np.array([[0.5, -1.0]], np.float32), np.array([[1.0, 2.0]])])
    assert src.count(f"NP_add(v{e.id}[:, 0:1], v{e.id}[:, 1:2])") == 3


def test_two_pair_reductions_read_together_keep_the_readers_shape():
    """`sum - max` of one row: neither may be a scalar, or the (1, 1) difference would be one."""
    x = _in(0, (1, 2))
    e = _op("exp", x, shape=(1, 2))
    m = _op("max", x, shape=(1, 1), axis=1, keepdims=True)
    s = _op("sum", e, shape=(1, 1), axis=1, keepdims=True)
    d = _op("sub", s, m, shape=(1, 1))
    _check([x, e, m, s, d], [d], [np.array([[0.5, -1.0]], np.float32)])


def test_a_pair_a_branch_returns_stays_an_array():
    """A pair reduction read as a branch's output (an outer value passed through) keeps its
    (1, 1) shape: a conditional is a reader that needs the array."""
    x = _in(0, (1, 2))
    flag = _in(1, (), np.bool_)
    e = _op("exp", x, shape=(1, 2))
    s = _op("sum", e, shape=(1, 1), axis=1, keepdims=True)
    p = _op("div", e, s, shape=(1, 2))
    cond = ir.Node(ir.COND, (flag,), {"then_nodes": [], "else_nodes": [], "then_outs": [s], "else_outs": [s]})
    y = ir.Node(ir.TUPLE_GET, (cond,), {"index": 0}, ((1, 1), F32))
    _check([x, flag, e, s, p, cond, y], [p, y], [np.array([[0.5, -1.0]], np.float32), np.bool_(True)])


def _py(slot, dtype=I64):  # a Python number read from the arguments
    return ir.Node(ir.INPUT, (), {"slot": slot, "name": f"a{slot}", "python": True}, ((), np.dtype(dtype)))


@settings(deadline=None)
@given(values=st.lists(st.sampled_from([0, 1, -3, 2**62, True, False]), min_size=2, max_size=5),
       read_one=st.booleans())
def test_python_numbers_concatenated_into_an_index_array_are_one_array_call(values, read_one):
    """`concatenate(reshape(k0, (1,)), ...)` of Python ints (or bools): `np.array((k0, ...),
    dtype)` in the plan, with the interpreter's values and dtype; a reshape something else also
    reads is still computed."""
    dt = np.dtype(bool) if all(type(v) is bool for v in values) else I64
    ins = [_py(i, dt) for i in range(len(values))]
    rows = [_op("reshape", k, shape=(1,), dtype=dt) for k in ins]
    for r in rows:
        r.params = {"shape": (1,)}
    cat = _op("concatenate", *rows, shape=(len(values),), dtype=dt, axis=0)
    outputs = [cat] + ([rows[0]] if read_one else [])
    src = _check(ins + rows + [cat], outputs, list(values))
    assert "np.array((" in src or "NP_array((" in src
    assert src.count("reshape") == (1 if read_one else 0), src


def test_a_float_concatenation_of_numbers_keeps_its_ops():
    ins = [_py(i, np.float64) for i in range(2)]
    rows = [_op("reshape", k, shape=(1,), dtype=np.float64) for k in ins]
    for r in rows:
        r.params = {"shape": (1,)}
    cat = _op("concatenate", *rows, shape=(2,), dtype=np.float64, axis=0)
    src = _check(ins + rows + [cat], [cat], [0.5, -0.0])
    assert "array((" not in src


def test_embedding_rows_of_python_word_ids_agree_with_eager():
    """The word ids of a sum of embedding rows become one index array for the gradient's
    scatter (repeated ids included); a call with an id out of range raises as in eager."""
    def make():
        emb = Variable(np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32), name="emb")
        opt = optim.SGD(0.1)

        def step(words):
            with GradientTape() as tape:
                h = 0.0
                for w in words:
                    h = h + F.tanh(emb[w])
                loss = F.sum(h)
            opt.apply_gradients([(tape.gradient(loss, emb), emb)])
            return loss

        return step, emb

    lists = [[1, 4, 4, 0], [2, 2, 5, 3], [0, 1, 2, 3], [5, 4, 3, 9], [1, 1, 1, 1], [3, 0], [4, 4, 0, 1]]
    jf = check(make, call_sequence(len(lists), lambda s, i: (lists[i],)), reassociate=True)
    assert any("array((" in g.plan.source for g in jf.compiled if g.plan is not None), jf.explain()
