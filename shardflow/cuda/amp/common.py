"""``torch.cuda.amp.common.amp_definitely_not_available()``: True when there is no CUDA device
(and no XLA), as torch's; autocast on ``cuda`` then disables itself."""

from ...backend.xp import cuda_is_available

__all__ = ["amp_definitely_not_available"]


def amp_definitely_not_available() -> bool:
    return not cuda_is_available()
