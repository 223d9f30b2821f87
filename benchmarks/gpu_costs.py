"""What one GPU call costs from Python: CuPy (and PyTorch on CUDA, when installed) launching
small kernels, and how many nodes the jitted benchmark steps send to the GPU per call.

    python -m benchmarks.gpu_costs [--models tiny_mlp,mlp]

Each time is the mean over 2000 back-to-back calls on 32x32 float32 arrays with one device
synchronization at the end: launch overhead, not arithmetic. Needs CuPy and a CUDA device.
"""
from __future__ import annotations

import argparse
import sys
import time


def per_call_us(fn, sync, n=2000):
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - start) / n * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_costs", description=__doc__.splitlines()[0])
    p.add_argument("--models", default="tiny_mlp,mlp")
    args = p.parse_args(argv)
    from janus_like import backend

    if not backend.gpu_available():
        print(f"no GPU: {backend.gpu_unavailable_reason()}", file=sys.stderr)
        return 2
    cp = backend.gpu_module()
    a, b = cp.ones((32, 32), cp.float32), cp.ones((32, 32), cp.float32)
    sync = cp.cuda.runtime.deviceSynchronize
    costs = {"add": lambda: a + b, "tanh": lambda: cp.tanh(a), "matmul": lambda: a @ b,
             "sum(axis=0)": lambda: a.sum(0), "float(a.sum())": lambda: float(a.sum())}
    print("CuPy µs per call:", {k: round(per_call_us(f, sync), 1) for k, f in costs.items()})
    from . import frameworks

    torch = frameworks.torch_or_none()
    if torch is not None and torch.cuda.is_available():
        ta, tb = torch.ones(32, 32, device="cuda"), torch.ones(32, 32, device="cuda")
        costs = {"add": lambda: ta + tb, "tanh": lambda: torch.tanh(ta), "matmul": lambda: ta @ tb}
        print("PyTorch µs per call:", {k: round(per_call_us(f, torch.cuda.synchronize), 1) for k, f in costs.items()})

    import janus_like as jl

    from .models import load
    from .runner import build_systems

    backend.normalize("gpu")
    for name in args.models.split(","):
        step = build_systems(load(name), 0, False, ["jit"], jl.jit, "gpu")[0]["jit"]
        for _ in range(8):
            step()
        nodes = [sum(1 for _ in g.graph.all_nodes()) for g in step.fn.graphs()]
        print(f"{name}: {len(nodes)} graph(s), nodes per graph {nodes[:8]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
