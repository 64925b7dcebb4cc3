"""``torch.profiler.profiler``: the module path programs import the profiler from (``from
torch.profiler.profiler import profile, ProfilerAction``); the objects of ``shardflow.profiler``."""

from .handlers import ExecutionTraceObserver, supported_activities, tensorboard_trace_handler
from .profile import profile
from .schedule import ProfilerAction, schedule

__all__ = ["supported_activities", "ProfilerAction", "schedule", "tensorboard_trace_handler", "profile",
           "ExecutionTraceObserver"]
