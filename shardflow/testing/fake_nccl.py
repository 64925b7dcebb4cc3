"""A CPU stand-in for the device side of the NCCL backend, for tests without a GPU.

:class:`FakeCudaAPI` has the surface of :class:`shardflow.comm.nccl_lib.CudaAPI`: "device"
arrays are NumPy arrays of the :class:`DeviceArray` subclass, pointers are their host
addresses, and the NCCL calls (``allReduce(sendptr, recvptr, count, dtype, op, stream)``
and the rest, with NCCL's enum values) rebuild arrays from those pointers and carry the
operation out with MPI on a duplicate of the control communicator. It checks what the
communicator hands to NCCL (pointers, counts, dtypes, roots, grouped send/recv), not
NCCL itself: ``tests/gpu/test_nccl.py`` does that on a GPU.

``hang_after=N`` lets the first N NCCL calls complete and makes the next one's completion
event never fire (a peer that stalls inside a collective), to test the timeout report; ``has_avg=False`` models a NCCL
older than 2.10 (no ``ncclAvg``).
"""

from __future__ import annotations

import ctypes
import types
import uuid

import numpy as np

# NCCL's enum values (nccl.h): ncclDataType_t and ncclRedOp_t
_TYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64,
          6: np.float16, 7: np.float32, 8: np.float64}
_NAMES = {"NCCL_INT8": 0, "NCCL_UINT8": 1, "NCCL_INT32": 2, "NCCL_UINT32": 3, "NCCL_INT64": 4,
          "NCCL_UINT64": 5, "NCCL_FLOAT16": 6, "NCCL_FLOAT32": 7, "NCCL_FLOAT64": 8,
          "NCCL_SUM": 0, "NCCL_PROD": 1, "NCCL_MAX": 2, "NCCL_MIN": 3}


class DeviceArray(np.ndarray):
    """A host array that the fake backend treats as living on the device."""


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

    def __init__(self, api: FakeCudaAPI, mpi_comm):
        from mpi4py import MPI

        self._api, self._c, self._MPI = api, mpi_comm, MPI
        self._ops = {0: MPI.SUM, 1: MPI.PROD, 2: MPI.MAX, 3: MPI.MIN, 4: MPI.SUM}
        self.aborted = False

    def _op(self, code):
        if code not in self._ops:
            raise RuntimeError(f"fake NCCL: unknown reduce op {code}")
        return self._ops[code]

    def allReduce(self, send, recv, count, dt, op, stream):  # noqa: N802 - NCCL's name
        self._api._count_call()
        s, r = _view(send, count, dt), _view(recv, count, dt)
        self._c.Allreduce(s.copy() if send == recv else s, r, op=self._op(op))
        if op == 4:  # ncclAvg
            r /= self._c.Get_size()

    def bcast(self, buf, count, dt, root, stream):
        self._api._count_call()
        self._c.Bcast(_view(buf, count, dt), root=root)

    def allGather(self, send, recv, count, dt, stream):  # noqa: N802
        self._api._count_call()
        self._c.Allgather(_view(send, count, dt), _view(recv, count * self._c.Get_size(), dt))

    def reduceScatter(self, send, recv, recvcount, dt, op, stream):  # noqa: N802
        self._api._count_call()
        n = self._c.Get_size()
        s = _view(send, recvcount * n, dt)
        r = _view(recv, recvcount, dt)
        self._c.Reduce_scatter_block(s, r, op=self._op(op))
        if op == 4:
            r /= n

    def send(self, buf, count, dt, peer, stream):
        self._api._p2p(self._c, "send", _view(buf, count, dt), peer)

    def recv(self, buf, count, dt, peer, stream):
        self._api._p2p(self._c, "recv", _view(buf, count, dt), peer)

    def abort(self):
        self.aborted = True

    def destroy(self):
        self._c.Free()


class _SelfNcclComm:
    """A communicator of one rank without MPI (over a ``LocalCommunicator``): every
    collective is a copy from the send buffer into the receive buffer; a send to itself is
    matched with its receive in order (what ``all_to_all`` groups)."""

    def __init__(self, api: FakeCudaAPI):
        self._api, self.aborted = api, False
        self._sent: list = []  # payloads sent to self, not received yet (NCCL allows self p2p)
        self._waiting: list = []  # receive buffers posted before their send

    def _copy(self, send, recv, count, dt):
        self._api._count_call()
        if send != recv:
            _view(recv, count, dt)[...] = _view(send, count, dt)

    def allReduce(self, send, recv, count, dt, op, stream):  # noqa: N802 - NCCL's name
        self._copy(send, recv, count, dt)

    def bcast(self, buf, count, dt, root, stream):
        self._api._count_call()

    def allGather(self, send, recv, count, dt, stream):  # noqa: N802
        self._copy(send, recv, count, dt)

    def reduceScatter(self, send, recv, recvcount, dt, op, stream):  # noqa: N802
        self._copy(send, recv, recvcount, dt)

    def send(self, buf, count, dt, peer, stream):
        self._api._count_call()
        self._sent.append(_view(buf, count, dt).copy())
        self._match()

    def recv(self, buf, count, dt, peer, stream):
        self._api._count_call()
        self._waiting.append(_view(buf, count, dt))
        self._match()

    def _match(self):
        while self._sent and self._waiting:
            self._waiting.pop(0)[...] = self._sent.pop(0)

    def abort(self):
        self.aborted = True

    def destroy(self):
        return None


class FakeCudaAPI:
    """The :class:`~shardflow.comm.nccl_lib.CudaAPI` surface on host memory (see module doc)."""

    name = "fake-cuda"

    def __init__(self, hang_after: int | None = None, has_avg: bool = True):
        self.hang_after = hang_after
        self.calls = 0
        self.comms: list[_FakeNcclComm] = []
        self._group: list | None = None
        names = dict(_NAMES)
        if has_avg:
            names["NCCL_AVG"] = 4
        self.nccl = types.SimpleNamespace(
            **names,
            NcclCommunicator=None,
            get_unique_id=lambda: uuid.uuid4().hex,
            groupStart=self._group_start,
            groupEnd=self._group_end,
        )

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
        return _Event(not (self.hang_after is not None and self.calls > self.hang_after))

    def device_count(self) -> int:
        return 1

    def use_device(self, index: int) -> None:
        self.device = index

    def make_comm(self, size, uid, rank, control):
        comm = _FakeNcclComm(self, control.mpi_comm.Dup())
        self.comms.append(comm)
        return comm

    # NCCL's calls
    def _count_call(self):
        self.calls += 1

    def _group_start(self):
        self._group = []

    def _group_end(self):
        group, self._group = self._group, None
        if group:
            self.calls += 1
            reqs = [(c.Isend if kind == "send" else c.Irecv)(buf, peer) for c, kind, buf, peer in group]
            from mpi4py import MPI

            MPI.Request.Waitall(reqs)

    def _p2p(self, comm, kind, buf, peer):
        if self._group is not None:
            self._group.append((comm, kind, buf, peer))
            return
        self.calls += 1
        (comm.Send if kind == "send" else comm.Recv)(buf, peer)


def nccl_module(api: FakeCudaAPI | None = None) -> types.SimpleNamespace:
    """A stand-in for ``cupy.cuda.nccl`` itself (``host_cupy.cuda.nccl``): NCCL's constants,
    ``get_unique_id``, ``groupStart``/``groupEnd`` and ``NcclCommunicator(size, uid, rank)``,
    carried out by MPI on the host memory behind the pointers. Its ``NcclCommunicator`` is
    marked ``over_control``, so ``CudaAPI.make_comm`` also hands it the group's MPI
    communicator, which it duplicates: subgroups (a 2-D mesh's rows) work as the world does."""
    api = api or FakeCudaAPI()

    def communicator(size, uid, rank, control=None):
        if size == 1 and getattr(control, "mpi_comm", None) is None:  # a LocalCommunicator
            return _SelfNcclComm(api)
        if control is None or control.size != size or control.rank != rank:
            raise NotImplementedError(
                "fake NCCL communicators are made over the group's MPI communicator; build "
                "them through CudaAPI.make_comm (NCCLCommunicator does)"
            )
        return api.make_comm(size, uid, rank, control)

    communicator.over_control = True
    ns = types.SimpleNamespace(**vars(api.nccl))
    ns.NcclCommunicator = communicator
    ns.api = api
    return ns
