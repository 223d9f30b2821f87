"""Device placement in the JIT: a graph runs where its inputs live, transfers are explicit graph
nodes, guards tell devices apart, and an op mixing devices falls back to eager (which raises the
same error). Everything side by side with eager, on the CPU stand-in for CuPy (`fake_gpu.py`) and,
where a GPU is present, on CuPy itself (the `cupy` parameter of each test)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import janus_like as jl
from janus_like import F, backend, optim
from janus_like.executor.placement import place

from fake_gpu import FakeCupy
from jit.harness import side_by_side, call_sequence, random_array


DEVICES = ["fake", pytest.param("cupy", marks=pytest.mark.gpu)]


def _use_gpu(mp, kind):
    """The GPU module the tests run on: the stand-in, or CuPy itself (a real device)."""
    if kind == "fake":
        fake = FakeCupy()
        mp.setattr(backend, "_cupy", lambda: fake)
        mp.setattr(backend, "_cupy_importable", lambda: True)
    mp.setitem(backend._state, "gpu_used", True)
    return backend.gpu_module()


@pytest.fixture(params=DEVICES)
def gpu(request, monkeypatch):
    return _use_gpu(monkeypatch, request.param)


def host(x):
    return backend.to_device(x._data if isinstance(x, jl.Tensor) else x, "cpu")


class MLP:
    def __init__(self, seed, device):
        rng = np.random.default_rng(seed)
        self.w1 = jl.Variable(rng.standard_normal((4, 8)).astype(np.float32), name="w1").to(device)
        self.w2 = jl.Variable(rng.standard_normal((8, 3)).astype(np.float32), name="w2").to(device)

    def parameters(self):
        return [self.w1, self.w2]


def _train(device):
    def make():
        model = MLP(0, device)
        model.w1 = jl.Variable(model.w1)  # Variables living on the device
        model.w2 = jl.Variable(model.w2)
        opt = optim.SGD(0.1)

        def step(model, x, labels):
            with jl.GradientTape() as tape:
                h = F.tanh(x @ model.w1)
                loss = F.cross_entropy(h @ model.w2, labels)
            grads = tape.gradient(loss, model.parameters())
            opt.apply_gradients(zip(grads, model.parameters()))
            return loss

        return step, model

    return make


def test_the_fake_device_behaves_like_cupy_where_placement_cares(gpu):
    a = jl.tensor(np.arange(6.0).reshape(2, 3)).to("gpu")
    assert a.device == "gpu" and type(a._data) is gpu.ndarray
    with pytest.raises(TypeError):
        np.asarray(a._data)
    with pytest.raises(TypeError):  # eager code cannot mix devices either
        a + jl.tensor(np.ones(3))
    np.testing.assert_array_equal(host(np.tanh(a) * 2.0), np.tanh(np.arange(6.0).reshape(2, 3)) * 2.0)


def test_a_training_step_on_the_gpu_runs_as_a_gpu_graph_and_matches_eager(gpu):
    calls = call_sequence(6, lambda m, i: (m, jl.tensor(random_array(i, (5, 4), np.float32)).to("gpu"),
                                           jl.tensor(np.arange(5) % 3).to("gpu")))
    jf = side_by_side(_train("gpu"), calls)
    assert jf.stats()["graph_calls"] >= 3, jf.explain()
    (g,) = jf.graphs()
    assert set(g.devices.values()) >= {"gpu"} and "GK" in g.plan.source  # the GPU plan, with the device's kernels
    assert any("on gpu" in str(a.expected) for a in g.assumptions)


def test_guards_keep_cpu_and_gpu_graphs_apart(gpu):
    def make():
        def f(x, w):
            return F.tanh(x @ w).sum()

        return f, None

    w_cpu = random_array(1, (3, 2))
    devices = ["cpu"] * 5 + ["gpu"] * 5 + ["cpu", "gpu"]

    def args(_, i):
        x, w = jl.tensor(random_array(i, (4, 3))), jl.tensor(w_cpu)
        return (x, w) if devices[i] == "cpu" else (x.to("gpu"), w.to("gpu"))

    jf = side_by_side(make, call_sequence(len(devices), args))
    graphs = jf.graphs()
    assert len(graphs) == 2 and sorted(bool(g.devices) for g in graphs) == [False, True]
    assert jf.stats()["graph_calls"] >= 6


def test_transfers_inside_the_function_are_graph_nodes_with_gradients(gpu):
    def make():
        w = jl.Variable(random_array(3, (3, 2)), name="w").to("gpu")
        state = {"w": jl.Variable(w), "b": jl.Variable(np.zeros(2), name="b")}  # b stays on the CPU

        def f(state, x):
            with jl.GradientTape() as tape:
                y = F.tanh(x.to("gpu") @ state["w"])  # host batch to the device
                out = y.to("cpu") + state["b"]  # back to the host for a CPU-side term
                loss = (out * out).sum()
            gw, gb = tape.gradient(loss, [state["w"], state["b"]])
            state["w"].assign(state["w"] - 0.1 * gw)
            state["b"].assign(state["b"] - 0.1 * gb)
            return loss, out.numpy(), np.asarray(y)

        return f, state

    jf = side_by_side(make, call_sequence(6, lambda s, i: (s, jl.tensor(random_array(i, (4, 3))))))
    (g,) = jf.graphs()
    transfers = [n for n in g.graph.all_nodes() if n.op == "to_device"]
    assert {n.params["device"] for n in transfers} == {"cpu", "gpu"}
    assert jf.stats()["graph_calls"] >= 3
    assert place(g.graph)  # a mixed graph: some nodes on each device
    assert "transfers (run with CuPy kernels" in jf.explain()


def test_an_op_mixing_devices_falls_back_and_raises_like_eager(gpu):
    def make():
        def f(x, w):
            return x @ w  # w on the host, x on the device: eager raises

        return f, None

    calls = call_sequence(5, lambda s, i: (jl.tensor(random_array(i, (2, 3))).to("gpu"), jl.tensor(np.ones((3, 2)))))
    jf = side_by_side(make, calls)
    assert jf.stats()["graph_calls"] == 0
    assert "[device-mismatch]" in jf.explain()


def test_numpy_asarray_of_a_gpu_tensor_in_a_graph_is_a_host_copy(gpu):
    def make():
        def f(x):
            return np.asarray(x) * 2.0

        return f, None

    calls = call_sequence(5, lambda s, i: (jl.tensor(random_array(i, (2,))).to("gpu"),))
    jf = side_by_side(make, calls)  # a host copy of a Tensor, as Tensor.__array__ makes
    assert jf.stats()["graph_calls"] >= 1


def test_a_numpy_scalar_on_the_left_of_a_comparison_with_a_gpu_tensor(gpu):
    """NumPy hands `np.float64(x) != t` over as a 0-d array, which CuPy refuses; eager code passes
    it on as the scalar it is, as graphs do (the comparison used to raise eagerly only)."""
    def make():
        def f(x):
            s = np.sqrt(np.abs(2.5))
            return (s != x) * 1.0 + (s < x) * x, s > x

        return f, None

    calls = call_sequence(5, lambda s, i: (jl.tensor(random_array(i, (2, 3), np.float32)).to("gpu"),))
    jf = side_by_side(make, calls)
    assert jf.stats()["graph_calls"] >= 1
    assert backend.device_operand(np.array(2.5)) == 2.5 and type(backend.device_operand(np.array(2.5))) is np.float64


def test_without_a_gpu_device_arrays_are_not_checked_for(monkeypatch):
    monkeypatch.setattr(backend, "_cupy_importable", lambda: False)

    @jl.jit
    def f(x):
        return x * 2.0

    for _ in range(5):
        f(jl.tensor(np.ones(2)))
    (g,) = f.graphs()
    assert " is not K" not in g.gen.guard_src  # no device check where CuPy cannot exist


# ------------------------------------------------------------------ generated programs
_STEPS = ["tanh", "relu", "matmul", "bias", "scale", "to_cpu", "to_gpu", "host_bias"]


def _program_step(state, x, program):
    with jl.GradientTape() as tape:
        h = x
        for kind in program:
            dev = h.device
            if kind == "tanh":
                h = F.tanh(h)
            elif kind == "relu":
                h = F.relu(h)
            elif kind == "matmul":
                h = h @ state["w_" + dev]
            elif kind == "bias":
                h = h + state["b_" + dev]
            elif kind == "scale":
                h = h * 0.5
            elif kind == "to_cpu":
                h = h.to("cpu")
            elif kind == "to_gpu":
                h = h.to("gpu")
            else:
                h = h + state["b_cpu"]  # on the device, a host operand: eager raises
        loss = (h * h).sum()
    names = ["w_gpu", "w_cpu", "b_gpu", "b_cpu"]
    grads = tape.gradient(loss, [state[k] for k in names])
    for k, g in zip(names, grads):
        if g is not None:
            state[k].assign(state[k] - 0.05 * g)
    return loss, h


@pytest.mark.parametrize("kind", DEVICES)
@settings(deadline=None, max_examples=20)
@given(program=st.lists(st.sampled_from(_STEPS), min_size=1, max_size=6),
       devices=st.lists(st.sampled_from(["cpu", "gpu"]), min_size=6, max_size=6))
def test_generated_device_programs_match_eager(kind, program, devices):
    with pytest.MonkeyPatch.context() as mp:
        _use_gpu(mp, kind)

        def make():
            state = {}
            for i, dev in enumerate(["gpu", "cpu"]):
                state["w_" + dev] = jl.Variable(jl.Variable(random_array(10 + i, (3, 3))).to(dev))
                state["b_" + dev] = jl.Variable(jl.Variable(random_array(20 + i, (3,))).to(dev))
            return _program_step, state

        def args(state, i):
            return state, jl.tensor(random_array(i, (2, 3))).to(devices[i]), list(program)

        jf = side_by_side(make, call_sequence(len(devices), args))
        assert jf.stats()["graph_calls"] >= 1 or "host_bias" in program


def test_transfers_send_gradients_back_to_the_source_device(gpu):
    x = backend.to_device(np.arange(3.0), "gpu")  # a raw CuPy-like array (its .device is no str)
    assert type(F.to_device(x, "cpu")._data) is np.ndarray
    t = jl.tensor(x)  # a tensor on the device
    w = jl.Variable(np.ones(3))
    with jl.GradientTape() as tape:
        tape.watch(t)
        loss = F.sum(t.to("cpu") * w)
    g_t, g_w = tape.gradient(loss, [t, w])
    assert g_t.device == "gpu" and g_w.device == "cpu"
    np.testing.assert_array_equal(host(g_t), np.ones(3))
    np.testing.assert_array_equal(g_w.numpy(), np.arange(3.0))


def test_numpy_array_of_gpu_values_in_a_graph(gpu):
    """np.array([...]) / np.float32(...) of GPU Tensors convert through host copies, as
    Tensor.__array__ makes them; of a raw device array they raise (eager too), so eager runs."""
    def make():
        def f(x):
            return np.array([x.sum(), 1.0, x[0]]) * np.float32(x[1])

        return f, None

    calls = call_sequence(5, lambda s, i: (jl.tensor(random_array(i, (3,))).to("gpu"),))
    jf = side_by_side(make, calls)
    assert jf.stats()["graph_calls"] >= 1, jf.explain()

    def make_raw():
        def f(x):
            return np.array([x, x])

        return f, None

    calls = call_sequence(5, lambda s, i: (backend.to_device(random_array(i, (3,)), "gpu"),))
    jf = side_by_side(make_raw, calls)
    assert jf.stats()["graph_calls"] == 0


def test_a_captured_host_index_array_is_copied_to_the_gpu_again_once_written(gpu):
    """The GPU plan keeps a host index array's device copy across calls (gpu_plan.DeviceIndex):
    when the captured array is written between calls, the next call must see the new rows; the
    cross-entropy's row index (a constant) is kept as well."""
    def make():
        rows = np.array([0, 2, 3])
        labels = jl.tensor(np.array([0, 1, 2, 1, 0])).to("gpu")
        def f(x):
            return (x[rows] * 2.0).sum(axis=0) + F.cross_entropy(x[:, :3], labels)

        return f, rows


    def call(i):
        def args(rows):
            if i in (6, 7):
                rows[1] = i - 5  # written in place between calls
            if i == 8:
                rows[0] = 3
            return (jl.tensor(random_array(i % 2, (5, 4), np.float32)).to("gpu"),)
        return args

    jf = side_by_side(make, [call(i) for i in range(10)])
    (g,) = jf.graphs()
    assert g.plan.source.count("GIX") >= 2 and jf.stats()["graph_calls"] >= 5, g.plan.source
