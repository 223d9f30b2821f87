"""GPU elementwise fusion (executor/gpu_fusion.py): chains of elementwise ops on the GPU run as
one kernel each in the GPU plan, with eager's bits. Side by side with eager (exact comparison of
results and state after every call), on the CPU stand-in (whose ElementwiseKernel runs the
kernel's C as NumPy, tests/fake_gpu.py) and on CuPy where a GPU is present."""
import numpy as np
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, ir
from janus_like.executor import gpu_fusion

from fake_gpu import FakeCupy
from jit.harness import GraphRecorder, chain_program, fallback_reasons, load_module, random_array, side_by_side
from test_devices import DEVICES, _use_gpu


def _gpu(a):
    return jl.tensor(a).to("gpu")


def _gpu_plans(rec):
    """The GPU graphs' plans compiled while `rec` recorded (fused chains or not)."""
    return [g for g in rec.compiled if g.devices and g.plan is not None]


@pytest.mark.parametrize("kind", DEVICES)
def test_an_sgd_step_runs_its_elementwise_chains_as_kernels_with_eager_bits(kind, monkeypatch):
    _use_gpu(monkeypatch, kind)

    def make():
        w = jl.Variable(random_array(0, (16, 8), np.float32), name="w").to("gpu")
        w = jl.Variable(w)

        def step(x, y):
            with jl.GradientTape() as tape:
                h = F.tanh(x @ w)
                loss = F.mean((h - y) * (h - y))
            (g,) = tape.gradient(loss, [w])
            w.assign(w - 0.1 * g)
            return loss

        return step, w

    calls = [lambda s, i=i: (_gpu(random_array(i, (4, 16), np.float32)), _gpu(random_array(i + 50, (4, 8), np.float32)))
             for i in range(8)]
    with GraphRecorder() as rec:
        jf = side_by_side(make, calls)
    (g,) = _gpu_plans(rec)
    assert g.plan.fused >= 2 and "GFK" in g.plan.source, g.plan.source
    assert f"the GPU plan, {g.plan.fused} elementwise chains fused" in jf.explain()
    assert jf.stats()["graph_calls"] >= 4 and "internal-error" not in fallback_reasons(jf)


@pytest.mark.parametrize("kind", DEVICES)
def test_a_kernel_that_differs_from_its_chain_is_not_used(kind, monkeypatch):
    _use_gpu(monkeypatch, kind)
    monkeypatch.setattr(gpu_fusion, "OPS", dict(gpu_fusion.OPS, mul="{} + {}"))  # a wrong kernel
    monkeypatch.setattr(gpu_fusion, "_KERNELS", {})

    def make():
        def f(x, y):
            return (x * y - 1.0) * x

        return f, None

    calls = [lambda s, i=i: (_gpu(random_array(i, (8, 4), np.float32)), _gpu(random_array(i + 9, (4,), np.float32)))
             for i in range(6)]
    with GraphRecorder() as rec:
        jf = side_by_side(make, calls)
    assert len(_gpu_plans(rec)) == 1, jf.explain()
    (g,) = _gpu_plans(rec)
    assert g.plan.fused == 0 and "GFK" not in g.plan.source


def test_groups_need_gpu_nodes_of_one_static_shape():
    x = ir.Node(ir.INPUT, (), {"slot": 0}, ((8, 4), np.float32))
    b = ir.Node(ir.INPUT, (), {"slot": 1}, ((4,), np.float32))
    h = ir.Node(ir.INPUT, (), {"slot": 2}, ((8, 4), np.float32))
    m = ir.Node("mul", (x, b), {}, ((8, 4), np.float32))
    s = ir.Node("sub", (m, 1.0), {}, ((8, 4), np.float32))
    devices = {x.id: "gpu", b.id: "gpu", m.id: "gpu", s.id: "gpu"}
    assert gpu_fusion.gpu_member(m, devices) and gpu_fusion.gpu_member(s, devices)
    assert not gpu_fusion.gpu_member(m, {**devices, m.id: "cpu"})  # a CPU node
    assert not gpu_fusion.gpu_member(ir.Node("mul", (x, h), {}, ((8, 4), np.float32)), devices)  # h on the host
    assert not gpu_fusion.gpu_member(ir.Node("sub", (m, float("nan")), {}, ((8, 4), np.float32)), devices)
    scalar = ir.Node(ir.INPUT, (), {"slot": 4}, ((), np.float32))  # a host 0-d array: CuPy refuses it
    scaled = ir.Node("mul", (m, scalar), {}, ((8, 4), np.float32))
    assert not gpu_fusion.gpu_member(scaled, {**devices, scaled.id: "gpu"})
    assert gpu_fusion.gpu_member(scaled, {**devices, scaled.id: "gpu", scalar.id: "gpu"})  # a GPU 0-d array
    wide = ir.Node("mul", (x, ir.Node(ir.INPUT, (), {"slot": 3}, ((8, 8), np.float32))), {}, ((8, 8), np.float32))
    assert not gpu_fusion.gpu_member(wide, {**devices, wide.inputs[1].id: "gpu"})  # no broadcast from (8, 4)
    graph = ir.Graph("g", [x, b, m, s], [s])
    (group,) = gpu_fusion.groups_of(graph, devices)
    assert group.members == [m, s] and group.operands == [x, b] and group.outputs == [s]
    assert group.body == "float t0 = __fmul_rn(F32(a0), F32(a1)); float t1 = __fsub_rn(t0, F32(1.0)); o0 = t1;"
    # transcendental ops and CuPy's maximum join a chain, written as CuPy's ufuncs write them
    z = ir.Node("sigmoid", (s,), {}, ((8, 4), np.float32))
    r = ir.Node("relu", (ir.Node("tanh", (z,), {}, ((8, 4), np.float32)),), {}, ((8, 4), np.float32))
    graph = ir.Graph("g", [x, b, m, s, z, r.inputs[0], r], [r])
    (chain,) = gpu_fusion.groups_of(graph, {**devices, z.id: "gpu", r.id: "gpu", r.inputs[0].id: "gpu"})
    assert chain.members == [m, s, z, r.inputs[0], r] and chain.outputs == [r]
    assert "float t2 = __fdiv_rn(F32(1), __fadd_rn(F32(1), exp(-t1))); float t3 = tanh(t2); " \
           "float t4 = MAXIMUM(t3, F32(0)); o0 = t4;" in chain.body
    # a kernel belongs to the array module it was made with (the stand-in's is no CuPy kernel)
    one, other = FakeCupy(), FakeCupy()
    assert gpu_fusion.kernel_for(group, one) is gpu_fusion.kernel_for(group, one)
    assert gpu_fusion.kernel_for(group, one) is not gpu_fusion.kernel_for(group, other)


def test_an_op_joins_the_input_groups_that_stay_valid():
    """`sub(b, c)` cannot join b's group (a sum reads b before the sub runs) but still joins c's:
    one invalid input group no longer keeps an op out of every group."""
    x = ir.Node(ir.INPUT, (), {"slot": 0}, ((8, 4), np.float32))
    y = ir.Node(ir.INPUT, (), {"slot": 1}, ((8, 4), np.float32))
    a = ir.Node("mul", (x, y), {}, ((8, 4), np.float32))
    b = ir.Node("add", (a, 1.0), {}, ((8, 4), np.float32))
    r = ir.Node("sum", (b,), {}, ((), np.float32))
    c = ir.Node("neg", (x,), {}, ((8, 4), np.float32))
    n = ir.Node("sub", (b, c), {}, ((8, 4), np.float32))
    t = ir.Node("tanh", (n,), {}, ((8, 4), np.float32))
    graph = ir.Graph("g", [x, y, a, b, r, c, n, t], [t, r])
    groups = gpu_fusion.groups_of(graph, {k.id: "gpu" for k in graph.nodes})
    assert [g.members for g in groups] == [[a, b], [c, n, t]]
    assert [g.outputs for g in groups] == [[b], [t]]


@pytest.mark.parametrize("kind", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(gpu_fusion.OPS))
def test_each_op_in_a_kernel_gives_its_ufuncs_bits(kind, op, dtype, monkeypatch):
    """Every op's C expression, after a multiply, passes the pre-use check: the kernel's values
    equal the registry kernels' on random operands (negative ones: log and sqrt give NaNs), and
    a binary op's on equal operands (a comparison's ties)."""
    x = ir.Node(ir.INPUT, (), {"slot": 0}, ((64, 32), dtype))
    y = ir.Node(ir.INPUT, (), {"slot": 1}, ((32,), dtype))
    m = ir.Node("mul", (x, y), {}, ((64, 32), dtype))
    out = np.bool_ if op in gpu_fusion.COMPARISONS else dtype
    cp = _use_gpu(monkeypatch, kind)
    for inputs in [(m, y), (m, m)] if gpu_fusion.OPS[op].count("{}") == 2 else [(m,)]:  # (m, m): ties
        n = ir.Node(op, inputs, {}, ((64, 32), out))
        (group,) = gpu_fusion.groups_of(ir.Graph("g", [x, y, m, n], [n]), {k.id: "gpu" for k in (x, y, m, n)})
        assert group.members == [m, n]
        assert gpu_fusion.checked(group, cp) and group.kernel is not None, group.body


# generated chains: elementwise ops on GPU tensors of one shape, with broadcast operands, 0-d
# values and Python numbers, values read in the middle of a chain, returned or stored
_FORMS = ["({} + {})", "({} * {})", "({} - {})", "({} / {})", "-{}", "np.sqrt(np.abs({}))", "np.abs({})",
          "np.tanh({})", "F.sum({})", "({} * 0.5 + {})", "np.exp({})", "np.log({})", "F.sigmoid({})",
          "F.relu({})", "np.maximum({}, {})", "(({} > {}) * {})", "(({} <= 0.5) * {})", "(({} != {}) * 1.0)"]


@st.composite
def chains(draw):
    return chain_program(draw, ["def f(x, y, row, col):"], ["x", "y", "row", "col", "2.5", "F.sum(y)"], _FORMS, 6)


_PRELUDE = "import numpy as np\nimport janus_like as jl\nfrom janus_like import F\n\n" \
           "a = jl.Variable(jl.Variable(np.linspace(-1.0, 1.0, 128).reshape(8, 16).astype(np.float32)).to('gpu'))\n\n"


@pytest.mark.parametrize("kind", DEVICES)
@settings(deadline=None, max_examples=25)
@example(program="def f(x, y, row, col):\n    t0 = (x * row)\n    t1 = (t0 * 0.5 + col)\n    t2 = F.sum(t1)\n"
                 "    t3 = (t1 - t2)\n    a.assign(a * 0.9 + t3)\n    return (t3, t0)\n")
@example(program="def f(x, y, row, col):\n    t0 = ((x > x) * y)\n    t1 = ((x <= x) * y)\n    t2 = ((row < row) * x)\n"
                 "    t3 = ((y != y) * 1.0 + (y == y) * y)\n    return (t0, t1, t2, t3)\n")  # comparisons of equal values
@given(program=chains())
def test_generated_gpu_chains_match_eager(kind, tmp_path_factory, program):
    with pytest.MonkeyPatch.context() as patch:
        _use_gpu(patch, kind)
        directory = tmp_path_factory.mktemp("gpu_chains", numbered=True)

        def make():
            mod = load_module(directory, _PRELUDE + program, "gpu_chain")
            return mod.f, {"a": mod.a}

        def call(i):
            def args(state):
                dt = np.float64 if i == 7 else np.float32  # a dtype change: another graph
                return (_gpu(random_array(i, (8, 16), dt)), _gpu(random_array(i + 20, (8, 16), np.float32)),
                        _gpu(random_array(i + 40, (16,), np.float32)), _gpu(random_array(i + 60, (8, 1), np.float32)))
            return args

        with np.errstate(all="ignore"), GraphRecorder() as rec:
            jf = side_by_side(make, [call(i) for i in range(9)])
        assert "internal-error" not in fallback_reasons(jf), jf.explain()
        event(f"fused groups: {max((g.plan.fused for g in _gpu_plans(rec)), default=0)}")
