"""``shardflow.distributed.autograd``: PyTorch's import path for distributed autograd
(``torch.distributed.autograd``); it lives in ``distributed/rpc/dist_autograd.py``."""

from ..rpc.dist_autograd import (
    DistAutogradContext,
    _get_debug_info,
    backward,
    context,
    get_gradients,
    is_available,
)

__all__ = ["context", "backward", "get_gradients", "DistAutogradContext", "is_available"]
