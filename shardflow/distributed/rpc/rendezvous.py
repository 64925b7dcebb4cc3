"""Forming the RPC world (``init_rpc``) and leaving it (``shutdown``), both led by rank 0.

Init. Rank 0 listens on the master address (``MASTER_ADDR:MASTER_PORT`` for ``env://``, or
``tcp://host:port``); every other rank listens on an ephemeral port of the interface that
reaches the master (``SHARDFLOW_RPC_BIND`` overrides it; ``0.0.0.0`` only when asked),
connects to rank 0 (retrying while it is not up yet) and sends ``join`` with its name, rank,
world size and address. Rank 0 checks them (world sizes agree, ranks in range and unique,
names unique and well formed) and, once all ``world_size - 1`` have joined, answers each
with the directory of every worker's rank, name and address. Workers then connect to each
other on first use. A bad join is answered with the reason, and rank 0 raises it too;
missing ranks at the timeout (``rpc_timeout``, 0 = wait forever) are named.

Shutdown (graceful). PyTorch's semantics: it returns once every worker called it and all
outstanding work everywhere is finished.

1. Intent barrier: each worker reports to rank 0 (``sd`` round 0); rank 0 answers when all
   live workers have, so no user thread anywhere starts new calls after it.
2. Each worker deletes its user RRefs (``del`` to their owners) and waits for the answers.
3. Quiescence rounds: each worker waits for its own outstanding calls to finish, then
   reports how many calls it still has in flight or in service; rank 0 answers with the
   total; rounds repeat until a round's total is 0.
4. Everything is closed.

Dead peers. At the start rank 0 pings every worker: a dead one is refused at once, and
any connection lost later marks its worker dead; dead workers are not waited for. A
worker that cannot reach rank 0 skips the barriers (logged). Any wait is bounded by the
timeout; a worker that is alive but never arrives is named and left behind.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time

from ... import _config
from ...futures import Future, wait_all
from .errors import RPCConnectionError, RPCError, RPCTimeoutError
from .options import WorkerInfo

log = logging.getLogger("shardflow.distributed.rpc")

_NAME = re.compile(r"[A-Za-z0-9_.:\-]{1,128}\Z")


def master_address(init_method: str) -> tuple[str, int]:
    if init_method.startswith("env://"):
        addr = _config.master_address()
        if addr is None:
            raise ValueError(
                "init_rpc with init_method='env://' needs MASTER_ADDR and MASTER_PORT in the "
                "environment (`shardflow run` sets them); set both, or pass "
                "TensorPipeRpcBackendOptions(init_method='tcp://host:port')")
        return addr
    if init_method.startswith("tcp://"):
        rest = init_method[len("tcp://"):].rstrip("/")
        host, _, port = rest.rpartition(":")
        try:
            return host.strip("[]") or "127.0.0.1", int(port)
        except ValueError:
            pass
        raise ValueError(f"init_method {init_method!r}: expected tcp://host:port")
    raise ValueError(f"init_method {init_method!r} is not supported: use 'env://' (MASTER_ADDR / "
                     "MASTER_PORT) or 'tcp://host:port'")


def _resolve(host: str) -> str:
    try:
        return socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except (OSError, IndexError):
        return host


def listen_host(rank: int, master_host: str) -> str:
    """The interface this worker listens on (see the module docstring)."""
    explicit = _config.rpc_bind_host()
    if explicit:
        return explicit
    return _resolve(master_host) if rank == 0 else _route_ip(master_host)


def advertised(host: str, master_host: str) -> str:
    """The address other workers use: the bound one, or the routed interface's for a
    wildcard bind."""
    return _route_ip(master_host) if host in ("0.0.0.0", "::", "") else host


def _route_ip(master_host: str) -> str:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((_resolve(master_host), 9))  # sends nothing: it only picks the route
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"worker name {name!r} is not valid: use 1 to 128 letters, digits, '_', '-', '.' or ':'")


# ------------------------------------------------------------------------------------ init


class Join:
    """Rank 0's side of init (runs its handler on the loop thread)."""

    def __init__(self, agent):
        self.agent = agent
        self.joined: dict = {}    # rank -> (conn, request id, name, host, port)
        self.error: BaseException | None = None
        self.done = threading.Event()
        agent.control["join"] = self.on_join

    def on_join(self, conn, h) -> None:
        a = self.agent
        rid = h.get("id")
        try:
            name, rank, ws, host, port = str(h["n"]), int(h["r"]), int(h["ws"]), str(h["h"]), int(h["p"])
        except (KeyError, TypeError, ValueError):
            a.answer_error(conn, rid, ValueError("malformed join message"))
            return
        problem = None
        if ws != a.world_size:
            problem = (f"worker {name!r} (rank {rank}) was started with world_size={ws}, rank 0 "
                       f"with world_size={a.world_size}; every worker must pass the same world_size")
        elif not 0 < rank < a.world_size:
            problem = f"worker {name!r} has rank {rank}, outside 1..{a.world_size - 1}"
        elif rank in self.joined and not self.joined[rank][0].closed:
            problem = (f"two workers have rank {rank} ({self.joined[rank][2]!r} and {name!r}); "
                       "ranks must be unique")
        elif name == a.info.name or any(v[2] == name for r, v in self.joined.items() if r != rank):
            problem = f"two workers are named {name!r}; worker names must be unique"
        if problem is not None:
            self.error = ValueError(f"init_rpc: {problem}")
            a.answer_error(conn, rid, self.error)
            for c, r, *_ in self.joined.values():
                a.answer_error(c, r, self.error)
            self.done.set()
            return
        self.joined[rank] = (conn, rid, name, host, port)
        if len(self.joined) == a.world_size - 1:
            directory = [[a.info.id, a.info.name, *a.addresses[a.info.id]]]
            directory += [[r, v[2], v[3], v[4]] for r, v in sorted(self.joined.items())]
            for c, r, *_ in self.joined.values():
                a.answer(c, r, directory, None)
            install_directory(a, directory)
            self.done.set()

    def wait(self, timeout: float) -> None:
        if not self.done.wait(timeout if timeout > 0 else None):
            missing = sorted(set(range(1, self.agent.world_size)) - set(self.joined))
            err = RPCTimeoutError(
                f"init_rpc: rank 0 waited {timeout:g} s, and ranks {missing} did not join "
                f"(joined: {sorted(self.joined)}); start every worker with the same "
                "MASTER_ADDR/MASTER_PORT and world_size, or raise rpc_timeout")
            for c, r, *_ in self.joined.values():
                self.agent.transport.call(self.agent.answer_error, c, r, err)
            raise err
        if self.error is not None:
            raise self.error


def join(agent, name: str, master: tuple, timeout: float) -> None:
    """A non-zero rank's side of init: join rank 0 and install the directory."""
    host, port = agent.addresses[agent.info.id]
    deadline = None if timeout <= 0 else time.monotonic() + timeout
    last = None
    while deadline is None or time.monotonic() < deadline:
        left = 0.0 if deadline is None else max(0.1, deadline - time.monotonic())
        fut = agent.request(0, {"k": "join", "n": name, "r": agent.info.id, "ws": agent.world_size,
                                "h": host, "p": port}, None, left, "init_rpc join")
        try:
            install_directory(agent, fut.wait())
            return
        except RPCConnectionError as e:  # rank 0 not listening yet
            last = e
            time.sleep(0.1)
    raise RPCTimeoutError(
        f"init_rpc: rank {agent.info.id} could not join rank 0 at {master[0]}:{master[1]} within "
        f"{timeout:g} s (last error: {last}); is rank 0 started with the same MASTER_ADDR/"
        "MASTER_PORT?")


def install_directory(agent, directory) -> None:
    for rank, name, host, port in directory:
        info = WorkerInfo(int(rank), str(name))
        agent.workers[info.id] = info
        agent.by_name[info.name] = info
        agent.addresses[info.id] = (str(host), int(port))


# --------------------------------------------------------------------------------- shutdown


class ShutdownSync:
    """The barrier rounds of graceful shutdown (see the module docstring). Made at init, so
    that rank 0 records the reports of workers that reach shutdown before it does."""

    def __init__(self, agent):
        self.agent = agent
        self.leader = agent.info.id == 0
        self.dead: set = set()
        self.rounds: dict = {}    # round -> {rank: (conn, request id, count)}
        self.mine: dict = {}      # round -> (count, Future)  (rank 0's own)
        agent.control["sd"] = self.on_sd
        agent.on_peer_lost.append(self.on_lost)

    # rank 0 (loop thread)
    def on_sd(self, conn, h) -> None:
        try:
            r, n = int(h["r"]), int(h["n"])
        except (KeyError, TypeError, ValueError):
            self.agent.answer_error(conn, h.get("id"), ValueError("malformed shutdown message"))
            return
        self.rounds.setdefault(r, {})[conn.peer_id] = (conn, h.get("id"), n)
        self.check(r)

    def on_lost(self, peer: int) -> None:
        if peer < 0 or peer == self.agent.info.id or not self.leader:
            return
        self.dead.add(peer)
        for r in list(self.rounds) + list(self.mine):
            self.check(r)

    def check(self, r: int) -> None:
        if r not in self.mine or self.mine[r][1].done():
            return
        got = self.rounds.get(r, {})
        need = set(range(1, self.agent.world_size)) - self.dead
        if not need <= set(got):
            return
        total = self.mine[r][0] + sum(v[2] for p, v in got.items() if p in need)
        for conn, rid, _ in got.values():
            self.agent.answer(conn, rid, total, None)
        self.mine[r][1].set_result(total)

    def missing(self, r: int) -> list:
        return sorted(set(range(1, self.agent.world_size)) - self.dead - set(self.rounds.get(r, {})))

    # any rank (user thread)
    def probe(self, timeout: float) -> None:
        """Rank 0: ping every worker, so that dead ones are known before waiting for them."""
        futs = [self.agent.notify(w, {"k": "ping"}) for w in range(1, self.agent.world_size)]
        for w, f in zip(range(1, self.agent.world_size), futs):
            try:
                f.wait(timeout if timeout > 0 else None)
            except Exception:
                self.agent.transport.call(self.on_lost, w)

    def sync(self, r: int, count: int, timeout: float):
        """Report ``count`` for round ``r``; the total over the live workers, or None when
        the barrier could not be completed (the reason is logged)."""
        a = self.agent
        wait = timeout if timeout > 0 else None
        if self.leader:
            fut = Future()
            a.transport.call(self._enter, r, count, fut)
            try:
                return fut.wait(wait)
            except TimeoutError:
                late = self.missing(r)
                log.warning("rpc shutdown: workers %s did not reach shutdown within %g s; "
                            "shutting down without them", [a._describe(p) for p in late], timeout)
                for p in late:
                    a.transport.call(self.on_lost, p)
                try:
                    return fut.wait(5.0)
                except TimeoutError:
                    return None
        try:
            return a.request(0, {"k": "sd", "r": r, "n": count}, None,
                             (timeout + 5.0) if timeout > 0 else 0.0, "shutdown barrier").wait()
        except RPCError as e:
            log.warning("rpc shutdown on %s: the barrier with rank 0 failed (%s); shutting down "
                        "without it", a.info, e)
            return None

    def _enter(self, r: int, count: int, fut: Future) -> None:
        self.mine[r] = (count, fut)
        self.check(r)


def graceful_shutdown(agent, timeout: float) -> None:
    sync = agent.shutdown_sync
    if sync.leader:
        sync.probe(min(timeout, 10.0) if timeout > 0 else 10.0)
    if sync.sync(0, 0, timeout) is None:
        return
    try:
        wait_all(agent.rrefs.delete_all_users())
    except Exception as e:
        log.warning("rpc shutdown on %s: deleting user RRefs failed: %s", agent.info, e)
    deadline = None if timeout <= 0 else time.monotonic() + timeout
    for r in range(1, 1_000_000):
        while agent.pending_count() and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.005)
        left = 0.0 if deadline is None else max(0.5, deadline - time.monotonic())
        total = sync.sync(r, agent.pending_count(), left)
        if total is None or total == 0:
            return
        if deadline is not None and time.monotonic() > deadline:
            log.warning("rpc shutdown on %s: work still outstanding after %g s; shutting down",
                        agent.info, timeout)
            return
