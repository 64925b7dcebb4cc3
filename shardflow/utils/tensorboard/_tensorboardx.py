"""The one place shardflow imports tensorboardX (lazily, on the first ``SummaryWriter``),
and the conversion of shardflow tensors to the NumPy arrays tensorboardX accepts."""

from __future__ import annotations

import numpy as np

from ...autograd import Tensor

INSTALL_HINT = ("torch.utils.tensorboard's SummaryWriter writes through tensorboardX, which is "
                "not installed: pip install tensorboardX (or pip install 'shardflow[tensorboard]')")


def tensorboardx():
    """Import tensorboardX, or raise ImportError with the install line."""
    try:
        import tensorboardX
        import tensorboardX.summary  # noqa: F401  (add_scalars writes its runs with these)
        import tensorboardX.writer  # noqa: F401
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return tensorboardX


def to_numpy(value):
    """A shardflow Tensor as a NumPy array (a global tensor's whole value, a device array
    copied to the host); dicts, lists and tuples converted item by item; others unchanged."""
    if isinstance(value, Tensor):
        if value.is_sparse:
            value = value.to_dense()
        if value._spec is not None:
            value = value.full_tensor()
        return np.asarray(value.detach().cpu().numpy())
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_numpy(v) for v in value)
    return value
