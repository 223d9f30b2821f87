"""`Module`: a container of Variables and sub-modules found through its attributes.

A module owns no registry of parameters: `parameters()` walks the instance attributes each time
(in insertion order, depth first), descending into sub-modules and into lists, tuples and dicts
of modules or Variables. Plain attribute assignment is therefore all a layer needs, and what the
JIT reads (attributes, Variables) is exactly what the user wrote.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Variable


class Module:
    """Base class of layers and models.

    Subclasses assign Variables and sub-modules as attributes and define `forward`; calling the
    module calls `forward`. `parameters()` lists the trainable Variables (no duplicates, stable
    order), `state_dict()` / `load_state_dict()` save and restore every Variable by its dotted
    name, and `train()` / `eval()` set `training` on the module and all its sub-modules.

        >>> import numpy as np
        >>> from janus_like import nn, Variable
        >>> class Affine(nn.Module):
        ...     def __init__(self):
        ...         self.w = Variable(np.ones((2, 3), np.float32))
        ...         self.b = Variable(np.zeros(3, np.float32))
        ...     def forward(self, x):
        ...         return x @ self.w + self.b
        >>> [name for name, _ in Affine().named_parameters()]
        ['w', 'b']

    Subclasses need not call `Module.__init__`: `training` has a class-level default.
    """

    training = True

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---------------------------------------------------------------- traversal
    def named_variables(self) -> list[tuple[str, Variable]]:
        """Every Variable (trainable or not) with its dotted name, e.g. `layers.0.weight`.

        Order: attribute insertion order, depth first. A Variable reachable twice (a shared
        layer, a tied weight) appears once, under the first name it was reached by."""
        found: list[tuple[str, Variable]] = []
        _walk(self, "", found, seen_vars=set(), seen_modules=set(), modules=None)
        return found

    def variables(self) -> list[Variable]:
        return [v for _, v in self.named_variables()]

    def named_parameters(self) -> list[tuple[str, Variable]]:
        """The trainable Variables (those with `trainable=True`) with their dotted names."""
        return [(name, v) for name, v in self.named_variables() if v.trainable]

    def parameters(self) -> list[Variable]:
        """The trainable Variables, in the order of `named_parameters()`."""
        return [v for _, v in self.named_parameters()]

    @property
    def trainable_variables(self) -> list[Variable]:
        """TensorFlow's name for `parameters()`."""
        return self.parameters()

    def named_modules(self) -> list[tuple[str, Module]]:
        """This module (named "") and every sub-module, depth first, each once."""
        found: list[tuple[str, Module]] = []
        _walk(self, "", [], seen_vars=set(), seen_modules=set(), modules=found)
        return found

    def modules(self) -> list[Module]:
        return [m for _, m in self.named_modules()]

    # ---------------------------------------------------------------- mode
    def train(self, mode: bool = True) -> Module:
        """Set `training` on this module and every sub-module; returns self."""
        for module in self.modules():
            module.training = bool(mode)
        return self

    def eval(self) -> Module:
        """Inference mode (`training = False`): Dropout becomes the identity. Returns self."""
        return self.train(False)

    # ---------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict[str, np.ndarray]:
        """{dotted name: NumPy copy of the value} for every Variable, trainable or not.

        The arrays are copies: training the module afterwards does not change them."""
        return {name: np.array(v.numpy(), copy=True) for name, v in self.named_variables()}

    def load_state_dict(self, state: dict, strict: bool = True) -> None:
        """Assign each Variable the value stored under its name.

        Raises ValueError, before changing anything, when a shape or dtype differs (naming the
        parameter and both shapes), or, with `strict=True`, when names are missing or
        unexpected. With `strict=False` only the names present in both are loaded."""
        own = dict(self.named_variables())
        if strict:
            missing = [name for name in own if name not in state]
            unexpected = [name for name in state if name not in own]
            if missing or unexpected:
                raise ValueError(f"load_state_dict for {type(self).__name__}: missing keys {missing}, "
                                 f"unexpected keys {unexpected}; pass strict=False to load only the "
                                 f"names both have")
        updates = []
        for name, var in own.items():
            if name not in state:
                continue
            value = np.asarray(state[name])
            if value.shape != tuple(var.shape):
                raise ValueError(f"load_state_dict for {type(self).__name__}: parameter '{name}' has shape "
                                 f"{tuple(var.shape)} in the model but {value.shape} in the state dict")
            if value.dtype != var.dtype:
                raise ValueError(f"load_state_dict for {type(self).__name__}: parameter '{name}' has dtype "
                                 f"{var.dtype} in the model but {value.dtype} in the state dict "
                                 f"(shape {value.shape}); cast it first, e.g. value.astype('{var.dtype}')")
            updates.append((var, value))
        # every check passed: only now change state, so a bad dict leaves the model untouched
        for var, value in updates:
            var.assign(value)

    # ---------------------------------------------------------------- printing
    def extra_repr(self) -> str:
        """Constructor-like details shown by repr (override in layers)."""
        return ""

    def __repr__(self):
        children = []
        for name, value in vars(self).items():
            if isinstance(value, Module):
                children.append((name, value))
            elif isinstance(value, (list, tuple)):
                children.extend((f"{name}.{i}", v) for i, v in enumerate(value) if isinstance(v, Module))
            elif isinstance(value, dict):
                children.extend((f"{name}.{k}", v) for k, v in value.items() if isinstance(v, Module))
        if not children:
            return f"{type(self).__name__}({self.extra_repr()})"
        lines = [f"  ({name}): " + repr(child).replace("\n", "\n  ") for name, child in children]
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)"


def _walk(module, name, found, seen_vars, seen_modules, modules):
    """Depth-first walk of a module's attributes; appends (name, Variable) to `found` and, when
    `modules` is a list, (name, Module) to it. Seen sets hold ids: Tensor's `==` is elementwise,
    so `in` on a list of Variables would not mean identity."""
    if id(module) in seen_modules:
        return
    seen_modules.add(id(module))
    if modules is not None:
        modules.append((name, module))
    prefix = name + "." if name else ""
    for attr, value in vars(module).items():
        _visit(value, prefix + attr, found, seen_vars, seen_modules, modules)


def _visit(value, name, found, seen_vars, seen_modules, modules):
    if isinstance(value, Variable):
        if id(value) not in seen_vars:
            seen_vars.add(id(value))
            found.append((name, value))
    elif isinstance(value, Module):
        _walk(value, name, found, seen_vars, seen_modules, modules)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _visit(item, f"{name}.{i}", found, seen_vars, seen_modules, modules)
    elif isinstance(value, dict):
        for key, item in value.items():
            _visit(item, f"{name}.{key}", found, seen_vars, seen_modules, modules)
