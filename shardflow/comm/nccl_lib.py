"""The CUDA side of the NCCL backend (layer L2): the only module that touches
``cupy.cuda.nccl`` and CuPy streams/events, imported lazily with an install hint.

:class:`CudaAPI` is what :class:`~shardflow.comm.nccl.NCCLCommunicator` asks of the device:
which arrays live on it, their raw pointers, allocation, the current stream, an event to
poll, the NCCL module (``get_unique_id``, ``NcclCommunicator``, ``groupStart``/``groupEnd``
and the ``NCCL_*`` constants) and the device to bind a rank to. The communicator never
imports CuPy itself, so its bookkeeping (signatures, dtype and reduce-op tables, timeouts,
groups) is tested on CPU against a stand-in with the same surface
(``shardflow.testing.fake_nccl``); the CUDA calls themselves are tested on a GPU by
``tests/gpu/test_nccl.py``.
"""

from __future__ import annotations

from ..backend.xp import cupy


def nccl_module():
    """``cupy.cuda.nccl``, or a RuntimeError saying what to install."""
    cp = cupy()
    nccl = getattr(cp.cuda, "nccl", None)  # imported already, or the testing stand-in's
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

    def __init__(self):
        self.cp = cupy()
        self.nccl = nccl_module()

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
        """``ncclCommInitRank`` (collective over the group). ``control`` (the group's MPI
        communicator) is handed only to a stand-in that asks for it (``over_control``:
        ``testing.fake_nccl`` carries NCCL's calls over MPI); real NCCL needs only the uid."""
        make = self.nccl.NcclCommunicator
        if getattr(make, "over_control", False):
            return make(size, uid, rank, control=control)
        return make(size, uid, rank)

    def device_count(self) -> int:
        return int(self.cp.cuda.runtime.getDeviceCount())

    def use_device(self, index: int):
        """Make ``index`` the current device (its context manager is not kept: a rank keeps
        one device for its life, as with ``torch.cuda.set_device``)."""
        self.cp.cuda.Device(index).use()

    def current_device(self) -> int:
        return int(self.cp.cuda.runtime.getDevice())
