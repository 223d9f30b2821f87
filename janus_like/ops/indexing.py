"""Index expressions as hashable templates plus array operands.

`x[i, 1:3, idx]` becomes the template `(('slot', 0), ('s', 1, 3, None), ('slot', 1))` and the
operands `[i_array, idx_array]`: the template is an op parameter (hashable, printable, usable
as a CSE key) while arrays used as indices flow through the graph like any other value.
Python ints and slices stay in the template; ints coming from graph values are slots.
"""
from __future__ import annotations

import numpy as np

_SLOT = "slot"
_SLICE = "s"


def split_index(index, is_array):
    """(template, operands). `is_array(v)` says whether v must travel as an operand."""
    items = index if isinstance(index, tuple) else (index,)
    template, operands = [], []
    for item in items:
        if isinstance(item, slice):
            template.append((_SLICE, item.start, item.stop, item.step))
        elif item is None or item is Ellipsis or (isinstance(item, (int, np.integer)) and not isinstance(item, bool)):
            template.append(int(item) if isinstance(item, np.integer) else item)
        elif is_array(item):
            template.append((_SLOT, len(operands)))
            operands.append(item)
        elif isinstance(item, (list, bool)):
            template.append((_SLOT, len(operands)))
            operands.append(np.asarray(item))
        else:
            raise TypeError(f"unsupported index component {item!r} of type {type(item).__name__}")
    return (tuple(template), not isinstance(index, tuple)), operands


def build_index(template, operands):
    """Inverse of split_index: the concrete index to apply to an array."""
    items, single = template
    out = []
    for item in items:
        if type(item) is tuple:
            if item[0] == _SLOT:
                out.append(operands[item[1]])
            else:
                out.append(slice(item[1], item[2], item[3]))
        else:
            out.append(item)
    return out[0] if single else tuple(out)


def index_source(template, operand, const=repr) -> str:
    """Python source of the index (what goes inside the brackets), for generated code:
    `operand(k)` gives the code of array operand k, `const(v)` the code of a constant."""
    items, single = template
    parts = []
    for item in items:
        if type(item) is tuple:
            if item[0] == _SLOT:
                parts.append(operand(item[1]))
            else:
                a, b, c = ("" if x is None else const(x) for x in item[1:])
                parts.append(f"{a}:{b}" + (f":{c}" if c else ""))
        elif item is None:
            parts.append("None")
        elif item is Ellipsis:
            parts.append("...")
        else:
            parts.append(const(item))
    if single:
        return parts[0]
    return ", ".join(parts) + ("," if len(parts) == 1 else "")


def is_basic(template) -> bool:
    """True when no array operands are involved (no repeated positions possible)."""
    return not any(type(i) is tuple and i[0] == _SLOT for i in template[0])


def format_index(template) -> str:
    """The index as printed in the IR: array operands as $k, no trailing comma."""
    items, single = template
    src = index_source(template, lambda k: f"${k}", str)
    return f"[{src[:-1] if not single and len(items) == 1 else src}]"
