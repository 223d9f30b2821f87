"""Optional systems the benchmarks compare against, found without failing when absent.

Each finder returns the module (or the `jit` decorator) or None, never raises: a benchmark run
must work on a machine with only NumPy, and keep working as the JIT lands.
"""
from __future__ import annotations

import importlib
import os
import platform
import sys
import types


def numba_available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def find_jit():
    """`janus_like.jit` when it exists and is a decorator, else None.

    `janus_like` resolves `jit` lazily from its `jit` subpackage; while that subpackage is being
    written the lookup may fail in any way (even RecursionError), so every error means "no jit".
    """
    try:
        import janus_like

        candidate = getattr(janus_like, "jit", None)
        if isinstance(candidate, types.ModuleType):  # the subpackage itself, not the decorator
            candidate = getattr(candidate, "jit", None)
    except Exception:  # noqa: BLE001 - any failure while the JIT is absent or broken means "none"
        candidate = None
    if candidate is None:
        try:
            candidate = getattr(importlib.import_module("janus_like.jit"), "jit", None)
        except Exception:  # noqa: BLE001
            candidate = None
    return candidate if callable(candidate) and not isinstance(candidate, types.ModuleType) else None


def _optional(name):
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - ImportError, or a broken install: skip either way
        return None


def torch_or_none():
    return _optional("torch")


def jax_or_none():
    """JAX on CPU in float32, or None."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    return _optional("jax")


def _openblas():
    """NumPy's OpenBLAS as a ctypes library plus its symbol prefix, or None (Linux only)."""
    import ctypes

    import numpy  # noqa: F401  (loads the library)

    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({p for p in fh.read().split() if "openblas" in p and ".so" in p})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""), ("openblas", "64_"),
                               ("openblas", "")):
            if hasattr(lib, f"{prefix}_get_num_threads{suffix}"):
                return lib, prefix, suffix
    return None


def blas_threads(n: int | None = None):
    """Set NumPy's OpenBLAS thread count to `n` (when given); return the count now in force, or
    None when it cannot be controlled here (another BLAS, another OS).

    Why: on a small shared machine a multi-threaded BLAS call can stall for milliseconds while
    its helper thread waits for a busy core (a 400x150 @ 150x16 matmul measured 0.03 ms or 8 ms
    from run to run), which swamps what the benchmarks measure. One thread is the stable default.
    """
    found = _openblas()
    if found is None:
        return None
    lib, prefix, suffix = found
    if n is not None:
        getattr(lib, f"{prefix}_set_num_threads{suffix}")(int(n))
    return int(getattr(lib, f"{prefix}_get_num_threads{suffix}")())


def machine_info() -> dict:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        # the kernels NumPy's OpenBLAS runs: a machine may pin them (OPENBLAS_CORETYPE=Haswell on an
        # AVX-512 CPU made every product ~1.6x slower than OpenBLAS's own choice, SkylakeX, and than JAX's)
        "openblas_core": openblas_core(),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
    }


def openblas_core():
    """The core NumPy's OpenBLAS chose its kernels for (`Haswell`, `SkylakeX`, ...), or None."""
    import ctypes

    try:
        from numpy._core import _multiarray_umath as module
        lib = ctypes.CDLL(module.__file__)
    except (ImportError, OSError):
        return None
    for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
        f = getattr(lib, name, None)
        if f is not None:
            f.restype = ctypes.c_char_p
            return f().decode()
    return None


def versions() -> dict:
    import numpy

    import janus_like

    out = {"numpy": numpy.__version__, "janus_like": janus_like.__version__,
           "jit": find_jit() is not None}
    for name in ("torch", "jax", "jaxlib", "numba"):
        mod = sys.modules.get(name)
        if mod is None and name == "torch":
            mod = torch_or_none()
        if mod is None and name in ("jax", "jaxlib"):
            mod = jax_or_none() if name == "jax" else _optional("jaxlib")
        out[name] = getattr(mod, "__version__", None) if mod is not None else None
    return out
