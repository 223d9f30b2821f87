"""The PyTorch side of the benchmark models (imported only when torch is installed)."""
from __future__ import annotations

import torch

torch.set_default_dtype(torch.float32)


def to_torch(x):
    """NumPy arrays become tensors on torch's default device (int64 labels stay integral); other
    values pass through."""
    import numpy as np

    if not isinstance(x, np.ndarray):
        return x
    t = torch.from_numpy(np.ascontiguousarray(x))
    return t if torch.get_default_device().type == "cpu" else t.to(torch.get_default_device())


class TorchStepper:
    """One eager PyTorch SGD step per call: autograd backward, then p -= lr * grad in place."""

    system = "torch"

    def __init__(self, loss_fn, params, batches, lr):
        self.loss_fn = loss_fn
        self.params = params
        self.batches = [tuple(to_torch(a) for a in batch) for batch in batches]
        self.lr = lr
        self.calls = 0

    def __call__(self) -> float:
        batch = self.batches[self.calls % len(self.batches)]
        self.calls += 1
        loss = self.loss_fn(*batch)
        grads = torch.autograd.grad(loss, list(self.params.values()))
        with torch.no_grad():
            for p, g in zip(self.params.values(), grads):
                p.sub_(self.lr * g)
        return float(loss.detach())

    def parameters(self) -> dict:
        return {k: p.detach().cpu().numpy().copy() for k, p in self.params.items()}

    def stats(self):
        return None
