"""The op registry (one definition per primitive) and the functional API `F`.

Input: arrays, tensors or symbolic graph values. Output: the same kind of value. Importing this
package registers every primitive.
"""
from . import api as F  # noqa: F401
from . import primitives  # noqa: F401  (registers the primitive ops)
from . import linalg  # noqa: F401
from . import memory  # noqa: F401
from . import statistics  # noqa: F401
from . import padding  # noqa: F401
from . import draws  # noqa: F401
from . import more_math  # noqa: F401
from . import scans  # noqa: F401
from . import library  # noqa: F401
from . import eager_vjp  # noqa: F401
from . import recursion  # noqa: F401
from .registry import REGISTRY, Op, P, bind, register  # noqa: F401

try:  # convolution and pooling live in their own file
    from . import conv  # noqa: F401
except ImportError:  # pragma: no cover - only during development
    pass
