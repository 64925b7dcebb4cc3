"""``torch.utils.data.backward_compatibility.worker_init_fn``: torch's deprecated no-op (it once
sharded DataPipes per worker; ``DataLoader`` does that itself), with torch's FutureWarning."""

from __future__ import annotations

import warnings

__all__ = ["worker_init_fn"]


def worker_init_fn(worker_id) -> None:
    warnings.warn("Usage of `backward_compatibility.worker_init_fn` is deprecated as `DataLoader` automatically "
                  "applies sharding in every worker", FutureWarning, stacklevel=2)
