"""``torch.cuda.nccl``: ``version()`` (the NCCL library's ``(major, minor, patch)``, what scripts
log) and ``is_available(tensors)``; torch's single-process multi-GPU collectives
(``all_reduce``, ``reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter`` over a list of
tensors, one per GPU of this process) are refused.

shardflow runs one process per GPU and reaches NCCL through CuPy (``cupy.cuda.nccl``) from
``torch.distributed``'s collectives (``init_process_group("nccl")``), so ``version()`` asks
CuPy's NCCL, and ``is_available`` is always False: DataParallel-style code that checks it
takes its other path (torch warns "PyTorch is not compiled with NCCL support" when there is no
NCCL at all, and so does this).
"""

from __future__ import annotations

import warnings

__all__ = ["all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter"]

SUM = 0  # torch's ncclRedOp_t value for sum, the collectives' default op


def _nccl():
    """CuPy's NCCL bindings, or None (no CuPy, or a CuPy without NCCL)."""
    try:
        from cupy.cuda import nccl
    except ImportError:
        return None
    return nccl if getattr(nccl, "available", True) else None


def version() -> tuple[int, int, int]:
    """The NCCL version CuPy links, as torch's ``(major, minor, patch)``."""
    nccl = _nccl()
    if nccl is None:
        raise RuntimeError("torch.cuda.nccl.version(): no NCCL library here (shardflow reaches NCCL through "
                           "CuPy: install cupy-cuda12x on a machine with an NVIDIA GPU)")
    v = int(nccl.get_version())
    return v // 10000, (v % 10000) // 100, v % 100


def is_available(tensors) -> bool:
    """False: the single-process collectives of this module are not built (see the docstring)."""
    if _nccl() is None:
        warnings.warn("PyTorch is not compiled with NCCL support", stacklevel=2)
    return False


def _refuse(name: str):
    raise NotImplementedError(
        f"torch.cuda.nccl.{name}: single-process multi-GPU NCCL collectives are not built (shardflow runs one "
        "process per GPU); launch with `shardflow run -n <gpus>` and use torch.distributed's collectives "
        "(init_process_group('nccl'), dist.all_reduce ...)")


def unique_id():
    _refuse("unique_id")


def init_rank(num_ranks, uid, rank):
    _refuse("init_rank")


def all_reduce(inputs, outputs=None, op=SUM, streams=None, comms=None):
    _refuse("all_reduce")


def reduce(inputs, output=None, root=0, op=SUM, streams=None, comms=None, *, outputs=None):
    _refuse("reduce")


def broadcast(inputs, root=0, streams=None, comms=None):
    _refuse("broadcast")


def all_gather(inputs, outputs, streams=None, comms=None):
    _refuse("all_gather")


def reduce_scatter(inputs, outputs, op=SUM, streams=None, comms=None):
    _refuse("reduce_scatter")
