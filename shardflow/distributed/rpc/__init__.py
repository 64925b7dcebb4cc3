"""``shardflow.distributed.rpc``: PyTorch's RPC framework (``torch.distributed.rpc``), with
its names and semantics, so that RPC programs run with their imports changed.

API: ``init_rpc``, ``shutdown``, ``rpc_sync``, ``rpc_async`` (a ``Future``), ``remote`` (an
``RRef``), ``RRef``, ``get_worker_info``, ``WorkerInfo``, ``BackendType``,
``TensorPipeRpcBackendOptions`` (a ``RpcBackendOptions``), ``get_rpc_timeout``,
``functions.async_execution``; distributed autograd in
``shardflow.distributed.autograd``, ``DistributedOptimizer`` in
``shardflow.distributed.optim``, ``RemoteModule`` in ``shardflow.distributed.nn``.
See docs/RPC.md.

Modules: ``api.py`` (the functions), ``agent.py`` (requests, replies, execution),
``transport.py`` (asyncio TCP), ``frame.py`` (message format), ``codec.py`` (what values
may travel), ``secret.py`` (the job secret and handshake), ``rref.py`` (RRef and its
reference counting), ``rendezvous.py`` (init and shutdown), ``dist_autograd.py``,
``optimizer.py``, ``remote_module.py``, ``errors.py``, ``options.py``.
"""

from . import functions
from .api import (
    _get_debug_info,
    _rref_context_get_debug_info,
    get_rpc_timeout,
    get_worker_info,
    init_rpc,
    is_available,
    remote,
    rpc_async,
    rpc_sync,
    shutdown,
)
from .codec import register_class
from .errors import (
    RemoteException,
    RPCAuthError,
    RPCConnectionError,
    RPCError,
    RPCProtocolError,
    RPCTimeoutError,
)
from .options import BackendType, RpcBackendOptions, TensorPipeRpcBackendOptions, WorkerInfo
from .rref import RRef

__all__ = [
    "init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "RRef", "get_worker_info",
    "WorkerInfo", "BackendType", "TensorPipeRpcBackendOptions", "functions", "is_available",
    "register_class", "RPCError", "RPCTimeoutError", "RPCConnectionError", "RPCAuthError",
    "RPCProtocolError", "RemoteException", "get_rpc_timeout", "RpcBackendOptions",
]
