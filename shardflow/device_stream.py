"""``torch.Stream`` / ``torch.Event``: PyTorch's device-generic stream and event classes.

``device`` (a string or ``shardflow.device``; default: the accelerator when CUDA is visible,
else the CPU) picks the backend:

* ``cuda``: the object wraps a ``shardflow.cuda.Stream`` / ``Event`` (CuPy's) and every method
  goes to it (``record_event``, ``wait_stream``, ``elapsed_time`` in milliseconds ...). Without
  a CUDA device this raises, as PyTorch's CPU build does.
* ``cpu``: PyTorch 2.13's CPU backend, call for call. A CPU op has finished when it returns, so
  ``query()`` is True and ``synchronize()`` / ``wait_event()`` / ``Event.wait()`` do nothing;
  the CPU backend has no events, so ``Event.record()``, ``Stream.record_event()`` and
  ``Stream.wait_stream()`` raise ``RuntimeError("cpu backend doesn't support events.")`` and
  ``elapsed_time`` raises PyTorch's ``ValueError`` (never recorded). All CPU streams compare
  equal (one stream, id 0). ``torch.cpu.Stream`` (``shardflow.cpu``) is a different, looser
  class, as in PyTorch.
"""

from __future__ import annotations

from .backend import device as _device
from .backend.xp import cuda_is_available

__all__ = ["Stream", "Event"]

_NO_EVENTS = "cpu backend doesn't support events."
# torch's c10::DeviceType values, what ``Stream.device_type`` answers
_DEVICE_TYPE_CODE = {"cpu": 0, "cuda": 1}


def _resolve_device(device, cls_name: str):
    """A shardflow device of type cpu or cuda, PyTorch's errors otherwise."""
    if device is None:
        return _device("cuda") if cuda_is_available() else _device("cpu")
    if isinstance(device, bool) or not isinstance(device, (str, int, _device)):
        raise TypeError(f"{cls_name}(): argument 'device' must be torch.device, "
                        f"not {type(device).__name__}")
    if isinstance(device, int):  # an accelerator index
        if not cuda_is_available():
            raise RuntimeError("Cannot access accelerator device when none is available. "
                               f"(shardflow: no CUDA device is visible; use {cls_name}"
                               "(device='cpu').)")
        return _device("cuda", device)
    dev = _device(device)
    if dev.type not in _DEVICE_TYPE_CODE:
        raise RuntimeError(f"{cls_name}(device={str(dev)!r}): shardflow's devices are 'cpu' "
                           "and 'cuda'")
    if dev.type == "cuda" and not cuda_is_available():
        raise RuntimeError(f"{cls_name}(device={str(dev)!r}) needs a CUDA device and none is "
                           "visible (shardflow runs CUDA through CuPy on an NVIDIA GPU); use "
                           "device='cpu'")
    return dev


class Stream:
    """``torch.Stream(device=None, *, priority=0)``: see the module docstring."""

    def __init__(self, device=None, *, priority: int = 0):
        self._device = _resolve_device(device, "Stream")
        self._cuda = None
        if self._device.type == "cuda":
            from .cuda.streams import Stream as CudaStream

            self._cuda = CudaStream(self._device, priority=priority)

    @property
    def device(self):
        return self._cuda.device if self._cuda is not None else _device("cpu")

    @property
    def device_type(self) -> int:
        return _DEVICE_TYPE_CODE[self._device.type]

    @property
    def device_index(self) -> int:
        return self._cuda.device_index if self._cuda is not None else -1

    @property
    def stream_id(self) -> int:
        return self._cuda.cuda_stream if self._cuda is not None else 0

    @property
    def native_handle(self) -> int:
        if self._cuda is None:
            raise RuntimeError("Backend doesn't support getting stream native handle.")
        return self._cuda.cuda_stream

    def is_capturing(self) -> bool:
        return False

    def query(self) -> bool:
        """Whether all work submitted to the stream has completed (always, on the CPU)."""
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self) -> None:
        """Wait for all work submitted to the stream."""
        if self._cuda is not None:
            self._cuda.synchronize()

    def wait_event(self, event: Event) -> None:
        """Work submitted to this stream from now on waits for ``event``."""
        if self._cuda is not None:
            self._cuda.wait_event(_cuda_event(event))

    def wait_stream(self, stream: Stream) -> None:
        """Work submitted to this stream from now on waits for the work submitted to ``stream``."""
        if self._cuda is None:
            raise RuntimeError(_NO_EVENTS)
        self._cuda.wait_stream(_cuda_stream(stream))

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one if None) on this stream; returns it."""
        if self._cuda is None:
            raise RuntimeError(_NO_EVENTS)
        event = Event(self._device) if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return False
        return (self.device_type, self.device_index, self.stream_id) == (
            other.device_type, other.device_index, other.stream_id)

    def __hash__(self):
        return hash((self.device_type, self.device_index, self.stream_id))

    def __enter__(self):
        if self._cuda is not None:
            self._cuda.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cuda is not None:
            self._cuda.__exit__(*exc)

    def __repr__(self):
        return (f"shardflow.Stream device_type={self._device.type}, "
                f"device_index={self.device_index}, stream_id={self.stream_id}")


class Event:
    """``torch.Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``:
    see the module docstring."""

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self._device = _resolve_device(device, "Event")
        self.enable_timing = bool(enable_timing)
        self._cuda = None
        if self._device.type == "cuda":
            from .cuda.streams import Event as CudaEvent

            self._cuda = CudaEvent(enable_timing=enable_timing, blocking=blocking,
                                   interprocess=interprocess)

    @property
    def device(self):
        return _device(self._device)

    @property
    def event_id(self) -> int:
        return 0 if self._cuda is None or self._cuda._cupy is None else int(self._cuda._cupy.ptr)

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (default: the current stream)."""
        if stream is not None and stream._device.type != self._device.type:
            raise RuntimeError(f"Event device type {self._device.type.upper()} does not match "
                               f"recording stream's device type {stream._device.type.upper()}.")
        if self._cuda is None:
            raise RuntimeError(_NO_EVENTS)
        self._cuda.record(None if stream is None else stream._cuda)

    def wait(self, stream: Stream | None = None) -> None:
        """Work submitted to ``stream`` (default: current) from now on waits for this event."""
        if self._cuda is not None:
            self._cuda.wait(None if stream is None else _cuda_stream(stream))

    def query(self) -> bool:
        """Whether the work recorded before this event has completed (always, on the CPU)."""
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self) -> None:
        """Wait (on the host) for the work recorded before this event."""
        if self._cuda is not None:
            self._cuda.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event's record and ``end_event``'s (both need
        ``enable_timing=True`` and a record; CPU events can never be recorded)."""
        if not isinstance(end_event, Event):
            raise RuntimeError("expected other to be a torch.Event object")
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._cuda is None or end_event._cuda is None or not (
                self._cuda._recorded and end_event._cuda._recorded):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return self._cuda.elapsed_time(end_event._cuda)

    def ipc_handle(self):
        raise NotImplementedError("torch.Event ipc is not supported yet (shardflow: nor here)")

    @classmethod
    def from_ipc_handle(cls, device, ipc_handle):
        raise NotImplementedError("torch.Event ipc is not supported yet (shardflow: nor here)")

    def __repr__(self):
        return (f"shardflow.Event device_type={self._device.type}, "
                f"device_index={-1 if self._cuda is None else self._device.index or 0}, "
                f"event_flag={int(self.enable_timing)}, event_id={self.event_id}")


def _cuda_stream(stream):
    """The shardflow.cuda.Stream inside a torch.Stream (a cuda.Stream passes as is)."""
    inner = getattr(stream, "_cuda", stream)
    if inner is None:
        raise RuntimeError(_NO_EVENTS)
    return inner


def _cuda_event(event):
    inner = getattr(event, "_cuda", event)
    if inner is None:  # a CPU event was never recorded: nothing to wait for
        raise RuntimeError(_NO_EVENTS)
    return inner
