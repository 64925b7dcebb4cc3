"""``torch.cuda``: the names scripts call, answering sensibly on a machine without CUDA.

shardflow runs CUDA through CuPy (``backend/xp.py``). Without CuPy or without a GPU the
answers are those of a CPU-only PyTorch build:

* ``is_available()`` False, ``device_count()`` 0, ``is_bf16_supported()`` False,
  ``is_initialized()`` False, ``memory_allocated()`` / ``memory_reserved()`` /
  ``max_memory_*()`` 0, ``empty_cache()`` does nothing;
* RNG states (``get_rng_state`` ...): see ``random.py``;
* ``manual_seed`` / ``manual_seed_all`` / ``seed`` / ``seed_all`` do nothing: shardflow has
  one random generator for every device, seeded by ``shardflow.manual_seed`` (which a
  script calls anyway); there is no separate CUDA generator to seed;
* ``current_device()``, ``set_device()``, ``synchronize()``, ``get_device_name()``,
  ``get_device_capability()``, ``get_device_properties()``, ``mem_get_info()`` raise
  ``CudaNotAvailableError`` — an ``AssertionError`` like PyTorch's "Torch not compiled with
  CUDA enabled", and a ``RuntimeError`` like a CUDA build's "No CUDA GPUs are available" —
  whose message says how to run on the CPU instead.

With a GPU they answer through CuPy. Streams and events (``Stream``, ``Event``, ``stream()``,
``current_stream()`` ...) are in ``streams.py`` (host streams and host-clock events without
CUDA), the other memory statistics in ``memory.py``, CUDA graphs (refused) in ``graphs.py``.
``set_sync_debug_mode`` records its mode (shardflow does not detect synchronizing calls);
``OutOfMemoryError`` is PyTorch's class (``shardflow.OutOfMemoryError``); CuPy's own
``cupy.cuda.memory.OutOfMemoryError`` is what a CuPy allocation failure raises. ``cuda.amp`` holds PyTorch's deprecated
``torch.cuda.amp`` names. The legacy types ``cuda.FloatTensor`` ... construct CUDA tensors
and match them in ``isinstance`` (``autograd/legacy_types.py``).
"""

from __future__ import annotations

from .. import accelerator as _acc
from ..autograd.legacy_types import CUDA_TYPES as _CUDA_TYPES
from ..backend.xp import CudaNotAvailableError, cuda_is_available, cupy
from . import amp, graphs, memory, nccl, nvtx, profiler, random, streams
from .graphs import (
    CUDAGraph,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    make_graphed_callables,
)
from .memory import (
    get_per_process_memory_fraction,
    host_memory_stats,
    host_memory_stats_as_nested_dict,
    ipc_collect,
    list_gpu_processes,
    max_memory_cached,
    memory_cached,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_host_memory_stats,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_host_memory_stats,
    set_per_process_memory_fraction,
)
from .random import get_rng_state, get_rng_state_all, initial_seed, set_rng_state, set_rng_state_all
from .streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

FloatTensor = _CUDA_TYPES["FloatTensor"]
DoubleTensor = _CUDA_TYPES["DoubleTensor"]
HalfTensor = _CUDA_TYPES["HalfTensor"]
BFloat16Tensor = _CUDA_TYPES["BFloat16Tensor"]
ByteTensor = _CUDA_TYPES["ByteTensor"]
CharTensor = _CUDA_TYPES["CharTensor"]
ShortTensor = _CUDA_TYPES["ShortTensor"]
IntTensor = _CUDA_TYPES["IntTensor"]
LongTensor = _CUDA_TYPES["LongTensor"]
BoolTensor = _CUDA_TYPES["BoolTensor"]

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "get_device_name",
    "get_device_capability", "get_device_properties", "synchronize", "empty_cache",
    "manual_seed", "manual_seed_all", "seed", "seed_all", "is_bf16_supported",
    "is_initialized", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "mem_get_info", "device", "amp",
    "CudaNotAvailableError", "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
    "initial_seed", *_CUDA_TYPES,
    "Stream", "ExternalStream", "Event", "StreamContext", "stream", "current_stream", "default_stream",
    "set_stream", "CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables",
    "is_current_stream_capturing", *memory.__all__, "OutOfMemoryError", "set_sync_debug_mode",
    "get_sync_debug_mode", "init", "get_arch_list", "get_gencode_flags", "is_tf32_supported",
    "has_half", "device_of", "can_device_access_peer", "nvtx", "profiler", "nccl", "has_magma", "CudaError",
    "get_stream_from_external",
]

has_half = True  # as PyTorch (a constant: float16 tensors exist on every device)
has_magma = False  # shardflow has no MAGMA kernels (PyTorch's CPU build answers False too)


class CudaError(RuntimeError):
    """A CUDA runtime error with its code (``torch.cuda.CudaError(code)``)."""

    def __init__(self, code: int) -> None:
        self.code = int(code)
        super().__init__(f"CUDA error ({code})")


class OutOfMemoryError(RuntimeError):
    """PyTorch's out-of-memory error (``torch.OutOfMemoryError``, ``torch.cuda.OutOfMemoryError``)."""




def _require(what: str):
    if not cuda_is_available():
        raise CudaNotAvailableError(
            f"shardflow.cuda.{what} needs a CUDA device, and none is available (shardflow uses "
            "CUDA through CuPy; no CuPy or no NVIDIA GPU here). Guard the call with "
            "shardflow.cuda.is_available() and run on device='cpu', or install cupy-cuda12x on a "
            "machine with an NVIDIA GPU."
        )
    return cupy()


def _index(device) -> int:
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from ..backend import device as _device

    return _device(device).index or 0


def is_available() -> bool:
    return cuda_is_available()


def device_count() -> int:
    return _acc.device_count()


def is_initialized() -> bool:
    return cuda_is_available()


def current_device() -> int:
    return int(_require("current_device()").cuda.runtime.getDevice())


def set_device(device) -> None:
    _require("set_device()").cuda.runtime.setDevice(_index(device))


def get_device_properties(device=None) -> dict:
    """CuPy's property dict of the device (``name``, ``totalGlobalMem``, ``major``, ...)."""
    cp = _require("get_device_properties()")
    return cp.cuda.runtime.getDeviceProperties(_index(device))


def get_device_name(device=None) -> str:
    _require("get_device_name()")
    name = get_device_properties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None) -> tuple[int, int]:
    _require("get_device_capability()")
    props = get_device_properties(device)
    return int(props["major"]), int(props["minor"])


def synchronize(device=None) -> None:
    cp = _require("synchronize()")
    with cp.cuda.Device(_index(device)):
        cp.cuda.Device().synchronize()


def mem_get_info(device=None) -> tuple[int, int]:
    _require("mem_get_info()")
    return _acc.get_memory_info(_index(device))


def empty_cache() -> None:
    if cuda_is_available():
        _acc.empty_cache()


def memory_allocated(device=None) -> int:
    return _acc.memory_allocated(device) if cuda_is_available() else 0


def memory_reserved(device=None) -> int:
    return _acc.memory_reserved(device) if cuda_is_available() else 0


def max_memory_allocated(device=None) -> int:
    """With a GPU: CuPy keeps no peak statistic, so this is the current allocation."""
    return _acc.max_memory_allocated(device) if cuda_is_available() else 0


def max_memory_reserved(device=None) -> int:
    return _acc.max_memory_reserved(device) if cuda_is_available() else 0


def reset_peak_memory_stats(device=None) -> None:
    _require("reset_peak_memory_stats()")


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 arithmetic on the GPU (compute capability 8.0+); False without CUDA."""
    if not cuda_is_available():
        return False
    return including_emulation or get_device_capability()[0] >= 8


def manual_seed(seed: int) -> None:
    """Nothing to do: one generator serves every device (``shardflow.manual_seed`` seeds it)."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    int(seed)


def seed() -> None:
    return None


def seed_all() -> None:
    return None


class device:
    """``with shardflow.cuda.device(i):`` makes GPU ``i`` current inside the block."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev = current_device()
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev >= 0:
            set_device(self.prev)
        return False


_SYNC_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}
_sync_debug_mode = [0]


def set_sync_debug_mode(debug_mode) -> None:
    """Record the mode ("default"/0, "warn"/1, "error"/2; PyTorch's check and message).
    shardflow does not detect synchronizing calls, so the mode changes nothing."""
    if isinstance(debug_mode, str):
        if debug_mode not in _SYNC_DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        debug_mode = _SYNC_DEBUG_MODES[debug_mode]
    _sync_debug_mode[0] = int(debug_mode)


def get_sync_debug_mode() -> int:
    """The mode last set (0 at start)."""
    return _sync_debug_mode[0]


def init() -> None:
    """Initialise CUDA now (PyTorch's lazy init); needs a CUDA device."""
    _require("init()")


def get_arch_list() -> list[str]:
    """The ``sm_XY`` of the visible devices (PyTorch lists its build's targets); [] without CUDA."""
    if not cuda_is_available():
        return []
    return sorted({"sm_{}{}".format(*get_device_capability(i)) for i in range(device_count())})


def get_gencode_flags() -> str:
    """``-gencode`` flags for ``get_arch_list()`` ("" without CUDA, as PyTorch's CPU build)."""
    return " ".join(f"-gencode compute={a.replace('sm', 'compute')},code={a}" for a in get_arch_list())


def is_tf32_supported() -> bool:
    """TF32 matmuls (compute capability 8.0+); False without CUDA."""
    return cuda_is_available() and get_device_capability()[0] >= 8


def can_device_access_peer(device, peer_device) -> bool:
    """Whether ``device`` can read ``peer_device``'s memory directly; needs CUDA."""
    cp = _require("can_device_access_peer()")
    return bool(cp.cuda.runtime.deviceCanAccessPeer(_index(device), _index(peer_device)))


class device_of(device):
    """``with shardflow.cuda.device_of(t):`` makes ``t``'s GPU current (nothing for a CPU tensor)."""

    def __init__(self, obj):
        dev = getattr(obj, "device", None)
        super().__init__((dev.index or 0) if dev is not None and dev.type == "cuda" else None)


def get_stream_from_external(data_ptr: int, device=None) -> Stream:
    """A ``Stream`` over a CUDA stream made elsewhere (``ExternalStream``); needs CUDA."""
    return ExternalStream(data_ptr, device)
