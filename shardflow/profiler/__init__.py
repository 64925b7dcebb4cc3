"""``shardflow.profiler``: PyTorch's profiler API (``torch.profiler``) and rank timelines.

``profile``, ``record_function``, ``ProfilerActivity``, ``ProfilerAction``, ``schedule``;
``prof.key_averages().table(...)``, ``prof.export_chrome_trace(path)``; plus
``tensorboard_trace_handler`` / ``supported_activities`` (``handlers.py``); ``prof.step_summary()`` (compute / comm / idle / data per step) and ``chrome.merge`` used
by ``shardflow run --timeline`` to join the ranks' traces. Layer L3: it installs its
recorder into the hook slots of the layers below (``autograd.dispatch`` for ops,
``comm.profiling`` for collectives, waits and data loading). See docs/BENCH.md.
"""

from . import chrome, profiler  # profiler: torch.profiler.profiler's path
from .events import EventList, FunctionEvent, FunctionEventAvg
from .handlers import (
           ExecutionTraceObserver,
           kineto_available,
           supported_activities,
           tensorboard_trace_handler,
)
from .profile import profile, record_function
from .schedule import ProfilerAction, ProfilerActivity, schedule

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction",
           "ProfilerActivity", "chrome", "profile", "record_function", "schedule",
           "tensorboard_trace_handler", "supported_activities", "kineto_available",
           "ExecutionTraceObserver"]
