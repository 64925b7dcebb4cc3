"""``torch.nn.parallel.replicate``: the module path of ``replicate`` (``primitives.py``)."""

from .primitives import replicate

__all__ = ["replicate"]
