"""Arrays written in place keep their memory layout, as eager's do (graphgen/layouts.py).

`w -= lr * g` of a Fortran-ordered `w` (a transposed weight) leaves `w` Fortran-ordered, and a
reversed view (`a[::-1]`) stays reversed; a later `(w ** 2).sum()` or `x @ w` then adds in that
order. The graph's new value is a node that NumPy lays out in C order when its operands
disagree, so a reduction of it rounded otherwise (the last bits differed). Every test runs eager
and the jit side by side and compares results, state and the arrays' strides after every call,
with the state's layout changed between calls too.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from .harness import check, graph_calls, load_module, side_by_side

SHAPE = (24, 20)  # (enough elements that NumPy's pairwise sum adds differently by layout)


def laid_out(kind, seed, shape=SHAPE):
    """A float64 array of `shape` in one of several layouts."""
    rng = np.random.default_rng(seed)
    r, c = shape
    if kind == "C":
        return rng.standard_normal((r, c))
    if kind == "F":
        return np.asfortranarray(rng.standard_normal((r, c)))
    if kind == "T":  # a transpose: Fortran-ordered, a view of another array
        return rng.standard_normal((c, r)).T
    if kind == "reversed":
        return rng.standard_normal((r, c))[::-1]
    if kind == "gapped":
        return rng.standard_normal((r, 2 * c))[:, ::2]
    assert kind == "reversed_columns"
    return rng.standard_normal((r, c))[:, ::-1]


LAYOUTS = ["C", "F", "T", "reversed", "gapped", "reversed_columns"]

WRITES = {
    "sub": 'st["w"] -= 0.1 * g',
    "mul": 'st["w"] *= 0.5',
    "out": 'np.multiply(st["w"], 0.5, out=st["w"])',
    "copyto": 'np.copyto(st["w"], st["w"] * 0.5 + g)',
    "where": 'np.add(st["w"], g, out=st["w"], where=g > 0)',
    "row": 'st["w"][0] = g[0]',
    "rows_added": 'st["w"][1:] += g[1:]',
    "fancy_rows": 'st["w"][[0, 2]] -= g[:2]',
    "view_written": 'v = st["w"][1:]\n    v -= g[1:]\n    st["v"] = float(v.sum())',
    "loop": 'for k in range(3):\n        st["w"] *= 0.5 + k',
    "matmul_out": 'np.matmul(g, x @ x.T * 0.1, out=st["w"])',
}
READS = {
    "sum": 'float((st["w"] ** 2).sum())',
    "matmul": 'st["w"] @ x',
    "transposed": 'x.T @ st["w"].T',
    "axis": 'st["w"].sum(axis=0)',
    "zeros_like": 'float((np.zeros_like(st["w"]) + st["w"] * 2).sum())',
}


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    """step_<write>_<read>(st, g, x) for every write and read, in a module with a source file."""
    source = "import numpy as np\n" + "".join(
        f"\n\ndef step_{w}_{r}(st, g, x):\n    {WRITES[w]}\n    return {READS[r]}\n" for w in WRITES for r in READS)
    return load_module(tmp_path_factory.mktemp("layouts"), source)


def _run(step, first, changes, g_layout="C"):
    """8 calls; before call i, st["w"] becomes a new array laid out as changes[i] (None: kept)."""
    def make():
        return step, {"w": laid_out(first, 1)}

    def call(st, i):
        if changes[i] is not None:
            st["w"] = laid_out(changes[i], 100 + i)
        return st, laid_out(g_layout, 200 + i), np.random.default_rng(300 + i).standard_normal((SHAPE[1], 3))

    return side_by_side(make, [lambda st, i=i: call(st, i) for i in range(8)], layouts=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(write=st.sampled_from(sorted(WRITES)), read=st.sampled_from(sorted(READS)),
       first=st.sampled_from(LAYOUTS), changes=st.lists(st.none() | st.sampled_from(LAYOUTS), min_size=8, max_size=8),
       g_layout=st.sampled_from(["C", "F", "reversed"]))
@example(write="sub", read="sum", first="F", changes=[None] * 8, g_layout="C")
@example(write="sub", read="matmul", first="T", changes=[None] * 8, g_layout="C")
@example(write="sub", read="sum", first="C", changes=[None] * 4 + ["F"] + [None] * 3, g_layout="C")
@example(write="copyto", read="axis", first="C", changes=[None] * 4 + ["gapped", "T", None, "reversed"], g_layout="F")
def test_writes_keep_the_layout_side_by_side(steps, write, read, first, changes, g_layout):
    jf = _run(getattr(steps, f"step_{write}_{read}"), first, changes, g_layout)
    assert graph_calls(jf) >= 1, jf.explain()


def test_a_fortran_ordered_weight_updated_then_summed():
    """The weight is a transpose; SGD writes it in place and an L2 term sums it."""
    def make():
        def step(g, st):
            st["w"] -= 0.1 * g
            return float((st["w"] ** 2).sum())
        return step, {"w": laid_out("T", 1, (40, 30))}

    check(make, [lambda st, i=i: (laid_out("C", 10 + i, (40, 30)), st) for i in range(8)], min_graph_calls=5,
          layouts=True)


def test_a_fortran_ordered_weight_updated_then_multiplied():
    def make():
        def step(g, x, st):
            st["w"] -= 0.1 * g
            return x @ st["w"]
        return step, {"w": laid_out("T", 1, (48, 64))}

    calls = [lambda st, i=i: (laid_out("C", 10 + i, (48, 64)), laid_out("C", 50 + i, (5, 48)), st) for i in range(8)]
    check(make, calls, min_graph_calls=5, layouts=True)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_product_into_an_out_array_of_any_layout(layout):
    """`np.matmul(x, w, out=a)`: NumPy's BLAS call for a Fortran-ordered `a` multiplies the
    transposes the other way round, which rounds otherwise than a C-ordered product copied into
    `a` (ops/memory.matmul_like)."""
    def make():
        def step(st, x, w):
            np.matmul(x, w, out=st["a"])
            r = np.matmul(x, w + 1.0, st["b"])  # (out by position)
            return float(st["a"].sum()), r is st["b"]
        return step, {"a": laid_out(layout, 1, (34, 18)), "b": laid_out(layout, 2, (34, 18))}

    rng = np.random.default_rng
    calls = [lambda st, i=i: (st, rng(10 + i).standard_normal((34, 18)), rng(20 + i).standard_normal((18, 18)))
             for i in range(7)]
    check(make, calls, min_graph_calls=4, layouts=True)


def test_zeros_like_of_a_fortran_ordered_value_is_fortran_ordered():
    """np.zeros_like keeps its operand's order; the graph folded it into a C-ordered constant."""
    def make():
        def step(g, st, d=0.9):
            st["w"] = st["w"] - 0.1 * g
            ema = np.zeros_like(st["w"]) if st["ema"] is None else st["ema"]
            st["ema"] = d * ema + (1 - d) * st["w"]
            return float((st["ema"] ** 2).sum())
        return step, {"w": laid_out("T", 1, (30, 40)), "ema": None}

    def call(st, i):
        if i == 5:
            st["ema"] = None  # a reset after the warm-up: the graph of the other branch
        return laid_out("T", 10 + i, (30, 40)), st

    check(make, [lambda st, i=i: call(st, i) for i in range(8)], min_graph_calls=4, layouts=True)


def test_a_reversed_state_written_then_multiplied():
    """The state becomes a reversed view after the warm-up: `a *= 0.5` keeps it reversed and
    `a @ a[0]` reads it as such (NumPy's loop for a negative stride rounds otherwise than BLAS)."""
    def make():
        def step(st):
            st["a"] *= 0.5
            return st["a"] @ st["a"][0]
        return step, {"a": laid_out("C", 3, (4, 4))}

    def call(st, i):
        if i == 4:
            st["a"] = st["a"][::-1]
        return (st,)

    check(make, [lambda st, i=i: call(st, i) for i in range(7)], min_graph_calls=2, layouts=True)


def test_a_c_ordered_state_is_guarded_and_another_layout_gets_its_own_graph():
    """The graph for a C-ordered state adds nothing to the plan, only a guard; a Fortran-ordered
    state fails it and gets a graph of its own, which keeps the layout with a node."""
    def make():
        def step(g, st):
            st["w"] -= 0.1 * g
            return float(st["w"].sum())
        return step, {"w": laid_out("C", 1)}

    def call(st, i):
        if i == 5:
            st["w"] = np.asfortranarray(st["w"])
        return laid_out("C", 10 + i), st

    compiled = check(make, [lambda st, i=i: call(st, i) for i in range(9)], min_graph_calls=4, layouts=True).compiled
    ops = [sorted({n.op for n in g.graph.all_nodes()}) for g in compiled]
    assert len(compiled) == 2, ops
    assert "keep_layout" not in ops[0] and "keep_layout" in ops[1], ops
    assert any(a.kind == "layout" for a in compiled[0].assumptions)


def test_a_one_axis_state_reversed_after_the_warm_up():
    """One axis: C and F order agree, but a reversed view's dot product with itself adds
    backwards; the guard checks C-contiguity, not only C order."""
    def make():
        def step(st):
            st["a"] *= 0.999
            return float(st["a"].sum()), st["a"] @ st["a"]
        return step, {"a": np.random.default_rng(1).standard_normal(1000)}

    def call(st, i):
        if i == 4:
            st["a"] = np.random.default_rng(7).standard_normal(1000)[::-1]
        return (st,)

    check(make, [lambda st, i=i: call(st, i) for i in range(7)], min_graph_calls=3, layouts=True)


def test_times_one_and_a_cast_to_the_same_dtype_of_a_view_are_new_arrays():
    """`x[::-1] * 1` is eager's new array in logical order: the simplification to x's view made
    the dot product add backwards."""
    def make():
        def step(x):
            y = np.flip(x) * 1
            z = x[::-1].astype(np.float64)
            return y @ y, z @ z, x[::2] * 1, x.T * 1
        return step, {}

    check(make, [lambda st, i=i: (np.random.default_rng(i).standard_normal(1001),) for i in range(6)],
          min_graph_calls=3, layouts=True)


def _fortran(seed, shape=(64, 50)):
    return np.asfortranarray(np.random.default_rng(seed).standard_normal(shape))


def array_of_fortran(x, y):
    a = np.array(x)  # (NumPy copies in order "K": Fortran-ordered)
    s = np.array([x, y])  # (C-ordered, where np.stack of them is not)
    return a.sum(axis=0)[:3], s, s.sum(axis=1)[:, :3]


def sliced_write_of_a_reversed_state(x, y, st):
    st["w"][1:] -= y[1:24, :20]
    return st["w"] @ y[0, :20]


def write_through_a_view_of_a_gapped_state(x, y, st):
    v = st["g"][1:]
    v -= y[1:24, :20]
    return st["g"] @ y[0, :20]


def scalar_broadcast_transposed(x, y, st):
    b = np.broadcast_to(x.std() / 3, (64, 64))
    return (b.T * 1.1).sum(axis=1)[:4], b.T * 2


@pytest.mark.parametrize("fn", [array_of_fortran, sliced_write_of_a_reversed_state,
                                write_through_a_view_of_a_gapped_state, scalar_broadcast_transposed])
def test_copies_writes_through_views_and_broadcasts_keep_eagers_layout(fn):
    """np.array copies in order "K"; a write through a view of a reversed or gapped state keeps
    the state's strides; a small broadcast of a scalar stays a view where a transpose reads it."""
    def make():
        return fn, {"w": np.random.default_rng(1).standard_normal((24, 20))[::-1],
                    "g": np.random.default_rng(2).standard_normal((24, 40))[:, ::2]}

    def call(st, i):
        args = (_fortran(i), _fortran(100 + i))
        return args if fn is array_of_fortran else (*args, st)

    check(make, [lambda st, i=i: call(st, i) for i in range(8)], min_graph_calls=5)


def test_a_write_whose_value_another_output_holds_is_its_own_array():
    """`hist[0] *= 0.5` where `v0 * 0.5` is computed too: one node after common subexpressions
    are merged, and `keep_layout` gives that value itself when the strides agree. Eager's are
    two arrays; the outputs hold two (keep_layout is an aliasing op to the commit's copies)."""
    def step(x):
        v0 = x * 1.0
        hist = [v0]
        while np.abs(v0).max() > 1.0:
            v0 = v0 * 0.5
        hist[0] *= 0.5
        return v0, hist

    calls = [lambda st, i=i: (np.full((2, 2), [1.5, 1.5, 1.5, 1.5, 0.5, 1.2, 1.9][i]),) for i in range(7)]
    check(lambda: (step, {}), calls, min_graph_calls=3)


def test_copy_and_deepcopy_keep_a_transposed_arrays_layout():
    """A best-so-far snapshot `copy.deepcopy(st["p"])` of a Fortran-ordered weight, and
    `copy.copy` of a transposed view: ndarray's copies are in order "K"."""
    import copy

    def step(x, st):
        st["p"]["W"] -= 0.1 * x
        snap = copy.deepcopy(st["p"])
        return snap, copy.copy(st["p"]["W"].T), copy.copy(x.sum())

    def make():
        return step, {"p": {"W": np.ones((3, 2)).T * 1.0}}

    check(make, [lambda st, i=i: (np.full((2, 3), 0.1 * i), st) for i in range(7)], min_graph_calls=3)
