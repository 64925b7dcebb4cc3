"""``torch.cuda.Stream`` / ``Event`` / ``stream()`` and friends.

With CUDA (CuPy): a ``Stream`` wraps a ``cupy.cuda.Stream`` (``with shardflow.cuda.stream(s):``
makes it CuPy's current stream, so shardflow's kernels launch on it), an ``Event`` wraps a
``cupy.cuda.Event`` and ``elapsed_time`` is ``cupy.cuda.get_elapsed_time`` (milliseconds).

Without CUDA (PyTorch's CPU build refuses these): every op has finished when it returns, so a
*host stream* is always idle (``query()`` True, ``synchronize()`` / ``wait_*`` do nothing) and
a *host event* records the host clock (``time.perf_counter``) when ``record()`` runs;
``elapsed_time`` is the time between two records in milliseconds. Timing code written as
``start.record(); work(); end.record(); torch.cuda.synchronize(); start.elapsed_time(end)``
measures ``work()`` as it does on a GPU (``synchronize()`` itself still needs CUDA: guard it,
or use ``end.synchronize()``). ``ExternalStream`` (a foreign CUDA stream pointer) needs CUDA.
"""

from __future__ import annotations

import time

from ..backend.xp import cuda_is_available, cupy

__all__ = ["Stream", "ExternalStream", "Event", "StreamContext", "stream", "current_stream",
           "default_stream", "set_stream"]


def _cp():
    """CuPy when a CUDA device is visible, else None (host streams and events)."""
    return cupy() if cuda_is_available() else None


def _device_index(device) -> int:
    if device is None:
        return -1
    if isinstance(device, int):
        return device
    from ..backend import device as _device

    return _device(device).index or 0


class Stream:
    """``torch.cuda.Stream(device=None, priority=0)``: a CUDA stream (CuPy), or a host stream
    without CUDA (see the module docstring)."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        self.priority = priority
        if "_wrap" in kwargs:  # a CuPy stream, or None for a host stream
            self._cupy = kwargs["_wrap"]
        else:
            cp = _cp()
            if cp is None:
                self._cupy = None
            elif _device_index(device) >= 0:
                with cp.cuda.Device(_device_index(device)):
                    self._cupy = cp.cuda.Stream(non_blocking=True)
            else:
                self._cupy = cp.cuda.Stream(non_blocking=True)
        self.device_index = -1
        if self._cupy is not None:
            index = _device_index(device)
            self.device_index = index if index >= 0 else int(cupy().cuda.runtime.getDevice())

    @property
    def device(self):
        from ..backend import device as _device

        return _device("cuda", self.device_index) if self._cupy is not None else _device("cpu")

    @property
    def cuda_stream(self) -> int:
        """The ``cudaStream_t`` as an integer (0 for the default stream and for host streams)."""
        return int(self._cupy.ptr) if self._cupy is not None else 0

    stream_id = cuda_stream

    def query(self) -> bool:
        """Whether all work submitted to the stream has completed."""
        return True if self._cupy is None else bool(self._cupy.done)

    def synchronize(self) -> None:
        """Wait for all work submitted to the stream."""
        if self._cupy is not None:
            self._cupy.synchronize()

    def wait_event(self, event: Event) -> None:
        """Work submitted to this stream from now on waits for ``event``."""
        event.wait(self)

    def wait_stream(self, stream: Stream) -> None:
        """Work submitted to this stream from now on waits for the work submitted to ``stream``."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one if None) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        if self._cupy is None or other._cupy is None:
            return self is other
        return (self.cuda_stream, self.device_index) == (other.cuda_stream, other.device_index)

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index)) if self._cupy is not None else id(self)

    def __enter__(self):
        self._ctx = StreamContext(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        return False

    def __repr__(self):
        where = f"device={self.device}" if self._cupy is not None else "host"
        return f"<shardflow.cuda.Stream {where} cuda_stream={self.cuda_stream:#x}>"


class ExternalStream(Stream):
    """``torch.cuda.ExternalStream(stream_ptr, device=None)``: a CUDA stream made elsewhere
    (CuPy's ``ExternalStream``); needs CUDA."""

    def __init__(self, stream_ptr, device=None, **kwargs):
        cp = _cp()
        if cp is None:
            from . import _require

            _require("ExternalStream")
        super().__init__(device, _wrap=cp.cuda.ExternalStream(int(stream_ptr)))


class Event:
    """``torch.cuda.Event(enable_timing=False, blocking=False, interprocess=False,
    external=False)``: a CUDA event (CuPy), or a host-clock event without CUDA."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, external: bool = False):
        self.enable_timing, self.blocking, self.interprocess = enable_timing, blocking, interprocess
        cp = _cp()
        self._cupy = None if cp is None else cp.cuda.Event(
            block=blocking, disable_timing=not enable_timing, interprocess=interprocess)
        self._host_time: float | None = None
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (default: the current stream)."""
        stream = current_stream() if stream is None else stream
        if self._cupy is not None:
            self._cupy.record(stream._cupy)
        else:
            self._host_time = time.perf_counter()
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        """Work submitted to ``stream`` (default: current) from now on waits for this event."""
        if self._cupy is not None:
            stream = current_stream() if stream is None else stream
            stream._cupy.wait_event(self._cupy)

    def query(self) -> bool:
        """Whether the work recorded before this event has completed."""
        return True if self._cupy is None else bool(self._cupy.done)

    def synchronize(self) -> None:
        """Wait (on the host) for the work recorded before this event."""
        if self._cupy is not None:
            self._cupy.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event's record and ``end_event``'s."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if self._cupy is not None:
            return float(cupy().cuda.get_elapsed_time(self._cupy, end_event._cupy))
        return (end_event._host_time - self._host_time) * 1000.0

    def __repr__(self):
        kind = "cuda" if self._cupy is not None else "host clock"
        state = "recorded" if self._recorded else "uninitialized"
        return f"<shardflow.cuda.Event ({kind}) {state}>"


_HOST_DEFAULT = Stream(_wrap=None)
_host_current = [_HOST_DEFAULT]


def default_stream(device=None) -> Stream:
    """The device's default (null) stream; the host stream without CUDA."""
    cp = _cp()
    if cp is None:
        return _HOST_DEFAULT
    return Stream(device, _wrap=cp.cuda.Stream.null)


def current_stream(device=None) -> Stream:
    """The stream work is submitted to now; the current host stream without CUDA."""
    cp = _cp()
    if cp is None:
        return _host_current[0]
    return Stream(device, _wrap=cp.cuda.get_current_stream())


def set_stream(stream: Stream) -> None:
    """Make ``stream`` current (prefer ``with shardflow.cuda.stream(s):``)."""
    if stream is None:
        return
    if stream._cupy is not None:
        stream._cupy.use()
    else:
        _host_current[0] = stream


class StreamContext:
    """``with StreamContext(s):`` makes ``s`` current inside the block (None: does nothing)."""

    def __init__(self, stream: Stream | None):
        self.stream = stream
        self.prev: Stream | None = None

    def __enter__(self):
        if self.stream is None:
            return None
        self.prev = current_stream()
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            set_stream(self.prev)
        return False


def stream(stream: Stream | None) -> StreamContext:
    """``with shardflow.cuda.stream(s):``: ``StreamContext(s)``."""
    return StreamContext(stream)
