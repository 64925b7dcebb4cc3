"""A CPU stand-in for NCCL and the device side of the NCCL backend, for tests without a GPU.

* :class:`FakeNccl` has the surface of ``cupy.cuda.nccl`` that
  :class:`~shardflow.comm.nccl.NCCLCommunicator` uses (NCCL's enum values, ``get_unique_id``,
  ``groupStart``/``groupEnd``) and makes the communicators: their calls
  (``allReduce(sendptr, recvptr, count, dtype, op, stream)`` and the rest) rebuild arrays
  from the pointers and carry the operation out with MPI on a duplicate of the group's MPI
  communicator, which :meth:`FakeNccl.communicator` receives as the ``control`` argument of
  the API's ``make_comm`` (real NCCL rendezvouses through the unique id instead). A world of
  one without MPI (a ``LocalCommunicator``) gets a communicator whose collectives are
  copies. ``calls`` counts the NCCL calls.
* :class:`FakeCudaAPI`: the whole :class:`~shardflow.comm.nccl_lib.CudaAPI` surface on host
  memory: "device" arrays are NumPy arrays of the :class:`DeviceArray` subclass, pointers
  their host addresses. ``hang_after=N`` lets the first N NCCL calls complete and makes the
  next one's completion event never fire (a peer that stalls inside a collective), to test
  the timeout report; ``has_avg=False`` models a NCCL older than 2.10 (no ``ncclAvg``).
* :class:`HostCudaAPI`: shardflow's own ``CudaAPI`` over ``host_cupy`` (which must be the
  CUDA array module), calling :class:`FakeNccl`: what ``host_cuda.install()`` gives every
  NCCL communicator, so ``init_process_group("nccl")`` runs on host memory.

They check what the communicator hands to NCCL (pointers, counts, dtypes, roots, grouped
send/recv), not NCCL itself: ``tests/gpu/test_nccl.py`` does that on a GPU.
"""

from __future__ import annotations

import ctypes
import uuid

import numpy as np

from shardflow.comm.nccl_lib import CudaAPI

# NCCL's enum values (nccl.h): ncclDataType_t and ncclRedOp_t
_TYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64,
          6: np.float16, 7: np.float32, 8: np.float64}
_NAMES = {"NCCL_INT8": 0, "NCCL_UINT8": 1, "NCCL_INT32": 2, "NCCL_UINT32": 3, "NCCL_INT64": 4,
          "NCCL_UINT64": 5, "NCCL_FLOAT16": 6, "NCCL_FLOAT32": 7, "NCCL_FLOAT64": 8,
          "NCCL_SUM": 0, "NCCL_PROD": 1, "NCCL_MAX": 2, "NCCL_MIN": 3}
_AVG = 4


class DeviceArray(np.ndarray):
    """A host array that :class:`FakeCudaAPI` treats as living on the device."""


def to_device(a) -> DeviceArray:
    return np.ascontiguousarray(a).view(DeviceArray)


def _view(ptr: int, count: int, code: int) -> np.ndarray:
    dt = np.dtype(_TYPES[code])
    if count == 0:
        return np.empty(0, dt)
    raw = (ctypes.c_char * (count * dt.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=dt, count=count)


class _Event:
    def __init__(self, done: bool):
        self.done = done


class _FakeNcclComm:
    """NCCL's communicator calls, carried out by MPI on host memory."""

    def __init__(self, nccl: FakeNccl, mpi_comm):
        from mpi4py import MPI

        self._nccl, self._c = nccl, mpi_comm
        self._ops = {0: MPI.SUM, 1: MPI.PROD, 2: MPI.MAX, 3: MPI.MIN, _AVG: MPI.SUM}
        self.aborted = False

    def _op(self, code):
        if code not in self._ops:
            raise RuntimeError(f"fake NCCL: unknown reduce op {code}")
        return self._ops[code]

    def allReduce(self, send, recv, count, dt, op, stream):  # noqa: N802 - NCCL's name
        self._nccl.count_call()
        s, r = _view(send, count, dt), _view(recv, count, dt)
        self._c.Allreduce(s.copy() if send == recv else s, r, op=self._op(op))
        if op == _AVG:
            r /= self._c.Get_size()

    def bcast(self, buf, count, dt, root, stream):
        self._nccl.count_call()
        self._c.Bcast(_view(buf, count, dt), root=root)

    def allGather(self, send, recv, count, dt, stream):  # noqa: N802
        self._nccl.count_call()
        self._c.Allgather(_view(send, count, dt), _view(recv, count * self._c.Get_size(), dt))

    def reduceScatter(self, send, recv, recvcount, dt, op, stream):  # noqa: N802
        self._nccl.count_call()
        n = self._c.Get_size()
        s = _view(send, recvcount * n, dt)
        r = _view(recv, recvcount, dt)
        self._c.Reduce_scatter_block(s, r, op=self._op(op))
        if op == _AVG:
            r /= n

    def send(self, buf, count, dt, peer, stream):
        self._nccl.p2p(self._c, "send", _view(buf, count, dt), peer)

    def recv(self, buf, count, dt, peer, stream):
        self._nccl.p2p(self._c, "recv", _view(buf, count, dt), peer)

    def abort(self):
        self.aborted = True

    def destroy(self):
        self._c.Free()


class _SelfNcclComm:
    """A communicator of one rank without MPI (over a ``LocalCommunicator``): every
    collective is a copy from the send buffer into the receive buffer (an all-reduce or
    broadcast of one rank is its input; ``ncclAvg`` divides by a world of one); a send to
    itself is matched with its receive in order (what ``all_to_all`` groups)."""

    def __init__(self, nccl: FakeNccl):
        self._nccl, self.aborted = nccl, False
        self._sent: list = []  # payloads sent to self, not received yet (NCCL allows self p2p)
        self._waiting: list = []  # receive buffers posted before their send

    def _copy(self, send, recv, count, dt):
        self._nccl.count_call()
        if send != recv:
            _view(recv, count, dt)[...] = _view(send, count, dt)

    def allReduce(self, send, recv, count, dt, op, stream):  # noqa: N802 - NCCL's name
        self._copy(send, recv, count, dt)

    def bcast(self, buf, count, dt, root, stream):
        self._nccl.count_call()

    def allGather(self, send, recv, count, dt, stream):  # noqa: N802
        self._copy(send, recv, count, dt)

    def reduceScatter(self, send, recv, recvcount, dt, op, stream):  # noqa: N802
        self._copy(send, recv, recvcount, dt)

    def send(self, buf, count, dt, peer, stream):
        self._nccl.count_call()
        self._sent.append(_view(buf, count, dt).copy())
        self._match()

    def recv(self, buf, count, dt, peer, stream):
        self._nccl.count_call()
        self._waiting.append(_view(buf, count, dt))
        self._match()

    def _match(self):
        while self._sent and self._waiting:
            self._waiting.pop(0)[...] = self._sent.pop(0)

    def abort(self):
        self.aborted = True

    def destroy(self):
        return None


class FakeNccl:
    """``cupy.cuda.nccl``'s surface on host memory (see the module docstring)."""

    def __init__(self, hang_after: int | None = None, has_avg: bool = True):
        for name, code in _NAMES.items():
            setattr(self, name, code)
        if has_avg:
            self.NCCL_AVG = _AVG
        self.hang_after = hang_after
        self.calls = 0
        self.comms: list = []
        self._group: list | None = None

    @staticmethod
    def get_unique_id() -> str:
        return uuid.uuid4().hex

    def communicator(self, size: int, uid, rank: int, control):
        """NCCL's communicator of rank ``rank`` in a group of ``size``, carried out by MPI on
        a duplicate of ``control``'s MPI communicator (by copies for a world of one without
        MPI). ``control`` is the group's host communicator, as ``CudaAPI.make_comm`` gets it."""
        mpi_comm = getattr(control, "mpi_comm", None)
        if mpi_comm is None:
            if size != 1:
                raise ValueError(f"fake NCCL: a group of {size} ranks needs an MPI control "
                                 f"communicator, got {type(control).__name__}")
            comm = _SelfNcclComm(self)
        else:
            if (mpi_comm.Get_size(), mpi_comm.Get_rank()) != (size, rank):
                raise ValueError(f"fake NCCL: rank {rank} of {size} asked over an MPI "
                                 f"communicator where it is rank {mpi_comm.Get_rank()} of "
                                 f"{mpi_comm.Get_size()}")
            comm = _FakeNcclComm(self, mpi_comm.Dup())
        self.comms.append(comm)
        return comm

    def event_done(self) -> bool:
        """Whether the event recorded now completes (never, past ``hang_after`` calls)."""
        return not (self.hang_after is not None and self.calls > self.hang_after)

    # NCCL's calls
    def count_call(self) -> None:
        self.calls += 1

    def groupStart(self):  # noqa: N802 - NCCL's name
        self._group = []

    def groupEnd(self):  # noqa: N802
        group, self._group = self._group, None
        if group:
            self.calls += 1
            reqs = [(c.Isend if kind == "send" else c.Irecv)(buf, peer) for c, kind, buf, peer in group]
            from mpi4py import MPI

            MPI.Request.Waitall(reqs)

    def p2p(self, comm, kind, buf, peer):
        if self._group is not None:
            self._group.append((comm, kind, buf, peer))
            return
        self.calls += 1
        (comm.Send if kind == "send" else comm.Recv)(buf, peer)


class FakeCudaAPI:
    """The :class:`~shardflow.comm.nccl_lib.CudaAPI` surface on host memory (see module doc)."""

    name = "fake-cuda"

    def __init__(self, hang_after: int | None = None, has_avg: bool = True):
        self.nccl = FakeNccl(hang_after, has_avg)

    @property
    def calls(self) -> int:
        return self.nccl.calls

    # the device
    def is_device(self, array) -> bool:
        return isinstance(array, DeviceArray)

    @staticmethod
    def ptr(array) -> int:
        return int(array.ctypes.data)

    def empty(self, shape, dtype, like=None):
        return np.empty(shape, dtype=dtype).view(DeviceArray)

    def contiguous(self, array):
        return np.ascontiguousarray(array).view(DeviceArray)

    def stream_ptr(self) -> int:
        return 0

    def record_event(self):
        return _Event(self.nccl.event_done())

    def device_count(self) -> int:
        return 1

    def use_device(self, index: int) -> None:
        self.device = index

    def make_comm(self, size, uid, rank, control):
        return self.nccl.communicator(size, uid, rank, control)


class HostCudaAPI(CudaAPI):
    """shardflow's :class:`CudaAPI` (CuPy calls, here answered by ``host_cupy``) with
    :class:`FakeNccl` as its NCCL: the device side of ``init_process_group("nccl")`` on host
    memory. Build it after ``host_cupy`` became the CUDA array module (``host_cuda.install``)."""

    name = "host-cuda"

    def __init__(self, has_avg: bool = True):
        super().__init__(nccl=FakeNccl(has_avg=has_avg))

    @property
    def calls(self) -> int:
        """How many NCCL calls were made (a grouped send/recv counts once)."""
        return self.nccl.calls

    def make_comm(self, size, uid, rank, control):
        return self.nccl.communicator(size, uid, rank, control)
