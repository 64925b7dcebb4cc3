"""The factory keywords every PyTorch tensor maker takes: ``layout=``, ``pin_memory=``,
``memory_format=`` (``torch.zeros(3, layout=torch.strided, pin_memory=False)``).

shardflow's tensors are dense and row-major, so each keyword is honoured as far as that
allows and refused where it cannot be, never ignored:

* ``layout``: ``None`` or ``strided`` (the default); ``sparse_coo`` raises
  NotImplementedError naming the fix (make the dense tensor, then ``.to_sparse()``);
  anything else raises torch's TypeError.
* ``pin_memory=True``: as ``Tensor.pin_memory()`` (``tensor_methods.py``): torch's CPU-build
  RuntimeError when no CUDA device is present, accepted where one is.
* ``memory_format``: any ``torch.memory_format`` (``backend/memory_format.py``: the values
  stay row-major), a TypeError for anything else; ``empty(memory_format=preserve_format)``
  raises torch's RuntimeError (there is no input whose format to preserve).
"""

from __future__ import annotations

from ..backend import cuda_is_available
from ..backend.layout import layout as _layout
from ..backend.layout import sparse_coo, strided
from ..backend.memory_format import memory_format as _memory_format
from ..backend.memory_format import preserve_format

__all__ = ["check_factory_options"]


def check_factory_options(op: str, layout=None, pin_memory=False, memory_format=None,
                          *, preserve_ok: bool = True) -> None:
    """Raise unless ``op``'s ``layout`` / ``pin_memory`` / ``memory_format`` can be honoured.

    ``preserve_ok=False`` for makers with no input tensor (``empty``), where torch refuses
    ``preserve_format``.
    """
    if layout is not None and layout is not strided:
        if layout is sparse_coo:
            raise NotImplementedError(
                f"{op}(layout=torch.sparse_coo) is not supported: shardflow makes this tensor "
                f"dense; call .to_sparse() on the result")
        if not isinstance(layout, _layout):
            raise TypeError(f"{op}(): argument 'layout' must be torch.layout, not {type(layout).__name__}")
    if pin_memory and not cuda_is_available():
        raise RuntimeError(
            f"{op}(pin_memory=True) requires a CUDA or other accelerator backend; no pinned "
            f"memory allocator is available on this system (pass pin_memory=False)")
    if memory_format is not None:
        if not isinstance(memory_format, _memory_format):
            raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, "
                            f"not {type(memory_format).__name__}")
        if memory_format is preserve_format and not preserve_ok:
            raise RuntimeError(f"{op}(): unsupported memory format Preserve (pass "
                               f"torch.contiguous_format, or use {op}_like to preserve an input's)")
