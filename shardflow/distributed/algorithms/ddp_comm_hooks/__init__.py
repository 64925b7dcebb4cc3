"""``torch.distributed.algorithms.ddp_comm_hooks``: communication hooks for
``DistributedDataParallel.register_comm_hook(state, hook)``.

* ``default_hooks.allreduce_hook`` — the plain average (what DDP does without a hook);
* ``default_hooks.fp16_compress_hook`` / ``bf16_compress_hook`` — the bucket is cast to
  float16 / bfloat16, divided by the world size, all-reduced (sum) and cast back: half the
  bytes;
* ``powerSGD_hook.powerSGD_hook`` with ``powerSGD_hook.PowerSGDState`` — low-rank
  (PowerSGD, Vogels et al. 2019) compression with error feedback and warm start, PyTorch's
  algorithm.

A hook returns a :class:`~.future.Future`; DDP calls its ``wait()`` at the end of backward.
See docs/AMP.md for the measured bytes and step times.
"""

from . import default_hooks, powerSGD_hook
from .future import Future

__all__ = ["default_hooks", "powerSGD_hook", "Future"]
