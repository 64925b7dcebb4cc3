"""``torch.distributed.nn.api.remote_module``'s path (re-exports only)."""

from ...rpc.remote_module import RemoteModule

__all__ = ["RemoteModule"]
