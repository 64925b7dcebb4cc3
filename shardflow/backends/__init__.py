"""``torch.backends``: the switches scripts flip for cuDNN, cuBLAS and MPS, plus the
matmul-precision and determinism settings (``torch.set_float32_matmul_precision``,
``torch.use_deterministic_algorithms``).

shardflow never calls cuDNN or MPS, and computes float32 matmuls in full float32 on every
device (TF32 is never used), so these are settings a script may read and write with
PyTorch's names and defaults; none changes a result. ``use_deterministic_algorithms``:
shardflow's CPU kernels are deterministic whatever the setting; on CUDA the scatter-add
backward passes (embedding, index_add, integer-array indexing) use atomics and are not
checked. Details per switch in docs/COMPAT.md.
"""

from __future__ import annotations

from .._lazy import lazy_attributes as _lazy_attributes
from . import cuda, cudnn, mps, switches

__all__ = ["cuda", "cudnn", "mps", "mkldnn", "mkl", "openmp", "cpu", "quantized", "opt_einsum", "nnpack",
           "xnnpack", "mha", "cusparselt", "kleidiai", "miopen", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "switches"]

# the library switches (oneDNN, MKL, OpenMP, CPU capability, opt_einsum, NNPACK, XNNPACK,
# cuSPARSELt, KleidiAI, MIOpen), the MHA fast path and the quantized engine, loaded on first use
__getattr__, __dir__ = _lazy_attributes(__name__, globals(), {"mkldnn", "mkl", "openmp", "cpu", "quantized",
                                                                  "opt_einsum", "nnpack", "xnnpack", "mha",
                                                                  "cusparselt", "kleidiai", "miopen"})

_PRECISIONS = ("highest", "high", "medium")
# fill_uninitialized_memory: torch.utils.deterministic's switch (utils/deterministic.py)
_deterministic = {"enabled": False, "warn_only": False, "fill_uninitialized_memory": True}


def set_float32_matmul_precision(precision: str) -> None:
    """'highest' (default), 'high' or 'medium'; 'high'/'medium' allow TF32 on CUDA in PyTorch
    (``backends.cuda.matmul.allow_tf32`` follows). shardflow keeps full float32 regardless."""
    if precision not in _PRECISIONS:
        raise RuntimeError(
            f"invalid float32 matmul precision {precision!r}; expected one of {', '.join(_PRECISIONS)}"
        )
    cuda.matmul._precision = precision


def get_float32_matmul_precision() -> str:
    return cuda.matmul._precision


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, got {type(mode).__name__}")
    _deterministic["enabled"], _deterministic["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic["warn_only"]


def fill_uninitialized() -> bool:
    """Whether ``empty`` and the growth of ``resize_`` fill the new memory (torch's rule: with
    deterministic algorithms on and ``torch.utils.deterministic.fill_uninitialized_memory``)."""
    return _deterministic["enabled"] and _deterministic["fill_uninitialized_memory"]


def uninitialized_fill_value(np_dtype):
    """What torch writes into uninitialised memory: NaN for floating and complex dtypes, the
    largest value for integers, True for bool."""
    import numpy as np

    if np_dtype.kind == "b":
        return True
    if np_dtype.kind in "iu":
        return np.iinfo(np_dtype).max
    return float("nan")
