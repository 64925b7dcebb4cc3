"""torch.distributed's backend names (``Backend``, ``get_default_backend_for_device``) and
what ``get_backend()`` reports.

shardflow has two engines: MPI (CPU arrays, and a world of one without any launcher) and
NCCL (CUDA arrays). ``init_process_group(backend)`` maps PyTorch's names onto them:
``"gloo"`` and ``"mpi"`` run on MPI; ``"nccl"`` runs on NCCL when CuPy sees a GPU, else on MPI
(``comm/world.py``); a per-device string such as ``"cpu:gloo,cuda:nccl"`` runs on the engine
of its ``cuda`` entry when there is a GPU, else its ``cpu`` entry. ``get_backend()`` then
reports the name that was asked for, as PyTorch does (a script that branches on
``get_backend() == "nccl"`` takes the branch it takes under PyTorch); when nothing was asked
(``init_process_group()``) it reports the engine (``"mpi"``, ``"nccl"``, or ``"local"`` for a
world of one), where PyTorch 2.13 reports ``"undefined"``.
"""

from __future__ import annotations

from ..backend import device as _device
from ..backend.xp import cuda_is_available

__all__ = ["Backend", "BackendConfig", "get_default_backend_for_device", "engine_backend"]


class Backend(str):
    """PyTorch's ``Backend``: a lower-case backend name (``Backend("GLOO") == "gloo"``). Any
    name is a ``Backend``, as in PyTorch (third-party backends); ``init_process_group``
    refuses the ones shardflow does not run."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI]
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL}

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name!r}")
        return str.__new__(cls, name.lower())


# torch's Backend.backend_capability: the devices each backend name serves
_CAPABILITY = {"gloo": ["cpu", "cuda"], "nccl": ["cuda"], "xccl": ["xpu"], "ucc": ["cpu", "cuda"],
               "mpi": ["cpu", "cuda"]}


class BackendConfig:
    """torch's ``BackendConfig``: the device -> backend map of a backend name (``"gloo"`` ->
    ``cpu:gloo,cuda:gloo``, ``"nccl"`` -> ``cuda:nccl``, ``"cpu:gloo,cuda:nccl"`` as written;
    ``"undefined"`` -> ``cpu:gloo``, plus ``cuda:nccl`` when a GPU is seen), what
    ``dist.get_backend_config()`` reports as a string."""

    def __init__(self, backend: str):
        name = Backend(backend)
        if name == Backend.UNDEFINED:
            self.device_backend_map = ({"cpu": "gloo", "cuda": "nccl"} if cuda_is_available()
                                       else {"cpu": "gloo"})
        elif name in _CAPABILITY:
            self.device_backend_map = dict.fromkeys(_CAPABILITY[name], str(name))
        elif ":" in name:
            self.device_backend_map = {}
            for part in name.split(","):
                dev, _, be = part.partition(":")
                if not be:
                    raise ValueError(f"Invalid backend string {backend!r}: expected "
                                     "'device:backend' entries, e.g. 'cpu:gloo,cuda:nccl'")
                self.device_backend_map[dev.strip()] = be.strip()
        else:
            self.device_backend_map = {"cpu": str(name), "cuda": str(name)}

    def get_device_backend_map(self) -> dict:
        return dict(self.device_backend_map)

    def __repr__(self) -> str:
        return ",".join(f"{d}:{b}" for d, b in self.device_backend_map.items())


def get_default_backend_for_device(device) -> str:
    """``"gloo"`` for ``"cpu"``, ``"nccl"`` for ``"cuda"`` (PyTorch's map); another device
    type raises PyTorch's ``ValueError``."""
    dev = device if isinstance(device, _device) else None
    if dev is None:
        text = str(device)
        kind = text.split(":", 1)[0]
        if kind not in Backend.default_device_backend_map:
            raise ValueError(f"Default backend not registered for device : {kind}")
        dev = _device(text)
    return Backend.default_device_backend_map[dev.type]


def engine_backend(asked: str | None, cuda_available: bool) -> str | None:
    """The engine name ``comm.init`` takes for the name a script asked for (module
    docstring); a per-device string picks its ``cuda`` entry with a GPU, else its ``cpu``."""
    if asked is None or ":" not in asked:
        return asked
    table = {}
    for part in asked.split(","):
        dev, _, name = part.partition(":")
        if not name:
            raise ValueError(
                f"backend {asked!r}: expected 'device:backend' entries separated by commas, "
                "e.g. 'cpu:gloo,cuda:nccl'"
            )
        table[dev.strip().lower()] = name.strip().lower()
    if cuda_available and "cuda" in table:
        return table["cuda"]
    if "cpu" in table:
        return table["cpu"]
    return next(iter(table.values()))
