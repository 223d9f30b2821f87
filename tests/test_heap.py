"""executor/heap.py: compiled graphs ask glibc's malloc to keep freed temporaries in the heap,
so a steady-state step does not fault its memory back in on every call."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from janus_like import ir
from janus_like.executor import heap

_STEP = textwrap.dedent("""
    import resource, numpy as np, janus_like as jl
    x = np.random.default_rng(0).standard_normal((64, 1 << 14))  # 8 MiB
    w = np.random.default_rng(1).standard_normal((1 << 14, 64)) * 0.01

    @jl.jit(native="off")
    def step(x, w):
        h = np.tanh(x @ w)
        g = (x * 2.0) - x.mean()  # 8 MiB temporaries, all freed before the call returns
        k = np.exp(-g) + np.sqrt(np.abs(g))
        return h.sum() + k.sum()

    for _ in range(10):
        step(x, w)
    assert step.stats()["graph_calls"] >= 5
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        step(x, w)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 20, {kept})
""")


@pytest.mark.skipif(heap._lookup() is None or not sys.platform.startswith("linux"), reason="needs glibc's mallopt")
def test_a_steady_step_faults_no_pages_back_in_unless_malloc_is_left_alone(tmp_path):
    script = tmp_path / "step.py"  # a file: the JIT reads the function's source
    script.write_text(_STEP.replace("{kept}", "__import__('janus_like.executor.heap').executor.heap.kept()"))
    out = {}
    for mode in ("default", "os"):
        env = dict(os.environ)
        env.pop("JANUS_LIKE_HEAP", None)
        if mode == "os":
            env["JANUS_LIKE_HEAP"] = "os"
        text = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True).stdout
        faults, kept = text.split()
        out[mode] = float(faults), int(kept)
    assert out["default"][1] == heap.TRIM_MIN and out["os"][1] == 0
    # 4 KiB pages: each 8 MiB temporary faulted back in is 2,048 of them
    assert out["default"][0] < 50, out
    assert out["os"][0] > 250, out  # the premise: malloc's own policy hands memory back (998-1509 measured)


@pytest.fixture
def fake_mallopt(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_mallopt", [lambda param, value: calls.append((param, value)) or 1])
    monkeypatch.setattr(heap, "_kept", [0])
    monkeypatch.delenv("JANUS_LIKE_HEAP", raising=False)
    return calls


def test_both_thresholds_are_set_once_and_the_kept_memory_only_grows(fake_mallopt):
    assert heap.keep_for(1 << 20) == heap.TRIM_MIN
    assert heap.keep_for(100 << 20) == 200 << 20
    assert heap.keep_for(10 << 20) == 200 << 20  # a smaller graph changes nothing
    assert heap.keep_for(10 << 30) == heap.TRIM_MAX
    assert fake_mallopt == [(heap.M_MMAP_THRESHOLD, heap.MMAP_THRESHOLD), (heap.M_TRIM_THRESHOLD, heap.TRIM_MIN),
                            (heap.M_TRIM_THRESHOLD, 200 << 20), (heap.M_TRIM_THRESHOLD, heap.TRIM_MAX)]


def test_os_leaves_malloc_alone(fake_mallopt, monkeypatch):
    monkeypatch.setenv("JANUS_LIKE_HEAP", "os")
    assert heap.keep_for(1 << 20) == 0 and fake_mallopt == []


def test_without_mallopt_nothing_is_set(monkeypatch):
    monkeypatch.setattr(heap, "_mallopt", [None])
    monkeypatch.setattr(heap, "_kept", [0])
    monkeypatch.delenv("JANUS_LIKE_HEAP", raising=False)
    assert heap.keep_for(1 << 20) == 0 and heap.kept() == 0


def test_graph_bytes_counts_computed_values_of_static_shape():
    f32 = np.dtype(np.float32)
    x = ir.Node(ir.INPUT, (), {"slot": 0, "name": "x"}, ((10, 10), f32))
    c = ir.Node(ir.CONST, (), {"value": np.ones((10, 10), f32)}, ((10, 10), f32))
    y = ir.Node("add", (x, c), {}, ((10, 10), f32))
    z = ir.Node("sum", (y,), {"axis": None, "keepdims": False}, ((), np.dtype(np.float64)))
    g = ir.Graph("g", [x, c, y, z], [z], 1)
    assert heap.graph_bytes(g) == 400 + 8
