"""``profile`` and ``record_function``: PyTorch's profiler API over shardflow's hooks.

::

    from shardflow.profiler import profile, record_function, ProfilerActivity, schedule

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=3)) as prof:
        for batch in loader:
            with record_function("train_step"):
                ...
            prof.step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

While a profile records, its :class:`Recorder` is installed in the two hook slots: the op
dispatch hook (``autograd.dispatch.set_op_profiler``: every registered op call is an
``op`` event) and ``comm.profiling.current`` (collectives with bytes, waits, DataLoader
batches). When no profile records both are None and an op costs the one check it always
did (the hook is composed into the same slot the global-tensor handler uses).

``step()`` advances the schedule: steps recorded are framed by ``ProfilerStep#N`` events
(the step summary's unit); ``on_trace_ready(prof)`` is called at the end of each active
cycle. Without a schedule everything between enter and exit is recorded. A profile
started inside another records into both. ``profile_memory`` records the bytes each op's
result allocated (``recorder.py`` says what torch counts that this does not) and
``with_stack`` the calling Python stack of each op (``key_averages(group_by_stack_n=N)``).
``with_flops`` and ``with_modules`` are accepted and ignored, with a warning (no FLOP
counts or module hierarchy are collected). ``export_memory_timeline`` (deprecated in
torch) raises NotImplementedError naming what to use instead.
"""

from __future__ import annotations

import warnings

from ..autograd import dispatch
from ..comm import profiling as _slot
from . import chrome
from .events import EventList, FunctionEvent
from .recorder import Recorder
from .schedule import ProfilerAction, ProfilerActivity, _always


def _install(rec: Recorder | None) -> None:
    _slot.set_current(rec)
    dispatch.set_op_profiler(rec.op if rec is not None else None)


class profile:  # noqa: N801 - PyTorch's name
    def __init__(self, activities=None, *, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback=None,
                 post_processing_timeout_s: float | None = None, enabled: bool = True):
        unsupported = {k: v for k, v in (("experimental_config", experimental_config),
                                         ("execution_trace_observer", execution_trace_observer),
                                         ("custom_trace_id_callback", custom_trace_id_callback))
                       if v is not None}
        if unsupported:
            raise NotImplementedError(
                f"profile({', '.join(f'{k}=...' for k in unsupported)}): shardflow's profiler has "
                "no Kineto configuration, execution trace or trace ids; leave them None")
        # use_cuda (deprecated in torch: activities=[ProfilerActivity.CUDA]) and
        # post_processing_timeout_s (how long torch waits for Kineto) change nothing here:
        # device ops are timed as CPU events and there is no post-processing
        acts = set(activities or [ProfilerActivity.CPU])
        bad = [a for a in acts if not isinstance(a, ProfilerActivity)]
        if bad:
            raise ValueError(f"profile(activities=...): expected ProfilerActivity values "
                             f"(CPU, CUDA), got {bad!r}")
        if with_flops or with_modules:
            warnings.warn("shardflow.profiler records times, bytes, memory, stacks and input "
                          "shapes only; with_flops/with_modules are ignored", stacklevel=2)
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.acc_events = acc_events
        self.activities = acts
        self.schedule = schedule or _always
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.enabled = enabled
        self.step_num = 0
        self._events: list = []  # (recorder, raw events) of finished recording windows
        self._rec: Recorder | None = None
        self._outer = None
        self._step_frame = None
        self._action = ProfilerAction.NONE

    # -- recording windows ----------------------------------------------------------------
    def _start_recording(self) -> None:
        if self._events and not self.acc_events:  # torch's rule: each cycle replaces the last
            warnings.warn("Profiler clears events at the end of each cycle. Only events from the "
                          "current cycle will be reported. To keep events across cycles, set "
                          "acc_events=True.", stacklevel=3)
            self._events = []
        self._outer = _slot.current
        self._rec = Recorder(self.record_shapes, parent=self._outer,
                             profile_memory=self.profile_memory, with_stack=self.with_stack)
        _install(self._rec)
        if self.schedule is not _always:
            self._step_frame = self._rec.begin()

    def _stop_recording(self) -> None:
        rec = self._rec
        if rec is None:
            return
        self._close_step()
        _install(self._outer)
        self._events.append(rec)
        self._rec = None

    def _close_step(self) -> None:
        if self._step_frame is not None and self._rec is not None:
            self._rec.end(self._step_frame, f"ProfilerStep#{self.step_num}", "step", None)
        self._step_frame = None

    def start(self) -> None:
        if not self.enabled:
            return
        self._action = self.schedule(self.step_num)
        if self._action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._start_recording()

    def stop(self) -> None:
        if not self.enabled:
            return
        recording = self._rec is not None
        self._stop_recording()
        if recording and self.on_trace_ready is not None and self.schedule is not _always:
            self.on_trace_ready(self)
        elif self.on_trace_ready is not None and self.schedule is _always:
            self.on_trace_ready(self)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self) -> None:
        """Signal that a training step ended (advances the schedule)."""
        if not self.enabled:
            return
        prev = self._action
        self._close_step()  # names the step that just ended
        self.step_num += 1
        self._action = self.schedule(self.step_num)
        recording = prev in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        will = self._action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if recording and (prev == ProfilerAction.RECORD_AND_SAVE or not will):
            self._stop_recording()
            if prev == ProfilerAction.RECORD_AND_SAVE and self.on_trace_ready is not None:
                self.on_trace_ready(self)
            recording = False
        if will and not recording:
            self._start_recording()
        elif will and self._rec is not None and self.schedule is not _always:
            self._step_frame = self._rec.begin()

    # -- results --------------------------------------------------------------------------
    def _recorders(self):
        return self._events + ([self._rec] if self._rec is not None else [])

    def events(self) -> EventList:
        out = EventList()
        for rec in self._recorders():
            for name, cat, tid, start, dur, self_ns, args in rec.events:
                out.append(FunctionEvent(name, cat, tid, rec.wall_us(start), dur / 1e3,
                                         self_ns / 1e3, args))
        out.sort(key=lambda e: e.start_us)
        return out

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        # (without with_stack=True there are no stacks: rows group as without group_by_stack_n
        # and the table has no Source Location column, as torch's)
        return self.events().key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def export_memory_timeline(self, path: str, device: str | None = None) -> None:
        raise NotImplementedError(
            f"export_memory_timeline({path!r}): shardflow's profiler keeps no allocation "
            "timeline (torch deprecates this method too). Use profile(profile_memory=True) and "
            "key_averages().table(sort_by='self_cpu_memory_usage') for the bytes each op "
            "allocated")

    def export_chrome_trace(self, path: str, rank: int | None = None) -> None:
        """Write the events as a Chrome trace (``pid`` = ``rank``, default this process's
        rank from the launcher's variables)."""
        if rank is None:
            from .. import _config

            try:
                rank = _config.launch_info().rank
            except ValueError:
                rank = 0
        chrome.write(path, chrome.trace_events(self.events(), rank))

    def step_summary(self) -> list[dict]:
        """Compute / comm / idle / data per step of this process (see ``chrome``)."""
        return chrome.step_summary(chrome.trace_events(self.events()))


class record_function:  # noqa: N801 - PyTorch's name
    """Label a region: ``with record_function("forward"): ...`` (a ``user`` event), or use it
    as a decorator. Records nothing when no profile is recording."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._frame = None
        self._rec = None

    def __enter__(self):
        rec = _slot.current
        if rec is not None:
            self._rec, self._frame = rec, rec.begin()
        return self

    def __exit__(self, *exc):
        if self._rec is not None:
            self._rec.end(self._frame, self.name, "user",
                          {"args": self.args} if self.args else None)
            self._rec = self._frame = None
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with record_function(self.name, self.args):
                return fn(*a, **k)

        return wrapper
