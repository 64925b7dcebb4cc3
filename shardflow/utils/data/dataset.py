"""``torch.utils.data.dataset``: the datasets (``shardflow/data/dataset.py``)."""

from ...data.dataset import *  # noqa: F403
from ...data.dataset import __all__  # noqa: F401
