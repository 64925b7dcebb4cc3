"""``torch.distributed.algorithms.model_averaging``: averaging parameters across ranks every
few steps (post-local SGD): ``averagers.PeriodicModelAverager`` and ``utils``'s helpers. Used
with ``shardflow.distributed.optim.PostLocalSGDOptimizer``."""

from . import averagers, utils
from .averagers import ModelAverager, PeriodicModelAverager

__all__ = ["averagers", "utils", "ModelAverager", "PeriodicModelAverager"]
