"""``torch.distributed.algorithms.ddp_comm_hooks``: communication hooks for
``DistributedDataParallel.register_comm_hook(state, hook)``.

* ``default_hooks.allreduce_hook`` — the plain average (what DDP does without a hook);
* ``default_hooks.fp16_compress_hook`` / ``bf16_compress_hook`` — the bucket is cast to
  float16 / bfloat16, divided by the world size, all-reduced (sum) and cast back: half the
  bytes;
* ``powerSGD_hook.powerSGD_hook`` with ``powerSGD_hook.PowerSGDState`` — low-rank
  (PowerSGD, Vogels et al. 2019) compression with error feedback and warm start, PyTorch's
  algorithm;
* ``post_localSGD_hook.post_localSGD_hook`` with ``PostLocalSGDState`` — global averages
  until ``start_localSGD_iter``, then within a subgroup (post-local SGD);
* ``debugging_hooks.noop_hook`` — no communication (to measure what the all-reduce costs);
* ``DDPCommHookType`` / ``register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, model)`` —
  torch's registration by name (``hook_types.py``).

A hook returns a :class:`~.future.Future`; DDP calls its ``wait()`` at the end of backward.
See docs/AMP.md for the measured bytes and step times.
"""

from . import debugging_hooks, default_hooks, post_localSGD_hook, powerSGD_hook
from . import debugging_hooks as debugging  # torch's short module names
from . import default_hooks as default
from . import powerSGD_hook as powerSGD  # noqa: N812
from .future import Future
from .hook_types import DDPCommHookType, register_ddp_comm_hook

__all__ = ["default_hooks", "powerSGD_hook", "debugging_hooks", "post_localSGD_hook", "Future", "DDPCommHookType",
           "register_ddp_comm_hook", "default", "powerSGD", "debugging"]
