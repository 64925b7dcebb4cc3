"""``torch.distributed.tensor.experimental``'s path: ``local_map`` (``global_tensor.py``) and
``implicit_replication``."""

from contextlib import contextmanager

from ...global_tensor import local_map

__all__ = ["local_map", "implicit_replication"]


@contextmanager
def implicit_replication():
    """PyTorch's context in which a plain tensor next to DTensors is taken as replicated.
    shardflow always does that for a local tensor that does not require grad (docs/GLOBAL.md),
    so the context changes nothing."""
    yield
