"""``torch.autograd.profiler_util``: the module path of the profiler's result types
(``EventList``, ``FunctionEvent``, ``FunctionEventAvg``: ``shardflow.profiler``'s, what
``prof.events()`` / ``prof.key_averages()`` return). torch's other helpers there (``Kernel``,
``Interval``, ``MemRecordsAcc``, ``StringTable``, ``EventMetadata``) are not built.

Layering: like ``autograd/profiler.py``, a path module over ``shardflow.profiler`` (L3),
recorded in the import-linter contract's ``ignore_imports``; nothing in ``autograd`` imports it.
"""

from ..profiler import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]
