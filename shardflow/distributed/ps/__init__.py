"""Parameter server (docs/PS.md): servers hold the parameters split across them,
workers pull, compute and push gradients; sync or async (stale synchronous parallel)
updates; heartbeats detect lost workers, request timeouts lost servers.

``wire.py`` (JSON header + raw buffers, never pickle), ``server.py`` (``ParameterServer``),
``client.py`` (``PSWorker``), ``optim.py`` (the servers' SGD / Adam), ``cluster.py`` (roles
and addresses for ``ParameterServerStrategy``). Transport: TCP sockets between plain processes, so a killed
worker does not take the job down (under mpiexec, Open MPI ends the whole job when a rank
dies; the parameter server does not rely on MPI for that reason).
"""

from .client import PSWorker, shard_sizes
from .server import ParameterServer
from .wire import PSError

__all__ = ["PSError", "PSWorker", "ParameterServer", "shard_sizes"]
