"""``shardflow.utils.data`` is ``shardflow.data`` (PyTorch's ``torch.utils.data`` path), with
PyTorch's submodule paths: ``dataloader``, ``distributed``, ``sampler``, ``dataset``."""

from ...data import *  # noqa: F403
from ...data import __all__  # noqa: F401
from . import dataloader, dataset, distributed, sampler  # noqa: F401
