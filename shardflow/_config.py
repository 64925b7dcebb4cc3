"""The one place that reads environment variables (layer L0).

Every other module asks this one. Values are read when asked, not at import time, so a
test or launcher that sets a variable before calling sees it.

Variables
---------
SHARDFLOW_DEBUG            comma list of flags from ``DEBUG_FLAGS`` (``collectives``: compare
                           shapes of every collective across ranks too; ``plan``: print the
                           communication plan of global-tensor operations). Unknown flags raise.
SHARDFLOW_COMM_TIMEOUT     seconds a collective may wait before the job is ended (default 600).
SHARDFLOW_DEVICE           ``cpu`` (default) or ``cuda``.
SHARDFLOW_KERNELS          ``auto`` (default: Numba kernels when numba imports), ``numba`` (required:
                           an error if numba is missing) or ``numpy`` (force the NumPy path).
SHARDFLOW_KERNEL_THREADS   threads of the Numba kernels, a positive integer (default:
                           OMP_NUM_THREADS when set, which ``shardflow run`` sets per rank, else
                           every core).
SHARDFLOW_DATA             folder where dataset readers look by default.
SHARDFLOW_FAILURE_DIR      set by `shardflow run`: where a failing rank writes its root-cause record.
SHARDFLOW_BOARD_DIR        set by mp.spawn's MPI job: where each rank mirrors its arrival-board slot
SHARDFLOW_MPIEXEC          path of the mpiexec `shardflow run` uses (default: next to Python).
SHARDFLOW_JOB_SECRET       the secret a parameter server of a TF_CONFIG cluster asks every
                           connection to prove (every task the same value).
SHARDFLOW_RESTART_COUNT    set by `shardflow run --max-restarts`: 0 for the first start of the
                           job, k for its k-th restart (also exported as torchrun's
                           TORCHELASTIC_RESTART_COUNT); `shardflow train` resumes when it is > 0.
Launcher variables         OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE (mpiexec),
                           PMI_RANK/PMI_SIZE (MPICH/Hydra), SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID,
                           RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE (torchrun style).
MASTER_ADDR / MASTER_PORT  where RPC's rendezvous listens (``master_address``; torchrun's names).
SHARDFLOW_RPC_SECRET       the job's RPC secret (``shardflow run`` sets a fresh one per job); when
                           unset, RPC reads SHARDFLOW_RPC_SECRET_FILE (default
                           ``~/.shardflow/rpc_secret``, created 0600 on first use).
SHARDFLOW_RPC_BIND         interface RPC workers listen on (default: the one that reaches
                           MASTER_ADDR; ``0.0.0.0`` asks for every interface).
TORCH_HOME / XDG_CACHE_HOME  where ``shardflow.hub`` caches (torch's variables: ``$TORCH_HOME``,
                           default ``$XDG_CACHE_HOME/torch``, default ``~/.cache/torch``); also
                           GITHUB_TOKEN (hub's GitHub API calls) and the deprecated TORCH_HUB /
                           TORCH_MODEL_ZOO (``hub_environment``).
Slurm allocation           SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE, SLURM_NTASKS, SLURM_JOB_ID
                           (``slurm_env``; `shardflow run` starts its ranks on the allocation).

``check_environment()`` parses every one of these that is set and raises
:class:`EnvironmentValueError` (one line: the variable, its value, what is allowed, the fix)
for the first unusable one; ``shardflow run`` and ``shardflow train`` call it before anything
starts (exit code 2).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

DEFAULT_COMM_TIMEOUT_S = 600.0


class EnvironmentValueError(ValueError):
    """An environment variable shardflow reads holds a value it cannot use."""


def env(name: str, default: str | None = None) -> str | None:
    """Raw access for the rare variable that has no helper below."""
    return os.environ.get(name, default)


# The SHARDFLOW_DEBUG flags, the one list of them: a new flag is one line here.
DEBUG_FLAGS = {
    "collectives": "compare every collective's shapes across ranks too (dtype, element count, "
                   "op and root are always compared)",
    "plan": "print the communication plan of global-tensor operations",
    "compile": "log what shardflow.compile traced, fused and why it fell back to eager",
}


def debug_flags() -> frozenset[str]:
    """The flags of ``SHARDFLOW_DEBUG`` (comma-separated); an unknown one raises ValueError."""
    raw = os.environ.get("SHARDFLOW_DEBUG", "")
    flags = frozenset(f.strip().lower() for f in raw.split(",") if f.strip())
    unknown = sorted(flags - DEBUG_FLAGS.keys())
    if unknown:
        known = "; ".join(f"{k} ({v})" for k, v in DEBUG_FLAGS.items())
        raise EnvironmentValueError(
            f"SHARDFLOW_DEBUG={raw!r}: unknown flag(s) {', '.join(map(repr, unknown))}. "
            f"Known flags: {known}. Fix the spelling (comma-separate several flags) or unset "
            "SHARDFLOW_DEBUG."
        )
    return flags


def debug_collectives() -> bool:
    return "collectives" in debug_flags()


def debug_plan() -> bool:
    return "plan" in debug_flags()


def debug_compile() -> bool:
    return "compile" in debug_flags()


def torchelastic_run_id() -> str | None:
    """``TORCHELASTIC_RUN_ID`` (set by torchrun / torch.distributed.elastic), None if unset."""
    return os.environ.get("TORCHELASTIC_RUN_ID")


def torchelastic_error_file() -> str | None:
    """``TORCHELASTIC_ERROR_FILE``: where ``@record`` writes a rank's uncaught exception as JSON
    (torchrun sets it per worker); None if unset or empty."""
    return os.environ.get("TORCHELASTIC_ERROR_FILE") or None


def torch_distributed_debug() -> str | None:
    """``TORCH_DISTRIBUTED_DEBUG`` as set (``OFF``/``INFO``/``DETAIL``), None if unset."""
    return os.environ.get("TORCH_DISTRIBUTED_DEBUG")


KERNEL_MODES = ("auto", "numba", "numpy")


def kernels_mode() -> str:
    """SHARDFLOW_KERNELS: ``auto`` (default), ``numba`` or ``numpy`` (see shardflow/kernels)."""
    raw = os.environ.get("SHARDFLOW_KERNELS", "").strip().lower() or "auto"
    if raw not in KERNEL_MODES:
        raise EnvironmentValueError(
            f"SHARDFLOW_KERNELS={raw!r}: expected one of {', '.join(KERNEL_MODES)}; use 'numpy' to "
            "force the NumPy path, 'numba' to require the compiled kernels, or unset it"
        )
    return raw


def kernel_threads() -> int | None:
    """Threads for the Numba kernels: SHARDFLOW_KERNEL_THREADS, else OMP_NUM_THREADS, else
    None (numba's default: every core)."""
    own = _int("SHARDFLOW_KERNEL_THREADS")
    if own is not None:
        if own < 1:
            raise EnvironmentValueError(
                f"SHARDFLOW_KERNEL_THREADS={own}: expected a positive number of threads; set it "
                "to e.g. 2, or unset it (default: OMP_NUM_THREADS, else every core)")
        return own
    v = _int("OMP_NUM_THREADS")
    return v if v is not None and v > 0 else None


def progress_thread() -> bool:
    """``SHARDFLOW_PROGRESS_THREAD``: whether DDP's reducer runs the comm layer's background
    progress thread while its buckets are in flight (``comm/mpi_progress.py``). ``auto``
    (default): only when this host runs more ranks than it has cores (measured: it helped
    on oversubscribed or loaded cores, and cost a few ms per step with one free core per
    rank; docs/DISTRIBUTED.md, "Overlap"); ``1``: always; ``0``: never."""
    raw = os.environ.get("SHARDFLOW_PROGRESS_THREAD", "auto").strip().lower()
    if raw in ("", "auto"):
        return launch_info().local_world_size > (os.cpu_count() or 1)
    if raw in ("1", "0"):
        return raw == "1"
    raise EnvironmentValueError(
        f"SHARDFLOW_PROGRESS_THREAD must be auto, 1 or 0, got {raw!r}; unset it for auto")


def tune_allocator_on_backward() -> bool:
    """``SHARDFLOW_TUNE_ALLOCATOR``: ``1`` (default) lets the first ``backward()`` of a process
    apply ``backend.tune_allocator()`` (glibc keeps large temporaries in its heap instead of a
    fresh mmap each: 18k page faults less per GPT-mini step); ``0`` leaves malloc as it is."""
    raw = os.environ.get("SHARDFLOW_TUNE_ALLOCATOR", "1").strip()
    if raw in ("1", "0"):
        return raw == "1"
    raise EnvironmentValueError(
        f"SHARDFLOW_TUNE_ALLOCATOR must be 1 or 0, got {raw!r}; unset it for 1")


def comm_timeout_s() -> float:
    raw = os.environ.get("SHARDFLOW_COMM_TIMEOUT")
    if raw is None or raw == "":
        return DEFAULT_COMM_TIMEOUT_S
    fix = f"set it to e.g. 600 or unset it (default {DEFAULT_COMM_TIMEOUT_S:g})"
    try:
        value = float(raw)
    except ValueError:
        raise EnvironmentValueError(
            f"SHARDFLOW_COMM_TIMEOUT must be a number of seconds, got {raw!r}; {fix}") from None
    if not (math.isfinite(value) and value > 0):
        raise EnvironmentValueError(
            f"SHARDFLOW_COMM_TIMEOUT must be a positive, finite number of seconds, got {raw!r}; {fix}")
    return value


def default_device() -> str:
    return os.environ.get("SHARDFLOW_DEVICE", "cpu")


def _device_value() -> str:
    raw = default_device()
    kind = raw.split(":", 1)[0]
    index = raw.split(":", 1)[1] if ":" in raw else "0"
    if kind not in ("cpu", "cuda") or not index.isdigit():
        raise EnvironmentValueError(
            f"SHARDFLOW_DEVICE={raw!r}: expected cpu or cuda (cuda:N for one GPU); set it so or "
            "unset it (default cpu)")
    return raw


def _rank_prefix_value() -> str:
    raw = os.environ.get("SHARDFLOW_RANK_PREFIX", "1")
    if raw not in ("0", "1"):
        raise EnvironmentValueError(
            f"SHARDFLOW_RANK_PREFIX={raw!r}: expected 1 (prefix lines with [rank R]) or 0; set it "
            "so or unset it")
    return raw


def job_secret() -> str | None:
    """SHARDFLOW_JOB_SECRET: the secret every connection to a parameter server of a TF_CONFIG
    cluster must prove (``distributed/ps/auth.py``; ``shardflow run`` jobs draw their own)."""
    return os.environ.get("SHARDFLOW_JOB_SECRET") or None


def restart_count() -> int:
    """SHARDFLOW_RESTART_COUNT: how many times ``shardflow run --max-restarts`` restarted this
    job (0: first start, also when unset)."""
    v = _int("SHARDFLOW_RESTART_COUNT")
    if v is None:
        return 0
    if v < 0:
        raise EnvironmentValueError(f"SHARDFLOW_RESTART_COUNT={v}: expected 0 or more (set by "
                                    "`shardflow run --max-restarts`); unset it")
    return v


def check_environment() -> None:
    """Parse every variable shardflow reads that is set; raise :class:`EnvironmentValueError`
    for the first one that is unusable (called by the commands before anything starts, so a
    typo is one line and exit code 2, not a traceback in the middle of a job)."""
    for parse in (comm_timeout_s, debug_flags, kernels_mode, kernel_threads, _device_value,
                  _rank_prefix_value, launch_info, restart_count, progress_thread):
        parse()


@dataclass(frozen=True)
class HubEnvironment:
    """What ``shardflow.hub`` reads from the environment (torch.hub's variables)."""

    torch_home: str  # $TORCH_HOME, else $XDG_CACHE_HOME/torch, else ~/.cache/torch (expanded)
    github_token: str | None  # GITHUB_TOKEN: sent with hub's GitHub API requests
    deprecated: tuple[str, ...]  # TORCH_HUB / TORCH_MODEL_ZOO when set (hub warns: use TORCH_HOME)


def hub_environment() -> HubEnvironment:
    """torch.hub's variables: the cache root (``hub.get_dir()`` is ``<torch_home>/hub``), the
    GitHub token and which deprecated variables are set."""
    cache = os.environ.get("XDG_CACHE_HOME", "~/.cache")
    home = os.path.expanduser(os.environ.get("TORCH_HOME", os.path.join(cache, "torch")))
    deprecated = tuple(v for v in ("TORCH_HUB", "TORCH_MODEL_ZOO") if os.environ.get(v))
    return HubEnvironment(home, os.environ.get("GITHUB_TOKEN"), deprecated)


def data_root() -> str | None:
    return os.environ.get("SHARDFLOW_DATA")


@dataclass(frozen=True)
class LaunchInfo:
    """How this process was started: who launched it and its place in the world."""

    launcher: str  # "mpiexec" | "slurm" | "torchrun" | "none"
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int


def _int(name: str) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise EnvironmentValueError(f"{name}={raw!r}: expected an integer; set it to a whole "
                                    "number or unset it") from None


def launch_info() -> LaunchInfo:
    """Detect the launcher from its environment variables (mpiexec, Slurm, torchrun, none)."""
    rank, size = _int("OMPI_COMM_WORLD_RANK"), _int("OMPI_COMM_WORLD_SIZE")
    if rank is not None and size is not None:
        return LaunchInfo(
            "mpiexec",
            rank,
            size,
            _int("OMPI_COMM_WORLD_LOCAL_RANK") or 0,
            _int("OMPI_COMM_WORLD_LOCAL_SIZE") or 1,
        )
    rank, size = _int("PMI_RANK"), _int("PMI_SIZE")
    if rank is not None and size is not None:
        return LaunchInfo("mpiexec", rank, size, _int("MPI_LOCALRANKID") or 0, _int("MPI_LOCALNRANKS") or 1)
    rank, size = _int("SLURM_PROCID"), _int("SLURM_NTASKS")
    if rank is not None and size is not None:
        local = _int("SLURM_LOCALID") or 0
        per_node = _int("SLURM_NTASKS_PER_NODE") or size
        return LaunchInfo("slurm", rank, size, local, per_node)
    rank, size = _int("RANK"), _int("WORLD_SIZE")
    if rank is not None and size is not None:
        return LaunchInfo(
            "torchrun", rank, size, _int("LOCAL_RANK") or 0, _int("LOCAL_WORLD_SIZE") or size
        )
    return LaunchInfo("none", 0, 1, 0, 1)


def slurm_env() -> dict[str, str]:
    """The ``SLURM_*`` variables (empty outside a Slurm allocation); parsed by
    ``cli/slurm.py`` for ``shardflow run`` inside ``salloc`` / ``sbatch``."""
    return {k: v for k, v in os.environ.items() if k.startswith("SLURM_")}


def rank_prefix_enabled() -> bool:
    return os.environ.get("SHARDFLOW_RANK_PREFIX", "1") != "0"


def failure_dir() -> str | None:
    """SHARDFLOW_FAILURE_DIR: folder where a failing rank writes its root-cause record.

    Set by ``shardflow run`` for its ranks; the launcher reads the records to print the
    first failing rank, its traceback and exit code.
    """
    raw = os.environ.get("SHARDFLOW_FAILURE_DIR")
    return raw or None


def board_dir() -> str | None:
    """Where each rank mirrors its world arrival-board slot (``comm/board_file.py``):
    SHARDFLOW_BOARD_DIR (set by ``mp.spawn``'s MPI job, which prints no launcher lines), else
    ``shardflow run``'s failure folder."""
    return os.environ.get("SHARDFLOW_BOARD_DIR") or failure_dir()


def mpiexec_path() -> str | None:
    """SHARDFLOW_MPIEXEC: an explicit mpiexec to use instead of the one next to Python."""
    raw = os.environ.get("SHARDFLOW_MPIEXEC")
    return raw or None


def apply_mpi_env_defaults() -> None:
    """Set container-friendly Open MPI defaults in this process before MPI is initialised.

    Only sets variables the user has not set: ``OMPI_MCA_osc=^ucx`` (the UCX one-sided
    component prints an error on machines without UCX devices; shardflow's arrival window
    uses the shared-memory / rdma component) and ``OMPI_MCA_pml=^ucx`` for the same reason.
    """
    os.environ.setdefault("OMPI_MCA_osc", "^ucx")
    os.environ.setdefault("OMPI_MCA_pml", "^ucx")


def mpi_launch_env() -> dict[str, str]:
    """Variables ``shardflow run`` gives mpiexec (only those the user has not set)."""
    defaults = {
        "OMPI_MCA_osc": "^ucx",
        "OMPI_MCA_pml": "^ucx",
        "OMPI_MCA_btl": "self,vader,tcp",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
        # glibc keeps large temporaries in the heap (see backend/memory.py); env form so it
        # also holds for a rank's script that never calls tune_allocator()
        "MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
        "MALLOC_TRIM_THRESHOLD_": str(256 * 1024 * 1024),
        # mpiexec gives ranks a terminal for stdout: Numba's error highlighting then inits
        # colorama, whose exit handler writes a stray ESC[0m into every rank's output
        "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING": "1",
    }
    return {k: v for k, v in defaults.items() if k not in os.environ}


BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def blas_thread_env(ranks_per_host: int) -> dict[str, str]:
    """BLAS thread counts for ranks sharing a host: cores // ranks each, so N ranks do not
    each start a thread per core (the classic oversubscription slowdown). Variables the
    user already set are kept."""
    if any(v in os.environ for v in BLAS_THREAD_VARS):
        return {}
    threads = str(max(1, (os.cpu_count() or 1) // max(1, ranks_per_host)))
    return {v: threads for v in BLAS_THREAD_VARS}


def is_root_user() -> bool:
    """True when running as uid 0 (mpiexec then needs --allow-run-as-root)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def master_address() -> tuple[str, int] | None:
    """``(MASTER_ADDR, MASTER_PORT)`` (torchrun's variables), or None when either is unset."""
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if not addr or not port:
        return None
    try:
        return addr, int(port)
    except ValueError:
        raise ValueError(f"MASTER_PORT must be a port number, got {port!r}") from None


def rpc_secret() -> str | None:
    """SHARDFLOW_RPC_SECRET: the job's RPC secret (None when unset)."""
    return os.environ.get("SHARDFLOW_RPC_SECRET") or None


def rpc_secret_file() -> str:
    """Where RPC keeps the per-user secret used when SHARDFLOW_RPC_SECRET is unset:
    SHARDFLOW_RPC_SECRET_FILE, else ``~/.shardflow/rpc_secret``."""
    raw = os.environ.get("SHARDFLOW_RPC_SECRET_FILE")
    return raw or os.path.join(os.path.expanduser("~"), ".shardflow", "rpc_secret")


def rpc_bind_host() -> str | None:
    """SHARDFLOW_RPC_BIND: the interface RPC listens on (None: the one that reaches the master)."""
    return os.environ.get("SHARDFLOW_RPC_BIND") or None


def rpc_launch_env() -> dict[str, str]:
    """What ``shardflow run`` gives its ranks for RPC: a fresh job secret, unless one is set."""
    if os.environ.get("SHARDFLOW_RPC_SECRET"):
        return {}
    import secrets  # here, not at import: only the launcher needs it

    return {"SHARDFLOW_RPC_SECRET": secrets.token_hex(32)}
