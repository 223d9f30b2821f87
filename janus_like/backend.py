"""Array backends: NumPy on the CPU (always), CuPy on a GPU (when installed and a device exists).

Every op implementation receives the array module `xp` of its operands, so one definition
serves both devices. `gpu_available()` is cheap and never raises.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util

import numpy as np

_state = {"device": "cpu", "gpu_used": False}


@functools.lru_cache(maxsize=1)
def _cupy():
    try:
        import cupy  # noqa: F401

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # not installed, no driver, no device
        return None
    return None


@functools.lru_cache(maxsize=1)
def _cupy_importable() -> bool:
    return importlib.util.find_spec("cupy") is not None


def gpu_array_type():
    """The GPU array type (cupy.ndarray) when CuPy is installed and sees a device, else None.
    Guards compare against it, so a graph made for one device never runs on the other."""
    if not _cupy_importable():
        return None
    cp = _cupy()
    return None if cp is None else cp.ndarray


def gpu_available() -> bool:
    return _cupy() is not None


def gpu_unavailable_reason() -> str:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "CuPy is not installed (pip install 'janus_like[gpu]')"
    return "CuPy is installed but no CUDA device is visible"


def current_device() -> str:
    return _state["device"]


@contextlib.contextmanager
def device(name: str):
    """`with janus_like.device("gpu"):` makes new tensors live on that device."""
    name = normalize(name)
    old = _state["device"]
    _state["device"] = name
    try:
        yield
    finally:
        _state["device"] = old


def normalize(name: str) -> str:
    """'cpu' or 'gpu' for a device name ('cuda', 'gpu:0', ...); a clear error for others (and
    'gpu' without one)."""
    name = name.lower()
    if name in ("cpu",):
        return "cpu"
    if name in ("gpu", "cuda", "gpu:0", "cuda:0"):
        if not gpu_available():
            raise RuntimeError(f"device {name!r} requested but {gpu_unavailable_reason()}")
        _state["gpu_used"] = True
        return "gpu"
    raise ValueError(f"unknown device {name!r}; use 'cpu' or 'gpu'")


def gpu_module():
    """CuPy (the module that computes on the GPU); an error naming the reason when there is none."""
    cp = _cupy()
    if cp is None:
        raise RuntimeError(f"a GPU computation was requested but {gpu_unavailable_reason()}")
    return cp


def array_module(*arrays):
    """NumPy unless some operand is a CuPy array (checked only once a GPU has been used)."""
    if _state["gpu_used"]:
        cp = _cupy()
        for a in arrays:
            if cp is not None and isinstance(a, cp.ndarray):
                return cp
    return np


def device_of(array) -> str:
    cp = _cupy() if _state["gpu_used"] else None
    return "gpu" if cp is not None and isinstance(array, cp.ndarray) else "cpu"


def to_device(array, name: str):
    name = normalize(name)
    if name == "cpu":
        if device_of(array) == "gpu":
            return _cupy().asnumpy(array)
        return array
    return _cupy().asarray(array)


def asarray(data, dtype=None, copy=False):
    """An array on the current device; data already on a GPU stays there (as a copy when asked)."""
    if _state["device"] == "gpu" or device_of(data) == "gpu":
        return _cupy().array(data, dtype=dtype, copy=copy)
    return np.array(data, dtype=dtype, copy=copy or None)


def device_operand(v):
    """A 0-d NumPy array handed to a GPU kernel becomes a NumPy scalar: the generator makes such
    constants from the Python and NumPy scalars of eager code, which CuPy accepts, and eager code
    hands one over the same way (NumPy makes a 0-d array of `np.float64(x)` in `np.float64(x) != t`)."""
    return v[()] if type(v) is np.ndarray and v.ndim == 0 else v
