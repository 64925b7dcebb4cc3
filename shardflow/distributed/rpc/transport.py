"""RPC's transport: TCP connections driven by one asyncio event loop on a daemon thread.

The loop owns every socket of this worker: the listener (``sock_accept``), the handshake of
each new connection (``secret.py``, as coroutines on ``sock_recv`` / ``sock_sendall``), and
then framed I/O through the loop's reader and writer callbacks (``add_reader`` /
``add_writer``), which are its cheapest path:

* **Receiving** (``Connection._on_readable``): small frames are read through a 256 KB
  staging buffer, several per ``recv`` call; a frame's payload is allocated once (NumPy,
  uninitialised) and, past what was already staged, received straight into it with
  ``recv_into``: the tensors that arrive are views of that buffer, no copy beyond the
  socket's. The MAC is updated as bytes arrive, and checked before the header is parsed.
* **Sending** (``Connection.send``, any thread): under the connection's send lock the frame
  gets the next sequence number and the calling thread writes it with non-blocking
  ``send`` calls; what the socket does not take is left to the loop's writer callback
  (``add_writer``), which later frames then queue behind. A small frame therefore costs
  its sender no thread hand-off. Large buffers are sent as memoryviews of the tensors (no
  copy) in 4 MB pieces, each hashed into the MAC just before it is written, so the
  sender's hashing overlaps the receiver's. Small frames are joined into one ``send``.
* **Same host** (``cma.py``): once the peer has proved that it can read this process's
  memory (an authenticated probe after the handshake, ``offer_shared_reads``), a payload of
  ``REF_MIN`` bytes or more is not written to the socket: the frame carries the addresses
  of its pieces (``FLAG_REF``; the frame's HMAC covers them), the receiver reads them
  straight into the payload array with ``process_vm_readv`` (one copy instead of TCP's two),
  checks that the verified sender is still alive and has not closed the connection (so the
  pieces were still held when they were read), and sends a read receipt; the sender holds
  the pieces until then. The payload itself is not hashed on this path (docs/RPC.md,
  Security: the bytes come from the verified process through the kernel, not from a
  network).

A connection that fails (EOF, reset, a bad MAC or frame) is closed and reported once to the
agent (``on_lost``), which fails the calls that were waiting on it.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import threading

import numpy as np

from ..wire_arrays import WireFormatError
from . import cma
from . import frame as F
from . import mac as M
from . import secret as S
from .errors import RPCAuthError, RPCConnectionError, RPCProtocolError

log = logging.getLogger("shardflow.distributed.rpc")

_STAGE = 256 << 10
_CHUNK = 256 << 10
_SMALL = 64 << 10
_HANDSHAKE_TIMEOUT = 10.0
REF_MIN = M.POLY_MIN   # payloads from this size are read from the sender's memory when it can
_RELEASE_AFTER_CLOSE = 1.0   # s a closed connection still holds lent pieces (see close)
_RECEIPT_DELAY = 0.01         # s a read receipt may wait for a frame to ride with (see send)


class Connection:
    """One authenticated TCP connection (either direction)."""

    def __init__(self, transport: Transport, sock: socket.socket, peer_id: int, send_key: bytes,
                 recv_key: bytes, outbound: bool, peer_addr):
        self.transport = transport
        self.loop = transport.loop
        self.sock = sock
        self.fd = sock.fileno()
        self.peer_id = peer_id
        self.peer_addr = peer_addr
        self.outbound = outbound
        self.closed = False
        self.state: dict = {}           # the agent's per-connection notes
        self._send_key, self._recv_key = send_key, recv_key
        self._send_seq = self._recv_seq = 0
        self._out: collections.deque = collections.deque()  # [view, mac or None] / [None, mac]
        self._writing = False           # the loop's writer callback owns the queue
        self._send_lock = threading.Lock()
        # same-host reads (cma.py)
        self._shared_reads = transport.shared_reads
        self._probe = None              # the bytes the peer reads to prove it can
        self._ref_ok = False            # the peer reads our large payloads from our memory
        self._peer = None               # cma.PeerProcess: we read the peer's (verified by its probe)
        self._lent: dict = {}           # send seq -> pieces the peer has not read yet
        self._receipts: list = []       # seqs of the peer's frames read, receipt not sent yet
        self._receipt_timer = False
        # receive state machine
        self._buf = bytearray(_STAGE)
        self._bufview = memoryview(self._buf)
        self._start = self._end = 0
        self._need = F.PREFIX.size
        self._phase = "prefix"
        self._mac = None
        self._hlen = self._plen = 0
        self._prefix = self._header = b""
        self._payload = None
        self._pview = None
        self._got = 0
        self._flags = 0
        self._frame_seq = 0

    # -- sending ------------------------------------------------------------------------
    def send(self, pieces: list | None) -> bool:
        """Send one frame (its pieces, without MAC); safe from any thread. The calling thread
        writes it itself while the socket takes it (no hand-off to the loop for a small
        frame); what does not fit is left to the loop's writer callback. The read receipts
        that are due go first, in the same write (``None``: only them). False when the
        connection is closed (nothing was sent)."""
        with self._send_lock:
            if self.closed:
                return False
            if self._receipts:
                self._enqueue([self._control_frame({"c": "rd", "s": self._receipts})])
                self._receipts = []
            if pieces is not None:
                self._enqueue(pieces)
            if self._writing:
                return True     # the loop is draining the queue; it will send this too
            try:
                self._write_some()
            except OSError as e:
                self.transport.call(self.close, RPCConnectionError(f"sending to {self.describe()} failed: {e}"))
                return True     # the close reports the loss to the requests waiting on it
            if self._out:
                self._writing = True
                self.transport.call(self._arm_writer)
            return True

    def _enqueue(self, pieces: list) -> None:
        seq_n = self._send_seq
        seq = F.SEQ.pack(seq_n)
        self._send_seq += 1
        total = sum(memoryview(p).nbytes for p in pieces)
        if total <= _SMALL:
            data = b"".join(pieces)
            self._queue_small(data + M.one_shot(self._send_key, seq, data))
            return
        head = pieces[0]  # prefix + header: authenticated when the MAC is made
        if self._ref_ok and total - len(head) >= REF_MIN:
            self._enqueue_ref(seq_n, seq, head, pieces[1:], total - len(head))
            return
        mac = M.FrameMac(self._send_key, seq, head, total - len(head))
        self._out.append([memoryview(head), None])
        for p in pieces[1:]:
            view = memoryview(p).cast("B")
            for i in range(0, len(view), _CHUNK):
                self._out.append([view[i:i + _CHUNK], mac])
        self._out.append([None, mac])

    def _enqueue_ref(self, seq_n: int, seq: bytes, head, pieces, length: int) -> None:
        """A frame whose payload the peer reads from this process (``FLAG_REF``): prefix,
        header, reference section (payload length, addresses and lengths), MAC."""
        views = [memoryview(p).cast("B") for p in pieces]
        ref = F.ref_section(length, [(cma.address(v), len(v)) for v in views])
        data = (F.PREFIX.pack(S.MAGIC, S.VERSION, F.FLAG_REF, 0, len(head) - F.PREFIX.size, len(ref))
                + bytes(head[F.PREFIX.size:]) + ref)
        self._lent[seq_n] = views   # alive and unchanged until the peer's read receipt
        self._queue_small(data + M.one_shot(self._send_key, seq, data))

    def _queue_small(self, frame: bytes) -> None:
        """Queue a whole small frame; joined to the queue's last one when that is a small
        frame not yet begun (bytes: a partial write leaves a memoryview), so that frames
        made together (read receipts and the frame they ride with) take one ``send``."""
        out = self._out
        if out:
            last = out[-1]
            if type(last[0]) is bytes and len(last[0]) + len(frame) <= _SMALL:
                last[0] += frame
                return
        out.append([frame, None])

    @staticmethod
    def _control_frame(header: dict) -> bytes:
        body = F.encode_header(header)
        return F.PREFIX.pack(S.MAGIC, S.VERSION, F.FLAG_CTL, 0, len(body), 0) + body

    def _send_control(self, header: dict) -> None:
        self.send([self._control_frame(header)])

    def _receipt_due(self, seq_n: int) -> None:
        """The peer's frame ``seq_n`` was read from its memory (loop thread). Its receipt
        rides with the next frame sent on this connection (an answer, the next request:
        no frame and no wake-up of its own for the peer), or goes alone after
        ``_RECEIPT_DELAY`` when none is sent meanwhile."""
        with self._send_lock:
            self._receipts.append(seq_n)
        if not self._receipt_timer:
            self._receipt_timer = True
            self.loop.call_later(_RECEIPT_DELAY, self._flush_receipts)

    def _flush_receipts(self) -> None:
        self._receipt_timer = False
        if self._receipts and not self.closed:
            self.send(None)

    def offer_shared_reads(self) -> None:
        """Ask the peer to prove it can read this process's memory (loop thread, after the
        handshake): our pid and the address and value of 16 random bytes. Its "ok" turns on
        payloads by reference in this direction."""
        if self._shared_reads and cma.available():
            self._probe = os.urandom(16)
            self._send_control({"c": "hello", "pid": os.getpid(), "a": cma.address(self._probe),
                                "v": self._probe.hex()})

    def _on_control(self, header: dict) -> None:
        c = header.get("c")
        if c == "rd":        # the peer has read payloads by reference: release their pieces
            seqs = header.get("s")
            with self._send_lock:
                for s in seqs if isinstance(seqs, list) else (seqs,):
                    if isinstance(s, int):
                        self._lent.pop(s, None)
        elif c == "hello":
            if not (self._shared_reads and cma.available()):
                return
            peer = None
            try:
                pid, addr, want = int(header["pid"]), int(header["a"]), bytes.fromhex(header["v"][:32])
                got = bytearray(16)
                if len(want) == 16:
                    peer = cma.PeerProcess(pid)   # before the read: bound to the process read
                    peer.read(addr, got)
            except (KeyError, TypeError, ValueError, OSError) as e:
                if peer is not None:
                    peer.close()
                log.debug("rpc: cannot read %s's memory, large payloads stay on TCP: %s", self.describe(), e)
                return
            if peer is not None and got == want and not peer.gone():
                peer.watch(self.fd)
                if self._peer is not None:
                    self._peer.close()
                self._peer = peer
                self._send_control({"c": "ok"})
            elif peer is not None:
                peer.close()
        elif c == "ok":
            if self._probe is not None:
                with self._send_lock:
                    self._ref_ok = True
        else:
            raise RPCProtocolError(f"unknown control frame {c!r}")

    def _read_ref(self, seq_n: int, section) -> np.ndarray | None:
        """The payload of a ``FLAG_REF`` frame (whose MAC, covering the addresses, was
        checked), read from the verified peer's memory, then acknowledged so that the peer
        may release it. Trusted only if, after the read, the peer process is still the one
        verified and has not closed this connection: a sender releases lent pieces only
        after closing its socket (``close``), so the pieces were held while they were read."""
        peer = self._peer
        if peer is None:
            raise RPCProtocolError("a payload by reference from a peer not verified to share this "
                                   "host (its memory cannot be read from here)")
        length, segs = F.parse_ref(b"" if section is None else memoryview(section))
        payload = np.empty(length, np.uint8)
        pos = 0
        for addr, n in segs:
            try:
                peer.read(addr, payload[pos:pos + n])
            except OSError as e:
                if peer.gone():
                    raise EOFError from None
                raise RPCProtocolError(f"reading a payload from {self.describe()}'s memory failed: {e}") from None
            pos += n
        if peer.gone():   # exited (its pid may be another's now) or closed: discard the read
            raise EOFError
        self._receipt_due(seq_n)
        return payload if length else None

    def _deliver(self, flags: int, seq_n: int, header_raw, payload) -> None:
        """An authenticated frame: control frames stay here, the others go to the agent."""
        header = F.parse_header(header_raw)
        if flags & F.FLAG_CTL:
            self._on_control(header)
            return
        if flags & F.FLAG_REF:
            payload = self._read_ref(seq_n, payload)
        self.transport.on_frame(self, header, payload)

    def _write_some(self) -> None:
        """Write queued pieces until the socket is full (caller holds ``_send_lock``)."""
        out = self._out
        while out:
            item = out[0]
            data, mac = item
            if data is None:          # the MAC of a large frame: every piece is hashed
                item[0] = data = memoryview(mac.digest())
                item[1] = None
            elif mac is not None:     # hash a large frame's piece just before writing it
                mac.update(data)
                item[1] = None
            try:
                n = self.sock.send(data)
            except BlockingIOError:
                return
            if n < len(data):
                item[0] = memoryview(data)[n:]
                return
            out.popleft()

    def _arm_writer(self) -> None:
        if not self.closed:
            self.loop.add_writer(self.fd, self._on_writable)

    def _on_writable(self) -> None:
        with self._send_lock:
            try:
                self._write_some()
            except OSError as e:
                self._out.clear()
                err = RPCConnectionError(f"sending to {self.describe()} failed: {e}")
            else:
                err = None
                if self._out:
                    return
            self._writing = False
            self.loop.remove_writer(self.fd)
        if err is not None:
            self.close(err)

    # -- receiving ----------------------------------------------------------------------
    def start_reading(self) -> None:
        self.loop.add_reader(self.fd, self._on_readable)

    def _on_readable(self) -> None:
        try:
            for _ in range(64):  # bounded, so one busy peer cannot starve the others
                if self._phase == "payload" and self._start == self._end:
                    n = self.sock.recv_into(self._pview[self._got:])
                    if n == 0:
                        raise EOFError
                    self._mac.update(self._pview[self._got:self._got + n])
                    self._got += n
                    if self._got == self._plen:
                        self._phase, self._need = "mac", F.MAC_LEN
                    continue
                if self._start == self._end:
                    self._start = self._end = 0
                elif self._end == len(self._buf):
                    self._compact()
                want = len(self._buf) - self._end
                n = self.sock.recv_into(self._bufview[self._end:])
                if n == 0:
                    raise EOFError
                self._end += n
                self._parse()
                if self.closed or (n < want and self._phase == "prefix"):
                    # A short read that ended on a frame boundary drained the socket: return
                    # without the recv that would only say so (EAGAIN), one system call per
                    # message less; data that arrives meanwhile wakes the (level-triggered)
                    # reader again. Inside a large frame, the sender is still streaming.
                    return
        except BlockingIOError:
            return
        except EOFError:
            self.close(RPCConnectionError(f"{self.describe()} closed the connection"))
        except OSError as e:
            self.close(RPCConnectionError(f"connection to {self.describe()} failed: {e}"))
        except (WireFormatError, RPCProtocolError) as e:
            log.warning("rpc: refused a frame from %s and closed the connection: %s",
                        self.describe(), e)
            self.close(RPCProtocolError(f"{self.describe()} sent a malformed frame: {e}"))
        except Exception as e:  # e.g. MemoryError for a payload too large: end this connection
            log.exception("rpc: reading from %s failed; closing the connection", self.describe())
            self.close(RPCConnectionError(f"reading from {self.describe()} failed: {e!r}"))

    def _compact(self) -> None:
        left = self._end - self._start
        need = max(self._need, left + 1)
        if need > len(self._buf):  # a header larger than the staging buffer
            buf = bytearray(need)
            buf[:left] = self._bufview[self._start:self._end]
            self._buf, self._bufview = buf, memoryview(buf)
        else:
            self._buf[:left] = self._bufview[self._start:self._end]
        self._start, self._end = 0, left

    def _parse(self) -> None:
        view = self._bufview
        while True:
            avail = self._end - self._start
            phase = self._phase
            if phase == "payload":
                take = min(avail, self._plen - self._got)
                if take:
                    chunk = view[self._start:self._start + take]
                    self._pview[self._got:self._got + take] = chunk
                    self._mac.update(chunk)
                    self._got += take
                    self._start += take
                if self._got < self._plen:
                    return
                self._phase, self._need = "mac", F.MAC_LEN
                continue
            if avail < self._need:
                if self._need > len(self._buf) - self._start:
                    self._compact()
                return
            raw = view[self._start:self._start + self._need]
            if phase == "prefix":
                hlen, plen = F.parse_prefix(raw)
                self._flags = raw[5]
                end = self._start + F.PREFIX.size + hlen + plen
                if plen < M.POLY_MIN and end + F.MAC_LEN <= self._end:  # staged: one-shot MAC
                    self._whole_frame(hlen, plen, end)
                    if self.closed:
                        return
                    continue
            self._start += self._need
            if phase == "prefix":
                self._hlen, self._plen = hlen, plen
                self._prefix = bytes(raw)
                self._phase, self._need = "header", self._hlen
            elif phase == "header":
                self._header = bytes(raw)
                self._mac = M.FrameMac(self._recv_key, F.SEQ.pack(self._recv_seq),
                                       self._prefix + self._header, self._plen)
                self._frame_seq = self._recv_seq
                self._recv_seq += 1
                self._payload = np.empty(self._plen, np.uint8) if self._plen else None
                self._pview = memoryview(self._payload) if self._plen else None
                self._got = 0
                self._phase, self._need = ("payload", 0) if self._plen else ("mac", F.MAC_LEN)
            else:  # mac
                if not S.same(self._mac.digest(), bytes(raw)):
                    raise RPCProtocolError("bad MAC (the frame was altered, replayed or not "
                                           "sent by a holder of the job's secret)")
                header, payload = self._header, self._payload
                self._phase, self._need = "prefix", F.PREFIX.size
                self._header, self._payload, self._pview, self._mac = b"", None, None, None
                self._deliver(self._flags, self._frame_seq, header, payload)
                if self.closed:
                    return

    def _whole_frame(self, hlen: int, plen: int, end: int) -> None:
        view, start = self._bufview, self._start
        seq_n = self._recv_seq
        seq = F.SEQ.pack(seq_n)
        self._recv_seq += 1
        mac = M.one_shot(self._recv_key, seq, view[start:end])
        if not S.same(mac, view[end:end + F.MAC_LEN]):
            raise RPCProtocolError("bad MAC (the frame was altered, replayed or not sent by a "
                                   "holder of the job's secret)")
        hstart = start + F.PREFIX.size
        header = bytes(view[hstart:hstart + hlen])
        payload = None
        if plen:
            payload = np.empty(plen, np.uint8)
            memoryview(payload)[:] = view[hstart + hlen:end]
        self._start = end + F.MAC_LEN
        self._deliver(view[start + 5], seq_n, header, payload)

    # -- lifecycle ----------------------------------------------------------------------
    def describe(self) -> str:
        who = self.transport.describe_peer(self.peer_id)
        return f"{who} ({self.peer_addr[0]}:{self.peer_addr[1]})" if self.peer_addr else who

    def close(self, exc: BaseException | None = None) -> None:
        """Close (loop thread); report ``exc`` (why) to the agent once."""
        if self.closed:
            return
        self.closed = True
        try:
            self.loop.remove_reader(self.fd)
            self.loop.remove_writer(self.fd)
        except (ValueError, OSError):
            pass
        with self._send_lock:
            self._out.clear()
            lent, self._lent = self._lent, {}
        try:
            self.sock.close()
        except OSError:
            pass
        if self._peer is not None:
            self._peer.close()
        if lent:
            # Released only after the socket is closed, and a moment later: a peer still
            # reading them then sees the close (``_read_ref``) and discards what it read.
            try:
                self.loop.call_later(_RELEASE_AFTER_CLOSE, lent.clear)
            except RuntimeError:   # the loop is closed: nothing runs any more
                pass
        self.transport.connections.discard(self)
        self.transport.on_lost(self, exc or RPCConnectionError(f"{self.describe()}: connection closed"))


class Transport:
    """The event loop thread, the listener and the handshake (see the module docstring)."""

    def __init__(self, key: bytes, worker_id: int, on_frame, on_lost, describe_peer,
                 shared_reads: bool = True):
        self.key = key
        self.shared_reads = shared_reads   # offer and accept same-host reads (cma.py)
        self.worker_id = worker_id
        self.on_frame = on_frame
        self.on_lost = on_lost
        self.describe_peer = describe_peer
        self.loop = asyncio.new_event_loop()
        self.loop_thread_id = None
        self.connections: set = set()
        self._listener = None
        self.listen_address = None
        self._accept_task = None
        self._thread = threading.Thread(target=self._run, name="shardflow-rpc-io", daemon=True)

    # -- loop -----------------------------------------------------------------------------
    def _run(self) -> None:
        self.loop_thread_id = threading.get_ident()
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen on ``host:port`` (0: any free port) and start the loop; the bound address."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        ls = socket.socket(family, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            ls.bind((host, port))
        except OSError as e:
            ls.close()
            raise RPCConnectionError(
                f"RPC worker could not listen on {host}:{port}: {e}. Another job may hold the "
                "port: set MASTER_PORT (or init_method='tcp://host:port') to a free one") from None
        ls.listen(128)
        ls.setblocking(False)
        self._listener = ls
        self._thread.start()
        while self.loop_thread_id is None:
            threading.Event().wait(0.001)
        self.call(self._start_accepting)
        self.listen_address = ls.getsockname()[:2]
        return self.listen_address

    def _start_accepting(self) -> None:
        self._accept_task = self.loop.create_task(self._accept_loop())

    def call(self, fn, *args) -> None:
        """Run ``fn(*args)`` on the loop thread (now if this is it)."""
        if threading.get_ident() == self.loop_thread_id:
            fn(*args)
        else:
            self.loop.call_soon_threadsafe(fn, *args)

    def run(self, coro, timeout: float | None = None):
        """Run a coroutine on the loop from another thread and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    # -- connections ----------------------------------------------------------------------
    async def _accept_loop(self) -> None:
        while True:
            try:
                sock, addr = await self.loop.sock_accept(self._listener)
            except asyncio.CancelledError:
                return
            except OSError as e:
                log.warning("rpc: accept failed: %s", e)
                await asyncio.sleep(0.05)
                continue
            self.loop.create_task(self._server_handshake(sock, addr))

    async def _server_handshake(self, sock: socket.socket, addr) -> None:
        _tune(sock)
        loop = self.loop
        try:
            hello = await asyncio.wait_for(_recv_exact(loop, sock, S.HELLO.size), _HANDSHAKE_TIMEOUT)
            magic, version, cnonce = S.HELLO.unpack(hello)
            if magic != S.MAGIC:
                raise RPCAuthError(f"not a shardflow RPC client (first bytes {hello[:4]!r})")
            if version != S.VERSION:
                raise RPCAuthError(f"handshake version {version}, this worker speaks {S.VERSION}")
            snonce = S.new_nonce()
            await loop.sock_sendall(sock, S.CHALLENGE.pack(snonce, S.proof(self.key, b"server", cnonce, snonce)))
            answer = await asyncio.wait_for(_recv_exact(loop, sock, S.ANSWER.size), _HANDSHAKE_TIMEOUT)
            cproof, peer_id = S.ANSWER.unpack(answer)
            if not S.same(cproof, S.proof(self.key, b"client", snonce, cnonce)):
                raise RPCAuthError("the peer does not hold the job's secret")
        except (RPCAuthError, asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            if isinstance(e, asyncio.TimeoutError):
                why = "handshake timed out"
            elif isinstance(e, asyncio.IncompleteReadError):
                why = ("the peer closed the connection during the handshake (a peer with another "
                       "secret does so when it finds this worker's proof wrong)")
            else:
                why = str(e) or type(e).__name__
            log.warning("rpc: refused connection from %s:%s: %s", addr[0], addr[1], why)
            await _refuse(loop, sock, why)
            return
        c2s, s2c = S.session_keys(self.key, cnonce, snonce)
        conn = Connection(self, sock, peer_id, s2c, c2s, outbound=False, peer_addr=addr[:2])
        self.connections.add(conn)
        conn.start_reading()
        conn.offer_shared_reads()

    async def connect(self, host: str, port: int, peer_id: int) -> Connection:
        """An authenticated outbound connection to ``host:port`` (loop thread)."""
        loop = self.loop
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, (host, port)), _HANDSHAKE_TIMEOUT)
            _tune(sock)
            cnonce = S.new_nonce()
            await loop.sock_sendall(sock, S.HELLO.pack(S.MAGIC, S.VERSION, cnonce))
            try:
                first = await asyncio.wait_for(_recv_exact(loop, sock, S.CHALLENGE.size), _HANDSHAKE_TIMEOUT)
            except asyncio.IncompleteReadError as e:
                first = e.partial
                if not first.startswith(S.REFUSED):
                    raise RPCConnectionError(f"{host}:{port} closed the connection during the "
                                             "handshake") from None
            if first.startswith(S.REFUSED):
                why = (first + await _recv_some(loop, sock))[len(S.REFUSED) + 2:]
                raise RPCAuthError(f"{host}:{port} refused the connection: "
                                   f"{why.decode(errors='replace').strip()}")
            snonce, sproof = S.CHALLENGE.unpack(first)
            if not S.same(sproof, S.proof(self.key, b"server", cnonce, snonce)):
                raise RPCAuthError(f"{host}:{port} does not hold the job's secret (it is not this "
                                   "job's worker, or SHARDFLOW_RPC_SECRET differs)")
            await loop.sock_sendall(sock, S.ANSWER.pack(S.proof(self.key, b"client", snonce, cnonce),
                                                        self.worker_id))
        except BaseException:
            sock.close()
            raise
        c2s, s2c = S.session_keys(self.key, cnonce, snonce)
        conn = Connection(self, sock, peer_id, c2s, s2c, outbound=True, peer_addr=(host, port))
        self.connections.add(conn)
        conn.start_reading()
        conn.offer_shared_reads()
        return conn

    # -- stop -----------------------------------------------------------------------------
    def close(self) -> None:
        """Close every connection and the listener, stop the loop and join its thread."""
        if not self._thread.is_alive():
            return

        def stop():
            for conn in list(self.connections):
                conn.close(RPCConnectionError("RPC was shut down"))
            if self._accept_task is not None:
                self._accept_task.cancel()
            if self._listener is not None:
                self._listener.close()
            self.loop.call_soon(self.loop.stop)
        self.loop.call_soon_threadsafe(stop)
        self._thread.join(timeout=10)
        if not self.loop.is_running():
            self.loop.close()


def _tune(sock: socket.socket) -> None:
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def _recv_exact(loop, sock, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = await loop.sock_recv(sock, n - len(buf))
        if not chunk:
            raise asyncio.IncompleteReadError(bytes(buf), n)
        buf += chunk
    return bytes(buf)


async def _refuse(loop, sock, why: str) -> None:
    """Send the refusal line, then close without resetting: stop writing, drain what the
    peer already sent (closing over unread input would send a reset that can discard the
    refusal before the peer reads it), close."""
    try:
        await asyncio.wait_for(loop.sock_sendall(sock, S.REFUSED + b": " + why.encode() + b"\n"), 1.0)
        sock.shutdown(socket.SHUT_WR)
        end = loop.time() + 1.0
        while loop.time() < end:
            chunk = await asyncio.wait_for(loop.sock_recv(sock, 65536), max(0.01, end - loop.time()))
            if not chunk:
                break
    except (OSError, asyncio.TimeoutError):
        pass
    sock.close()


async def _recv_some(loop, sock) -> bytes:
    try:
        return await asyncio.wait_for(loop.sock_recv(sock, 4096), 1.0)
    except (asyncio.TimeoutError, OSError):
        return b""
