"""``torch.utils.data.sampler``: the samplers (``shardflow/data/sampler.py``)."""

from ...data.sampler import *  # noqa: F403
from ...data.sampler import __all__  # noqa: F401
