"""``torch.nn.parallel.scatter_gather``: the module path of ``scatter``, ``scatter_kwargs`` and
``gather`` (``primitives.py``, one device's semantics: see there)."""

from .primitives import _is_namedtuple, gather, scatter, scatter_kwargs

__all__ = ["scatter", "scatter_kwargs", "gather"]

is_namedtuple = _is_namedtuple  # torch's deprecated public spelling
