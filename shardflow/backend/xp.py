"""Array-module selection: NumPy on CPU, CuPy on GPU (imported lazily, with an install hint).

Ops call ``get_array_module(array)`` to stay device-agnostic; CuPy is never imported
unless a CUDA device is asked for.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from .device import CPU, META, device, unavailable_device_error
from .meta import NO_DATA, MetaArray, meta_namespace

_cupy = None


class CudaNotAvailableError(AssertionError, RuntimeError):
    """A CUDA device was needed and none is visible. An ``AssertionError`` as PyTorch's "Torch
    not compiled with CUDA enabled" (``x.cuda()``, ``x.to("cuda")``), so ``except
    AssertionError`` works, and a ``RuntimeError`` as shardflow raised before
    (``shardflow.cuda.CudaNotAvailableError`` is this class)."""


def cupy():
    """Import CuPy on first use (the only place in shardflow that does)."""
    global _cupy
    if _cupy is None:
        try:
            import cupy as cp
        except ImportError:
            raise CudaNotAvailableError(
                "a CUDA device needs CuPy: install it with `pip install 'shardflow[gpu]'` "
                "(cupy-cuda12x) on a machine with an NVIDIA GPU"
            ) from None
        _cupy = cp
    return _cupy


def cuda_is_available() -> bool:
    try:
        cp = cupy()
        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def set_cuda_array_module(module):
    """Use ``module`` as the CUDA array module instead of importing CuPy; return the one it
    replaces. ``None`` goes back to importing CuPy on next use.

    The injection point for tests: a module with CuPy's surface (the tests' stand-in keeps
    its arrays in host memory) makes the ``device="cuda"`` code paths run without a GPU.
    The NCCL backend's CUDA/NCCL API is given separately (``comm.nccl_lib.set_cuda_api``)."""
    global _cupy
    previous, _cupy = _cupy, module
    return previous


def is_device_array(array) -> bool:
    """True for an array of the CUDA array module, False for NumPy and anything else."""
    return _cupy is not None and isinstance(array, _cupy.ndarray)


def linalg_errors_raised():
    """A context in which a failed CuPy factorisation or solve raises NumPy's ``LinAlgError``
    as NumPy's does. CuPy reads cuSOLVER's ``info`` only under ``cupyx.errstate(linalg=
    "raise")``; by default it returns a partial factor with no error, so on a GPU
    ``linalg.cholesky`` of a matrix that is not positive-definite raised nothing and
    ``cholesky_ex`` said ``info == 0`` (an H200, session 30). PyTorch's CUDA ops raise (they
    synchronise to read ``info``), and so do these under this context. A no-op without CuPy
    (and on its host stand-in, whose linalg is NumPy's)."""
    if _cupy is None or getattr(_cupy, "__name__", "") != "cupy":
        return nullcontext()
    import cupyx

    return cupyx.errstate(linalg="raise")


def get_array_module(array):
    """NumPy for host arrays, CuPy for device arrays; for a meta array the meta namespace
    (NumPy whose creation functions make meta arrays, ``backend/meta.py``)."""
    if isinstance(array, np.ndarray):
        return np
    if type(array) is MetaArray:
        return meta_namespace
    if _cupy is None:
        return np
    return _cupy.get_array_module(array)


def device_of(array) -> device:
    if isinstance(array, np.ndarray | np.generic):
        return CPU
    if type(array) is MetaArray:
        return META
    if _cupy is None:
        return CPU
    return device("cuda", int(array.device.id))


def to_device(array, dev: device):
    """Move a raw array to ``dev`` (a no-op when already there). To ``meta`` keeps the shape
    and dtype; from ``meta`` to a real device raises (there is no data to copy)."""
    if dev.type == "meta":
        return array if type(array) is MetaArray else MetaArray(array.shape, array.dtype)
    if type(array) is MetaArray:
        raise NotImplementedError(NO_DATA)
    if dev.type == "cpu":
        if isinstance(array, np.ndarray):
            return array
        return cupy().asnumpy(array)
    if dev.type != "cuda":
        raise unavailable_device_error(dev)
    cp = cupy()
    with _current(cp, dev):
        return cp.asarray(array)


def _current(cp, dev: device):
    """``dev`` made current for the block: ``cuda`` without an index is the current device
    (as in PyTorch: after ``cuda.set_device(1)``, ``"cuda"`` means ``cuda:1``)."""
    return cp.cuda.Device(dev.index) if dev.index is not None else cp.cuda.Device()


def xp_for(dev: device):
    if dev.type == "meta":
        return meta_namespace
    if dev.type not in ("cpu", "cuda"):
        raise unavailable_device_error(dev)
    return np if dev.type == "cpu" else cupy()


def new_array(dev: device, make):
    """``make(xp)`` with ``dev``'s array module, allocating on ``dev`` (CuPy allocates on the
    current device, so ``cuda:N`` is made current for the call; ``meta`` allocates nothing)."""
    if dev.type == "cpu":
        return make(np)
    if dev.type == "meta":
        return make(meta_namespace)
    if dev.type != "cuda":
        raise unavailable_device_error(dev)
    cp = cupy()
    with _current(cp, dev):
        return make(cp)
