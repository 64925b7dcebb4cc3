"""Device: where a tensor's memory lives (``cpu`` with NumPy, ``cuda:N`` with CuPy), or
``meta``: shape and dtype without any memory (``backend/meta.py``)."""

from __future__ import annotations

_NO_ACCELERATOR = (
    "Cannot access accelerator device when none is available. (shardflow: a bare device "
    "index such as {index!r} (`model.to(rank)`, `device=0`) means the accelerator's device "
    "{index}, and no CUDA device is visible. On a CPU-only machine pass 'cpu' instead, e.g. "
    "`device = rank if torch.cuda.is_available() else 'cpu'`.)"
)


# torch's device types, in its error message's order. shardflow keeps tensors on cpu, cuda
# (CuPy) and meta; the others can be named (``torch.device("mps")`` in a device-picking line)
# and raise torch's own errors when a tensor is put there (``unavailable_device_error``).
TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                      "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                      "privateuseone")


def unavailable_device_error(dev) -> Exception:
    """What torch built for CPU (and CUDA) raises when a tensor is put on ``dev``."""
    if dev.type == "xpu":
        return AssertionError("Torch not compiled with XPU enabled")
    if dev.type == "mtia":
        return AssertionError("Torch not compiled with MTIA enabled")
    return RuntimeError(f"PyTorch is not linked with support for {dev.type} devices")


class device:
    """``shardflow.device('cpu')`` / ``device('cuda', 0)`` / ``device('cuda:1')`` /
    ``device('meta')`` / ``device(0)``.

    A bare int is PyTorch's shorthand for that index of the current accelerator
    (``model.to(rank)``, ``tensor.to(0)``, ``zeros(2, device=0)``): ``cuda:N`` here, whose only
    accelerator is CUDA. With no accelerator it raises PyTorch's RuntimeError ("Cannot access
    accelerator device when none is available."), and a negative index PyTorch's "Device
    index must not be negative"."""

    __slots__ = ("type", "index")

    def __init__(self, type_or_str="cpu", index: int | None = None):
        if isinstance(type_or_str, device):
            self.type, self.index = type_or_str.type, type_or_str.index
            return
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            self.type, self.index = "cuda", _accelerator_index(type_or_str)
            return
        s = str(type_or_str)
        if ":" in s:
            s, idx = s.split(":", 1)
            index = int(idx)
        if s not in TORCH_DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(TORCH_DEVICE_TYPES)} device type at start "
                               f"of device string: {s}")
        self.type = s
        self.index = None if s in ("cpu", "meta") else index

    def __eq__(self, other):
        try:
            other = device(other)
        except (ValueError, TypeError, RuntimeError):  # RuntimeError: an int, no accelerator
            return NotImplemented
        return self.type == other.type and (self.index or 0) == (other.index or 0)

    def __hash__(self):
        return hash((self.type, self.index or 0))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __enter__(self):
        """``with shardflow.device("cuda"):`` makes factory functions default to this device."""
        _default_stack.append(_default[0])
        _default[0] = self
        return self

    def __exit__(self, *exc):
        _default[0] = _default_stack.pop()
        return False

    def __repr__(self):
        return f"device(type='{self.type}'" + ("" if self.index is None else f", index={self.index}") + ")"


def _accelerator_index(index: int) -> int:
    if index < 0:
        raise RuntimeError("Device index must not be negative")
    from .xp import cuda_is_available  # xp imports this module

    if not cuda_is_available():
        raise RuntimeError(_NO_ACCELERATOR.format(index=index))
    return index


CPU = device("cpu")
META = device("meta")


# The device factory functions (zeros, randn, tensor, nn layers' parameters, ...) use when
# they get no ``device=``: PyTorch's ``torch.set_default_device`` and ``with torch.device(d):``.
_default = [CPU]
_default_stack: list[device] = []


def set_default_device(dev) -> None:
    """``torch.set_default_device``: factory functions without ``device=`` use ``dev``
    (None: back to the CPU). ``from_numpy`` and ``*_like`` are not affected, as in PyTorch."""
    _default[0] = CPU if dev is None else device(dev)


def get_default_device() -> device:
    return _default[0]
