"""``torch.nn.modules.module`` path: the Module base class lives in ``shardflow.nn.module``."""

from ..module import Module, RemovableHandle, _addindent, _IncompatibleKeys  # noqa: F401 (torch's path)
from ..module_global_hooks import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)

__all__ = ["Module", "RemovableHandle", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]
