"""``shardflow.nn`` (layer L4): ``Module``, ``Parameter``, layers, ``functional``, ``init``.

Names and semantics follow ``torch.nn`` so a PyTorch model file runs with its import
changed. See ``module.py`` for the Module contract (registration order, deduplicated
traversal, validated in-place ``load_state_dict``).
"""

from . import attention, functional, init, modules, parallel, utils
from .module import Module
from .modules import *
from .parallel import DataParallel, SyncBatchNorm
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
