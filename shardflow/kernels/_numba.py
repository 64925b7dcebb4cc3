"""The one adapter to Numba (optional dependency, imported lazily on the first kernel call).

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
threads at once, so calls are serialised with a lock on that layer.

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

from .. import _config

prange = range  # the pure-Python meaning; replaced by numba.prange in compiled kernels

_state: dict = {"numba": None, "error": None, "threads_set": False, "lock": None, "forked": False,
               "fork_hook": False}
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
            f"({_state['error']}); install it with `pip install 'shardflow[fast]'` (or "
            "`pip install numba`), or set SHARDFLOW_KERNELS=auto to use the NumPy path"
        )
    return nb


def _setup_threads(nb) -> None:
    if _state["threads_set"]:
        return
    if nb.config.THREADING_LAYER == "default":  # the user did not choose (NUMBA_THREADING_LAYER)
        # workqueue threads sleep between kernels; OpenMP's spin and, on 2 cores, took the
        # CPU from the BLAS threads of the next GEMM (CNN step 59 ms -> 95 ms, GPT-mini 3x)
        nb.config.THREADING_LAYER = "workqueue"
    n = _config.kernel_threads()
    if n is not None:
        nb.set_num_threads(max(1, min(n, nb.config.NUMBA_NUM_THREADS)))
    _state["threads_set"] = True


def num_threads() -> int:
    nb = numba_module()
    if nb is None:
        return 1
    _setup_threads(nb)
    return nb.get_num_threads()


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
    f.__qualname__ = fn.__qualname__
    return f


class Kernel:
    """A lazily compiled Numba function. ``k(*args)`` runs it; the first call for a new
    (dtype, ndim) of the first argument is timed and recorded in ``compile_report()``."""

    def __init__(self, fn, parallel: bool = True, cache: bool = True):
        self.fn, self.parallel, self.name = fn, parallel, f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"
        self.cache = cache  # False for generated source (numba cannot disk-cache it)
        self._disp = None
        self._serial = None
        self._seen: set = set()

    def _dispatcher(self):
        nb = require()
        _setup_threads(nb)
        if not _state["fork_hook"]:
            os.register_at_fork(after_in_child=_mark_forked)
            _state["fork_hook"] = True
        f = _build_globals(self.fn, nb, self.parallel)
        self._disp = nb.njit(parallel=self.parallel, cache=self.cache, fastmath=_FASTMATH, nogil=True)(f)
        if _state["lock"] is None:
            _state["lock"] = threading.Lock()
        return self._disp

    def _serial_dispatcher(self):
        if self._serial is None:
            # no disk cache: its index does not tell the serial build from the parallel one
            nb = require()
            self._serial = nb.njit(cache=False, fastmath=_FASTMATH, nogil=True)(
                _build_globals(self.fn, nb, parallel=False))
        return self._serial

    def __call__(self, *args):
        disp = self._disp or self._dispatcher()
        if _state["forked"] and self.parallel:
            return self._serial_dispatcher()(*args)
        a0 = args[0]
        key = (a0.dtype, a0.ndim)
        if key not in self._seen:
            return self._first_call(disp, key, args)
        if self.parallel and _layer_needs_lock():
            with _state["lock"]:
                return disp(*args)
        return disp(*args)

    def _first_call(self, disp, key, args):
        hits = sum(disp.stats.cache_hits.values())
        t0 = time.perf_counter()
        with _state["lock"]:
            try:
                out = disp(*args)
            except Exception:
                if not self.cache:
                    raise
                # an unreadable disk-cache entry (e.g. written by another numba version):
                # build this kernel in memory instead; a real error raises again below
                self.cache, self._disp = False, None
                disp = self._dispatcher()
                out = disp(*args)
        dt = time.perf_counter() - t0
        loaded = sum(disp.stats.cache_hits.values()) > hits
        _report.append({"kernel": self.name, "dtype": str(key[0]), "ndim": key[1],
                        "seconds": dt, "source": "disk cache" if loaded else "compiled"})
        self._seen.add(key)
        return out


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


def kernel(fn=None, *, parallel: bool = True):
    """Decorator: wrap a Python loop function as a lazily compiled ``Kernel``."""
    if fn is None:
        return lambda f: Kernel(f, parallel)
    return Kernel(fn, parallel)


def compile_report() -> list[dict]:
    """One entry per kernel specialisation compiled or loaded in this process:
    ``{'kernel', 'dtype', 'ndim', 'seconds', 'source': 'compiled' | 'disk cache'}``."""
    return list(_report)
