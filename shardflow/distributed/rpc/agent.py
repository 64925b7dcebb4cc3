"""The RPC agent: one per process, between the public API (``api.py``) and the transport.

Threads. The transport's event loop thread (``transport.py``) does all socket I/O, decodes
replies and handles the small control messages of the RRef protocol. Calls (``call``,
``remote``) and distributed-autograd gradients (``bwd``) are executed on a thread pool of
``num_worker_threads`` threads (PyTorch's default 16), as in PyTorch; a function marked
``@functions.async_execution`` returns a Future and is answered when it completes, so it
holds no thread while it waits. User threads build and encode their requests themselves
and hand the frame to the loop.

Requests and replies. Every message that asks something has an ``id``; its answer
(``ret`` with a value, or ``err`` with the remote exception's type, message and
traceback) carries ``re`` = that id. Each outstanding request is a ``_Pending`` with its
Future, the connection it left on, and a deadline: a sweep on the loop thread every 20 ms
fails the requests past theirs with RPCTimeoutError; the loss of its connection fails it
with RPCConnectionError at once (a worker that dies mid-call closes its sockets, or is
refused on reconnect). Calls to a worker go out on this worker's own connection to it
(opened on first use by the loop; later requests are written by the calling thread itself,
so a call costs no hand-off to the loop); the answers to the calls it receives go back on
the connection they came in on.

Message kinds: ``call``, ``remote``, ``fetch`` (``to_here``), ``bwd`` (gradients of
distributed autograd), ``fork`` / ``accept`` / ``del`` (RRef protocol, ``rref.py``),
``release`` (an autograd context ended), ``join`` / ``sd`` / ``ping`` (init and shutdown,
``rendezvous.py``), ``ret`` / ``err`` (answers). Anything else is refused with an ``err``
answer and a log line, never executed.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback

import numpy as np

from ...autograd.tensor import _wrap
from ...futures import Future, collect_all
from ..wire_arrays import WireFormatError
from . import dist_autograd as DA
from . import frame as F
from .codec import Decoder, Encoder, qualified_name, resolve, values_from
from .errors import (
    RemoteException,
    RPCAuthError,
    RPCConnectionError,
    RPCError,
    RPCProtocolError,
    RPCTimeoutError,
)
from .options import WorkerInfo
from .pool import WorkerPool
from .rref import RRef, RRefContext
from .secret import job_secret
from .state import _STATE, current_agent  # noqa: F401 - re-exported for api.py
from .transport import Transport

log = logging.getLogger("shardflow.distributed.rpc")

_POOL_KINDS = ("call", "remote", "bwd")


class _Pending:
    __slots__ = ("future", "peer", "what", "deadline", "timeout", "on_done", "conn")

    def __init__(self, future, peer, what, on_done, timeout):
        self.future, self.peer, self.what, self.on_done = future, peer, what, on_done
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout if timeout > 0 else None
        self.conn = None


class _LocalConnection:
    """Messages a worker sends to itself: no socket, the frame's buffers are copied (value
    semantics, as over the network) and delivered on the loop thread."""

    closed = False
    outbound = True

    def __init__(self, agent):
        self.agent = agent
        self.peer_id = agent.info.id
        self.state: dict = {}

    def send(self, pieces) -> bool:
        first = bytes(pieces[0])
        hlen, plen = F.parse_prefix(first[:F.PREFIX.size])
        header = F.parse_header(first[F.PREFIX.size:F.PREFIX.size + hlen])
        payload = None
        if plen:
            payload = np.empty(plen, np.uint8)
            pos = 0
            for p in pieces[1:]:
                v = np.frombuffer(p, np.uint8)
                payload[pos:pos + v.size] = v
                pos += v.size
        self.agent.transport.call(self.agent._on_frame, self, header, payload)
        return True

    def describe(self) -> str:
        return f"{self.agent.info} (itself)"


class Agent:
    def __init__(self, name: str, rank: int, world_size: int, options):
        self.info = WorkerInfo(rank, name)
        self.world_size = world_size
        self.options = options
        self.timeout = options.rpc_timeout
        self.workers: dict = {rank: self.info}
        self.by_name: dict = {name: self.info}
        self.addresses: dict = {}
        channels = getattr(options, "_channels", None)
        self.transport = Transport(job_secret(), rank, self._on_frame, self._on_lost, self._describe,
                                   shared_reads=channels is None or "cma" in channels)
        self.executor = WorkerPool(options.num_worker_threads, f"shardflow-rpc-{name}")
        self.rrefs = RRefContext(self)
        self._local = _LocalConnection(self)
        self._conns: dict = {}     # peer id -> outbound Connection (loop thread)
        self._waiting: dict = {}   # peer id -> [(request id, pieces)] while connecting
        self._via_loop: dict = {}  # peer id -> requests handed to the loop, not yet sent
        self._pending: dict = {}   # request id -> _Pending
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.active_in = 0         # calls being served here
        self.control: dict = {}    # message kind -> handler(conn, header) for rendezvous.py
        self.on_peer_lost = []     # callbacks(peer id) (rendezvous.py)
        self.stopped = False

    # -- names --------------------------------------------------------------------------
    def worker(self, to) -> WorkerInfo:
        """``to`` (a name, a WorkerInfo or a rank) as a WorkerInfo of this job."""
        if isinstance(to, WorkerInfo):
            if self.workers.get(to.id) != to:
                raise ValueError(f"{to} is not a worker of this RPC job (workers: {self._names()})")
            return to
        if isinstance(to, str):
            info = self.by_name.get(to)
            if info is None:
                raise ValueError(f"unknown destination worker {to!r}; the workers of this job "
                                 f"are {self._names()}")
            return info
        if isinstance(to, (int, np.integer)) and int(to) in self.workers:
            return self.workers[int(to)]
        raise ValueError(f"unknown destination worker {to!r}; expected a name, a WorkerInfo or "
                         f"a rank of {self._names()}")

    def _names(self) -> str:
        return ", ".join(f"{w.name!r} (rank {w.id})" for _, w in sorted(self.workers.items()))

    def _describe(self, peer_id: int) -> str:
        w = self.workers.get(peer_id)
        if w is None:
            return f"rank {peer_id}" if peer_id >= 0 else "an unknown peer"
        return f"worker {w.name!r} (rank {w.id})"

    def timeout_of(self, timeout) -> float:
        """Per-call timeout in seconds: -1 (unset) -> the options' ``rpc_timeout``; 0 -> none."""
        if timeout is None or timeout < 0:
            return self.timeout
        return float(timeout)

    # -- sending requests -----------------------------------------------------------------
    def _encoder(self, dst: int) -> Encoder:
        dmap = self.options.device_maps.get(self.workers[dst].name) if dst in self.workers else None
        forks: list = []

        def fork(rref):
            body = self.rrefs.encode_fork(rref, dst)
            forks.append((rref, body[2]))
            return body
        enc = Encoder(rref_encoder=fork, device_map=dmap)
        enc.forks = forks
        return enc

    def _encode_values(self, enc: Encoder, *values) -> list:
        """Encode ``values``; if one cannot travel, undo the RRef forks already made for this
        message (they would keep their values alive forever) and raise."""
        try:
            return [enc.encode(v) for v in values]
        except BaseException:
            for rref, fork_id in enc.forks:
                self.rrefs.undo_fork(rref, fork_id)
            raise

    def request(self, dst: int, header: dict, enc: Encoder | None, timeout: float, what: str,
                on_done=None) -> Future:
        """Send a request to ``dst``; the Future of its decoded answer (any thread)."""
        if self.stopped:
            raise RPCError(f"RPC is shut down on {self.info}; cannot send {what}")
        fut = Future()
        rid = next(self._ids)
        header["id"] = rid
        p = _Pending(fut, dst, what, on_done, timeout)
        self._pending[rid] = p
        pieces = self.pieces(header, enc)
        conn = self._conns.get(dst)
        with self._lock:
            # direct only when no earlier request to dst still waits for the loop: one
            # thread's requests to a worker arrive in the order it made them
            direct = conn is not None and not conn.closed and not self._via_loop.get(dst)
            if not direct:
                self._via_loop[dst] = self._via_loop.get(dst, 0) + 1
        if direct:
            p.conn = conn       # before sending: a loss from now on fails this request
            if not conn.send(pieces):
                self._fail(rid, RPCConnectionError(
                    f"{what} on {self._describe(dst)} failed: the connection closed as it was sent"))
        else:
            self.transport.call(self._send_request, dst, rid, pieces)
        return fut

    def pieces(self, header: dict, enc: Encoder | None) -> list:
        arrays = enc.arrays if enc is not None else ()
        offsets, plen = F.layout(arrays)
        if arrays:
            for m, off in zip(enc.meta, offsets):
                m[2] = off
            header["b"] = enc.meta
        return F.parts(F.encode_header(header), arrays, offsets, plen)

    def _send_request(self, dst: int, rid: int, pieces) -> None:
        """The loop's part of sending: to itself, or once a connection is opened."""
        try:
            self._route(dst, rid, pieces)
        finally:
            with self._lock:
                self._via_loop[dst] -= 1

    def _route(self, dst: int, rid: int, pieces) -> None:
        p = self._pending.get(rid)
        if p is None:
            return
        if dst == self.info.id:
            p.conn = self._local
            self._local.send(pieces)
            return
        conn = self._conns.get(dst)
        if conn is not None:
            p.conn = conn
            conn.send(pieces)
            return
        waiting = self._waiting.get(dst)
        if waiting is None:
            waiting = self._waiting[dst] = []
            self.transport.loop.create_task(self._connect(dst))
        waiting.append((rid, pieces))

    async def _connect(self, dst: int) -> None:
        addr = self.addresses.get(dst)
        try:
            if addr is None:
                raise RPCConnectionError(f"no address known for rank {dst}")
            conn = await self.transport.connect(addr[0], addr[1], dst)
        except Exception as e:
            where = f" at {addr[0]}:{addr[1]}" if addr else ""
            if isinstance(e, RPCAuthError):  # not retried: another secret will not change
                err = RPCAuthError(f"{self._describe(dst)}{where}: {e}")
            else:
                err = RPCConnectionError(
                    f"{self._describe(dst)}{where} is unreachable from {self.info}: {e} (the "
                    "worker died, has shut down, or is not started yet)")
            for rid, _ in self._waiting.pop(dst, []):
                self._fail(rid, err)
            return
        for rid, pieces in self._waiting.pop(dst, []):
            p = self._pending.get(rid)
            if p is not None:
                p.conn = conn
                conn.send(pieces)
        self._conns[dst] = conn  # published after the waiting requests are queued on it

    def sweep(self) -> None:
        """Fail the requests past their deadline (loop thread, every 20 ms)."""
        if not self.stopped:
            self.transport.loop.call_later(0.02, self.sweep)
        if not self._pending:
            return
        now = time.monotonic()
        for rid, p in list(self._pending.items()):
            if p.deadline is not None and now >= p.deadline:
                self._expire(rid, p.timeout)

    def _expire(self, rid: int, timeout: float) -> None:
        p = self._pending.get(rid)
        if p is None:
            return
        self._fail(rid, RPCTimeoutError(
            f"RPC ran for more than the set timeout ({timeout:g} s) and was marked with an "
            f"error: {p.what} on {self._describe(p.peer)} sent from {self.info}. Pass a larger "
            "timeout= to the call or rpc_timeout to TensorPipeRpcBackendOptions (0: none)"))

    def _fail(self, rid: int, exc: BaseException) -> None:
        p = self._pending.pop(rid, None)
        if p is not None:
            self._finish(p, None, exc)

    def _finish(self, p: _Pending, value, exc) -> None:
        if p.on_done is not None:
            try:
                p.on_done(exc)
            except Exception:
                log.exception("rpc: internal continuation failed")
        fut = p.future
        if fut._callbacks:  # user callbacks must not run on (and block) the I/O thread
            self.executor.submit(_complete, fut, value, exc)
        else:
            _complete(fut, value, exc)

    def _on_lost(self, conn, exc: BaseException) -> None:
        """A connection closed (loop thread): fail every call waiting on it."""
        if self._conns.get(conn.peer_id) is conn:
            del self._conns[conn.peer_id]
        lost = [rid for rid, p in list(self._pending.items()) if p.conn is conn]
        for rid in lost:
            p = self._pending.get(rid)
            self._fail(rid, RPCConnectionError(
                f"{p.what} on {self._describe(p.peer)} failed: {exc}; the worker died or its "
                "connection broke while the call was outstanding"))
        if conn.outbound or lost:
            for cb in list(self.on_peer_lost):
                cb(conn.peer_id)

    def notify(self, dst: int, header: dict, on_done=None) -> Future:
        """A control message (RRef protocol, context release): its errors are logged, and
        passed to ``on_done(error or None)`` on the loop thread."""
        def done(err):
            if err is not None and not self.stopped:
                log.warning("rpc: %s message to %s failed: %s", header.get("k"), self._describe(dst), err)
            if on_done is not None:
                on_done(err)
        try:
            return self.request(dst, header, None, self.timeout, f"{header.get('k')} message", done)
        except RPCError as e:
            fut = Future()
            fut.set_exception(e)
            return fut

    # -- user-facing operations -------------------------------------------------------------
    def call(self, to, fn, args, kwargs, timeout) -> Future:
        dst = self.worker(to).id
        name = qualified_name(fn)
        enc = self._encoder(dst)
        a, kw = self._encode_values(enc, list(args or ()), dict(kwargs or {}))
        header = {"k": "call", "fn": name, "a": a, "kw": kw}
        ag = DA.outgoing(enc.grad_tensors, dst) if DA.current_context_id() is not None else None
        if ag is not None:
            header["ag"] = ag
        return self.request(dst, header, enc, self.timeout_of(timeout), f"rpc of {name}")

    def call_sync(self, to, fn, args, kwargs, timeout):
        return self.call(to, fn, args, kwargs, timeout).wait()

    def remote(self, to, fn, args, kwargs, timeout) -> RRef:
        dst = self.worker(to).id
        name = qualified_name(fn)
        if dst == self.info.id:
            return self._remote_local(fn, args, kwargs)
        enc = self._encoder(dst)
        rref_id, fork_id = self.rrefs.new_id(), self.rrefs.new_id()
        a, kw = self._encode_values(enc, list(args or ()), dict(kwargs or {}))
        rref = self.rrefs.new_user(dst, rref_id, fork_id, confirmed=False)  # once it can be sent
        header = {"k": "remote", "fn": name, "a": a, "kw": kw, "rr": list(rref_id), "fk": list(fork_id)}
        ag = DA.outgoing(enc.grad_tensors, dst) if DA.current_context_id() is not None else None
        if ag is not None:
            header["ag"] = ag
        rref._creation = self.request(dst, header, enc, self.timeout_of(timeout), f"remote of {name}",
                                      on_done=lambda err: self.rrefs.confirm(fork_id, err))
        return rref

    def _remote_local(self, fn, args, kwargs) -> RRef:
        rref = RRef._owner_pending(self, self.rrefs.new_id())
        cid = DA.current_context_id()

        def run():
            try:
                with DA._ThreadContext(cid):
                    result = fn(*(args or ()), **(kwargs or {}))
                if _is_async(fn):
                    result._on_done(lambda f: _copy_outcome(f, rref._value))
                else:
                    rref._value.set_result(result)
            except Exception as e:
                rref._value.set_exception(e)
        self.executor.submit(run)
        return rref

    def fetch(self, rref: RRef, timeout) -> Future:
        header = {"k": "fetch", "rr": list(rref._rref_id)}
        ag = DA.outgoing((), rref._owner_id) if DA.current_context_id() is not None else None
        if ag is not None:
            header["ag"] = ag
        return self.request(rref._owner_id, header, None, self.timeout_of(timeout), "to_here()")

    def send_backward(self, dst: int, cid: int, mid: int, grads) -> Future:
        enc = self._encoder(dst)
        g = enc.encode([None if x is None else _wrap(x) for x in grads])
        header = {"k": "bwd", "c": cid, "m": mid, "g": g}
        return self.request(dst, header, enc, self.timeout, "distributed backward")

    def send_release(self, dst: int, cid: int) -> None:
        self.notify(dst, {"k": "release", "c": cid})

    # -- receiving --------------------------------------------------------------------------
    def _on_frame(self, conn, header: dict, payload) -> None:
        """Every authenticated frame (loop thread)."""
        kind = header.get("k")
        if kind == "ret" or kind == "err":
            self._on_answer(conn, header, payload)
        elif kind in _POOL_KINDS:
            if kind == "remote":  # registered in arrival order, before any later fetch of it
                try:
                    self.rrefs.add_fork(self.rrefs.owner_rref(header["rr"]), header["fk"])
                except (KeyError, TypeError, ValueError):
                    self._refuse(conn, header, "malformed remote message")
                    return
            with self._lock:
                self.active_in += 1
            self.executor.submit(self._serve, conn, header, payload)
        elif kind == "fetch":
            self._serve_fetch(conn, header)
        elif kind in _CONTROL:
            self._answer_control(conn, header, _CONTROL[kind])
        elif kind in self.control:
            self.control[kind](conn, header)
        else:
            self._refuse(conn, header, f"unknown message kind {kind!r}")

    def _refuse(self, conn, header, why: str) -> None:
        log.warning("rpc: refused a message from %s: %s", conn.describe(), why)
        if isinstance(header.get("id"), int):
            self.answer_error(conn, header["id"], RPCProtocolError(f"{self.info} refused the message: {why}"))

    def _on_answer(self, conn, header: dict, payload) -> None:
        p = self._pending.pop(header.get("re"), None)
        if p is None:
            return  # answered after its timeout: already failed
        if header["k"] == "err":
            self._finish(p, None, self._remote_error(header.get("e") or {}))
            return
        try:
            value = self.decoder(header, payload, conn.peer_id).decode(header.get("v"))
        except Exception as e:
            self._finish(p, None, e)
            return
        self._finish(p, value, None)

    def decoder(self, header: dict, payload, src: int) -> Decoder:
        """The decoder of a message's values (its tensors made first: those requiring grad
        become outputs of a receive node when the message carries an autograd context)."""
        source = None
        ag = header.get("ag")
        if ag is not None:
            _, source = DA.incoming(ag, src)
        arrays = F.buffers(header, payload) if "b" in header else []
        values = values_from(arrays, header.get("b", ()), source)
        return Decoder(values, lambda body: self.rrefs.decode_fork(body, src))

    def _serve(self, conn, header: dict, payload) -> None:
        """A call, remote or bwd (pool thread)."""
        rid = header.get("id")
        kind = header["k"]
        done_here = True
        try:
            if kind == "bwd":
                done_here = False
                self._serve_backward(conn, rid, header, payload)
                return
            fn = resolve(header.get("fn"))
            cid = None
            if header.get("ag") is not None:
                cid = int(header["ag"][0])
            dec = self.decoder(header, payload, conn.peer_id)
            args, kwargs = dec.decode(header.get("a")), dec.decode(header.get("kw"))
            if not isinstance(args, list) or not isinstance(kwargs, dict) or \
                    not all(isinstance(k, str) for k in kwargs):
                raise RPCProtocolError("malformed arguments")
            rref = self.rrefs.owner_rref(header["rr"]) if kind == "remote" else None
            with DA._ThreadContext(cid):
                result = fn(*args, **kwargs)
            if _is_async(fn):
                if not isinstance(result, Future):
                    raise TypeError(f"{header['fn']} is marked @async_execution but returned a "
                                    f"{type(result).__name__}, not a Future")
                done_here = False
                result._on_done(lambda f: self._answer_future(conn, rid, f, cid, rref))
                return
            if rref is not None:
                rref._value.set_result(result)
                result = None
            self.answer(conn, rid, result, cid)
        except Exception as e:
            if isinstance(e, (RPCProtocolError, WireFormatError)):
                log.warning("rpc: refused a message from %s: %s", conn.describe(), e)
            if kind == "remote" and "rr" in header:
                self._set_remote_error(header, e)
            self.answer_error(conn, rid, e)
        finally:
            if done_here:
                self._served()

    def _served(self) -> None:
        with self._lock:
            self.active_in -= 1

    def _set_remote_error(self, header, e) -> None:
        try:
            r = self.rrefs.owner_rref(header["rr"])
            if not r._value.done():
                r._value.set_exception(e)
        except Exception:
            pass

    def _answer_future(self, conn, rid, fut: Future, cid, rref) -> None:
        try:
            try:
                value = fut.value()
            except Exception as e:
                if rref is not None and not rref._value.done():
                    rref._value.set_exception(e)
                self.answer_error(conn, rid, e)
                return
            if rref is not None:
                rref._value.set_result(value)
                value = None
            self.answer(conn, rid, value, cid)
        finally:
            self._served()

    def _serve_backward(self, conn, rid, header, payload) -> None:
        try:
            grads = self.decoder(header, payload, conn.peer_id).decode(header.get("g"))
            futs = DA.run_send_function(int(header["c"]), int(header["m"]), grads)
        except Exception as e:
            self.answer_error(conn, rid, e)
            self._served()
            return

        def all_done(f):
            try:
                for sub in f.value():
                    sub.value()
                self.answer(conn, rid, None, None)
            except Exception as e:
                self.answer_error(conn, rid, e)
            finally:
                self._served()
        collect_all(futs)._on_done(all_done)

    def _serve_fetch(self, conn, header: dict) -> None:
        rid = header.get("id")
        try:
            rref_id = tuple(header["rr"])
        except (KeyError, TypeError):
            self._refuse(conn, header, "malformed fetch")
            return
        rref = self.rrefs.owners.get(rref_id)
        if rref is None:
            self.answer_error(conn, rid, RPCError(
                f"RRef {rref_id} is not known on its owner {self.info}: it was deleted (every "
                "user dropped it) or never created"))
            return
        cid = int(header["ag"][0]) if header.get("ag") is not None else None
        with self._lock:
            self.active_in += 1

        def send(f):
            def run():
                try:
                    self.answer(conn, rid, f.value(), cid)
                except Exception as e:
                    self.answer_error(conn, rid, e)
                finally:
                    self._served()
            self.executor.submit(run)
        rref._value._on_done(send)

    def _answer_control(self, conn, header: dict, handler) -> None:
        try:
            handler(self, conn, header)
        except Exception as e:
            self._refuse(conn, header, f"{header.get('k')}: {e}")
            return
        if isinstance(header.get("id"), int):
            self.answer(conn, header["id"], None, None)

    # -- answering ----------------------------------------------------------------------------
    def answer(self, conn, rid, value, cid) -> None:
        """Send ``ret`` with ``value`` (any thread). In context ``cid`` the tensors that
        require grad are recorded as a send function."""
        if conn.closed:
            return
        enc = self._encoder(conn.peer_id)
        try:
            header = {"k": "ret", "re": rid, "v": self._encode_values(enc, value)[0]}
        except Exception as e:
            self.answer_error(conn, rid, e)
            return
        if cid is not None and enc.grad_tensors:
            header["ag"] = DA.reply_outgoing(cid, enc.grad_tensors, conn.peer_id)
        conn.send(self.pieces(header, enc))

    def answer_error(self, conn, rid, exc: BaseException) -> None:
        if conn.closed or not isinstance(rid, int):
            return
        t = type(exc)
        tb = "".join(traceback.format_exception(t, exc, exc.__traceback__))
        header = {"k": "err", "re": rid,
                  "e": {"t": f"{t.__module__}:{t.__qualname__}", "m": str(exc), "tb": tb,
                        "w": [self.info.id, self.info.name]}}
        conn.send(self.pieces(header, None))

    def _remote_error(self, e: dict) -> BaseException:
        """The caller-side exception for an ``err`` answer: the remote type when it can be
        re-created from a message, with PyTorch's "On WorkerInfo(...)" text and the remote
        traceback; RemoteException otherwise."""
        w = e.get("w") or [-1, "?"]
        where = WorkerInfo(int(w[0]), str(w[1]))
        name = str(e.get("t", "builtins:RuntimeError"))
        short = name.split(":")[-1]
        msg = f"On {where}:\n{short}({e.get('m', '')!r})\n{e.get('tb', '')}".rstrip()
        try:
            cls = resolve(name, "exception class")
            if isinstance(cls, type) and issubclass(cls, Exception):
                return cls(msg)
        except Exception:
            pass
        return RemoteException(msg)

    # -- stop -----------------------------------------------------------------------------------
    def pending_count(self, exclude=()) -> int:
        return sum(1 for rid, p in list(self._pending.items()) if rid not in exclude) + self.active_in

    def stop(self) -> None:
        """Close everything now; calls still waiting fail."""
        if self.stopped:
            return
        self.stopped = True
        err = RPCError(f"RPC was shut down on {self.info} while the call was outstanding")

        def fail_all():
            for rid in list(self._pending):
                self._fail(rid, err)
        try:
            self.transport.call(fail_all)
        except RuntimeError:
            pass
        self.transport.close()
        for rid in list(self._pending):
            self._fail(rid, err)
        self.executor.shutdown()


def _complete(fut: Future, value, exc) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


def _copy_outcome(src: Future, dst: Future) -> None:
    try:
        dst.set_result(src.value())
    except Exception as e:
        dst.set_exception(e)


def _is_async(fn) -> bool:
    return bool(getattr(fn, "_shardflow_async_execution", False))


# -- control messages handled on the loop thread (answered with ret None) -------------------


def _on_fork(agent, conn, h):
    agent.rrefs.add_fork(agent.rrefs.owner_rref(h["rr"]), h["fk"])


def _on_accept(agent, conn, h):
    agent.rrefs.release_child(h["fk"])


def _on_del(agent, conn, h):
    agent.rrefs.del_fork(h["rr"], h["fk"])


def _on_release(agent, conn, h):
    c = DA._STATE["container"]
    if c is not None:
        c.release(int(h["c"]), notify_except=conn.peer_id)


def _on_ping(agent, conn, h):
    pass


_CONTROL = {"fork": _on_fork, "accept": _on_accept, "del": _on_del, "release": _on_release,
            "ping": _on_ping}
