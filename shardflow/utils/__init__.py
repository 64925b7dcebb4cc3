"""PyTorch's ``torch.utils`` paths: ``data``, ``checkpoint``, ``hooks`` (``RemovableHandle``),
``_pytree`` (nested containers), ``benchmark`` (``Timer``, ``Compare``)."""

from . import _pytree, benchmark, checkpoint, data, hooks
