"""The CUDA side of the NCCL backend (layer L2): the only module that touches
``cupy.cuda.nccl`` and CuPy streams/events, imported lazily with an install hint.

:class:`CudaAPI` is what :class:`~shardflow.comm.nccl.NCCLCommunicator` asks of the device:
which arrays live on it, their raw pointers, allocation, the current stream, an event to
poll, the NCCL module (``get_unique_id``, ``groupStart``/``groupEnd`` and the ``NCCL_*``
constants), making the NCCL communicator of a group (:meth:`CudaAPI.make_comm`) and the
device to bind a rank to. The communicator never imports CuPy itself.

Injection point: a communicator built without an explicit ``api`` asks :func:`cuda_api`,
which returns the object given to :func:`set_cuda_api` or a new :class:`CudaAPI`. Any
object with ``CudaAPI``'s surface may be given, so the communicator's bookkeeping
(signatures, dtype and reduce-op tables, timeouts, groups) runs on CPU ranks against
stand-ins (``tests/doubles``, docs/GPU.md); the CUDA calls themselves are tested on a GPU
by ``tests/gpu/test_nccl.py``.
"""

from __future__ import annotations

from ..backend.xp import cupy

_api = None  # the CUDA/NCCL API given to set_cuda_api (None: CudaAPI, over CuPy)


def set_cuda_api(api):
    """Make ``api`` (an object with :class:`CudaAPI`'s surface) the CUDA/NCCL API of every
    NCCL communicator created afterwards without an explicit ``api``, including the one
    ``comm.init("nccl")`` builds; return the one it replaces. ``None`` goes back to
    :class:`CudaAPI` over CuPy. For tests; the array module is set separately
    (``backend.xp.set_cuda_array_module``)."""
    global _api
    previous, _api = _api, api
    return previous


def cuda_api():
    """The API given to :func:`set_cuda_api`, else a new :class:`CudaAPI` (over CuPy)."""
    return _api if _api is not None else CudaAPI()


def nccl_module():
    """``cupy.cuda.nccl``, or a RuntimeError saying what to install."""
    cp = cupy()
    nccl = getattr(cp.cuda, "nccl", None)  # CuPy's submodule, when imported already
    if nccl is None:
        try:
            from cupy.cuda import nccl
        except ImportError:
            nccl = None
    if nccl is None or not hasattr(nccl, "NcclCommunicator"):
        raise RuntimeError(
            f"backend 'nccl' needs CuPy built with NCCL; this CuPy ({cp.__version__}) has none. "
            "Install the NCCL wheel that matches CuPy's CUDA (`pip install nvidia-nccl-cu12`), "
            "or use backend 'mpi' (collectives on host memory)."
        )
    return nccl


class CudaAPI:
    """The device operations the NCCL communicator needs, through CuPy."""

    name = "cuda"

    def __init__(self, nccl=None):
        """``nccl``: the NCCL module to call (default ``cupy.cuda.nccl``, :func:`nccl_module`)."""
        self.cp = cupy()
        self.nccl = nccl_module() if nccl is None else nccl

    def is_device(self, array) -> bool:
        return isinstance(array, self.cp.ndarray)

    @staticmethod
    def ptr(array) -> int:
        return int(array.data.ptr)

    def empty(self, shape, dtype, like=None):
        return self.cp.empty(shape, dtype=dtype)

    def contiguous(self, array):
        return self.cp.ascontiguousarray(array)

    def stream_ptr(self) -> int:
        return int(self.cp.cuda.get_current_stream().ptr)

    def record_event(self):
        """An event recorded on the current stream after the work issued so far (``.done``)."""
        ev = self.cp.cuda.Event(block=False, disable_timing=True)
        ev.record(self.cp.cuda.get_current_stream())
        return ev

    def make_comm(self, size: int, uid, rank: int, control):
        """``ncclCommInitRank``: rank ``rank`` of a group of ``size`` (collective over the
        group). ``control`` is the group's host communicator (the one that carried ``uid``);
        NCCL finds the peers through ``uid`` alone and does not use it, an API that carries
        NCCL's calls some other way may."""
        return self.nccl.NcclCommunicator(size, uid, rank)

    def device_count(self) -> int:
        return int(self.cp.cuda.runtime.getDeviceCount())

    def use_device(self, index: int):
        """Make ``index`` the current device (its context manager is not kept: a rank keeps
        one device for its life, as with ``torch.cuda.set_device``)."""
        self.cp.cuda.Device(index).use()

    def current_device(self) -> int:
        return int(self.cp.cuda.runtime.getDevice())
