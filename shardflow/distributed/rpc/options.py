"""``BackendType``, ``TensorPipeRpcBackendOptions`` and ``WorkerInfo`` with PyTorch's
names and defaults (``torch.distributed.rpc``). The backend name ``TENSORPIPE`` is kept so
that PyTorch programs run unchanged; shardflow's transport behind it is its own (asyncio
TCP, see ``transport.py``)."""

from __future__ import annotations

import enum
from typing import NamedTuple

from ... import accelerator
from ...backend.device import device as Device

DEFAULT_RPC_TIMEOUT_SEC = 60.0
DEFAULT_INIT_METHOD = "env://"
DEFAULT_NUM_WORKER_THREADS = 16
DEFAULT_SHUTDOWN_TIMEOUT = 0  # PyTorch's: 0 means "the rpc_timeout"
UNSET_RPC_TIMEOUT = -1.0


class BackendType(enum.Enum):
    TENSORPIPE = "TENSORPIPE"


class WorkerInfo(NamedTuple):
    """A worker's ``id`` (its rank) and ``name``."""

    id: int
    name: str

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, name={self.name})"


def _device(d) -> Device:
    if isinstance(d, int):
        return Device("cuda", d)
    return Device(d)


def _check_device(d, where: str) -> Device:
    """A valid device of this process (PyTorch checks them at init_rpc as well)."""
    try:
        dev = _device(d)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: {d!r} is not a device ({e}); use 'cpu', 'cuda:0' or an int") from None
    if dev.type == "cuda":
        n = accelerator.device_count()
        if (dev.index or 0) >= n:
            raise ValueError(
                f"{where}: device {dev} does not exist here ({n} CUDA device(s) visible); "
                "map only devices this process has")
    elif dev.type != "cpu":
        raise ValueError(f"{where}: unsupported device type {dev.type!r}")
    return dev


class RpcBackendOptions:
    """PyTorch's base of the backend options: ``rpc_timeout`` (seconds) and ``init_method``."""

    def __init__(self, rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC,
                 init_method: str = DEFAULT_INIT_METHOD):
        self.rpc_timeout = float(rpc_timeout)
        self.init_method = init_method


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """PyTorch's options: ``num_worker_threads`` (threads executing incoming calls),
    ``rpc_timeout`` (seconds, the default per-call timeout; 0 = none), ``init_method``
    (``env://`` reads MASTER_ADDR / MASTER_PORT; ``tcp://host:port``), ``device_maps``
    (``{worker_name: {local_device: remote_device}}``) and ``devices``; both are checked
    (every device must exist in this process, a map must be one-to-one)."""

    def __init__(self, *, num_worker_threads: int = DEFAULT_NUM_WORKER_THREADS,
                 rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC, init_method: str = DEFAULT_INIT_METHOD,
                 device_maps=None, devices=None, _transports=None, _channels=None):
        if int(num_worker_threads) < 1:
            raise ValueError(f"num_worker_threads must be >= 1, got {num_worker_threads}")
        if float(rpc_timeout) < 0:
            raise ValueError(f"rpc_timeout must be >= 0 seconds (0: no timeout), got {rpc_timeout}")
        self.num_worker_threads = int(num_worker_threads)
        self.rpc_timeout = float(rpc_timeout)
        self.init_method = init_method
        # PyTorch's private transport/channel lists; of the channels, shardflow knows "cma"
        # (same-host reads, cma.py: used when listed or when no list is given) and "basic"
        self._transports = None if _transports is None else list(_transports)
        self._channels = None if _channels is None else list(_channels)
        self.device_maps: dict = {}
        self.devices: list = []
        for to, mapping in (device_maps or {}).items():
            self.set_device_map(to, mapping)
        if devices:
            self.set_devices(devices)

    def set_device_map(self, to: str, device_map: dict) -> None:
        """Where tensors on each local device arrive on worker ``to`` (checked: local devices
        exist here; no two local devices map to one remote device)."""
        where = f"set_device_map({to!r})"
        checked = {}
        for local, remote in device_map.items():
            checked[_check_device(local, where)] = _device(remote)
        cur = dict(self.device_maps.get(to, {}))
        cur.update(checked)
        targets = list(cur.values())
        if len(set(targets)) != len(targets):
            raise ValueError(f"{where}: the map {cur} sends two local devices to one remote "
                             "device; a device map must be one-to-one")
        self.device_maps[to] = cur

    def set_devices(self, devices) -> None:
        self.devices = [_check_device(d, "set_devices") for d in devices]

    def __repr__(self) -> str:
        return (f"TensorPipeRpcBackendOptions(num_worker_threads={self.num_worker_threads}, "
                f"rpc_timeout={self.rpc_timeout}, init_method={self.init_method!r})")
