"""Optimizers with TensorFlow's calling convention: `opt.apply_gradients(zip(grads, variables))`.

Input: (gradient, Variable) pairs. Output: none; each Variable is updated in place with `assign`
or `assign_sub`, and so is the optimizer's own state. That state lives in Variables only — the
slots (momentum buffers, Adam moments) in a dict keyed by the Variable they belong to, created
lazily on first use, and the step counter `iterations` (an int64 scalar Variable). Python-level
values never change across calls, so a jitted training step sees the same attributes every time.

Hyperparameters are plain Python floats. NumPy 2 treats Python floats as "weak" scalars, so
`lr * grad` keeps a float32 gradient float32; the one float64 intermediate (Adam's bias
correction, computed from the int64 step) is cast to the parameter's dtype before it meets it.
The update formulas follow PyTorch (eps added outside the square root, L2 weight decay added to
the gradient); each class docstring states its formula.
"""
from __future__ import annotations

import numpy as np

from . import backend
from .ops import api as F
from .tensor import Variable


class Optimizer:
    """Base class: `apply_gradients` calls `_update(grad, var)` for each pair whose gradient is
    not None, then adds one to `iterations`. Subclasses define `_update`."""

    def __init__(self, lr):
        self.lr = float(lr)
        self.iterations = Variable(np.int64(0), name="iterations", trainable=False)
        self._slots: dict[Variable, dict[str, Variable]] = {}

    def apply_gradients(self, grads_and_vars):
        """Update each Variable from its gradient; pairs with gradient None are skipped (a
        variable the loss does not depend on). Returns None."""
        for grad, var in grads_and_vars:
            if grad is not None:
                self._update(grad, var)
        self.iterations.assign_add(1)

    def minimize(self, loss_fn, variables):
        """One step on `loss_fn()` (a function of no arguments) over `variables`; returns the loss."""
        from .autodiff import GradientTape

        with GradientTape() as tape:
            loss = loss_fn()
        grads = tape.gradient(loss, variables)
        self.apply_gradients(zip(grads, variables))
        return loss

    def _update(self, grad, var):
        raise NotImplementedError

    # ---------------------------------------------------------------- slots
    def _slot(self, var, name, initial=0.0):
        """The slot Variable `name` of `var`, created (same shape and dtype, filled with
        `initial`, not trainable) the first time it is asked for."""
        slots = self._slots.get(var)
        if slots is None:
            slots = {}
            self._slots[var] = slots
        slot = slots.get(name)
        if slot is None:
            # on the variable's device: a GPU weight's moments are GPU arrays
            xp = backend.array_module(var._data)
            slot = Variable(xp.full(var.shape, initial, dtype=var.dtype), name=name, trainable=False)
            slots[name] = slot
        return slot

    def get_slot(self, var, name) -> Variable:
        """The slot Variable `name` (e.g. "momentum", "m", "v") of `var`; KeyError if none yet."""
        return self._slots[var][name]

    def variables(self) -> list[Variable]:
        """The optimizer's own state: `iterations` then every slot, in creation order."""
        return [self.iterations] + [slot for slots in self._slots.values() for slot in slots.values()]


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov momentum and L2 decay.

        g   = grad + weight_decay * var
        buf = momentum * buf + g                      (only when momentum > 0)
        var -= lr * (g + momentum * buf  if nesterov else  buf)      (or lr * g without momentum)

        >>> import numpy as np, janus_like as jl
        >>> w = jl.Variable(np.array([1.0, 2.0], np.float32))
        >>> SGD(lr=0.5).apply_gradients([(np.array([1.0, 1.0], np.float32), w)])
        >>> w.numpy()
        array([0.5, 1.5], dtype=float32)
    """

    def __init__(self, lr, momentum=0.0, weight_decay=0.0, nesterov=False):
        super().__init__(lr)
        if nesterov and momentum <= 0.0:
            raise ValueError("SGD with nesterov=True needs momentum > 0")
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)
        self.nesterov = bool(nesterov)

    def _update(self, grad, var):
        if self.weight_decay != 0.0:
            grad = F.add(grad, F.mul(self.weight_decay, var))
        if self.momentum == 0.0:
            step = grad
        else:
            buf = self._slot(var, "momentum")
            buf.assign(F.add(F.mul(self.momentum, buf), grad))
            if self.nesterov:
                step = F.add(grad, F.mul(self.momentum, buf))
            else:
                step = buf
        var.assign_sub(F.mul(self.lr, step))


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction from the int64 step counter t = iterations + 1:

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        var -= lr * (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps)

        >>> import numpy as np, janus_like as jl
        >>> w = jl.Variable(np.array([1.0], np.float32))
        >>> opt = Adam(lr=0.1)
        >>> opt.apply_gradients([(np.array([3.0], np.float32), w)])
        >>> round(float(w.numpy()[0]), 4), int(opt.iterations.numpy())   # first step moves by ~lr
        (0.9, 1)
    """

    def __init__(self, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__(lr)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)

    def _update(self, grad, var):
        m = self._slot(var, "m")
        v = self._slot(var, "v")
        m.assign(F.add(F.mul(self.beta1, m), F.mul(1.0 - self.beta1, grad)))
        v.assign(F.add(F.mul(self.beta2, v), F.mul(1.0 - self.beta2, F.square(grad))))
        # the step is a tensor, not a Python int, so a traced step stays valid on the next call;
        # beta**t is float64 (float ** int64) and is cast to the parameter's dtype before use
        t = F.add(self.iterations, 1)
        correction1 = F.cast(F.sub(1.0, F.pow(self.beta1, t)), var.dtype)
        correction2 = F.cast(F.sub(1.0, F.pow(self.beta2, t)), var.dtype)
        m_hat = F.div(m, correction1)
        v_hat = F.div(v, correction2)
        var.assign_sub(F.mul(self.lr, F.div(m_hat, F.add(F.sqrt(v_hat), self.eps))))


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.): per-coordinate steps shrink with the sum of squared gradients.

        acc += g**2                      (acc starts at initial_accumulator_value)
        var -= lr * g / (sqrt(acc) + eps)

        >>> import numpy as np, janus_like as jl
        >>> w = jl.Variable(np.array([1.0], np.float32))
        >>> Adagrad(lr=0.5).apply_gradients([(np.array([2.0], np.float32), w)])
        >>> round(float(w.numpy()[0]), 4)
        0.5
    """

    def __init__(self, lr=1e-2, initial_accumulator_value=0.0, eps=1e-10):
        super().__init__(lr)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.eps = float(eps)

    def _update(self, grad, var):
        acc = self._slot(var, "accumulator", self.initial_accumulator_value)
        acc.assign(F.add(acc, F.square(grad)))
        var.assign_sub(F.mul(self.lr, F.div(grad, F.add(F.sqrt(acc), self.eps))))


class RMSprop(Optimizer):
    """RMSprop (Tieleman & Hinton): divide by a running root-mean-square of the gradient.

        ms = rho * ms + (1 - rho) * g**2
        var -= lr * g / (sqrt(ms) + eps)                       (momentum == 0)
        buf = momentum * buf + g / (sqrt(ms) + eps); var -= lr * buf       (momentum > 0)

        >>> import numpy as np, janus_like as jl
        >>> w = jl.Variable(np.array([1.0], np.float32))
        >>> RMSprop(lr=0.01, rho=0.99).apply_gradients([(np.array([2.0], np.float32), w)])
        >>> round(float(w.numpy()[0]), 4)    # first step: lr / sqrt(1 - rho)
        0.9
    """

    def __init__(self, lr=1e-3, rho=0.9, momentum=0.0, eps=1e-8):
        super().__init__(lr)
        self.rho, self.momentum, self.eps = float(rho), float(momentum), float(eps)

    def _update(self, grad, var):
        ms = self._slot(var, "mean_square")
        ms.assign(F.add(F.mul(self.rho, ms), F.mul(1.0 - self.rho, F.square(grad))))
        scaled = F.div(grad, F.add(F.sqrt(ms), self.eps))
        if self.momentum == 0.0:
            step = scaled
        else:
            buf = self._slot(var, "momentum")
            buf.assign(F.add(F.mul(self.momentum, buf), scaled))
            step = buf
        var.assign_sub(F.mul(self.lr, step))


__all__ = ["Optimizer", "SGD", "Adam", "Adagrad", "RMSprop"]
