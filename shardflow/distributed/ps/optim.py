"""The update a parameter server applies to its shard: SGD or Adam, state kept with the shard.

Both rules are elementwise, so applying them to each server's slice of the flat parameter
vector is exactly applying them to the whole vector: the optimizer state (Adam's moments
and step count) is ``Split(0)`` over the server sub-mesh like the parameters, and never
travels. Formulas are PyTorch's (``torch.optim.SGD`` without momentum, ``torch.optim.Adam``
without weight decay or amsgrad)::

    sgd:   x -= lr * g
    adam:  t += 1; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g
           x -= (lr / (1 - b1**t)) * m / (sqrt(v) / sqrt(1 - b2**t) + eps)

``scale`` multiplies ``lr`` for one call: the asynchronous server applies each worker's
gradient on arrival as one step with ``lr / num_workers`` (one round of ``num_workers``
pushes then moves about as far as one synchronous step).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ShardOptimizer", "make_shard_optimizer"]


class ShardOptimizer:
    """``step(shard, grad, scale)`` updates ``shard`` in place (float32 arrays of one shape)."""

    name = "sgd"

    def __init__(self, lr: float):
        if not lr >= 0:
            raise ValueError(f"lr must be >= 0, got {lr}")
        self.lr = float(lr)

    def step(self, shard: np.ndarray, grad: np.ndarray, scale: float = 1.0) -> None:
        shard -= np.float32(self.lr * scale) * grad

    def config(self) -> dict:
        return {"optimizer": self.name, "lr": self.lr}


class _ShardAdam(ShardOptimizer):
    name = "adam"

    def __init__(self, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(lr)
        b1, b2 = (float(b) for b in betas)
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise ValueError(f"betas must be in [0, 1), got {tuple(betas)}")
        if eps < 0:
            raise ValueError(f"eps must be >= 0, got {eps}")
        self.b1, self.b2, self.eps = b1, b2, float(eps)
        self.t, self.m, self.v = 0, None, None

    def step(self, shard, grad, scale=1.0):
        if self.m is None:
            self.m, self.v = np.zeros_like(shard), np.zeros_like(shard)
        self.t += 1
        b1, b2 = self.b1, self.b2
        # float64 temporaries, float32 storage: shardflow.optim.Adam's kernel rounds the same
        # way, so one server's update matches the single-process optimizer to the last bits
        g = grad.astype(np.float64)  # (n,)
        m = self.m + (1.0 - b1) * (g - self.m)
        v = b2 * self.v + (1.0 - b2) * g * g
        self.m[...], self.v[...] = m, v
        step = (self.lr * scale / (1 - b1 ** self.t)) * m / (np.sqrt(v) / math.sqrt(1 - b2 ** self.t) + self.eps)
        shard[...] = shard - step

    def config(self):
        return {**super().config(), "betas": [self.b1, self.b2], "eps": self.eps}


def make_shard_optimizer(optimizer: str, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
    """``"sgd"`` or ``"adam"`` (a clear error for anything else, before a server starts)."""
    if optimizer == "sgd":
        return ShardOptimizer(lr)
    if optimizer == "adam":
        return _ShardAdam(lr, betas, eps)
    raise ValueError(f"optimizer must be 'sgd' or 'adam' (the update the servers apply), got {optimizer!r}")
