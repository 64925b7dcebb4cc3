"""torch.distributed's stores: ``HashStore``, ``FileStore``, ``TCPStore``, ``PrefixStore``
give torch 2.13's answers to one sequence of calls (values, counters, compare_set, check,
delete_key, num_keys, timeouts and their error text); ``TCPStore`` and ``FileStore`` are
shared by two processes (the master waits for the worker, ``get`` blocks until the other
process sets the key, counters add up across processes)."""

import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

import shardflow.distributed as dist

tdist = pytest.importorskip("torch.distributed")

ROOT = Path(__file__).resolve().parents[2]


def script(s):
    """The answers (or error class names and texts) of a fixed sequence of store calls."""
    out = []

    def do(f):
        try:
            out.append(f())
        except Exception as e:  # noqa: BLE001 - the error is the answer compared
            out.append((type(e).__name__, str(e)))
    do(lambda: s.num_keys())
    do(lambda: s.set("a", "x"))
    do(lambda: s.set("b", b"\x00\xffy"))
    do(lambda: (s.get("a"), s.get("b"), s.num_keys()))
    do(lambda: (s.add("c", 3), s.add("c", -5), s.get("c")))
    do(lambda: s.compare_set("a", "x", "z"))
    do(lambda: s.compare_set("a", "nope", "w"))
    do(lambda: s.compare_set("new", "", "v"))
    do(lambda: s.compare_set("new2", "q", "v"))
    do(lambda: (s.check(["a", "zz"]), s.check(["a", "new"]), s.check(["new2"])))
    do(lambda: (s.delete_key("a"), s.check(["a"]), s.num_keys()))
    do(lambda: s.set_timeout(timedelta(milliseconds=200)))
    do(lambda: s.timeout)
    do(lambda: s.get("missing"))
    do(lambda: s.wait(["b", "missing"], timedelta(milliseconds=100)))
    do(lambda: s.wait(["b", "c"]))
    return out


def normalise(answers):
    # torch's TCPStore reports a timeout through its own DistStoreError class: compare names
    return [(a[0], a[1]) if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str)
            and a[0].endswith("Error") else a for a in answers]


def test_hash_store_matches_torch():
    assert normalise(script(dist.HashStore())) == normalise(script(tdist.HashStore()))


def test_prefix_store_matches_torch():
    ours, theirs = dist.HashStore(), tdist.HashStore()
    assert normalise(script(dist.PrefixStore("pre", ours))) == \
        normalise(script(tdist.PrefixStore("pre", theirs)))
    assert ours.check(["pre/b"]) and theirs.check(["pre/b"]) and not ours.check(["b"])


def test_file_store_matches_torch(tmp_path):
    ours = script(dist.FileStore(str(tmp_path / "ours"), 1))
    theirs = script(tdist.FileStore(str(tmp_path / "theirs"), 1))
    # torch's FileStore answers delete_key of any key True and raises a plain RuntimeError on
    # timeout; shardflow's says whether the key was there and raises DistStoreError (a
    # RuntimeError) with the same text
    assert normalise(ours[:10]) == normalise(theirs[:10])
    assert ours[10] == theirs[10]
    assert ours[13] == ("DistStoreError", theirs[13][1]) and theirs[13][0] == "RuntimeError"
    assert ours[14] == ("DistStoreError", theirs[14][1])
    assert ours[11:13] == theirs[11:13] and ours[15] == theirs[15]


def test_tcp_store_matches_torch_in_one_process():
    ours = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=timedelta(seconds=10))
    theirs = tdist.TCPStore("127.0.0.1", 0, 1, True, timeout=timedelta(seconds=10))
    assert ours.port > 0 and ours.host == "127.0.0.1"
    try:
        assert normalise(script(ours)) == normalise(script(theirs))
    finally:
        ours.close()


WORKER = """
import sys, time
from datetime import timedelta
sys.path.insert(0, {root!r})
import shardflow.distributed as dist
kind, where = sys.argv[1], sys.argv[2]
if kind == "tcp":
    s = dist.TCPStore("127.0.0.1", int(where), 2, False, timeout=timedelta(seconds=30))
else:
    s = dist.FileStore(where, 2)
    s.add("init/", 1)
assert s.get("from_master") == b"hello"  # blocks until the master sets it
s.add("counter", 5)
s.set("from_worker", "done " + str(s.add("counter", 0)))
s.wait(["master_exit"])
print("WORKER OK", flush=True)
"""


@pytest.mark.parametrize("kind", ["tcp", "file"])
def test_store_shared_by_two_processes(kind, tmp_path):
    path = str(tmp_path / "store")
    if kind == "tcp":
        # the master's store with wait_for_workers=False, so that its port is known before
        # the worker starts; its "init/" count then shows the worker joined
        master = dist.TCPStore("127.0.0.1", 0, 2, True, timeout=timedelta(seconds=30),
                               wait_for_workers=False)
        worker = subprocess.Popen([sys.executable, "-c", WORKER.format(root=str(ROOT)), kind,
                                   str(master.port)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        while int(master.get("init/")) < 2:
            assert time.monotonic() - t0 < 60, "the worker never joined"
            time.sleep(0.01)
    else:
        master = dist.FileStore(path, 2)
        worker = subprocess.Popen([sys.executable, "-c", WORKER.format(root=str(ROOT)), kind,
                                   path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
    try:
        master.add("counter", 1)
        master.set("from_master", "hello")
        assert master.get("from_worker") == b"done 6"  # 1 (here) + 5 (there), via the store
        assert master.add("counter", 0) == 6
        master.set("master_exit", "1")
        out, err = worker.communicate(timeout=60)
        assert worker.returncode == 0 and "WORKER OK" in out, err
    finally:
        if worker.poll() is None:
            worker.kill()
        if kind == "tcp":
            master.close()


def test_tcp_master_waits_for_workers_and_times_out():
    t0 = time.monotonic()
    with pytest.raises(dist.DistStoreError, match="1/2 clients joined"):
        dist.TCPStore("127.0.0.1", 0, 2, True, timeout=timedelta(seconds=0.5))
    assert time.monotonic() - t0 < 10


def test_tcp_client_without_master_raises_network_error():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(dist.DistNetworkError, match="could not connect to the master"):
        dist.TCPStore("127.0.0.1", port, 2, False, timeout=timedelta(seconds=0.5))
