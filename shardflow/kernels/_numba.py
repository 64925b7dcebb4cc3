"""The one adapter to Numba (a base dependency, imported lazily on the first kernel call;
shardflow still runs without it, on the NumPy path).

A kernel module writes its loops as plain Python functions over NumPy arrays (``prange``
from this module for the parallel loops) and wraps each with ``kernel(fn)``. Nothing is
compiled or imported at import time: the first call of a kernel imports numba, compiles
``fn`` with ``njit(parallel=True, cache=True)`` (or loads it from numba's on-disk cache) for
the argument types of that call, and records how long that took (``compile_report()``).

``prange`` is ``range`` until numba compiles the function: kernel modules import ``prange``
from here, and the compiled version is made from a copy of the function whose globals hold
``numba.prange`` instead (``_build_globals``), together with the numba builds of the scalar
functions marked ``@helper`` that it calls.

Threads: ``_config.kernel_threads()`` (SHARDFLOW_KERNEL_THREADS, else OMP_NUM_THREADS that
``shardflow run`` sets per rank) so that N ranks on one host do not each start a thread per
core. Threading layer: ``workqueue`` unless the user chose one (NUMBA_THREADING_LAYER, read by
numba): its threads sleep between kernels, where GNU OpenMP's spin-wait after each parallel
region and take the cores from the BLAS threads of the next GEMM (measured: the CNN step
59 ms with workqueue, 95 ms with omp). ``workqueue`` must not be entered by two Python
threads at once (numba aborts the process: "Concurrent access has been detected"), so calls
are serialised with one lock on that layer, made at import. numba's thread count is per
Python thread (a new thread starts at every CPU): each thread that runs a kernel is given
the process's count on its first call (``_thread_setup``), so kernels called from RPC
handler or DataLoader threads build and run as the main thread's do.

Parallel or serial build. A kernel is compiled with ``parallel=True`` only when it will run
on more than one thread; with one thread (``shardflow run`` gives each rank cores / ranks,
and machines with at most 2 CPUs default to 1, see ``_default_threads``) it is compiled as a
serial loop (``prange`` as ``range``): the same code, and numba compiles it about 3.5x faster
(gelu backward 0.25 s vs 0.82 s; the parfor passes are most of a parallel compile). The two
builds have their own disk-cache entries (the serial copy's ``__qualname__`` ends in
``__serial``: numba names cache files after it).

Compiling once per machine: two ranks starting at once would each compile every kernel
(twice the CPU on a machine that has none to spare) and write the same cache files. The first
call of each specialisation holds an exclusive file lock next to the kernel's cache files
(``_CacheLock``) while numba compiles (or loads) it; the second rank waits, then finds the
first one's cache entry and loads it in milliseconds. The wait is bounded (``LOCK_TIMEOUT_S``):
past it the rank compiles on its own, as it would without the lock.

Fork: a child forked after a parallel kernel ran (DataLoader workers, multiprocessing) must
not start GNU OpenMP threads again (numba aborts the child: "fork() called from a process
already using GNU OpenMP"). An ``os.register_at_fork`` hook, installed when the first kernel is
compiled, marks such children, and there every kernel runs its serial compilation (the same
loops with ``prange`` as ``range``).
"""

from __future__ import annotations

import os
import threading
import time
import types
import zlib

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process compile lock
    fcntl = None

from .. import _config

prange = range  # the pure-Python meaning; replaced by numba.prange in compiled kernels

# "lock" serialises kernels on the workqueue layer (and first calls); made here, not on the
# first call, because two threads making their first kernel calls at once (an RPC server's
# handlers) would each make one and then not exclude each other. "threads": the process's
# kernel thread count, set once (numba's own count is per Python thread, see _thread_setup).
_state: dict = {"numba": None, "error": None, "threads": None, "lock": threading.Lock(),
                "forked": False, "fork_hook": False}
_setup_lock = threading.Lock()
_thread_state = threading.local()
_report: list[dict] = []
_FASTMATH = {"nsz", "arcp", "contract", "reassoc"}  # no nnan/ninf: -inf masks must work


def numba_module():
    """The numba module, or None when it cannot be imported (the error is kept)."""
    if _state["numba"] is None and _state["error"] is None:
        try:
            import numba
        except ImportError as e:  # pragma: no cover - exercised where numba is missing
            _state["error"] = e
        else:
            _state["numba"] = numba
    return _state["numba"]


def available() -> bool:
    return numba_module() is not None


def require():
    """numba, or an ImportError that says how to install it (SHARDFLOW_KERNELS=numba)."""
    nb = numba_module()
    if nb is None:
        raise ImportError(
            "SHARDFLOW_KERNELS=numba needs numba, which failed to import "
            f"({_state['error']}); install it with `pip install numba` (a dependency of "
            "shardflow that this environment lacks), or set SHARDFLOW_KERNELS=auto to use the "
            "NumPy path"
        )
    return nb


def _default_threads() -> int | None:
    """Kernel threads when neither SHARDFLOW_KERNEL_THREADS nor OMP_NUM_THREADS says: 1 on a
    machine with at most 2 CPUs, else None (numba's default, every CPU). Why: the kernels are
    memory-bound passes, and on 2 vCPUs a second thread measured no faster (docs/KERNELS.md,
    "kernels 1 thread") while it made steps 3-10x slower under load and the parallel build
    compiles 3.5x slower."""
    cpus = os.cpu_count() or 1
    return 1 if cpus <= 2 else None


def _setup_threads(nb) -> None:
    """Choose the threading layer and the process's kernel thread count once (under a lock:
    several threads may make their first kernel call at once), then give the calling thread
    that count."""
    if _state["threads"] is None:
        with _setup_lock:
            if _state["threads"] is None:
                if nb.config.THREADING_LAYER == "default":  # the user did not choose (NUMBA_THREADING_LAYER)
                    # workqueue threads sleep between kernels; OpenMP's spin and, on 2 cores, took the
                    # CPU from the BLAS threads of the next GEMM (CNN step 59 ms -> 95 ms, GPT-mini 3x)
                    nb.config.THREADING_LAYER = "workqueue"
                n = _config.kernel_threads()
                if n is None:
                    n = _default_threads()
                _state["threads"] = max(1, min(n or nb.config.NUMBA_NUM_THREADS, nb.config.NUMBA_NUM_THREADS))
    _thread_setup(nb)


def _thread_setup(nb) -> None:
    """numba's ``set_num_threads`` holds for the calling Python thread only (a new thread
    starts at NUMBA_NUM_THREADS, every CPU): give each thread that runs a kernel the
    process's count once, so that kernels called from other threads (RPC handlers, DataLoader
    threads) neither get the parallel build in a one-thread process nor use every core."""
    if getattr(_thread_state, "threads", None) != _state["threads"]:
        nb.set_num_threads(_state["threads"])
        _thread_state.threads = _state["threads"]


def set_threads(n: int) -> None:
    """Set the process's kernel thread count (``torch.set_num_threads``): every thread that
    runs a kernel from now on uses ``n`` (capped at numba's pool size). Kernels already built
    serial stay serial."""
    nb = require()
    _setup_threads(nb)  # the threading layer is chosen first
    _state["threads"] = max(1, min(n, nb.config.NUMBA_NUM_THREADS))
    _thread_setup(nb)


def num_threads() -> int:
    nb = numba_module()
    if nb is None:
        return 1
    _setup_threads(nb)
    return _state["threads"]


_HELPERS: dict = {}  # id(python helper) -> its numba build


def helper(fn):
    """Mark a scalar Python function that kernels call: it is compiled (inlined) with them."""
    fn._sf_kernel_helper = True
    return fn


def _build_globals(fn, nb, parallel):
    """A copy of ``fn`` whose globals see ``numba.prange`` (or ``range`` for a serial build)
    as ``prange`` and the numba builds of the ``helper`` functions it calls (helpers calling
    helpers too)."""
    g = dict(fn.__globals__)
    g["prange"] = nb.prange if parallel else range
    for name in fn.__code__.co_names:
        h = g.get(name)
        if getattr(h, "_sf_kernel_helper", False):
            if id(h) not in _HELPERS:
                _HELPERS[id(h)] = nb.njit(inline="always", fastmath=_FASTMATH)(
                    _build_globals(h, nb, parallel=False))
            g[name] = _HELPERS[id(h)]
    f = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    f.__module__ = fn.__module__
    # numba names its cache files after the qualname: the serial build of a parallel kernel
    # gets its own entries (its index does not tell the two builds apart)
    f.__qualname__ = fn.__qualname__ if parallel or not _has_prange(fn) else fn.__qualname__ + "__serial"
    stamp = _helpers_stamp(fn)
    if stamp:  # numba checks only the kernel's own file: a changed helper must not load stale code
        f.__qualname__ += f"__h{stamp}"
    return f


def _helpers_stamp(fn, seen=None) -> str:
    """A fingerprint of the code of the ``helper`` functions ``fn`` calls (recursively), or
    '' when it calls none. numba's disk cache is invalidated by a change of the kernel's own
    source file only, and helpers live in other files (``_math.py``): the fingerprint in the
    cache name makes an edited helper compile anew instead of loading the old machine code."""
    seen = set() if seen is None else seen
    parts = []
    for name in fn.__code__.co_names:
        h = fn.__globals__.get(name)
        if getattr(h, "_sf_kernel_helper", False) and id(h) not in seen:
            seen.add(id(h))
            parts.append(_code_bytes(h.__code__))
            inner = _helpers_stamp(h, seen)
            parts.append(inner.encode())
    return f"{zlib.crc32(b''.join(parts)):08x}" if parts else ""


def _code_bytes(code) -> bytes:
    """The parts of a code object that decide what it computes, as bytes that are the same in
    every process. Not ``marshal.dumps``: marshal marks objects referenced more than once
    (their reference count, which differs between processes), so its bytes for one helper
    changed from run to run and every process missed the disk cache of the kernels calling it
    (gelu backward and cross-entropy forward recompiled in each warm start: 1.1 s)."""
    consts = [_code_bytes(c) if isinstance(c, types.CodeType)
              else repr(sorted(map(repr, c))).encode() if isinstance(c, frozenset)  # hash order
              else repr(c).encode() for c in code.co_consts]
    return b"\0".join([code.co_code, repr(code.co_names).encode(),
                        repr(code.co_varnames).encode(), *consts])


def _has_prange(fn) -> bool:
    return "prange" in fn.__code__.co_names


class Kernel:
    """A lazily compiled Numba function. ``k(*args)`` runs it; the first call for a new
    (dtype, ndim) of the first argument is timed and recorded in ``compile_report()``."""

    def __init__(self, fn, parallel: bool = True, cache: bool = True, exact: bool = False):
        self.fn, self.parallel, self.name = fn, parallel, f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"
        self.fastmath = False if exact else _FASTMATH
        self.built_parallel = False  # set by the first call (_dispatcher)
        self.cache = cache  # False for generated source (numba cannot disk-cache it)
        self._disp = None
        self._serial = None
        self._seen: set = set()

    def _dispatcher(self):
        nb = require()
        _setup_threads(nb)
        with _setup_lock:  # threads calling a kernel for the first time at once make one
            if self._disp is not None:
                return self._disp
            if not _state["fork_hook"]:
                os.register_at_fork(after_in_child=_mark_forked)
                _state["fork_hook"] = True
            # one thread: the serial build (same loops, compiles 3.5x faster; module docstring)
            self.built_parallel = self.parallel and _state["threads"] > 1
            if not self.built_parallel:
                self._disp = self._serial_dispatcher()
                return self._disp
            f = _build_globals(self.fn, nb, True)
            self._disp = nb.njit(parallel=True, cache=self.cache, fastmath=self.fastmath, nogil=True)(f)
            return self._disp

    def _serial_dispatcher(self):
        if self._serial is None:
            nb = require()
            self._serial = nb.njit(cache=self.cache, fastmath=self.fastmath, nogil=True)(
                _build_globals(self.fn, nb, parallel=False))
        return self._serial

    def __call__(self, *args):
        disp = self._disp or self._dispatcher()
        if _state["forked"] and self.built_parallel:
            disp = self._serial_dispatcher()
        a0 = args[0]
        key = (a0.dtype, a0.ndim)
        if key not in self._seen:
            return self._first_call(disp, key, args)
        if self.built_parallel:
            _thread_setup(_state["numba"])
            if _layer_needs_lock():
                with _state["lock"]:
                    return disp(*args)
        return disp(*args)

    def _first_call(self, disp, key, args):
        hits = sum(disp.stats.cache_hits.values())
        t0 = time.perf_counter()
        _thread_setup(_state["numba"])
        with _state["lock"], _CacheLock(disp if self.cache else None):
            if key in self._seen:  # another thread made this first call while we waited
                return disp(*args)
            try:
                out = disp(*args)
            except Exception:
                if not self.cache:
                    raise
                # an unreadable disk-cache entry (e.g. written by another numba version):
                # build this kernel in memory instead; a real error raises again below
                self.cache, self._disp, self._serial = False, None, None
                disp = self._dispatcher()
                if _state["forked"] and self.built_parallel:
                    disp = self._serial_dispatcher()
                out = disp(*args)
        dt = time.perf_counter() - t0
        loaded = sum(disp.stats.cache_hits.values()) > hits
        _report.append({"kernel": self.name, "dtype": str(key[0]), "ndim": key[1],
                        "seconds": dt, "source": "disk cache" if loaded else "compiled",
                        "build": "parallel" if disp is self._disp and self.built_parallel
                        else "serial"})
        self._seen.add(key)
        return out


LOCK_TIMEOUT_S = 600.0  # longer than any one kernel's compile on a loaded machine


class _CacheLock:
    """An exclusive ``flock`` on ``<numba cache dir>/<function>.lock`` for the block, so that
    processes of one machine compile each kernel once (module docstring). No-op without a
    disk cache, without ``fcntl``, or when the lock file cannot be made (read-only cache)."""

    def __init__(self, disp):
        self.path = None
        cache = getattr(disp, "_cache", None)
        impl = getattr(cache, "_impl", None)
        folder = getattr(cache, "_cache_path", None)
        base = getattr(impl, "filename_base", None)
        if fcntl is not None and folder and base:
            self.path = os.path.join(folder, base + ".lock")
        self.fd = None

    def __enter__(self):
        if self.path is None:
            return self
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return self
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:  # compile unlocked rather than wait forever
                    os.close(self.fd)
                    self.fd = None
                    return self
                time.sleep(0.05)

    def __exit__(self, *exc):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
        return False


def _mark_forked() -> None:
    _state["forked"] = True
    _state["lock"] = threading.Lock()  # a lock held by another thread at fork stays held


def _layer_needs_lock() -> bool:
    need = _state.get("needs_lock")
    if need is None:
        try:
            need = _state["numba"].threading_layer() == "workqueue"
        except ValueError:  # no parallel kernel has run yet
            return True
        _state["needs_lock"] = need
    return need


def kernel(fn=None, *, parallel: bool = True, exact: bool = False):
    """Decorator: wrap a Python loop function as a lazily compiled ``Kernel``. ``exact``:
    compiled without fast-math (no contraction, reassociation or approximate reciprocals),
    for a kernel that must round each operation as written (the float32 optimizer updates
    that reproduce PyTorch's bits, ``kernels/optim.py``)."""
    if fn is None:
        return lambda f: Kernel(f, parallel, exact=exact)
    return Kernel(fn, parallel, exact=exact)


def compile_report() -> list[dict]:
    """One entry per kernel specialisation compiled or loaded in this process:
    ``{'kernel', 'dtype', 'ndim', 'seconds', 'source': 'compiled' | 'disk cache',
    'build': 'parallel' | 'serial'}``."""
    return list(_report)
