"""``torch.cpu.amp.grad_scaler``: the module path of ``GradScaler`` (``shardflow.cpu.amp``'s)."""

from . import GradScaler

__all__ = ["GradScaler"]
