"""The transport's large-payload paths (docs/RPC.md, Speed and Security), between two
transports in this process: a payload read from the sender's memory (same host, ``cma.py``)
or sent over TCP arrives intact; a large payload altered by one byte, a replayed frame, or a
payload by reference from a peer that was not verified is refused and closes the
connection, and never reaches the agent."""

import os
import queue
import time

import numpy as np
import pytest

from shardflow.distributed.rpc import cma
from shardflow.distributed.rpc import frame as F
from shardflow.distributed.rpc import mac as M
from shardflow.distributed.rpc import secret as S
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
def test_a_byte_changed_after_tagging_a_payload_by_reference_is_refused(pair, monkeypatch):
    conn, b, _ = pair
    arr = np.arange(1 << 18, dtype=np.float32)
    real = M.payload_tag

    def tag_then_alter(key, seq, pieces):  # the memory changes after the frame was made
        tag = real(key, seq, pieces)
        arr[12345] += 1
        return tag
    monkeypatch.setattr(M, "payload_tag", tag_then_alter)
    conn.send(_frame({"k": "t", "id": 1}, arr))
    assert "bad MAC" in b.lost.get(timeout=15)
    assert b.frames.empty()


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
    ref = F.ref_section(10, bytes(16), [(4096, 6), (8192, 4)])
    assert F.parse_ref(ref) == (10, bytes(16), [(4096, 6), (8192, 4)])
    with pytest.raises(ValueError, match="do not add up"):
        F.parse_ref(F.ref_section(11, bytes(16), [(4096, 6), (8192, 4)]))
    with pytest.raises(ValueError, match="malformed"):
        F.parse_ref(ref[:-1])
    assert S.VERSION == 1
