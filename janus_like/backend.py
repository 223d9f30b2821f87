"""Array backends: NumPy on the CPU (always), CuPy on a GPU (when installed and a device exists).

Every op implementation receives the array module `xp` of its operands, so one definition
serves both devices. `gpu_available()` is cheap and never raises.
"""
from __future__ import annotations

import contextlib
import functools

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
    name = _normalize(name)
    old = _state["device"]
    _state["device"] = name
    try:
        yield
    finally:
        _state["device"] = old


def _normalize(name: str) -> str:
    name = name.lower()
    if name in ("cpu",):
        return "cpu"
    if name in ("gpu", "cuda", "gpu:0", "cuda:0"):
        if not gpu_available():
            raise RuntimeError(f"device {name!r} requested but {gpu_unavailable_reason()}")
        _state["gpu_used"] = True
        return "gpu"
    raise ValueError(f"unknown device {name!r}; use 'cpu' or 'gpu'")


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
    name = _normalize(name)
    if name == "cpu":
        if device_of(array) == "gpu":
            return _cupy().asnumpy(array)
        return array
    return _cupy().asarray(array)


def asarray(data, dtype=None, copy=False):
    if _state["device"] == "gpu":
        return _cupy().array(data, dtype=dtype, copy=copy)
    return np.array(data, dtype=dtype, copy=copy or None)
