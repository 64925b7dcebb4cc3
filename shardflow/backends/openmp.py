"""``torch.backends.openmp``: ``is_available()`` False, shardflow's own kernels use no OpenMP
(NumPy's BLAS keeps its own thread pool; ``torch.set_num_threads`` sizes it)."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    return False
