"""Inter-op parallelism for compile_step's backward: weight-gradient GEMMs on a second thread.

Why: the engine workloads are GEMM-bound (single-threaded profiles: GEMMs are 77% of a
GPT-mini step's CPU time, 80% of the MLP's, about 60% of the CNN's, each at about one core's
float32 peak), and on a 2-core machine OpenBLAS splitting every GEMM over both cores scales
poorly (GPT-mini: 559 ms of one-core work per step, measured with one thread; 449 ms of wall
time on 2 quiet cores in issue 24's benchmark run: 1.25x). The
backward has two independent GEMMs per ``linear``: the input gradient ``g @ W`` is on the
critical path (the next op's backward reads it), the weight gradient ``g.T @ x`` is read by
nobody until the optimizer. So the plan runs each weight gradient on one worker thread
(``Linear.backward_weight_later``) while the main thread carries the input gradient on, with
BLAS at one thread per call for the backward's duration: two single-threaded GEMMs (or a GEMM
and a memory-bound kernel) at once instead of one GEMM split in two. The forward keeps BLAS's
threads (its GEMMs are all on the critical path). The same GEMM expressions run, so the
gradients are eager's.

When (``policy``): by default, on a machine with exactly 2 CPUs, each plan times its first
replays both ways and keeps the faster (``Tuner``: measured here, the overlap won on every
workload under heavy load and lost on MLP and CNN on the quietest run, and the winner changed
from run to run at one load; docs/KERNELS.md, "Overlapped backward");
off on more CPUs, where one GEMM's own threads already use the cores and OpenBLAS serialises
concurrent callers of its thread pool, and on 1 CPU; ``compile_step(..., overlap=True/False)``
decides explicitly. It needs ``threadpoolctl`` to set BLAS's threads (a dependency of
scikit-learn; ``pip install threadpoolctl``); without it the backward runs as before and the
compile log says why. Parameters with hooks (DDP's bucket all-reduce included) also turn it
off for that step, so hooks run at eager's moments.

The adapter for ``threadpoolctl`` (an optional import) is here and nowhere else.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

_state: dict = {"controller": None, "why": None, "pool": None}
_lock = threading.Lock()


def policy(requested: bool | None) -> tuple[bool | str, str]:
    """(mode, why) for ``compile_step(..., overlap=requested)``: mode False (serial
    backward), True (overlapped) or "tune" (``Tuner`` picks per plan); None = automatic."""
    if requested is False:
        return False, "off (overlap=False)"
    cpus = os.cpu_count() or 1
    if requested is None and cpus != 2:
        return False, f"off ({cpus} CPUs; automatic only on 2)"
    why = _blas_controller_problem()
    if why is not None:
        return False, f"off ({why})"
    if requested is None:
        return "tune", ("tuned: the first replays alternate the overlapped and the serial "
                        "backward, the faster is kept")
    return True, "weight-gradient GEMMs on a second thread, BLAS at 1 thread in backward"


class Tuner:
    """Picks the overlapped or the serial backward for one plan by timing whole replayed
    steps: the first ``2 * trials`` replays take turns (``ORDER``), then the overlap is
    kept only if its fastest step beats the serial backward's fastest by ``margin`` (else the
    serial one, which is eager's schedule), for ``retune_every`` replays, after which both are
    timed again. Both modes run the same GEMMs, so the choice changes time only, never values.

    Why the minimum: interference only ever adds time (a load spike, or the first step after
    the process was idle: ``bench engine`` runs other libraries between runs, and each run's
    first step found BLAS's threads asleep and the caches cold), so the fastest step of each
    mode is its cost at the current load; with 3 trials each, one or two penalised steps per
    mode cannot decide. Medians of adjacent pairs (session 28) still chose the overlap, 40%
    slower on a quiet machine's MLP, when the penalised first steps of the bench's runs fell
    on the serial trials. Why the margin: a wrong overlap costs 35-50% on a quiet machine (a
    wrong serial choice under load about 10-30%), and ties belong to eager's schedule.
    Why measure rather than decide: on 2 vCPUs shared with other processes the winner
    changed with the load (docs/KERNELS.md, "Overlapped backward")."""

    trials = 3
    margin = 0.95  # the overlap's fastest step must be at least 5% under the serial one's
    retune_every = 100  # replays after a choice; then both are timed again (the load changes)

    def __init__(self):
        self.times: dict[bool, list[float]] = {True: [], False: []}
        self.choice: bool | None = None
        self.since_choice = 0

    # the trial order, repeated: overlapped, serial, serial, overlapped (ABBA). Why not
    # alternating: a penalty that recurs with period 2 (``bench engine``'s GPT-mini runs
    # 2 steps after other libraries ran, so every other step finds cold caches) fell on
    # every trial of one mode, whose fastest step then never showed its cost; with ABBA each
    # mode gets steps at both parities (and at all three of period 3).
    ORDER = (True, False, False, True)

    def mode(self) -> bool:
        if self.choice is not None:
            return self.choice
        return self.ORDER[(len(self.times[True]) + len(self.times[False])) % len(self.ORDER)]

    def record(self, mode: bool, seconds: float) -> None:
        if self.choice is not None:
            self.since_choice += 1
            if self.since_choice >= self.retune_every:
                self.times, self.choice, self.since_choice = {True: [], False: []}, None, 0
            return
        self.times[mode].append(seconds)
        if min(len(v) for v in self.times.values()) >= self.trials:
            self.choice = min(self.times[True]) < self.margin * min(self.times[False])

    def describe(self) -> str:
        if self.choice is None:
            return f"tuning ({len(self.times[True])} + {len(self.times[False])} steps timed)"
        on, off = (min(self.times[m]) * 1e3 for m in (True, False))
        return (f"{'overlapped' if self.choice else 'serial'} backward chosen (fastest step "
                f"{on:.1f} ms overlapped, {off:.1f} ms serial)")


def _blas_controller_problem() -> str | None:
    with _lock:
        if _state["controller"] is None and _state["why"] is None:
            try:
                import threadpoolctl
            except ImportError:
                _state["why"] = ("threadpoolctl is not installed: `pip install threadpoolctl` "
                                 "lets compile_step set BLAS's threads")
            else:
                ctl = threadpoolctl.ThreadpoolController().select(user_api="blas")
                if not ctl.lib_controllers:
                    _state["why"] = "threadpoolctl finds no BLAS library to set threads on"
                else:
                    _state["controller"] = ctl
    return _state["why"]


def executor() -> ThreadPoolExecutor:
    """The one worker thread (per process) that runs deferred weight-gradient GEMMs."""
    with _lock:
        if _state["pool"] is None:
            if not _state.get("fork_hook"):
                # a forked child has the executor object but not its thread: a submit there
                # would wait forever, so the child starts its own
                os.register_at_fork(after_in_child=_forget_pool)
                _state["fork_hook"] = True
            _state["pool"] = ThreadPoolExecutor(1, thread_name_prefix="shardflow-wgrad")
        return _state["pool"]


def _forget_pool() -> None:
    global _lock
    _lock = threading.Lock()  # the parent's may have been held by another thread at the fork
    _state["pool"] = None


@contextlib.contextmanager
def blas_single_thread():
    """BLAS at one thread inside the block, its previous count restored after (the caller
    makes sure no deferred GEMM is still running when the block ends)."""
    libs = _state["controller"].lib_controllers
    before = [lc.num_threads for lc in libs]
    for lc in libs:
        lc.set_num_threads(1)
    try:
        yield
    finally:
        for lc, n in zip(libs, before):
            lc.set_num_threads(n)


class Later:
    """A gradient being computed on the worker thread (a slot value in the plan's backward)."""

    __slots__ = ("future",)

    def __init__(self, fn):
        self.future: Future = executor().submit(fn)

    def done(self) -> bool:
        return self.future.done()

    def result(self):
        return self.future.result()


def resolve(g):
    """``g`` itself, or the array a ``Later`` computes (waiting for it)."""
    return g.result() if type(g) is Later else g
