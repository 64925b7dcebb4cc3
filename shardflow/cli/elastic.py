"""Elastic restarts: ``shardflow run --max-restarts K [--min-ranks M]`` (torchrun's
``--max-restarts`` / ``--nnodes MIN:MAX``, Horovod elastic).

When the job fails (a rank died or raised, a host disappeared), the launcher ends it as
always (every process of the attempt is gone, the root cause printed), then starts it
again, at most K times:

* without ``--min-ranks``: on the same ranks and hosts;
* with ``--min-ranks M``: on what is still there (:func:`next_world`): remote hosts that
  no longer answer the launcher's ssh agent (``agent HOST true``, as Open MPI starts its
  daemons) are dropped with all their ranks; otherwise the rank that failed is dropped (a
  slot of its host). The job goes on while at least M ranks remain.

Each start gets ``SHARDFLOW_RESTART_COUNT`` and torchrun's ``TORCHELASTIC_RESTART_COUNT``
(0, 1, ...) and ``SHARDFLOW_MAX_RESTARTS`` / ``TORCHELASTIC_MAX_RESTARTS``. ``shardflow
train`` resumes from its newest checkpoint when the count is > 0 (its checkpoints hold
whole tensors, so they load on the new world size); a script does what PyTorch's elastic
scripts do: load the latest checkpoint if one exists.

Not restarted (:func:`why_not_restart`): a job that succeeded, one stopped by a signal
sent to the launcher (the user's Ctrl-C / SIGTERM), one that exceeded ``--timeout``, and a
rank that exited 2 (a refused configuration: it would be refused again).
"""

from __future__ import annotations

from dataclasses import dataclass

from .doctor_net import interfaces, is_local, ssh_run
from .hosts import HostLine


@dataclass(frozen=True)
class World:
    """Where one start of the job runs: ``n`` ranks over ``hosts`` (``[(host, slots)]``;
    empty: this machine)."""

    n: int
    hosts: tuple = ()

    def hosts_arg(self) -> str | None:
        return ",".join(f"{h}:{s}" for h, s in self.hosts) if self.hosts else None

    def describe(self) -> str:
        where = f" on {self.hosts_arg()}" if self.hosts else ""
        return f"{self.n} rank(s){where}"


def check_elastic_args(max_restarts: int, min_ranks: int | None, n: int) -> None:
    """Raise ValueError (what was expected, got, the fix) for impossible values."""
    if max_restarts < 0:
        raise ValueError(f"--max-restarts must be 0 or more, got {max_restarts}; fix: e.g. "
                         "--max-restarts 3")
    if min_ranks is not None:
        if not 1 <= min_ranks <= n:
            raise ValueError(f"--min-ranks must be between 1 and -n ({n}), got {min_ranks}; fix: "
                             f"e.g. --min-ranks {max(1, n - 1)}")
        if max_restarts == 0:
            raise ValueError("--min-ranks needs --max-restarts K (K > 0): it says how few ranks "
                             "a restart may run on; fix: add e.g. --max-restarts 3")


def first_world(n: int, host_lines: list[HostLine]) -> World:
    """The world of the first start: ``--hosts`` / ``--hostfile`` as ``(host, slots)``."""
    hosts = []
    for hl in host_lines:
        slots = 1
        if ":" in hl.text and hl.where.startswith("--hosts"):
            slots = int(hl.text.rsplit(":", 1)[1])
        else:
            for field in hl.text.split()[1:]:
                key, _, value = field.partition("=")
                if key.lower() in ("slots", "slot", "count", "cpu") and value.isdigit():
                    slots = int(value)
        hosts.append((hl.host, slots))
    return World(n, tuple(hosts))


def rank_hosts(world: World) -> list[str | None]:
    """The host of each rank under Open MPI's default mapping (by slot: the first host's
    slots fill first; beyond the slots, around again). None: a local job."""
    if not world.hosts:
        return [None] * world.n
    order = [h for h, slots in world.hosts for _ in range(slots)]
    return [order[r % len(order)] for r in range(world.n)]


def why_not_restart(outcome) -> str | None:
    """Why a job that ended with ``outcome`` (``run.JobOutcome``) is not restarted, or None."""
    if outcome.exit_code == 0:
        return "the job succeeded"
    if outcome.user_signal is not None:
        return outcome.reason  # the user stopped it
    if outcome.timed_out:
        return "the job exceeded --timeout"
    if outcome.exit_code == 2 and not outcome.host_error:
        return ("it exited with code 2, a refused configuration or usage error, which a restart "
                "would meet again")
    return None


def lost_hosts(world: World, probe=None) -> list[str]:
    """The remote hosts of ``world`` that no longer answer (``agent HOST true`` through the
    ssh agent Open MPI uses, 15 s at most each); this machine is never probed."""
    probe = probe or (lambda host: ssh_run(host, ["true"])[0] == 0)
    ifaces = interfaces()
    return [h for h, _ in world.hosts if not is_local(h, ifaces) and not probe(h)]


def next_world(world: World, failed_rank: int | None, min_ranks: int | None,
               probe=None) -> tuple[World, str]:
    """The world of the next start and one line saying why it is that one (see the module
    docstring). Raises RuntimeError when fewer than ``min_ranks`` ranks would remain."""
    if min_ranks is None:
        return world, f"the same {world.describe()}"
    gone = lost_hosts(world, probe) if world.hosts else []
    if gone:
        per_rank = rank_hosts(world)
        n = sum(1 for h in per_rank if h not in gone)
        hosts = tuple((h, s) for h, s in world.hosts if h not in gone)
        why = f"host(s) {', '.join(gone)} no longer answer: dropped with their ranks"
    elif failed_rank is not None and 0 <= failed_rank < world.n:
        n = world.n - 1
        host = rank_hosts(world)[failed_rank]
        hosts = tuple((h, s - 1 if h == host else s) for h, s in world.hosts)
        hosts = tuple((h, s) for h, s in hosts if s > 0)
        why = f"rank {failed_rank} dropped" + (f" (a slot of {host})" if host else "")
    else:
        return world, f"the same {world.describe()} (which rank failed is not known)"
    if n < min_ranks:
        raise RuntimeError(f"only {n} rank(s) would remain ({why}), fewer than --min-ranks "
                           f"{min_ranks}")
    new = World(n, hosts)
    return new, f"{why}: {new.describe()} (was {world.n})"


def restart_env(count: int, max_restarts: int) -> dict[str, str]:
    """The variables every rank of start ``count`` gets (0: the first start)."""
    return {"SHARDFLOW_RESTART_COUNT": str(count), "TORCHELASTIC_RESTART_COUNT": str(count),
            "SHARDFLOW_MAX_RESTARTS": str(max_restarts),
            "TORCHELASTIC_MAX_RESTARTS": str(max_restarts)}
