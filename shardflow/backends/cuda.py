"""``torch.backends.cuda``: ``matmul.allow_tf32`` (tied to ``set_float32_matmul_precision``
as in PyTorch), the reduced-precision-reduction switches, the SDPA kernel switches and
``is_built()`` (True when CuPy is installed). None changes shardflow's results."""

from __future__ import annotations

import importlib.util

__all__ = ["matmul", "is_built", "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled",
           "enable_mem_efficient_sdp", "math_sdp_enabled", "enable_math_sdp", "cudnn_sdp_enabled",
           "enable_cudnn_sdp"]


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
