"""janus_like: imperative NumPy-style deep learning, made fast by a speculative JIT.

Eager front end: `Tensor`, `Variable`, `GradientTape`, `grad`, `value_and_grad`, `nn`, `optim`,
and NumPy's own functions on tensors. The JIT (`jit`) profiles a function during warm-up calls,
generates an asserted dataflow graph from its source, and falls back to eager whenever an
assumption fails, so results always equal eager execution.
"""
from . import ops  # noqa: F401  (registers primitives first)
from .ops import F  # noqa: F401
from .backend import device, gpu_available  # noqa: F401
from .tensor import Tensor, Variable, tensor  # noqa: F401
from .autodiff import GradientTape, grad, value_and_grad  # noqa: F401
from .errors import JanusError, OpError, ShapeError, GradientError  # noqa: F401

__version__ = "0.1.0"


from . import nn, optim  # noqa: E402,F401
from .jit import explain, jit, run_path  # noqa: E402,F401  (the function shadows the subpackage name)
