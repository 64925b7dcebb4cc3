"""torch's module path of the default planners (``from
torch.distributed.checkpoint.default_planner import DefaultSavePlanner``): ``planner.py``."""

from .planner import DefaultLoadPlanner, DefaultSavePlanner

__all__ = ["DefaultSavePlanner", "DefaultLoadPlanner"]
