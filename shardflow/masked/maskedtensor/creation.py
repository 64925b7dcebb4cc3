"""``torch.masked.maskedtensor.creation``: ``masked_tensor`` and ``as_masked_tensor`` (``core.py``)."""

from .core import as_masked_tensor, masked_tensor

__all__ = ["as_masked_tensor", "masked_tensor"]
