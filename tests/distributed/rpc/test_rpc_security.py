"""RPC security (docs/RPC.md): a peer without the job's secret, or a malformed or altered
message, gets a refusal and a log line on the worker, never execution. The test process
attacks worker1 of a running 2-worker job (security_program.py) over raw sockets and over
shardflow's own transport, then worker0 checks that worker1 still serves and that the
side-effect function ``mark`` ran only for worker0's legitimate call."""

import json
import os
import secrets
import socket
import threading
import time

import pytest

from shardflow.distributed.rpc import frame as F
from shardflow.distributed.rpc import secret as S
from shardflow.distributed.rpc.errors import RPCAuthError
from shardflow.distributed.rpc.transport import Transport

from .workers import finish, start


class Client:
    """shardflow's transport, used by the test as a peer that holds (or not) the secret."""

    def __init__(self, key: bytes):
        self.answers = {}
        self.lost = []
        self.got = threading.Condition()
        self.t = Transport(key, 99, self._on_frame, lambda c, e: self.lost.append(str(e)), lambda p: f"peer {p}")
        self.t.start("127.0.0.1", 0)

    def _on_frame(self, conn, header, payload):
        with self.got:
            self.answers[header.get("re")] = header
            self.got.notify_all()

    def connect(self, addr):
        return self.t.run(self.t.connect(addr[0], addr[1], 1), timeout=15)

    def ask(self, conn, header, timeout=15):
        conn.send(F.parts(F.encode_header(header), [], [], 0))
        with self.got:
            assert self.got.wait_for(lambda: header["id"] in self.answers, timeout), header
            return self.answers[header["id"]]


def _refusal(sock) -> bytes:
    sock.settimeout(10)
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return data
        data += chunk


def _closed(conn, limit=15.0) -> bool:
    """Whether the worker closed the connection (within ``limit`` seconds)."""
    end = time.monotonic() + limit
    while not conn.closed and time.monotonic() < end:
        time.sleep(0.02)
    return conn.closed


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    go = str(tmp_path_factory.mktemp("rpcsec") / "go")
    secret = secrets.token_hex(16)
    workers = start("security_program.py", 2, args=(go,), secret=secret)
    out = {}
    try:
        line = workers[1].proc.stdout.readline()
        assert line.startswith("ADDR "), line + workers[1].proc.stderr.read()
        addr = tuple(json.loads(line[5:]))
        out["addr"] = addr
        # a. not the protocol at all
        with socket.create_connection(addr) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: worker\r\n\r\n" + b"x" * 16)
            out["garbage"] = _refusal(s)
        # b. the protocol, a wrong proof (no secret)
        with socket.create_connection(addr) as s:
            s.sendall(S.HELLO.pack(S.MAGIC, S.VERSION, S.new_nonce()))
            s.settimeout(10)
            challenge = b""
            while len(challenge) < S.CHALLENGE.size:
                challenge += s.recv(S.CHALLENGE.size - len(challenge))
            s.sendall(S.ANSWER.pack(os.urandom(32), 5))
            out["wrong_proof"] = _refusal(s)
        # c. shardflow's transport with another secret: it refuses the server first
        wrong = Client(os.urandom(32))
        try:
            wrong.connect(addr)
            out["wrong_secret"] = "connected"
        except RPCAuthError as e:
            out["wrong_secret"] = str(e)
        wrong.t.close()
        # d. the right secret, then messages the worker must refuse
        os.environ["SHARDFLOW_RPC_SECRET"] = secret
        try:
            key = S.job_secret()
        finally:
            del os.environ["SHARDFLOW_RPC_SECRET"]
        c = Client(key)
        conn = c.connect(addr)
        kw = {"$d": []}
        out["object"] = c.ask(conn, {"k": "call", "id": 1, "fn": "__main__:mark",
                                     "a": ["x", {"$C": "os:system", "s": "echo owned"}], "kw": kw})
        out["module_not_module"] = c.ask(conn, {"k": "call", "id": 2, "fn": "__main__:mark",
                                                "a": ["x", {"$M": "os:system", "s": {"$d": []}}], "kw": kw})
        out["dunder"] = c.ask(conn, {"k": "call", "id": 3, "fn": "builtins:__import__", "a": ["os"], "kw": kw})
        out["not_callable"] = c.ask(conn, {"k": "call", "id": 4, "fn": "os:environ", "a": [], "kw": kw})
        out["kind"] = c.ask(conn, {"k": "exec", "id": 5})
        out["tag"] = c.ask(conn, {"k": "call", "id": 6, "fn": "__main__:mark", "a": [{"$P": "gASV"}], "kw": kw})
        out["missing_module"] = c.ask(conn, {"k": "call", "id": 7, "fn": "no_such_module_xyz:f", "a": [], "kw": kw})
        out["buffer"] = c.ask(conn, {"k": "call", "id": 8, "fn": "__main__:mark", "a": [{"$T": 3}], "kw": kw})
        # e. a header that is not JSON (a pickle) with a valid MAC: the connection is closed
        pickled = b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94."
        conn.send([F.PREFIX.pack(S.MAGIC, S.VERSION, 0, 0, len(pickled), 0) + pickled])
        out["pickle_closed"] = _closed(conn)
        # f. a valid-looking frame with a wrong MAC, and a frame of another version
        for name, tweak in (("bad_mac", "mac"), ("version", "version")):
            conn = c.connect(addr)
            body = F.encode_header({"k": "call", "id": 9, "fn": "__main__:mark", "a": [name], "kw": kw})
            version = S.VERSION + 1 if tweak == "version" else S.VERSION
            raw = F.PREFIX.pack(S.MAGIC, version, 0, 0, len(body), 0) + body
            conn.sock.setblocking(True)
            conn.sock.sendall(raw + os.urandom(32))
            out[name + "_closed"] = _closed(conn)
        c.t.close()
    finally:
        open(go, "w").close()
    finish(workers, "security_program.py", timeout=60)
    out["worker0"] = workers[0].result()
    out["log"] = workers[1].err
    return out


def test_worker_binds_to_the_jobs_interface(attacked):
    assert attacked["addr"][0] == "127.0.0.1"  # MASTER_ADDR's interface, not 0.0.0.0


def test_peers_without_the_secret_are_refused_and_logged(attacked):
    assert attacked["garbage"].startswith(b"SFRP-REFUSED: not a shardflow RPC client")
    assert attacked["wrong_proof"].startswith(b"SFRP-REFUSED: the peer does not hold the job's secret")
    assert "does not hold the job's secret" in attacked["wrong_secret"]
    log = attacked["log"]
    assert log.count("rpc: refused connection from 127.0.0.1") >= 2
    assert "not a shardflow RPC client" in log and "the peer does not hold the job's secret" in log


def _refused(answer, *words):
    assert answer["k"] == "err", answer
    e = answer["e"]
    assert e["t"].endswith("RPCProtocolError"), e
    for w in words:
        assert w in e["m"], e["m"]


def test_malformed_messages_are_refused_not_executed(attacked):
    _refused(attacked["object"], "os:system", "not registered")
    _refused(attacked["module_not_module"], "os:system")
    _refused(attacked["dunder"], "dunder")
    _refused(attacked["not_callable"], "not a function or class")
    _refused(attacked["kind"], "unknown message kind 'exec'")
    _refused(attacked["tag"], "unknown value tag '$P'")
    _refused(attacked["missing_module"], "does not import")
    _refused(attacked["buffer"], "out of range")
    assert attacked["pickle_closed"] and attacked["bad_mac_closed"] and attacked["version_closed"]
    log = attacked["log"]
    assert "bad MAC" in log and "malformed RPC header" in log and "version 2" in log
    assert log.count("rpc: refused a message from") >= 2
    # the worker still serves, and `mark` ran only for worker0's legitimate call
    assert attacked["worker0"]["healthy"] == "from-worker0"
    assert attacked["worker0"]["marks"] == ["from-worker0"]
