"""PyTorch's ``torch.utils`` paths: ``data``, ``checkpoint``, ``dlpack``, ``hooks``
(``RemovableHandle``), ``_pytree`` (nested containers), ``benchmark`` (``Timer``, ``Compare``),
``model_zoo`` (``load_url``, the hub's weight download), ``swap_tensors`` / ``set_module``
(``swap.py``);
``tensorboard`` is imported on request, as ``torch.utils.tensorboard`` is."""

from . import _pytree, benchmark, checkpoint, data, dlpack, hooks, model_zoo
from .swap import set_module, swap_tensors
