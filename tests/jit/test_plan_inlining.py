"""Ops the plan emits as NumPy method calls with shapes worked out from the avals (expand_dims,
reshape_like, broadcasts, sum_to, mean, getitem_grad) give exactly the interpreter's values,
dtypes and types; polymorphic graphs keep the run-time kernels; the exact simplifications
(an elementwise op's broadcast operand, `x * 1`) change no bit."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from janus_like import ir
from janus_like.executor import compile_plan, interpret
from janus_like.passes import simplify

from .harness import assert_same

F32 = np.dtype(np.float32)


def _in(slot, shape, dtype=F32):
    return ir.Node(ir.INPUT, (), {"slot": slot, "name": f"a{slot}"}, (tuple(shape), np.dtype(dtype)))


def _op(op, *inputs, shape, dtype=F32, **params):
    return ir.Node(op, tuple(inputs), params, (tuple(shape), np.dtype(dtype)))


def _check(nodes, outputs, slots, polymorphic=False):
    g = ir.Graph("g", list(nodes), list(outputs), sum(1 for n in nodes if n.op == ir.INPUT), polymorphic)
    ir.verify(g)
    plan = compile_plan(g)
    for r, f in zip(interpret(g, slots), plan(slots)):
        assert_same(r, f, "plan vs interpreter")
        assert type(r) is type(f)
    return plan.source


def _subshape(draw_shape, keep):
    return tuple(d if k else 1 for d, k in zip(draw_shape, keep))


@settings(deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), keep=st.lists(st.booleans(), min_size=3, max_size=3),
       lead=st.integers(0, 2), dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 99))
def test_sum_to_and_mean_match_the_interpreter(shape, keep, lead, dtype, seed):
    rng = np.random.default_rng(seed)
    full = tuple([2] * lead) + tuple(shape)
    target = _subshape(shape, keep)
    x = _in(0, full, dtype)
    like = _in(1, target, np.float32)
    st_ = _op("sum_to", x, like, shape=target, dtype=np.float32 if dtype == np.float32 else np.float64)
    m_all = _op("mean", x, shape=(), dtype=dtype, axis=None, keepdims=False)
    m_last = _op("mean", x, shape=full[:-1] + (1,), dtype=dtype, axis=-1, keepdims=True)
    means = [m_all, m_last]
    if len(full) > 1:
        means.append(_op("mean", x, shape=full[1:], dtype=dtype, axis=(0,), keepdims=False))
    slots = [rng.standard_normal(full).astype(dtype), np.zeros(target, np.float32)]
    src = _check([x, like, st_] + means, [st_] + means, slots)
    assert "NP_add_reduce(" in src  # the means are inline


def test_reshapes_broadcasts_and_scatters_are_emitted_inline_and_exact():
    rng = np.random.default_rng(0)
    x = _in(0, (4, 3))
    x.params["c_ordered"] = True  # (as a guard checks it, graphgen/layouts.py: zeros_like of it is np.zeros)
    s = _op("sum", x, shape=(), axis=None, keepdims=False)  # a NumPy scalar
    e = _op("expand_dims", s, shape=(1,), axis=0)
    r = _op("reshape_like", x, _in(1, (3, 4)), shape=(3, 4))
    b_small = _op("broadcast_like", s, x, shape=(4, 3))  # scalar over a small shape, read with x: np.full
    b_used = _op("mul", b_small, x, shape=(4, 3))
    b_big = ir.Node("broadcast_to", (s,), {"shape": (80, 80)}, ((80, 80), F32))  # large: a view
    idx = _in(2, (4,), np.int64)
    rows = ir.Node(ir.CONST, (), {"value": np.arange(4)}, ((4,), np.dtype(np.int64)))
    g = _op("getitem", x, rows, idx, shape=(4,), index=((("slot", 0), ("slot", 1)), False))
    scat = _op("getitem_grad", g, x, rows, idx, shape=(4, 3), index=((("slot", 0), ("slot", 1)), False))
    scat_u = _op("getitem_grad", g, x, rows, idx, shape=(4, 3), index=((("slot", 0), ("slot", 1)), False), unique=True)
    rep = _in(3, (5,), np.int64)
    scat_rep = _op("getitem_grad", _op("getitem", x, rep, shape=(5, 3), index=((("slot", 0),), True)), x, rep,
                   shape=(4, 3), index=((("slot", 0),), True))
    ones = _op("ones_like", s, shape=())  # a 0-d array, as np.ones_like gives for a NumPy scalar
    zeros = _op("zeros_like", x, shape=(4, 3), dtype=np.float64)
    zeros.params["dtype"] = np.float64
    nodes = [x, r.inputs[1], s, e, r, b_small, b_used, b_big, idx, rows, g, scat, scat_u, rep, scat_rep.inputs[0],
             scat_rep, ones, zeros]
    slots = [rng.standard_normal((4, 3)).astype(np.float32), np.zeros((3, 4), np.float32),
             np.array([2, 0, 1, 2]), np.array([0, 3, 3, 1, 3])]
    src = _check(nodes, [e, r, b_used, b_big, scat, scat_u, scat_rep, ones, zeros], slots)
    assert ".reshape(" in src and "NP_full(" in src and "NP_broadcast_to(" in src and "SCATTER_ADD(" in src
    assert "NP_ones(" in src and "NP_zeros(" in src


def test_a_broadcast_a_product_reads_stays_a_view():
    """A small broadcast read only by elementwise ops is emitted as a contiguous copy (cheaper than
    np.broadcast_to's view); a product given the copy instead of the stride-0 view takes another
    BLAS path and rounds differently (found by the generated training steps: a gradient 1 ulp off).
    So an operand of a product keeps the view; the elementwise reader may still get a copy."""
    F64 = np.dtype(np.float64)
    x, w = _in(0, (2, 64), F64), _in(1, (64, 64), F64)
    x.params["c_ordered"] = True  # (as a guard checks it: the copy's product is laid out as the view's)
    row = _op("sum", x, shape=(1, 64), dtype=F64, axis=0, keepdims=True)
    spread = ir.Node("broadcast_to", (row,), {"shape": (2, 64)}, ((2, 64), F64))  # read by a product
    spread2 = ir.Node("broadcast_to", (row,), {"shape": (2, 64)}, ((2, 64), F64))  # read by a multiply only
    prod = _op("matmul", spread, w, shape=(2, 64), dtype=F64)
    times = _op("mul", spread2, x, shape=(2, 64), dtype=F64)
    nodes = [x, w, row, spread, spread2, prod, times]
    for seed in range(20):
        rng = np.random.default_rng(seed)
        src = _check(nodes, [prod, times], [rng.standard_normal((2, 64)), rng.standard_normal((64, 64))])
    assert "NP_broadcast_to(" in src and "BCAST(" in src, src


def test_polymorphic_graphs_read_sizes_at_run_time():
    # avals hold one size; a polymorphic plan decides only what ranks decide
    x = _in(0, (4, 3))
    like = _in(1, (1, 3))
    st_ = _op("sum_to", x, like, shape=(1, 3))
    m = _op("mean", x, shape=(), axis=None, keepdims=False)
    e = _op("expand_dims", x, shape=(4, 1, 3), axis=-2)
    r = _op("reshape_like", e, x, shape=(4, 3))
    b = _op("broadcast_like", m, x, shape=(4, 3))
    idx = _in(2, (2,), np.int64)
    g = _op("getitem", x, idx, shape=(2, 3), index=((("slot", 0),), True))
    scat = _op("getitem_grad", g, x, idx, shape=(4, 3), index=((("slot", 0),), True))
    nodes = [x, like, st_, m, e, r, b, idx, g, scat]
    for rows in (4, 7):  # the size the graph was built for, and another
        slots = [np.arange(rows * 3, dtype=np.float32).reshape(rows, 3), np.ones((1, 3), np.float32),
                 np.array([1, 1])]
        src = _check(nodes, [st_, m, e, r, b, scat], slots, polymorphic=True)
    # sum_to's axes and mean's count come from the operands' shapes when the plan runs
    assert "SUM_TO_AXES(v" in src and ".size" in src and "/ 12" not in src
    assert "[:, None]" in src and ".shape)" in src and "NP_zeros(v" in src  # rank-only inlining


def test_elementwise_op_drops_a_broadcast_operand_and_times_one_but_keeps_python_numbers():
    x = _in(0, (4, 3))
    v = _in(1, (3,))
    b = _op("broadcast_like", v, x, shape=(4, 3))
    y = _op("mul", b, x, shape=(4, 3))
    one = _op("div", y, 1, shape=(4, 3))
    half = ir.Node(ir.PY_OP, (), {"fn": lambda: 0.5}, ((), np.dtype(np.float64)))
    bp = _op("broadcast_like", half, x, shape=(4, 3), dtype=np.float64)
    z = _op("add", bp, x, shape=(4, 3), dtype=np.float64)  # a float64 array: must stay one
    g = ir.Graph("g", [x, v, b, y, one, half, bp, z], [one, z], 2)
    slots = [np.ones((4, 3), np.float32), np.arange(3, dtype=np.float32)]
    before = interpret(g, slots)
    simplify(g)
    ir.verify(g)
    assert y.inputs[0] is v  # the op broadcasts by itself
    assert g.outputs[0] is y  # y / 1 is y
    assert z.inputs[0] is bp  # a Python float's weak type would make the sum float32
    for r, f in zip(before, interpret(g, slots)):
        assert_same(r, f, "simplified")


@settings(deadline=None)
@given(rows=st.integers(0, 6), keep=st.lists(st.booleans(), min_size=2, max_size=2), lead=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_polymorphic_sum_to_mean_and_sizes_match_the_interpreter_at_any_size(rows, keep, lead, dtype):
    # the graph is built for 4 rows; the plan runs on `rows` (0 and 1 included)
    import warnings

    full = ((2,) if lead else ()) + (4, 3)
    target = _subshape((4, 3), keep)
    x = _in(0, full, dtype)
    like = _in(1, target, np.float32)
    out_dtype = np.float32 if dtype == np.float32 else np.float64
    st_ = _op("sum_to", x, like, shape=target, dtype=out_dtype)
    m_all = _op("mean", x, shape=(), dtype=dtype, axis=None, keepdims=False)
    m_rows = _op("mean", x, shape=full[:-2] + (1, 3), dtype=dtype, axis=-2, keepdims=True)
    n = _op("dim_of", x, shape=(), dtype=np.int64, axis=len(full) - 2)
    count = _op("reduced_count", x, shape=(), dtype=np.int64, axes=(len(full) - 2,))
    ar = _op("arange", n, shape=(4,), dtype=np.int64)
    one = _op("ones_like", m_all, shape=(), dtype=dtype)
    nodes = [x, like, st_, m_all, m_rows, n, count, ar, one]
    shape = full[:-2] + (rows, 3)
    slots = [np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) / 7,
             np.ones(tuple(rows if (d == 4 and k) else d for d, k in zip(target, keep)), np.float32)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of nothing, in both executors
        with np.errstate(invalid="ignore"):
            src = _check(nodes, [st_, m_all, m_rows, n, count, ar, one], slots, polymorphic=True)
    assert "SUM_TO_AXES(" in src and "MEAN(" in src and ".shape[" in src


def test_unknown_dimension_graphs_drop_a_broadcast_only_against_its_own_like():
    # (T, 2) shapes with T unknown: x and w share the aval (4, 2) but not, in general, the size
    x, w = _in(0, (4, 2)), _in(1, (4, 2))
    v = _in(2, (4, 1))
    b = _op("broadcast_like", v, x, shape=(4, 2))
    same = _op("mul", b, x, shape=(4, 2))  # against its own like: the shapes agree at any T
    other = _op("mul", b, w, shape=(4, 2))  # against another input of the same aval: kept
    e = _op("expand_dims", _op("sum", v, shape=(4,), axis=1, keepdims=False), shape=(4, 1, 1), axis=(1, 2))
    cat = _op("concatenate", x, v, shape=(4, 3), axis=1)
    nodes = [x, w, v, b, same, other, e.inputs[0], e, cat]
    g = ir.Graph("g", nodes, [same, other, e, cat], 3, True)
    simplify(g)
    ir.verify(g)
    assert same.inputs[0] is v and other.inputs[0] is b
    for rows in (4, 1, 6):
        slots = [np.full((rows, 2), 2.0, np.float32), np.ones((rows, 2), np.float32),
                 np.arange(rows, dtype=np.float32).reshape(rows, 1)]
        src = _check(nodes, [same, other, e, cat], slots, polymorphic=True)
    assert "[:, None, None]" in src and "NP_concatenate((" in src


def test_buffers_are_reused_for_large_results_only():
    from janus_like.executor.buffers import REUSE_MIN_ELEMENTS

    for size, reused in ((REUSE_MIN_ELEMENTS * 4, True), (2, False)):
        x = _in(0, (size,))
        a = _op("exp", x, shape=(size,))
        b = _op("add", a, 1.0, shape=(size,))  # a is dead after this: its buffer may take b
        c = _op("tanh", b, shape=(size,))
        src = _check([x, a, b, c], [c], [np.linspace(-1, 1, size, dtype=np.float32)])
        assert ("out=" in src) is reused, src


@settings(deadline=None, max_examples=30)
@given(rows=st.integers(1, 6), cols=st.integers(1, 5), poly=st.booleans(), seed=st.integers(0, 2**16))
def test_small_broadcasts_feeding_other_nodes_are_copies_and_outputs_stay_views(rows, cols, poly, seed):
    rng = np.random.default_rng(seed)
    x, y = _in(0, (rows, 1)), _in(1, (rows, cols))
    y.params["c_ordered"] = True  # (as a guard checks it: the copy's product is laid out as the view's)
    inner = _op("broadcast_like", x, y, shape=(rows, cols))
    out = _op("broadcast_like", x, y, shape=(rows, cols))
    prod = _op("mul", inner, y, shape=(rows, cols))
    slots = [rng.standard_normal((rows, 1)).astype(np.float32), rng.standard_normal((rows, cols)).astype(np.float32)]
    slots[0][0, 0] = -0.0
    src = _check([x, y, inner, out, prod], [prod, out], slots, polymorphic=poly)
    assert f"v{inner.id} = BCAST(" in src and f"v{out.id} = NP_broadcast_to(" in src
    g = ir.Graph("g", [x, y, inner, out, prod], [prod, out], 2, poly)
    assert not compile_plan(g)(slots)[1].flags.writeable  # as eager's view


def test_a_broadcast_whose_reader_may_be_laid_out_by_it_stays_a_view():
    """`np.broadcast_to(row, (3, 3)) * 1.5` alone, or times an input that may be Fortran-ordered:
    NumPy lays the product out by the view's strides (Fortran order here), the copy's in C order,
    and a later sum adds in another order. The view stays."""
    x, y = _in(0, (1, 3)), _in(1, (3, 3))
    alone = _op("broadcast_to", x, shape=(3, 3))
    alone.params["shape"] = (3, 3)
    spread = _op("broadcast_like", x, y, shape=(3, 3))
    nodes = [x, y, alone, _op("mul", alone, 1.5, shape=(3, 3)), spread, _op("mul", spread, y, shape=(3, 3))]
    rng = np.random.default_rng(0)
    slots = [rng.standard_normal((1, 3)).astype(np.float32), np.asfortranarray(rng.standard_normal((3, 3)), np.float32)]
    src = _check(nodes, [nodes[3], nodes[5]], slots)
    assert "BCAST(" not in src, src
    got = compile_plan(ir.Graph("g", nodes, [nodes[3], nodes[5]], 2, False))(slots)
    assert [g.strides for g in got] == [(np.broadcast_to(slots[0], (3, 3)) * 1.5).strides,
                                        (np.broadcast_to(slots[0], (3, 3)) * slots[1]).strides]


@settings(deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), dtype=st.sampled_from([np.float16, np.float32, np.float64]),
       scale=st.sampled_from([1.0, 100.0]), strided=st.booleans(), seed=st.integers(0, 99))
def test_sigmoid_in_one_buffer_is_the_primitive_bit_for_bit(shape, dtype, scale, strided, seed):
    # the plan's SIGMOID writes negative/exp/add/divide into one buffer; the primitive allocates
    # each step. Same bits, NaN and overflow (exp(-x) = inf -> 0, no warning) included, also on a
    # strided view (an LSTM gate is a column block of the pre-activations)
    import warnings
    rng = np.random.default_rng(seed)
    full = tuple(shape[:-1]) + (shape[-1] * (2 if strided else 1),)
    a = (rng.standard_normal(full) * scale).astype(dtype)
    a.flat[0] = np.nan
    value = a[..., :shape[-1]] if strided else a
    x = _in(0, value.shape, dtype)
    s = _op("sigmoid", x, shape=value.shape, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the primitive silences exp's overflow: so must the plan
        src = _check([x, s], [s], [value])
    assert "SIGMOID(" in src



_SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.5, -2.25, 3e38, 1e-40, 89.0]


def _pair_case(shape, at, keepdims, op, dtype, as_tuple, negative, picks, layout):
    at = min(at, len(shape))
    full = tuple(shape[:at]) + (2,) + tuple(shape[at:])
    values = np.array([_SPECIAL[p] for p in picks] * 4)[:int(np.prod(full))].astype(dtype).reshape(full)
    a = {"c": values, "f": np.asfortranarray(values), "view": np.repeat(values, 2, axis=-1)[..., ::2]}[layout]
    axis = at - len(full) if negative else at
    x = _in(0, full, dtype)
    operand = _op("exp", x, shape=full, dtype=dtype) if op == "sum" else x  # only sums of an exp are paired
    with np.errstate(all="ignore"):
        e = np.exp(a) if op == "sum" else a
        out = np.add.reduce(e, axis, None, None, keepdims) if op == "sum" else getattr(e, op)(axis=axis, keepdims=keepdims)
    r = _op(op, operand, shape=np.shape(out), dtype=dtype, axis=(axis,) if as_tuple else axis, keepdims=keepdims)
    g = ir.Graph("g", [x, operand, r] if operand is not x else [x, r], [r], 1)
    plan = compile_plan(g)
    with np.errstate(all="ignore"):
        (got,), (ref,) = plan([a]), interpret(g, [a])
    ufunc = {"sum": "add", "max": "maximum", "min": "minimum"}[op]
    assert f"NP_{ufunc}(v{operand.id}[" in plan.source
    assert type(got) is type(ref) is type(out)
    for y in (ref, out):
        assert np.shape(got) == np.shape(y) and np.asarray(got).dtype == np.asarray(y).dtype
        assert np.asarray(got).tobytes() == np.asarray(y).tobytes()  # the bits: -0.0 and NaN too


@pytest.mark.parametrize("layout", ["c", "f", "view"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_and_min_of_a_signed_zero_pair_keep_the_reduce_order(op, layout):
    # maximum(0.0, -0.0) is -0.0 and maximum(-0.0, 0.0) is 0.0: the halves go in the reduce's order
    for picks in ([0, 1] * 6, [1, 0] * 6, [0, 1, 1, 0] * 3):
        _pair_case([3], 1, True, op, np.float32, False, True, picks, layout)
        _pair_case([3], 0, False, op, np.float64, True, False, picks, layout)


@settings(deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=0, max_size=2), at=st.integers(0, 2), keepdims=st.booleans(),
       op=st.sampled_from(["sum", "max", "min"]), dtype=st.sampled_from([np.float32, np.float64]),
       as_tuple=st.booleans(), negative=st.booleans(), picks=st.lists(st.integers(0, 9), min_size=12, max_size=12),
       layout=st.sampled_from(["c", "f", "view"]))
def test_reductions_over_two_elements_are_the_binary_ufunc_bit_for_bit(shape, at, keepdims, op, dtype, as_tuple,
                                                                        negative, picks, layout):
    # max/min (and sums of an exp) over an axis of length 2 are the ufunc on the two halves
    _pair_case(shape, at, keepdims, op, dtype, as_tuple, negative, picks, layout)


def test_other_reductions_keep_the_reduce_call():
    # a longer axis, two axes, integers, an explicit dtype, and a sum of anything but an exp
    # (-0.0 + -0.0 reduces to 0.0) stay `ufunc.reduce`
    x, i = _in(0, (3, 2)), _in(1, (3, 2), np.int64)
    nodes = [x, i, _op("sum", x, shape=(2,), axis=0, keepdims=False),
             _op("max", x, shape=(), axis=(0, 1), keepdims=False),
             _op("sum", i, shape=(3,), dtype=np.int64, axis=1, keepdims=False),
             _op("sum", x, shape=(3,), dtype=np.float64, axis=1, keepdims=False),
             _op("sum", x, shape=(3,), axis=1, keepdims=False)]
    nodes[5].params["dtype"] = np.float64
    slots = [np.full((3, 2), -0.0, np.float32), np.arange(6).reshape(3, 2)]
    src = _check(nodes, nodes[2:], slots)
    assert src.count("_reduce(") == 5


_NUMBERS = [1, 0, -1, 2, 16777217, 2**70, 0.1, -0.0, 0.0, 1.5, 1e300, 3.4e38, float("nan"), float("inf"), True]


@settings(deadline=None)
@given(op=st.sampled_from(["add", "sub", "mul", "div", "maximum", "minimum"]), pick=st.integers(0, len(_NUMBERS) - 1),
       dtype=st.sampled_from([np.float16, np.float32, np.float64]), first=st.booleans(),
       shape=st.lists(st.integers(1, 4), min_size=1, max_size=2), picks=st.lists(st.integers(0, 9), min_size=16, max_size=16))
def test_python_numbers_as_0d_arrays_change_no_bit(op, pick, dtype, first, shape, picks):
    # a ufunc's Python-number operand is emitted as a 0-d array of the array's dtype when that
    # is the same computation: same result dtype, every bit (signed zeros, NaN, inf) the same
    number = _NUMBERS[pick]
    a = np.resize(np.array([_SPECIAL[p] for p in picks]), shape).astype(dtype)
    ufunc = getattr(np, {"sub": "subtract", "mul": "multiply", "div": "true_divide"}.get(op, op))
    with np.errstate(all="ignore"):
        ref = ufunc(number, a) if first else ufunc(a, number)
    x = _in(0, shape, dtype)
    r = _op(op, *((number, x) if first else (x, number)), shape=ref.shape, dtype=ref.dtype)
    g = ir.Graph("g", [x, r], [r], 1)
    plan = compile_plan(g)
    with np.errstate(all="ignore"):
        (got,), (want,) = plan([a]), interpret(g, [a])
    for y in (want, ref):
        assert got.dtype == y.dtype and got.shape == y.shape and got.tobytes() == y.tobytes()
    with np.errstate(all="ignore"):
        as_dtype = np.array(number, dtype)
    zero_d = type(number) is not bool and bool(np.isfinite(as_dtype)) and ref.dtype == a.dtype \
        and (type(number) is float or int(as_dtype) == number)
    # maximum and minimum take the number as a full array (their vector loop: ops/primitives.filled)
    # where the operand's order is known (an input may be F-ordered: then a 0-d array)
    full = tuple(shape) if op in ("maximum", "minimum") and sum(d != 1 for d in shape) <= 1 else ()
    used = any(type(v) is np.ndarray and v.shape == full and name in plan.source
               for name, v in plan.__globals__.items())
    assert used is zero_d, plan.source  # the numbers that keep their value are 0-d (or full) arrays


def test_sigmoid_keeps_the_callers_error_state():
    # the plan's sigmoid ignores exp's overflow only; a caller's other settings (underflow raises)
    # hold inside it, as they do for the primitive, and the state after the call is the caller's
    x = _in(0, (32, 64))
    s = _op("sigmoid", x, shape=(32, 64))
    g = ir.Graph("g", [x, s], [s], 1)
    plan = compile_plan(g)
    assert "SIGMOID(" in plan.source
    a = np.full((32, 64), 200.0, np.float32)  # exp(-200) underflows in float32
    a[0, 0] = -200.0  # exp(200) overflows: ignored
    with np.errstate(under="raise", over="warn"):
        before = np.geterr()
        with pytest.raises(FloatingPointError):
            interpret(g, [a])
        with pytest.raises(FloatingPointError):
            plan([a])
        assert np.geterr() == before
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (got,), (want,) = plan([a]), interpret(g, [a])
    assert got.tobytes() == want.tobytes()


@settings(deadline=None)
@given(op=st.sampled_from(["add", "sub", "mul", "div", "maximum", "minimum"]),
       dtype=st.sampled_from([np.float16, np.float32, np.float64]),
       row=st.lists(st.integers(1, 4), min_size=1, max_size=2),
       lead=st.integers(1, 2), swap=st.booleans(), picks=st.lists(st.integers(0, 9), min_size=32, max_size=32))
def test_operands_broadcast_by_leading_unit_axes_only_change_no_bit(op, dtype, row, lead, swap, picks):
    # a (32,) bias added to a (1, 32) row is passed as the view b[None]: equal shapes take
    # NumPy's fast loop; every bit is the same, on either side of the op
    shape = (1,) * lead + tuple(row)
    a = np.resize(np.array([_SPECIAL[p] for p in picks]), shape).astype(dtype)
    b = np.resize(np.array([_SPECIAL[p] for p in picks[::-1]]), tuple(row)).astype(dtype)
    x, y = _in(0, shape, dtype), _in(1, row, dtype)
    r = _op(op, *((y, x) if swap else (x, y)), shape=shape, dtype=dtype)
    g = ir.Graph("g", [x, y, r], [r], 2)
    plan = compile_plan(g)
    assert "[None" in plan.source
    ufunc = getattr(np, {"sub": "subtract", "mul": "multiply", "div": "true_divide"}.get(op, op))
    with np.errstate(all="ignore"):
        ref = ufunc(b, a) if swap else ufunc(a, b)
        (got,), (want,) = plan([a, b]), interpret(g, [a, b])
    for z in (want, ref):
        assert got.dtype == z.dtype and got.shape == z.shape and got.tobytes() == z.tobytes()


def test_a_real_broadcast_and_a_mean_of_one_element_are_emitted_as_before():
    x, y = _in(0, (2, 3)), _in(1, (3,))
    r = _op("add", x, y, shape=(2, 3))
    m = _op("mean", _in(2, (1,)), shape=())
    g = ir.Graph("g", [x, y, r, m.inputs[0], m], [r, m], 3)
    plan = compile_plan(g)
    assert "[None" not in plan.source and "/ 1" not in plan.source  # x / 1 is x: no division
    a, b, c = np.ones((2, 3), F32), np.arange(3, dtype=F32), np.array([-2.5], F32)
    got, want = plan([a, b, c]), interpret(g, [a, b, c])
    for u, v in zip(got, want):
        assert np.asarray(u).dtype == np.asarray(v).dtype and np.asarray(u).tobytes() == np.asarray(v).tobytes()


@settings(deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), dtype=st.sampled_from([np.float16, np.float32, np.float64]),
       picks=st.lists(st.integers(0, 9), min_size=8, max_size=8), strided=st.booleans(), payload=st.booleans())
def test_relu_against_a_full_zeros_array_is_maximum_with_zero_bit_for_bit(shape, dtype, picks, strided, payload):
    """relu (eager's kernel and the plan's line) compares with a cached read-only zeros array,
    which takes NumPy's vector loop: the bits of np.maximum(x, 0), NaN payloads and -0.0 included;
    the same for a user's np.maximum(x, number) and np.minimum."""
    from janus_like.ops.primitives import _relu
    full = tuple(shape[:-1]) + (shape[-1] * (2 if strided else 1),)
    a = np.resize(np.array([_SPECIAL[p] for p in picks]), full).astype(dtype)
    if payload:
        a.reshape(-1)[0:1].view(np.uint8)[0] |= 1  # a NaN's low bits, where the value is NaN
    value = a[..., ::2] if strided else a
    want = np.maximum(value, 0)
    assert _relu(np, value).tobytes() == want.tobytes()
    x = _in(0, value.shape, dtype)
    nodes = [x, _op("relu", x, shape=value.shape, dtype=dtype), _op("maximum", x, 0.5, shape=value.shape, dtype=dtype),
             _op("minimum", -1, x, shape=value.shape, dtype=dtype)]
    plan = compile_plan(ir.Graph("g", nodes, nodes[1:], 1))
    with np.errstate(all="ignore"):
        got = plan([value])
        wants = [want, np.maximum(value, 0.5), np.minimum(-1, value)]
    for g, w in zip(got, wants):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
    assert plan.source.count("NP_maximum(") == 2 and "K" not in plan.source.split("return")[0].split("S[0]")[1]


def test_filled_arrays_are_bounded():
    from janus_like.ops import primitives
    assert primitives.filled((4,), np.float32, 0).flags.writeable is False
    assert primitives.filled((primitives.FILLED_MAX_BYTES // 4 + 1,), np.float32, 0) is None
    assert primitives.filled((primitives.FILLED_MAX_BYTES // 4,), np.float32, 0) is not None


_UNARY_UFUNCS = ["floor", "ceil", "rint", "isnan", "isinf", "isfinite", "log1p", "expm1", "log2", "log10",
                 "reciprocal", "arctan", "sinh", "cosh", "tan", "arcsin", "arccos"]


@pytest.mark.parametrize("op", _UNARY_UFUNCS + ["floor_divide", "remainder", "logaddexp", "arctan2", "hypot"])
def test_more_math_ops_call_their_ufunc_directly_with_the_interpreters_bits(op):
    values = np.array([-2.5, -1.0, -0.0, 0.0, 0.3, 1.0, 7.5, np.inf, -np.inf, np.nan, 1e-30, 80.0], np.float32)
    x = _in(0, values.shape)
    inputs = (x,) if op in _UNARY_UFUNCS else (x, _in(1, values.shape))
    with np.errstate(all="ignore"):
        want = getattr(np, op)(*[values] * len(inputs))
        r = _op(op, *inputs, shape=values.shape, dtype=want.dtype)
        g = ir.Graph("g", [*inputs, r], [r], len(inputs))
        plan = compile_plan(g)
        (got,), (ref,) = plan([values] * len(inputs)), interpret(g, [values] * len(inputs))
    assert f"NP_{op}(" in plan.source, plan.source  # no per-call dispatch through the registry
    for y in (ref, want):
        assert got.dtype == y.dtype and got.tobytes() == y.tobytes()


@pytest.mark.parametrize("lead", [1, 2])
def test_a_sum_over_leading_axes_is_the_reduce_itself(lead):
    """A bias gradient (sum_to over leading axes only): np.add.reduce on those axes, without
    ndarray.sum's wrapper, keepdims and a reshape; the interpreter's bits (_check)."""
    full = (5,) * lead + (3, 4)
    x, like = _in(0, full), _in(1, (3, 4))
    s = _op("sum_to", x, like, shape=(3, 4))
    slots = [np.random.default_rng(lead).standard_normal(full).astype(np.float32), np.zeros((3, 4), np.float32)]
    src = _check([x, like, s], [s], slots)
    axis = "0" if lead == 1 else "C"
    assert f"NP_add_reduce(v{x.id}, {axis}" in src and ".sum(" not in src and "reshape" not in src
