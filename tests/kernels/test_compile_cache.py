"""Kernel compilation cost (issue 24, goal 4): one-thread processes get the serial build, two
processes starting at once compile each kernel once (a file lock next to numba's cache), and
a lock that is never released delays a compile by a bounded time only.

Each check runs in fresh processes with their own numba cache folder (``NUMBA_CACHE_DIR``),
so they compile from nothing whatever ran before."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from shardflow.kernels import _numba

pytest.importorskip("numba")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Waits for the go-file (so that both processes call the kernel at the same moment), runs the
# ReLU backward kernel, prints the compile report and the gradient.
_PROGRAM = """
import json, os, sys, time
import numpy as np
go = sys.argv[1]
from shardflow import kernels
from shardflow.kernels import activation
deadline = time.monotonic() + 60
while go != "-" and not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.01)
y = np.linspace(-1, 1, 301, dtype=np.float32)
g = np.ones_like(y)
gx = np.empty_like(y)
activation._relu_bwd(g, y, gx)
print(json.dumps({"report": kernels.compile_report(), "gx": gx.tolist()}))
"""


# Calls the ReLU backward kernel from K Python threads at once (none from the main thread),
# ROUNDS times each: an RPC server's handler threads running one model.
_THREADED = """
import json, sys, threading
import numpy as np
from shardflow import kernels
from shardflow.kernels import activation
k, rounds = int(sys.argv[1]), int(sys.argv[2])
y = np.linspace(-1, 1, 200_001, dtype=np.float32)
g = np.ones_like(y)
outs = [np.empty_like(y) for _ in range(k)]
start = threading.Barrier(k)
def work(i):
    start.wait()
    for _ in range(rounds):
        activation._relu_bwd(g, y, outs[i])
threads = [threading.Thread(target=work, args=(i,)) for i in range(k)]
for t in threads:
    t.start()
for t in threads:
    t.join()
want = np.where(y > 0, 1.0, 0.0).astype(np.float32)
print(json.dumps({"report": kernels.compile_report(),
                  "right": [bool(np.array_equal(o, want)) for o in outs]}))
"""


def _start(tmp_path, go="-", threads=None, program=None, args=None):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), SHARDFLOW_KERNELS="numba",
               PYTHONPATH=ROOT)
    env.pop("SHARDFLOW_KERNEL_THREADS", None)
    env.pop("OMP_NUM_THREADS", None)
    if threads is not None:
        env["SHARDFLOW_KERNEL_THREADS"] = str(threads)
    return subprocess.Popen([sys.executable, "-c", program or _PROGRAM, *(args or [go])], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _expected_relu_grad():
    y = np.linspace(-1, 1, 301, dtype=np.float32)
    return np.where(y > 0, 1.0, 0.0)


@pytest.fixture(scope="module")
def serial_cache(tmp_path_factory):
    """A numba cache folder that one one-thread process compiled the kernel into (its
    result: ``first``) and a second one-thread process then read it from (``again``); the
    tests below share it (one compile from nothing instead of one per test)."""
    folder = tmp_path_factory.mktemp("serial")
    first = _result(_start(folder, threads=1))
    names = list(_walk(folder / "cache"))  # before any other build writes there
    again = _result(_start(folder, threads=1))
    return {"folder": folder, "first": first, "names": names, "again": again}


def test_one_thread_gets_the_serial_build(serial_cache):
    r = serial_cache["first"]
    (row,) = r["report"]
    assert row["kernel"] == "activation._relu_bwd" and row["build"] == "serial"
    assert row["source"] == "compiled"
    np.testing.assert_array_equal(r["gx"], _expected_relu_grad())
    # numba's cache files of the serial build carry its own name
    assert any("_relu_bwd__serial" in n and n.endswith(".nbi") for n in serial_cache["names"])
    again = serial_cache["again"]["report"][0]
    assert again["source"] == "disk cache" and again["build"] == "serial"


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a parallel build needs 2 CPUs")
def test_two_threads_get_the_parallel_build_with_its_own_cache_entry(serial_cache):
    serial = serial_cache["first"]["report"][0]
    parallel = _result(_start(serial_cache["folder"], threads=2))
    row = parallel["report"][0]
    assert serial["build"] == "serial" and row["build"] == "parallel"
    assert row["source"] == "compiled"  # the serial build's cache entry is not taken for it
    np.testing.assert_array_equal(parallel["gx"], _expected_relu_grad())


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="numba's per-thread default is 1 thread here")
def test_kernels_first_called_from_another_thread_follow_the_process_thread_count(serial_cache):
    """numba's thread count is per Python thread and a new thread starts at every CPU: a
    one-thread process whose kernels run in RPC handler threads must still get the serial
    build (it got the parallel one, and several handlers then aborted the server)."""
    r = _result(_start(serial_cache["folder"], threads=1, program=_THREADED, args=["3", "20"]))
    assert [row["build"] for row in r["report"]] == ["serial"], r["report"]
    assert r["right"] == [True] * 3


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a parallel build needs 2 CPUs")
def test_a_parallel_build_called_from_threads_at_once_runs_one_at_a_time(serial_cache):
    """numba's workqueue layer aborts the process when two threads enter it at once
    ("Concurrent access has been detected"): calls, first ones included, take one lock."""
    r = _result(_start(serial_cache["folder"], threads=2, program=_THREADED, args=["4", "300"]))
    assert [row["build"] for row in r["report"]] == ["parallel"], r["report"]
    assert r["right"] == [True] * 4


def test_two_processes_starting_at_once_compile_each_kernel_once(tmp_path):
    go = tmp_path / "go"
    procs = [_start(tmp_path, go=str(go), threads=1) for _ in range(2)]
    time.sleep(0.5)  # both are importing; the go-file makes them call the kernel together
    go.write_text("")
    reports = [_result(p)["report"] for p in procs]
    sources = sorted(r[0]["source"] for r in reports)
    assert sources == ["compiled", "disk cache"], reports


def test_a_held_lock_delays_the_compile_a_bounded_time(tmp_path, monkeypatch):
    """A process that holds the lock and never lets go (stopped, not dead: a dead one's lock
    is released by the OS) costs the next one LOCK_TIMEOUT_S, then it compiles alone."""
    fcntl = pytest.importorskip("fcntl")

    class FakeDispatcher:
        class _cache:
            _cache_path = str(tmp_path)

            class _impl:
                filename_base = "k-1.py311"

    lock = _numba._CacheLock(FakeDispatcher)
    assert lock.path == str(tmp_path / "k-1.py311.lock")
    holder = os.open(lock.path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    monkeypatch.setattr(_numba, "LOCK_TIMEOUT_S", 0.3)
    t0 = time.monotonic()
    with lock:
        waited = time.monotonic() - t0
        assert lock.fd is None  # gave up the lock, goes on without it
    assert 0.3 <= waited < 5
    os.close(holder)
    with lock:
        assert lock.fd is not None  # free now: taken at once
    assert lock.fd is None


def test_machines_with_two_cpus_default_to_one_kernel_thread(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert _numba._default_threads() == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert _numba._default_threads() is None  # numba's default: every CPU


def _walk(folder):
    for _, _, files in os.walk(folder):
        yield from files


def test_a_changed_helper_changes_the_cache_name_of_kernels_that_call_it():
    """numba invalidates a disk-cache entry when the kernel's own file changes, not when a
    helper in another file does: the helpers' code fingerprint is part of the cache name."""
    def helper_v1(v):
        return v + 1.0

    def helper_v2(v):
        return v + 2.0

    helper_v1._sf_kernel_helper = True

    scope = {"helper": helper_v1}  # a kernel module's globals
    exec("def kernel_fn(x):\n    return helper(x)\n\ndef plain_fn(x):\n    return x\n", scope)
    kernel_fn, plain_fn = scope["kernel_fn"], scope["plain_fn"]
    before = _numba._helpers_stamp(kernel_fn)
    assert before and _numba._helpers_stamp(plain_fn) == ""
    helper_v1.__code__ = helper_v2.__code__
    assert _numba._helpers_stamp(kernel_fn) != before



def test_the_helper_fingerprint_does_not_depend_on_reference_counts():
    """The fingerprint names the cache entry, so a warm process must compute the cold one's.
    ``marshal.dumps`` (the old fingerprint) flags objects by their reference count, which
    depends on what else the process ran: GELU backward and cross-entropy forward got a new
    cache name in most processes and recompiled at every start (1.1 s of a warm first step)."""
    from shardflow.kernels import _math, gelu, softmax
    kernels = (gelu._bwd32.fn, softmax._ce_fwd.fn)
    before = [_numba._helpers_stamp(k) for k in kernels]
    held = [list(h.__code__.co_consts) + list(h.__code__.co_names)  # more references to them
            for h in vars(_math).values() if getattr(h, "_sf_kernel_helper", False)]
    assert held and [_numba._helpers_stamp(k) for k in kernels] == before
    del held
    assert [_numba._helpers_stamp(k) for k in kernels] == before


def test_a_large_random_draw_compiles_no_twister():
    """NumPy's ``MT19937.random_raw`` is as fast as the compiled twister was (2.7-4 ns an
    output), so a large draw costs a fresh install no compile; the outputs are torch's."""
    import torch

    import shardflow as sf
    from shardflow import kernels

    sf.manual_seed(3)
    torch.manual_seed(3)
    n = 1 << 15  # above the size from which the twister kernel was used
    np.testing.assert_array_equal(sf.rand(n).numpy(), torch.rand(n).numpy())
    assert not [r for r in kernels.compile_report() if "mt19937" in r["kernel"]]


def test_a_small_normal_draw_takes_the_numpy_box_muller(monkeypatch):
    """A model's init of small embeddings (GPT-mini: 2^16 elements) does not compile the four
    Box-Muller kernels (about 1 s on a fresh install) and draws torch's bits; a large draw
    still takes the kernels."""
    import torch

    import shardflow as sf
    from shardflow.kernels import box_muller

    calls = []
    real = box_muller.normal16
    monkeypatch.setattr(box_muller, "normal16", lambda *a: calls.append(a[0].size) or real(*a))
    for n, compiled in ((1 << 16, False), (1 << 18, True)):
        sf.manual_seed(5)
        torch.manual_seed(5)
        np.testing.assert_array_equal(sf.randn(n).numpy(), torch.randn(n).numpy())
        assert bool(calls) == compiled
