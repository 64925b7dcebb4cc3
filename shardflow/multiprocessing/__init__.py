"""``torch.multiprocessing``: the standard library's ``multiprocessing`` (every name:
``Process``, ``Queue``, ``SimpleQueue``, ``Pool``, ``get_context``, ``set_start_method`` ...)
with PyTorch's additions (``spawn``, ``start_processes``, ``ProcessContext``, sharing
strategies) and PyTorch's tensor sharing.

Sharing: a Tensor sent to another process through ``multiprocessing`` (a ``Queue``,
``SimpleQueue`` or ``Pipe`` message, a ``Pool`` task or result, a ``Process`` argument under
spawn or forkserver) arrives as a view of the same shared memory, and a tensor not yet in
shared memory is moved there in place when it is sent (``reductions.py``). Under fork a
child inherits the parent's shared mappings. So after ``model.share_memory()``, in-place
updates made by child processes (``p.add_(...)`` under ``no_grad``, an optimizer's step)
are seen by the parent and by each other: Hogwild training (PyTorch's ``mnist_hogwild``).

Side effect: importing this module registers the tensor reducers with
``multiprocessing.reduction.ForkingPickler`` (``reductions.init_reductions()``), as
``import torch`` does; nothing else in shardflow registers anything. Only ``multiprocessing``
messages are affected: ``pickle``, ``copy`` and ``shardflow.save`` still copy values.

Strategies (``set_sharing_strategy``, ``get_sharing_strategy``; PyTorch's names and default)
decide how a segment travels and when it is freed (``backend/shared_memory.py``):
``"file_descriptor"`` (default) uses anonymous memory passed by descriptor, freed by the
kernel when the last process holding it lets go, so nothing can leak, but each process
keeps one descriptor per shared tensor and a sender must be alive when its message is
received; ``"file_system"`` uses reference-counted names in ``/dev/shm`` (no descriptors
kept; the last process to release one unlinks it, and ``multiprocessing``'s resource
tracker unlinks what crashed processes left). Set it in the parent before starting the
children. CUDA tensors cannot be shared (PyTorch uses CUDA IPC): sending one raises.
For data-parallel training across processes use ``shardflow run -n N script.py``
(docs/DISTRIBUTED.md).
"""

from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F403

from ..backend.shared_memory import (
    get_all_sharing_strategies,
    get_sharing_strategy,
    set_sharing_strategy,
)
from .reductions import init_reductions
from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = list(_mp.__all__) + [
    "spawn", "start_processes", "ProcessContext", "ProcessException", "ProcessExitedException",
    "ProcessRaisedException", "set_sharing_strategy", "get_sharing_strategy",
    "get_all_sharing_strategies", "init_reductions",
]

init_reductions()
