"""``torch.backends.cuda``: ``matmul.allow_tf32`` (tied to ``set_float32_matmul_precision``
as in PyTorch), the reduced-precision-reduction switches, the SDPA kernel switches and
``is_built()`` (True when CuPy is installed), ``SDPBackend``, the deprecated ``sdp_kernel``
context manager and ``preferred_linalg_library`` (a CPU build's answers). None changes shardflow's results."""

from __future__ import annotations

import contextlib
import enum
import importlib.util
import warnings

__all__ = ["matmul", "is_built", "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled",
           "enable_mem_efficient_sdp", "math_sdp_enabled", "enable_math_sdp", "cudnn_sdp_enabled",
           "enable_cudnn_sdp", "SDPBackend", "sdp_kernel", "allow_fp16_bf16_reduction_math_sdp",
           "fp16_bf16_reduction_math_sdp_allowed", "is_flash_attention_available",
           "preferred_linalg_library"]


class _CuBLASSettings:
    """``torch.backends.cuda.matmul``: unknown attributes and non-bool values are refused."""

    _FLAGS = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation")

    def __init__(self):
        object.__setattr__(self, "_precision", "highest")
        object.__setattr__(self, "_flags", {"allow_fp16_reduced_precision_reduction": True,
                                            "allow_bf16_reduced_precision_reduction": True,
                                            "allow_fp16_accumulation": False})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return self._precision != "highest"
        if name in self._flags:
            return self._flags[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "_precision":
            object.__setattr__(self, name, value)
            return
        if name not in self._FLAGS:
            raise AttributeError(f"Unknown attribute {name}; known: {', '.join(self._FLAGS)}")
        if not isinstance(value, bool):
            raise RuntimeError(f"matmul.{name} expects a bool, but got {type(value).__name__}")
        if name == "allow_tf32":
            object.__setattr__(self, "_precision", "high" if value else "highest")
        else:
            self._flags[name] = value


matmul = _CuBLASSettings()
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """True when CuPy (shardflow's CUDA backend) is installed; it is not imported."""
    return importlib.util.find_spec("cupy") is not None


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)


class SDPBackend(enum.Enum):
    """PyTorch's SDPA backends, with its values (``torch.nn.attention.SDPBackend`` is this
    same class, as in torch)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True):
    """torch's deprecated form of ``nn.attention.sdpa_kernel``: sets the four SDPA switches for
    the block (restored on exit), with torch's FutureWarning."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
                  "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new "
                  "context manager, with updated signature.", FutureWarning, stacklevel=3)
    saved = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math), mem_efficient=bool(enable_mem_efficient),
                cudnn=bool(enable_cudnn))
    try:
        yield
    finally:
        _sdp.update(saved)


_fp16_bf16_reduction_math_sdp = [False]


def allow_fp16_bf16_reduction_math_sdp(enabled: bool) -> None:
    """Whether the math SDPA kernel may reduce in float16/bfloat16 (torch's switch; shardflow's
    kernel always accumulates in float32, which torch does when the switch is off, its default)."""
    _fp16_bf16_reduction_math_sdp[0] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    return _fp16_bf16_reduction_math_sdp[0]


def is_flash_attention_available() -> bool:
    """False, as a CPU build of torch answers: there is no CUDA flash-attention kernel here."""
    return False


class _LinalgBackend(enum.Enum):
    """torch._C._LinalgBackend's members and values."""

    Default = 0
    Cusolver = 1
    Magma = 2


_linalg_backend = [_LinalgBackend.Default]


def preferred_linalg_library(backend=None) -> _LinalgBackend:
    """torch's switch between cuSOLVER and MAGMA for CUDA linear algebra. shardflow's CUDA path
    is CuPy (cuSOLVER) and this build answers as torch's CPU build: ``"default"`` (or None) is
    accepted, ``"cusolver"``/``"magma"`` raise torch's RuntimeError (not compiled with them)."""
    if backend is None:
        return _linalg_backend[0]
    name = backend.name.lower() if isinstance(backend, _LinalgBackend) else backend
    if not isinstance(name, str) or name not in ("default", "cusolver", "magma"):
        raise RuntimeError("Unknown input value. Choose from: default, cusolver, magma.")
    if name != "default":
        label = {"cusolver": "cuSOLVER", "magma": "MAGMA"}[name]
        raise RuntimeError(f"Cannot set preferred backend to {label} if PyTorch has not been compiled "
                           f"with {label}. shardflow answers as a CPU-only build; leave the default")
    _linalg_backend[0] = _LinalgBackend.Default
    return _linalg_backend[0]
