"""The transport's large-payload paths (docs/RPC.md, Speed and Security), between two
transports in this process: a payload read from the sender's memory (same host, ``cma.py``)
or sent over TCP arrives intact; a large TCP payload altered by one byte, an altered
reference section, a replayed frame, a payload by reference from a peer that was not
verified, or one read after its sender closed the connection is refused and closes the
connection, and never reaches the agent."""

import os
import queue
import subprocess
import sys
import time

import numpy as np
import pytest

from shardflow.distributed.rpc import cma
from shardflow.distributed.rpc import frame as F
from shardflow.distributed.rpc import mac as M
from shardflow.distributed.rpc import secret as S
from shardflow.distributed.rpc import transport as T
from shardflow.distributed.rpc.transport import REF_MIN, Transport

needs_cma = pytest.mark.skipif(not cma.available(), reason="process_vm_readv is Linux only")


class Peer:
    def __init__(self, key, worker_id, shared_reads=True):
        self.frames = queue.Queue()
        self.lost = queue.Queue()
        self.t = Transport(key, worker_id, lambda c, h, p: self.frames.put((h, p)),
                           lambda c, e: self.lost.put(str(e)), lambda p: f"peer {p}",
                           shared_reads=shared_reads)
        self.t.start("127.0.0.1", 0)

    def only_connection(self):
        end = time.monotonic() + 10
        while not self.t.connections and time.monotonic() < end:
            time.sleep(0.01)
        (conn,) = self.t.connections
        return conn


def _wait(cond, limit=10.0):
    end = time.monotonic() + limit
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return cond()


@pytest.fixture
def pair(request):
    """(sender connection, receiving peer, sending peer); ``request.param``: shared reads."""
    shared = getattr(request, "param", True)
    key = os.urandom(32)
    a, b = Peer(key, 0, shared), Peer(key, 1, shared)
    conn = a.t.run(a.t.connect(*b.t.listen_address, 1), timeout=15)
    if shared and cma.available():
        assert _wait(lambda: conn._ref_ok), "the same-host probe did not enable reads"
    yield conn, b, a
    a.t.close()
    b.t.close()


def _frame(header, arr):
    offsets, plen = F.layout([arr])
    header = dict(header, b=[["float32", list(arr.shape), offsets[0], 1]])
    return F.parts(F.encode_header(header), [arr], offsets, plen)


def _received(peer, arr):
    header, payload = peer.frames.get(timeout=15)
    (got,) = F.buffers(header, payload)
    np.testing.assert_array_equal(got, arr)
    return header


@needs_cma
def test_large_payload_is_read_from_the_senders_memory(pair):
    conn, b, _ = pair
    arr = np.arange(3 << 18, dtype=np.float32)                 # 3 MiB
    conn.send(_frame({"k": "t", "id": 1}, arr))
    assert _received(b, arr)["id"] == 1
    assert _wait(lambda: not conn._lent), "the read receipt did not release the payload"
    small = np.arange(REF_MIN // 8, dtype=np.float32)           # under REF_MIN: TCP
    conn.send(_frame({"k": "t", "id": 2}, small))
    assert _received(b, small)["id"] == 2


@needs_cma
def test_several_buffers_with_padding_by_reference(pair):
    conn, b, _ = pair
    arrays = [np.arange(7, dtype=np.int16), np.linspace(0, 1, 1 << 17).astype(np.float64),
              np.array([True, False, True]), np.arange(1 << 16, dtype=np.int64).reshape(256, 256)]
    offsets, plen = F.layout(arrays)
    assert plen >= REF_MIN and offsets[1] % F.ALIGN == 0 and offsets[1] > arrays[0].nbytes
    meta = [[str(a.dtype), list(a.shape), off, 0] for a, off in zip(arrays, offsets)]
    conn.send(F.parts(F.encode_header({"k": "t", "id": 3, "b": meta}), arrays, offsets, plen))
    header, payload = b.frames.get(timeout=15)
    for got, want in zip(F.buffers(header, payload), arrays):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert _wait(lambda: not conn._lent)


@needs_cma
def test_read_receipt_rides_with_the_next_frame_or_goes_alone(pair, monkeypatch):
    """The receiver owes a receipt for a payload it read from the sender's memory; it goes
    out with the next frame it sends on that connection, or alone after the delay. Until
    then the sender holds the pieces."""
    monkeypatch.setattr(T, "_RECEIPT_DELAY", 1.0)   # 10 ms could pass before the asserts
    conn, b, a = pair
    back = b.only_connection()
    arr = np.arange(1 << 18, dtype=np.float32)
    conn.send(_frame({"k": "t", "id": 1}, arr))
    _received(b, arr)
    assert conn._lent and back._receipts, "the receipt left before the reply"
    seq_before = back._send_seq
    back.send(_frame({"k": "t", "id": 2}, np.ones(4, np.float32)))   # the reply
    assert back._send_seq == seq_before + 2 and not back._receipts     # receipt + reply
    assert _wait(lambda: not conn._lent), "the receipt riding with the reply was not applied"
    assert a.frames.get(timeout=15)[0]["id"] == 2
    conn.send(_frame({"k": "t", "id": 3}, arr))                       # no reply this time
    _received(b, arr)
    assert _wait(lambda: not conn._lent, limit=5.0), "the receipt never went alone"


def test_many_small_frames_back_to_back_all_arrive_in_order(pair):
    """A reader that returns after a short read (no recv just to see EAGAIN) still gets
    every frame: the loop's reader is level-triggered."""
    conn, b, _ = pair
    for i in range(500):
        conn.send(_frame({"k": "t", "id": i}, np.full(3, i, np.float32)))
    for i in range(500):
        header, payload = b.frames.get(timeout=15)
        assert header["id"] == i
        np.testing.assert_array_equal(F.buffers(header, payload)[0], np.full(3, i, np.float32))


@pytest.mark.parametrize("pair", [False], indirect=True)
def test_large_payload_over_tcp_when_reads_are_off(pair):
    conn, b, _ = pair
    assert not conn._ref_ok
    arr = np.arange(3 << 18, dtype=np.float32)
    conn.send(_frame({"k": "t", "id": 1}, arr))
    assert _received(b, arr)["id"] == 1
    assert not conn._lent


def _raw_send(conn, data: bytes) -> None:
    conn.sock.setblocking(True)
    conn.sock.sendall(data)


@pytest.mark.parametrize("pair", [False], indirect=True)
def test_a_byte_changed_in_a_large_tcp_payload_is_refused(pair):
    conn, b, _ = pair
    arr = np.arange(1 << 18, dtype=np.float32)                  # 1 MiB: Poly1305 path
    pieces = _frame({"k": "t", "id": 1}, arr)
    head, payload = pieces[0], b"".join(bytes(p) for p in pieces[1:])
    with conn._send_lock:
        seq = F.SEQ.pack(conn._send_seq)
        conn._send_seq += 1
        mac = M.FrameMac(conn._send_key, seq, head, len(payload))
        mac.update(payload)
        tampered = bytearray(payload)
        tampered[len(tampered) // 2] ^= 1
        _raw_send(conn, head + bytes(tampered) + mac.digest())
    assert "bad MAC" in b.lost.get(timeout=15)
    assert b.frames.empty()


@needs_cma
def test_an_altered_reference_section_is_refused(pair):
    """The payload read from memory is not hashed, but the addresses that say what to read
    are under the frame's MAC: one changed address bit is refused, nothing is read."""
    conn, b, _ = pair
    arr = np.arange(1 << 18, dtype=np.float32)
    with conn._send_lock:   # the frame as send() makes it, one address bit flipped
        conn._enqueue(_frame({"k": "t", "id": 1}, arr))
        (item,) = [conn._out.pop()]
        data = bytearray(item[0])
        hlen = F.PREFIX.unpack_from(data)[4]
        data[F.PREFIX.size + hlen + F.REF.size + 4] ^= 1        # inside the first address
        _raw_send(conn, bytes(data))
    assert "bad MAC" in b.lost.get(timeout=15)
    assert b.frames.empty()


@needs_cma
def test_a_payload_by_reference_read_after_the_sender_closed_is_refused(pair):
    """A sender releases lent pieces only after closing its socket: a frame by reference
    that the receiver reads after that is discarded (its memory may be another's by then),
    never delivered."""
    conn, b, a = pair
    arr = np.arange(1 << 18, dtype=np.float32)
    b.t.call(time.sleep, 0.5)             # b's loop is busy while a sends, then closes
    time.sleep(0.05)
    conn.send(_frame({"k": "t", "id": 1}, arr))
    a.t.call(conn.close)
    assert "closed the connection" in b.lost.get(timeout=15)
    assert b.frames.empty()


@needs_cma
def test_a_verified_peer_process_that_exits_is_gone():
    """The pidfd stays bound to the verified process: once it exits (and its pid may name
    another process), reads from it are no longer trusted."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        peer = cma.PeerProcess(proc.pid)
        assert not peer.gone()
        data = np.arange(16, dtype=np.uint8)
        got = np.zeros(16, np.uint8)
        cma.PeerProcess(os.getpid()).read(cma.address(data), got)
        np.testing.assert_array_equal(got, data)
    finally:
        proc.kill()
        proc.wait()
    assert peer.gone()
    peer.close()


@needs_cma
def test_a_replayed_frame_by_reference_is_refused(pair):
    conn, b, _ = pair
    arr = np.arange(1 << 18, dtype=np.float32)
    captured = []
    with conn._send_lock:   # make the frame as send() does, keep its bytes, send them twice
        conn._enqueue(_frame({"k": "t", "id": 1}, arr))
        (item,) = [conn._out.pop()]
        captured.append(bytes(item[0]))
        _raw_send(conn, captured[0])
    _received(b, arr)
    with conn._send_lock:
        _raw_send(conn, captured[0])
    assert "bad MAC" in b.lost.get(timeout=15)
    assert b.frames.empty()


@needs_cma
def test_a_payload_by_reference_from_an_unverified_peer_is_refused():
    key = os.urandom(32)
    a, b = Peer(key, 0), Peer(key, 1, shared_reads=False)   # b never reads a's memory
    try:
        conn = a.t.run(a.t.connect(*b.t.listen_address, 1), timeout=15)
        time.sleep(0.2)
        assert not conn._ref_ok
        with conn._send_lock:
            conn._ref_ok = True                                     # a sender that ignores it
        conn.send(_frame({"k": "t", "id": 1}, np.ones(1 << 18, np.float32)))
        assert "not verified" in b.lost.get(timeout=15)
        assert b.frames.empty()
    finally:
        a.t.close()
        b.t.close()


def test_reference_section_checks():
    ref = F.ref_section(10, [(4096, 6), (8192, 4)])
    assert F.parse_ref(ref) == (10, [(4096, 6), (8192, 4)])
    with pytest.raises(ValueError, match="do not add up"):
        F.parse_ref(F.ref_section(11, [(4096, 6), (8192, 4)]))
    with pytest.raises(ValueError, match="malformed"):
        F.parse_ref(ref[:-1])
    assert S.VERSION == 2
