"""Who is a parameter server and where: the cluster of ``ParameterServerStrategy``.

Two ways to describe it, both ending in the same ``Cluster`` (this task's role, the
servers' addresses); training then runs over the ps package's own TCP protocol:

* ``mpi_cluster(world, num_ps, ...)`` (launched by ``shardflow run -n N``): world ranks
  ``0 .. num_ps-1`` become servers, the others workers. Communication plan: one
  ``all_gather_object`` of the host names and of rank 0's new job secret (one host: servers
  listen on 127.0.0.1; several: on the address of the route to another host, never on all
  interfaces), the servers open their sockets, one ``all_gather_object`` of their
  addresses (``auth.ServerAddress``, carrying the secret every connection must prove), and one ``new_group`` of the worker ranks (for
  ``strategy.reduce``). MPI carries nothing else, but under mpiexec a rank that dies ends
  the whole job, so "continue without a lost worker" needs the second way.
* ``tf_config_cluster(config)``: plain processes described by TensorFlow's ``TF_CONFIG``
  layout, ``{"cluster": {"ps": ["host:port", ...], "worker": [...]}, "task": {"type":
  "ps" | "worker", "index": i}}`` (a dict, given by the caller; each server listens on its
  listed host and port, the worker entries are only counted; the secret is the dict's
  ``"secret"`` or ``SHARDFLOW_JOB_SECRET``). A killed worker is then only a lost worker.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from ... import _config
from .auth import ServerAddress, new_secret

__all__ = ["Cluster", "mpi_cluster", "tf_config_cluster", "check_optimizer"]


@dataclass
class Cluster:
    task_type: str  # "ps" or "worker"
    task_id: int  # server index or worker index
    num_ps: int
    num_workers: int
    servers: list = field(default_factory=list)  # [(host, port)] of every server
    server: object = None  # this task's ParameterServer (ps tasks)
    worker_group: object = None  # communicator over the workers (MPI launch, worker tasks)


def mpi_cluster(world, num_ps: int, make_server) -> Cluster:
    """Split an MPI world into ``num_ps`` servers and ``world.size - num_ps`` workers;
    ``make_server(server_id, num_workers, host)`` builds a ``ParameterServer`` (collective:
    every rank calls it)."""
    n = world.size
    if not 1 <= num_ps < n:
        raise ValueError(
            f"ParameterServerStrategy needs 1 <= num_ps < world size, got num_ps={num_ps} on "
            f"{n} rank(s); launch with `shardflow run -n {num_ps + 2} ...` for {num_ps} server(s) "
            "and 2 workers, or lower num_ps")
    r, num_workers = world.rank, n - num_ps
    found = world.all_gather_object((socket.gethostname(), new_secret() if r == 0 else None))
    hosts, secret = [h for h, _ in found], found[0][1]  # rank 0's secret, shared over MPI
    one_host = len(set(hosts)) == 1
    server = None
    if r < num_ps:  # listen on the address that reaches the other hosts, never on all of them
        bind = "127.0.0.1" if one_host else route_address(next(h for h in hosts if h != hosts[r]))
        server = make_server(r, num_workers, bind)
        server.require_secret(secret)
    mine = tuple(server.address) if server else None
    servers = [ServerAddress(*a, secret) for a in world.all_gather_object(mine)[:num_ps]]
    group = world.new_group(list(range(num_ps, n)))  # collective on every rank; None on servers
    if server is not None:
        return Cluster("ps", r, num_ps, num_workers, servers, server=server)
    return Cluster("worker", r - num_ps, num_ps, num_workers, servers, worker_group=group)


def route_address(peer_host: str) -> str:
    """This host's address on the route to ``peer_host`` (a UDP "connect" sends nothing; it
    only asks the kernel which source address it would use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((socket.gethostbyname(peer_host), 9))
        return s.getsockname()[0]


def _host_port(entry: str):
    host, sep, port = str(entry).rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"a ps address must be 'host:port', got {entry!r}")
    return host, int(port)


def tf_config_cluster(config: dict, make_server) -> Cluster:
    """The cluster of one plain process from a ``TF_CONFIG``-shaped dict (module docstring)."""
    try:
        spec, task = config["cluster"], config["task"]
        ps, workers = list(spec["ps"]), list(spec["worker"])
        kind, index = task["type"], int(task["index"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(
            "cluster_resolver must be None (MPI launch) or a TF_CONFIG-shaped dict "
            "{'cluster': {'ps': ['host:port', ...], 'worker': [...]}, 'task': {'type': 'ps' or "
            f"'worker', 'index': i}}}}; got {config!r} ({type(e).__name__}: {e})") from e
    secret = config.get("secret") or _config.job_secret()
    servers = [ServerAddress(*_host_port(a), secret) for a in ps]
    counts = {"ps": len(servers), "worker": len(workers)}
    if kind not in counts or not 0 <= index < counts[kind] or not servers or not workers:
        raise ValueError(f"task {task!r} is not in the cluster {spec!r} (task type 'ps' or 'worker', "
                         "index below the number of entries; at least one of each)")
    if kind == "ps":
        host, port = servers[index]
        server = make_server(index, len(workers), host, port)
        server.require_secret(secret)
        return Cluster("ps", index, len(servers), len(workers), servers, server=server)
    return Cluster("worker", index, len(servers), len(workers), servers)


def check_optimizer(optimizer, config: dict) -> None:
    """The servers apply the update: a local optimizer given to ``apply_gradients`` is never
    stepped, so it must describe the same update (or be None)."""
    if optimizer is None:
        return
    name = type(optimizer).__name__.lower()
    d = getattr(optimizer, "defaults", {})
    want = {"lr": config["lr"]}
    if config["optimizer"] == "adam":
        want.update(betas=tuple(config["betas"]), eps=config["eps"], weight_decay=0.0, amsgrad=False)
    else:
        want.update(momentum=0.0, weight_decay=0.0, nesterov=False)
    got = {k: (tuple(d[k]) if k == "betas" else d.get(k)) for k in want}
    if name != config["optimizer"] or got != want or d.get("maximize"):
        raise ValueError(
            f"the parameter servers apply {config['optimizer']} with {want}; the optimizer given "
            f"to apply_gradients is {type(optimizer).__name__} with {got}. The local optimizer "
            "is never stepped: pass None, or build ParameterServerStrategy(optimizer=..., lr=..., "
            "betas=..., eps=...) to match it")
