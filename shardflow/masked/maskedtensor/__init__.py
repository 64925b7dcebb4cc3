"""``torch.masked.maskedtensor``: ``MaskedTensor`` (``core.py``, torch's file for it) and its
constructors (``creation.py``: ``masked_tensor``, ``as_masked_tensor``)."""

from . import core, creation
from .core import MaskedTensor, is_masked_tensor
from .creation import as_masked_tensor, masked_tensor

__all__ = ["MaskedTensor", "masked_tensor", "as_masked_tensor", "is_masked_tensor"]
