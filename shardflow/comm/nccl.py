"""NCCL backend (layer L2): :class:`NCCLCommunicator`, collectives on CUDA arrays through
``cupy.cuda.nccl``, behind the same :class:`~shardflow.comm.base.Communicator` interface and
with the same checks, timeouts and failure reports as the MPI backend.

Status: tested on CPU ranks against stand-ins with NCCL's surface, given as its ``api``
(``nccl_lib.set_cuda_api``; the doubles live in ``tests/doubles``), and on a GPU by
``tests/gpu/test_nccl.py`` (skipped without one). See docs/DISTRIBUTED.md, "NCCL".

Algorithm and communication plan
--------------------------------
* **Two communicators per group.** A *control* communicator (MPI under ``shardflow run``,
  the world of one otherwise) carries everything that is not device data: NCCL's unique id
  (broadcast from rank 0 at creation), the call signatures, barriers, Python objects, and
  host (NumPy) arrays, which go through it unchanged. The NCCL communicator carries the
  device arrays. Each rank binds to GPU ``local_rank % device_count`` (``torch.cuda.set_device``'s
  convention) before NCCL is initialised.
* **Checked calls.** NCCL has no notion of a mismatched call: ranks that call different
  collectives hang or corrupt memory. So every collective first exchanges its 96-byte
  signature (``callsig.py``: op, sequence number, reduce op, dtype, element count, root,
  shape) with one small ``all_gather`` on the control communicator, which is itself a
  checked, time-bounded MPI collective: a rank that died or hangs before the call is
  reported by MPI's timeout and arrival board; a rank that called something else makes
  every rank raise :class:`CommError` naming each rank's call, before NCCL is touched and
  with the arrays unchanged. Point-to-point sends the signature to the peer first.
  Cost: one small host collective (tens of microseconds) per NCCL call, paid by every
  call; data parallel makes a few large calls per step.
* **Data.** The NCCL call is issued on the current CuPy stream (ordered after the kernels
  that produced the array), then an event is recorded behind it. A blocking call waits for
  the event; ``async_op=True`` returns an :class:`NCCLWork` whose ``wait()`` does. Waiting
  polls the event against ``SHARDFLOW_COMM_TIMEOUT`` (spinning 200 us, then naps): NCCL
  itself would wait forever for a peer that died inside the collective, so on timeout the
  NCCL communicator is aborted (``ncclCommAbort``) and the job ends with a report naming
  the rank, the operation and its sequence number.
* **Types and reductions.** NCCL's types; ``bool`` travels as ``uint8`` (a sum of bools is
  a logical or, as in PyTorch); bfloat16 needs NCCL's ``ncclBfloat16``. ``AVG`` is NCCL's
  ``ncclAvg`` when the library has it (NCCL >= 2.10), else a sum divided by the group size.
  Non-contiguous arrays are packed and unpacked.
* **all_to_all** is a grouped send/recv per peer (``groupStart``/``groupEnd``), as NCCL's
  own documentation does it.
* **batch_p2p** (``batch_isend_irecv``) issues its device sends and receives between one
  ``groupStart``/``groupEnd``: NCCL's send/recv are in order on the stream and a send may wait
  until the peer posts the matching receive, so two ranks that each send before they receive
  deadlock unless the pair is grouped. Signatures are checked as for ``send``/``recv``: every
  send's signature is posted (non-blocking, control path) before any is received.
* **Groups.** ``new_group(ranks)`` splits the control communicator and builds a NCCL
  communicator over the members (a NCCL communicator per group, as torch.distributed does).
"""

from __future__ import annotations

import time

import numpy as np

from .. import _config
from . import callsig
from .base import CommError, Communicator, ReduceOp, Work, check_p2p_ops, checked_reduce_op
from .failure import TIMEOUT_EXIT_CODE, abort_job
from .nccl_lib import cuda_api
from .ranked import RankedMixin

_SPIN_S = 2e-4


def _dtype_table(nccl) -> dict:
    names = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
             "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
             "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64",
             "bfloat16": "NCCL_BFLOAT16", "bool": "NCCL_UINT8"}
    return {k: getattr(nccl, v) for k, v in names.items() if hasattr(nccl, v)}


def _op_table(nccl) -> dict:
    ops = {"sum": nccl.NCCL_SUM, "prod": nccl.NCCL_PROD, "max": nccl.NCCL_MAX,
           "min": nccl.NCCL_MIN}
    if hasattr(nccl, "NCCL_AVG"):
        ops["avg"] = nccl.NCCL_AVG
    return ops


def _unpacked(array, back):
    """The finishing step of a call that wrote into ``array``'s packed buffer: copy it back
    (``back`` from ``_packed``; None when NCCL wrote ``array`` itself) and return ``array``."""

    def finish():
        if back is not None:
            back()
        return array

    return finish


def _nothing():
    return None


class NCCLWork(Work):
    """An issued NCCL call: ``wait()`` polls its event against the collective timeout."""

    def __init__(self, comm: NCCLCommunicator, event, call: tuple, finish):
        self._comm, self._event, self._call, self._finish = comm, event, call, finish
        self._done = False
        self._value = None

    def is_completed(self) -> bool:
        if not self._done and self._event.done:
            self._complete()
        return self._done

    def _complete(self):
        self._done = True
        self._value = self._finish()

    def wait(self, timeout: float | None = None):
        if self._done:
            return self._value
        limit = self._comm._timeout if timeout is None else timeout
        start = time.monotonic()
        spin_until = start + _SPIN_S
        nap = 1e-5
        while not self._event.done:
            now = time.monotonic()
            if now - start > limit:
                self._comm._on_timeout(self._call, now - start, limit)
            if now > spin_until:
                time.sleep(nap)
                nap = min(nap * 2, 1e-3)
        self._complete()
        return self._value

    def result(self):
        return self.wait()


class NCCLCommunicator(RankedMixin, Communicator):
    """Collectives on device arrays over NCCL, checked over a control communicator."""

    backend = "nccl"

    def __init__(self, control: Communicator, api=None, device_index: int | None = None):
        """A NCCL communicator over the ranks of ``control`` (collective over them).

        ``api``: the CUDA/NCCL operations (:class:`~shardflow.comm.nccl_lib.CudaAPI`'s
        surface; default ``nccl_lib.cuda_api()``); ``device_index``: the GPU to bind to
        (default ``local_rank % device_count``)."""
        if api is None:
            api = cuda_api()
        self._control, self._api = control, api
        self._rank, self._size = control.rank, control.size
        self.world_ranks = list(getattr(control, "world_ranks", range(self._size)))
        self.seq = 0
        self._timeout = _config.comm_timeout_s()  # read once, when the group is made
        self._debug = _config.debug_collectives()
        self._cmp = callsig.NBYTES if self._debug else callsig.CHECKED_BYTES
        nccl = api.nccl
        self._dtypes = _dtype_table(nccl)
        self._ops = _op_table(nccl)
        if device_index is None:
            count = api.device_count()
            device_index = _config.launch_info().local_rank % max(count, 1)
        self.device_index = device_index
        api.use_device(device_index)
        uid = nccl.get_unique_id() if self._rank == 0 else None
        uid = control.broadcast_object(uid, src=0)
        try:
            self._comm = api.make_comm(self._size, uid, self._rank, control)
        except Exception as e:  # noqa: BLE001 - NcclError and CUDA errors alike
            raise CommError(
                f"NCCL could not create a communicator of {self._size} ranks (this is rank "
                f"{self.world_rank()}, on GPU {device_index}): {e}. NCCL refuses two ranks on "
                "one GPU: launch one rank per GPU (`shardflow run -n <number of GPUs>`), or use "
                "backend 'mpi' to run several ranks on one GPU (collectives through host memory)."
            ) from None
        self._aborted = False

    # -- basic properties ----------------------------------------------------------------
    @property
    def control(self) -> Communicator:
        """The host communicator that carries signatures, objects and host arrays."""
        return self._control

    # -- bookkeeping ---------------------------------------------------------------------
    def _nccl_dtype(self, array):
        name = array.dtype.name
        code = self._dtypes.get(name)
        if code is None:
            have = ", ".join(sorted(self._dtypes))
            raise TypeError(
                f"NCCL has no type for dtype {name}; it carries {have}. Cast the array (for "
                "bfloat16, a NCCL >= 2.10 build is needed) or send it through host memory "
                "(backend 'mpi')."
            )
        return code

    def _reduce_op(self, op: str, array):
        """(NCCL op, whether to divide by the group size afterwards)."""
        if array.dtype == np.bool_:
            op = {"sum": "max", "prod": "min", "avg": "max"}.get(op, op)
        if op == "avg" and "avg" not in self._ops:
            return self._ops["sum"], True
        if op not in self._ops:  # the bitwise ops: NCCL has none (torch raises too)
            raise RuntimeError(f"Cannot use ReduceOp.{op.upper()} with NCCL; reduce on the CPU "
                               "(backend 'gloo'/'mpi') or use SUM/MIN/MAX")
        return self._ops[op], False

    def _checked(self, op: str, array, reduce=None, root: int = -1) -> int:
        """Number the call and compare its signature with every rank's (control collective)."""
        self.seq += 1
        sig = np.array(callsig.fields(op, self.seq, reduce, array.dtype, array.size, root,
                                      array.shape), dtype=np.int64)
        if self._size > 1:
            rows = np.asarray(self._control.all_gather(sig)).reshape(self._size, -1)
            nf = self._cmp // 8
            if not (rows[:, :nf] == sig[:nf]).all():
                self._raise_mismatch(rows)
        return self.seq

    def _raise_mismatch(self, rows) -> None:
        sigs = [callsig.CallSig.unpack(rows[r].tobytes()) for r in range(self._size)]
        lines = callsig.mismatch_lines(sigs, self.world_ranks, self._cmp)
        raise CommError(
            f"collective mismatch at NCCL collective #{self.seq} on a group of {self._size} "
            f"(this is rank {self.world_rank()}): the ranks did not all make the same call:\n  "
            + "\n  ".join(lines) + "\nEvery rank must call the same collectives in the same "
            "order with the same dtype, number of elements, reduce op and root; fix the rank(s) "
            "whose line differs. No array was changed by this call (NCCL was not called)."
            + callsig.root_hint(sigs)
        )

    def _packed(self, array):
        """(contiguous buffer, function copying it back into ``array`` or None)."""
        if array.flags.c_contiguous:
            return array, None
        buf = self._api.contiguous(array)

        def back(a=array, b=buf):
            a[...] = b

        return buf, back

    def _issue(self, op, seq, array, launch, finish, async_op):
        """Run ``launch(stream)`` (the NCCL calls), then wait for them or return the Work."""
        event = self._launch(op, seq, array, launch)
        work = NCCLWork(self, event, (op, seq, tuple(array.shape), str(array.dtype)), finish)
        return work if async_op else work.wait()

    def _launch(self, op, seq, array, launch):
        """Run ``launch(stream)`` and return the event recorded behind its NCCL calls."""
        if self._aborted:
            raise CommError(f"{op}: this NCCL communicator was aborted after an earlier failure")
        try:
            launch(self._api.stream_ptr())
        except Exception as e:  # noqa: BLE001 - NcclError
            raise CommError(
                f"{op} (NCCL collective #{seq}) on rank {self.world_rank()}, shape "
                f"{tuple(array.shape)}, dtype {array.dtype}: NCCL error: {e}"
            ) from None
        return self._api.record_event()

    def _on_timeout(self, call, waited: float, limit: float):
        op, seq, shape, dtype = call
        try:
            self._comm.abort()
        except Exception:  # noqa: BLE001 - already broken
            pass
        self._aborted = True
        msg = (
            f"shardflow: {op} (NCCL collective #{seq}) on rank {self.world_rank()}, shape {shape}, "
            f"dtype {dtype}, did not complete within {limit:.0f} s (waited {waited:.0f} s). Every "
            f"rank of the group ({', '.join(str(r) for r in self.world_ranks)}) had made this same "
            "call (the signatures matched), so a peer died or stalled inside it (a GPU fault, an "
            "out-of-memory kill, a hung kernel before the collective). The NCCL communicator was "
            "aborted and the job ends; raise SHARDFLOW_COMM_TIMEOUT if the step is legitimately "
            "slower.\n"
        )
        abort_job(msg, kind="timeout", exit_code=TIMEOUT_EXIT_CODE)

    # -- collectives ---------------------------------------------------------------------
    def all_reduce(self, array, op=ReduceOp.SUM, async_op: bool = False, root: int = -1):
        if not self._api.is_device(array):
            return self._control.all_reduce(array, op, async_op, root)
        op = checked_reduce_op(op, array)
        dt = self._nccl_dtype(array)
        nop, divide = self._reduce_op(op, array)
        seq = self._checked("all_reduce", array, op, root)
        buf, back = self._packed(array)
        p = self._api.ptr(buf)

        def launch(stream):
            self._comm.allReduce(p, p, buf.size, dt, nop, stream)

        def finish():
            if back is not None:
                back()
            if divide:
                array[...] /= self._size
            return array

        return self._issue("all_reduce", seq, array, launch, finish, async_op)

    def broadcast(self, array, src: int = 0, async_op: bool = False):
        if not self._api.is_device(array):
            return self._control.broadcast(array, src, async_op)
        if not 0 <= src < self._size:
            raise ValueError(f"broadcast src must be a rank of the group (0 .. {self._size - 1}), got {src}")
        dt = self._nccl_dtype(array)
        seq = self._checked("broadcast", array, root=src)
        buf, back = self._packed(array)
        p = self._api.ptr(buf)

        def launch(stream):
            self._comm.bcast(p, buf.size, dt, src, stream)

        return self._issue("broadcast", seq, array, launch, _unpacked(array, back), async_op)

    def all_gather(self, array, out=None, async_op: bool = False, root: int = -1):
        if not self._api.is_device(array):
            return self._control.all_gather(array, out, async_op, root)
        shape = (self._size, *array.shape)
        if out is not None and (out.size != int(np.prod(shape)) or not out.flags.c_contiguous):
            raise ValueError(f"all_gather out must be a contiguous array of shape {shape}, got "
                             f"{tuple(out.shape)}")
        dt = self._nccl_dtype(array)
        seq = self._checked("all_gather", array, root=root)
        buf, _ = self._packed(array)
        res = self._api.empty(shape, array.dtype) if out is None else out
        ps, pr = self._api.ptr(buf), self._api.ptr(res)

        def launch(stream):
            self._comm.allGather(ps, pr, buf.size, dt, stream)

        return self._issue("all_gather", seq, array, launch, lambda: res, async_op)

    def reduce_scatter(self, array, op=ReduceOp.SUM, out=None, async_op: bool = False):
        if not self._api.is_device(array):
            return self._control.reduce_scatter(array, op, out, async_op)
        op = checked_reduce_op(op, array)
        oshape = self._check_reduce_scatter(array)
        if out is not None and (tuple(out.shape) != oshape or not out.flags.c_contiguous):
            raise ValueError(f"reduce_scatter out must be a contiguous array of shape {oshape}, "
                             f"got {tuple(out.shape)}")
        dt = self._nccl_dtype(array)
        nop, divide = self._reduce_op(op, array)
        seq = self._checked("reduce_scatter", array, op)
        buf, _ = self._packed(array)
        res = self._api.empty(oshape, array.dtype) if out is None else out
        ps, pr = self._api.ptr(buf), self._api.ptr(res)

        def launch(stream):
            self._comm.reduceScatter(ps, pr, res.size, dt, nop, stream)

        def finish():
            if divide:
                res[...] /= self._size
            return res

        return self._issue("reduce_scatter", seq, array, launch, finish, async_op)

    def all_to_all(self, array, out=None, async_op: bool = False):
        if not self._api.is_device(array):
            return self._control.all_to_all(array, out, async_op)
        self._check_all_to_all(array)
        if out is not None and (tuple(out.shape) != tuple(array.shape) or not out.flags.c_contiguous):
            raise ValueError(f"all_to_all out must be a contiguous array of shape "
                             f"{tuple(array.shape)}, got {tuple(out.shape)}")
        dt = self._nccl_dtype(array)
        seq = self._checked("all_to_all", array)
        buf, _ = self._packed(array)
        res = self._api.empty(array.shape, array.dtype) if out is None else out
        ps, pr = self._api.ptr(buf), self._api.ptr(res)
        block = buf.size // self._size
        step = block * buf.dtype.itemsize
        nccl, comm = self._api.nccl, self._comm

        def launch(stream):
            nccl.groupStart()
            try:
                for j in range(self._size):
                    comm.send(ps + j * step, block, dt, j, stream)
                    comm.recv(pr + j * step, block, dt, j, stream)
            finally:
                nccl.groupEnd()

        return self._issue("all_to_all", seq, array, launch, lambda: res, async_op)

    def barrier(self, async_op: bool = False):
        return self._control.barrier(async_op)

    # -- point to point ------------------------------------------------------------------
    def _p2p_sig(self, op, array, peer):
        return np.array(callsig.fields(op, 0, None, array.dtype, array.size, peer, array.shape),
                        dtype=np.int64)

    def _check_peer_sig(self, array, src, tag) -> None:
        """Receive the signature of the peer's send (control path) and compare it with ``array``."""
        theirs = np.zeros(callsig.NBYTES // 8, dtype=np.int64)
        self._control.recv(theirs, src, tag)
        sig = callsig.CallSig.unpack(theirs.tobytes())
        if sig.dtype != callsig.dtype_code(array.dtype) or sig.count != array.size:
            raise CommError(
                f"recv from rank {self.world_rank(src)} (tag {tag}) on rank {self.world_rank()}: "
                f"the peer sent shape {sig.shape_text()} dtype {callsig.dtype_name(sig.dtype)}, "
                f"this rank receives shape {tuple(array.shape)} dtype {array.dtype}; make the "
                "two calls agree. The receive buffer is unchanged."
            )

    def send(self, array, dst: int, tag: int = 0, async_op: bool = False):
        if not self._api.is_device(array):
            return self._control.send(array, dst, tag, async_op)
        dt = self._nccl_dtype(array)
        self._control.send(self._p2p_sig("send", array, dst), dst, tag)
        buf, _ = self._packed(array)
        p = self._api.ptr(buf)

        def launch(stream):
            self._comm.send(p, buf.size, dt, dst, stream)

        return self._issue("send", -1, array, launch, _nothing, async_op)

    def recv(self, array, src: int, tag: int = 0, async_op: bool = False):
        if not self._api.is_device(array):
            return self._control.recv(array, src, tag, async_op)
        if src is None:  # torch's NCCL backend has no any-source receive either
            raise NotImplementedError("recv(src=None) (from any rank) of a device tensor: NCCL "
                                      "has no any-source receive; pass the sender's rank as src")
        dt = self._nccl_dtype(array)
        self._check_peer_sig(array, src, tag)
        buf, back = self._packed(array)
        p = self._api.ptr(buf)

        def launch(stream):
            self._comm.recv(p, buf.size, dt, src, stream)

        return self._issue("recv", -1, array, launch, _unpacked(array, back), async_op)

    def batch_p2p(self, ops) -> list:
        """Host arrays go through the control communicator's batch; the device sends and
        receives are checked, then issued between one ``groupStart``/``groupEnd``."""
        ops = check_p2p_ops(ops, self._size, self._rank)
        works: list = [None] * len(ops)
        host = [i for i, o in enumerate(ops) if not self._api.is_device(o[1])]
        if host:
            for i, w in zip(host, self._control.batch_p2p([ops[i] for i in host])):
                works[i] = w
        dev = [i for i, o in enumerate(ops) if self._api.is_device(o[1])]
        if not dev:
            return works
        dts = {i: self._nccl_dtype(ops[i][1]) for i in dev}
        # every signature out before any is awaited: the peer does the same, so neither waits
        sent = [self._control.send(self._p2p_sig("send", a, peer), peer, tag, async_op=True)
                for op, a, peer, tag in (ops[i] for i in dev) if op == "send"]
        for op, a, peer, tag in (ops[i] for i in dev):
            if op == "recv":
                self._check_peer_sig(a, peer, tag)
        for w in sent:
            w.wait()
        bufs = {i: self._packed(ops[i][1]) for i in dev}
        calls = [(ops[i][0], self._api.ptr(bufs[i][0]), bufs[i][0].size, dts[i], ops[i][2])
                 for i in dev]
        nccl, comm = self._api.nccl, self._comm

        def launch(stream):
            nccl.groupStart()
            try:
                for op, p, n, dt, peer in calls:
                    (comm.send if op == "send" else comm.recv)(p, n, dt, peer, stream)
            finally:
                nccl.groupEnd()

        first = ops[dev[0]][1]
        event = self._launch("batch_p2p", -1, first, launch)
        for i in dev:
            op, array = ops[i][0], ops[i][1]
            finish = _unpacked(array, bufs[i][1]) if op == "recv" else _nothing
            works[i] = NCCLWork(self, event, (op, -1, tuple(array.shape), str(array.dtype)),
                                finish)
        return works

    # -- objects, groups, lifetime -------------------------------------------------------
    def all_gather_object(self, obj) -> list:
        return self._control.all_gather_object(obj)

    def broadcast_object(self, obj, src: int = 0):
        return self._control.broadcast_object(obj, src)

    def new_group(self, ranks):
        sub = self._control.new_group(ranks)
        if sub is None:
            return None
        return NCCLCommunicator(sub, api=self._api, device_index=self.device_index)

    def progress(self) -> None:
        self._control.progress()

    def free(self) -> None:
        comm, self._comm = getattr(self, "_comm", None), None
        if comm is not None and not self._aborted:
            try:
                comm.destroy()
            except Exception:  # noqa: BLE001 - freeing at exit must not raise
                pass
        self._control.free()
