"""``OffloadPolicy`` / ``CPUOffloadPolicy`` (PyTorch FSDP2's names).

``CPUOffloadPolicy(pin_memory=True)`` asks that sharded parameters, their gradients and the
optimizer state live in host memory, the optimizer step running on the CPU, and that
only the gathered parameters of the unit being computed sit on the device. shardflow's
CPU backend keeps every array in host memory already, so on CPU the policy is a no-op
path with identical results (the shards are NumPy arrays the optimizer updates in place);
the API is kept so that a script written for a GPU runs unchanged. Device (CuPy)
parameters are refused with a clear error until the NCCL backend lands.
"""

from __future__ import annotations

import numpy as np

__all__ = ["OffloadPolicy", "CPUOffloadPolicy"]


class OffloadPolicy:
    """No offloading (the default)."""

    def check(self, params, label: str) -> None:
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class CPUOffloadPolicy(OffloadPolicy):
    """Keep shards, gradients and optimizer state in host memory (a no-op on the CPU backend)."""

    def __init__(self, pin_memory: bool = True):
        self.pin_memory = bool(pin_memory)

    def check(self, params, label: str) -> None:
        for p in params:
            if type(p.array) is not np.ndarray:
                raise NotImplementedError(
                    f"fully_shard({label}, offload_policy=CPUOffloadPolicy()): parameters on "
                    f"{type(p.array).__module__} arrays cannot be offloaded yet (no device "
                    "transport); keep the model on the CPU, where the policy is a no-op")

    def __repr__(self) -> str:
        return f"CPUOffloadPolicy(pin_memory={self.pin_memory})"
