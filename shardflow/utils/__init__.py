"""PyTorch's ``torch.utils`` paths: ``data``, ``checkpoint``, ``dlpack``, ``hooks``
(``RemovableHandle``), ``_pytree`` (nested containers), ``benchmark`` (``Timer``, ``Compare``),
``model_zoo`` (``load_url``, the hub's weight download);
``tensorboard`` is imported on request, as ``torch.utils.tensorboard`` is."""

from . import _pytree, benchmark, checkpoint, data, dlpack, hooks, model_zoo
