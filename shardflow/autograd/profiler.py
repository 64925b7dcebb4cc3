"""``torch.autograd.profiler`` path: the legacy profiler API over ``shardflow.profiler``.

``profile(enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, ...)`` is
``shardflow.profiler.profile`` with the legacy signature (``enabled`` first, no activities
or schedule: it records CPU ops, and collectives as shardflow's profiler does);
``prof.table()``, ``prof.function_events``, ``prof.key_averages()``,
``prof.self_cpu_time_total`` and ``export_chrome_trace`` answer as in torch.
``record_function`` is the same class. ``emit_nvtx`` / ``emit_itt`` (annotations for
NVIDIA's / Intel's external profilers) are accepted and record nothing: shardflow emits no
NVTX ranges.

Layering: ``shardflow.profiler`` (L3) sits above ``autograd`` (L2); this path module is the one
recorded exception in the import-linter contract (``ignore_imports``), and nothing in
``autograd`` imports it.
"""

from __future__ import annotations

from ..profiler import EventList, FunctionEvent, record_function
from ..profiler import profile as _profile

__all__ = ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList", "FunctionEvent"]


class profile(_profile):  # noqa: N801 - PyTorch's name
    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True, experimental_config=None,
                 acc_events: bool = False, custom_trace_id_callback=None,
                 post_processing_timeout_s: float | None = None, activity_filters=None) -> None:
        # use_cuda / use_device / use_kineto / use_cpu choose torch's backends; shardflow's one
        # recorder times every op as a CPU event whatever they say
        if activity_filters is not None:
            raise NotImplementedError("profile(activity_filters=...): shardflow's profiler records "
                                      "every CPU op event; leave it None")
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules, enabled=enabled,
                         experimental_config=experimental_config, acc_events=acc_events,
                         custom_trace_id_callback=custom_trace_id_callback)

    @property
    def function_events(self) -> EventList:
        return self.events()

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit,
                                         max_name_column_width=max_name_column_width, header=header)

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of the events' self CPU times (microseconds)."""
        return sum(e.self_cpu_time_total for e in self.events())


class emit_nvtx:  # noqa: N801 - PyTorch's name
    """Accepted for torch's API; records nothing (shardflow emits no NVTX ranges)."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


class emit_itt(emit_nvtx):  # noqa: N801 - PyTorch's name
    """Accepted for torch's API; records nothing (shardflow emits no ITT ranges)."""
