"""``shardflow.utils.data`` is ``shardflow.data`` (PyTorch's ``torch.utils.data`` path)."""

from ..data import *  # noqa: F403
from ..data import __all__  # noqa: F401
