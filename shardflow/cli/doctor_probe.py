"""What ``shardflow doctor`` compares across hosts: the versions of the distributed stack.

This file is self-contained (standard library only at the top) because the doctor sends
its *source* to each host of ``--hosts`` (``ssh HOST python -``, the same Python path the
launcher uses there) and reads back one JSON line. :func:`collect` returns Python,
numpy, mpi4py, the MPI library (``MPI.Get_library_version()``, read without initialising
MPI), shardflow, and CuPy / the CUDA runtime / NCCL when CuPy is installed, plus the
host's network interface names (not compared: checked against the interface settings).
A package
that is missing is reported as ``"missing"``, never an exception.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys

# keys compared across hosts (in this order); cupy/cuda/nccl only where CuPy is installed
VERSION_KEYS = ("python", "numpy", "mpi4py", "mpi_library", "shardflow", "cupy", "cuda_runtime",
                "nccl")


def _version(module: str) -> str:
    try:
        mod = __import__(module)
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return "missing"
    return str(getattr(mod, "__version__", "unknown"))


def _mpi_library() -> str:
    try:
        import mpi4py

        mpi4py.rc.initialize = False  # read the version string only; no MPI_Init
        mpi4py.rc.finalize = False
        from mpi4py import MPI

        return MPI.Get_library_version().strip().splitlines()[0].split(",")[0].strip()
    except Exception:  # noqa: BLE001
        return "missing"


def _cupy() -> dict:
    out = {"cupy": _version("cupy")}
    if out["cupy"] == "missing":
        return out
    try:
        import cupy

        out["cuda_runtime"] = str(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:  # noqa: BLE001
        out["cuda_runtime"] = "unavailable"
    try:
        from cupy.cuda import nccl

        out["nccl"] = str(nccl.get_version())
    except Exception:  # noqa: BLE001
        out["nccl"] = "unavailable"
    return out


def collect() -> dict:
    """Versions of this host's stack (see the module docstring) plus host name and Python path."""
    info = {
        "host": socket.gethostname(),
        "executable": sys.executable,
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "mpi4py": _version("mpi4py"),
        "mpi_library": _mpi_library(),
        "shardflow": _version("shardflow"),
    }
    info.update(_cupy())
    try:  # interface names: btl_tcp_if_include / NCCL_SOCKET_IFNAME must name these
        info["interfaces"] = sorted(os.listdir("/sys/class/net"))
    except OSError:
        info["interfaces"] = []
    return info


def compare(versions: dict[str, dict]) -> list[tuple[str, dict[str, str]]]:
    """The keys whose values differ across hosts: ``[(key, {host: value})]``.

    CuPy/CUDA/NCCL are compared only among hosts that report them (a CPU-only head node
    next to GPU workers is not a mismatch)."""
    diffs = []
    for key in VERSION_KEYS:
        seen = {h: v[key] for h, v in versions.items() if key in v}
        if key in ("cupy", "cuda_runtime", "nccl"):
            seen = {h: val for h, val in seen.items() if val != "missing"}
        if len(set(seen.values())) > 1:
            diffs.append((key, seen))
    return diffs


if __name__ == "__main__":
    print(json.dumps(collect()))
