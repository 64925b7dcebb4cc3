"""``torch.quantization.fuser_method_mappings``: legacy path of
``torch.ao.quantization.fuser_method_mappings`` (re-exports)."""

from ..ao.quantization.fuser_method_mappings import *  # noqa: F401, F403  (re-export module)
from ..ao.quantization.fuser_method_mappings import __all__  # noqa: F401
