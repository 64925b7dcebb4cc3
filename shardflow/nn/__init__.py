"""``shardflow.nn`` (layer L4): ``Module``, ``Parameter``, layers, ``functional``, ``init``.

Names and semantics follow ``torch.nn`` so a PyTorch model file runs with its import
changed. See ``module.py`` for the Module contract (registration order, deduplicated
traversal, validated in-place ``load_state_dict``).
"""

from .._lazy import lazy_attributes as _lazy_attributes
from . import attention, functional, init, modules, parallel, utils
from ._factory import factory_kwargs
from .module import Module
from .modules import *
from .parallel import DataParallel, SyncBatchNorm
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

# torch.nn's legacy quantization paths (re-exports of shardflow.ao.nn, a layer above nn: the
# one recorded exception in pyproject.toml's contract), loaded on first use; and the rarely
# imported helpers common_types (type aliases) and grad (convolution gradients)
__getattr__, __dir__ = _lazy_attributes(__name__, globals(), {"intrinsic", "qat", "quantized", "common_types", "grad"})
