"""The public functions of ``shardflow.distributed.rpc`` (``torch.distributed.rpc``'s)."""

from __future__ import annotations

import logging
import threading

from ... import _config
from . import dist_autograd as DA
from . import rendezvous as RV
from .agent import Agent
from .options import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    UNSET_RPC_TIMEOUT,
    BackendType,
    TensorPipeRpcBackendOptions,
    WorkerInfo,
)
from .rref import RRef
from .state import _STATE

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "get_worker_info", "get_rpc_timeout",
           "is_available", "_rref_context_get_debug_info", "_get_debug_info"]

log = logging.getLogger("shardflow.distributed.rpc")
_init_lock = threading.Lock()


def is_available() -> bool:
    return True


def init_rpc(name: str, backend=None, rank: int = -1, world_size: int | None = None,
             rpc_backend_options: TensorPipeRpcBackendOptions | None = None) -> None:
    """Join the RPC world as worker ``name`` with ``rank`` of ``world_size`` (both default to
    the launcher's RANK / WORLD_SIZE). Returns once every worker has joined (see
    ``rendezvous.py``); raises naming the missing ranks after ``rpc_timeout``."""
    if backend is not None and backend != BackendType.TENSORPIPE and str(backend).upper() != "TENSORPIPE":
        raise ValueError(f"unsupported RPC backend {backend!r}; use BackendType.TENSORPIPE (the default)")
    opts = rpc_backend_options or TensorPipeRpcBackendOptions()
    if not isinstance(opts, TensorPipeRpcBackendOptions):
        raise TypeError(f"rpc_backend_options must be TensorPipeRpcBackendOptions, got {type(opts).__name__}")
    info = _config.launch_info()
    if rank is None or rank < 0:
        rank = info.rank if info.launcher != "none" else -1
    if world_size is None:
        world_size = info.world_size if info.launcher != "none" else None
    if rank is None or rank < 0 or world_size is None:
        raise ValueError(
            "init_rpc needs rank and world_size: pass them, or start the workers with "
            "`shardflow run -n N` (which sets RANK and WORLD_SIZE). Dynamic worlds "
            "(world_size=None) are not supported")
    rank, world_size = int(rank), int(world_size)
    if not 0 <= rank < world_size:
        raise ValueError(f"init_rpc: rank {rank} is outside 0..{world_size - 1} (world_size={world_size})")
    RV.check_name(name)
    for to in opts.device_maps:
        RV.check_name(to)
    with _init_lock:
        if _STATE["agent"] is not None:
            raise RuntimeError("RPC is already initialized; call rpc.shutdown() before init_rpc again")
        master = RV.master_address(opts.init_method)
        agent = Agent(name, rank, world_size, opts)
        host = RV.listen_host(rank, master[0])
        port = master[1] if rank == 0 else 0
        agent.shutdown_sync = RV.ShutdownSync(agent)
        join = RV.Join(agent) if rank == 0 else None  # its handler before the first connection
        if rank == 0:
            agent.addresses[0] = (RV.advertised(host, master[0]), port)
        bound = agent.transport.start(host, port)
        agent.transport.call(agent.sweep)
        agent.addresses[rank] = (RV.advertised(bound[0], master[0]), bound[1])
        try:
            if rank == 0:
                if world_size == 1:
                    join.done.set()
                join.wait(opts.rpc_timeout)
            else:
                agent.addresses[0] = master
                RV.join(agent, name, master, opts.rpc_timeout)
        except BaseException:
            agent.stop()
            raise
        _STATE["agent"] = agent
        DA._install(agent, rank)


def shutdown(graceful: bool = True, timeout: float = DEFAULT_SHUTDOWN_TIMEOUT) -> None:
    """Leave the RPC world. ``graceful``: wait until every worker called shutdown and all
    outstanding work (calls, RRef deletions) is finished everywhere; dead workers are not
    waited for and a silent one at most ``timeout`` seconds (0: the ``rpc_timeout``).
    Otherwise stop at once (calls still waiting fail)."""
    agent = _STATE["agent"]
    if agent is None:
        raise RuntimeError("RPC has not been initialized (or was already shut down): call init_rpc first")
    try:
        if graceful:
            RV.graceful_shutdown(agent, timeout if timeout and timeout > 0 else agent.timeout)
    finally:
        _STATE["agent"] = None
        DA._uninstall()
        agent.stop()


def _agent() -> Agent:
    agent = _STATE["agent"]
    if agent is None:
        raise RuntimeError("RPC has not been initialized: call shardflow.distributed.rpc.init_rpc first")
    return agent


def rpc_async(to, func, args=None, kwargs=None, timeout: float = UNSET_RPC_TIMEOUT):
    """Run ``func(*args, **kwargs)`` on worker ``to``; a Future of its result."""
    return _agent().call(to, func, args, kwargs, timeout)


def rpc_sync(to, func, args=None, kwargs=None, timeout: float = UNSET_RPC_TIMEOUT):
    """Run ``func(*args, **kwargs)`` on worker ``to`` and return its result (the remote
    exception, with the remote traceback, is raised here)."""
    return _agent().call(to, func, args, kwargs, timeout).wait()


def remote(to, func, args=None, kwargs=None, timeout: float = UNSET_RPC_TIMEOUT) -> RRef:
    """Run ``func`` on worker ``to`` and keep the result there; an RRef to it."""
    return _agent().remote(to, func, args, kwargs, timeout)


def get_worker_info(worker_name: str | None = None) -> WorkerInfo:
    agent = _agent()
    return agent.info if worker_name is None else agent.worker(worker_name)


def _rref_context_get_debug_info() -> dict:
    """This worker's RRef tables, counted (PyTorch's debugging helper): owner RRefs kept
    alive for users, forks, pending users and children."""
    return _agent().rrefs.debug_info()


def _get_debug_info() -> dict:
    agent = _agent()
    info = agent.rrefs.debug_info()
    info.update(num_pending_requests=len(agent._pending), num_active_calls=agent.active_in,
                num_connections=len(agent.transport.connections),
                listen_address=list(agent.transport.listen_address))
    return info


def get_rpc_timeout() -> float:
    """The default per-call timeout (seconds) set at ``init_rpc`` (its options'
    ``rpc_timeout``); raises torch's RuntimeError before ``init_rpc``."""
    agent = _STATE["agent"]
    if agent is None:
        raise RuntimeError("Current RPC agent is not set! Did you initialize the RPC framework "
                           "(e.g. by calling `rpc.init_rpc`)?")
    return float(agent.timeout)
