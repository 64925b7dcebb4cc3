"""``torch.cuda.amp.grad_scaler``: the module path of ``GradScaler`` (``shardflow.cuda.amp``'s)."""

from . import GradScaler

__all__ = ["GradScaler"]
