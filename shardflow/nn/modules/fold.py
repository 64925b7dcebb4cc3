"""``torch.nn.modules.fold`` path: ``Fold`` and ``Unfold`` (defined in ``sampling.py``)."""

from .module import Module
from .sampling import Fold, Unfold

__all__ = ["Fold", "Unfold", "Module"]
