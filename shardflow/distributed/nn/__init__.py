"""``torch.distributed.nn``'s path: the differentiable collectives of ``functional``
(``all_reduce``, ``all_gather``, ``broadcast``, ...; PyTorch re-exports them here too) and
``RemoteModule`` (RPC; it lives in ``distributed/rpc/remote_module.py``)."""

from .api.remote_module import RemoteModule
from .functional import (
    ReduceOp,
    all_gather,
    all_reduce,
    all_to_all,
    all_to_all_single,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    scatter,
)

__all__ = [
    "ReduceOp", "RemoteModule", "all_gather", "all_reduce", "all_to_all", "all_to_all_single",
    "broadcast", "gather", "reduce", "reduce_scatter", "scatter",
]
