"""``torch.autograd.profiler_legacy.profile``: the legacy (pre-Kineto) profiler's path, with its
signature (``enabled``, then ``use_cuda``, ``record_shapes``, ``with_flops``,
``profile_memory``, ``with_stack``, ``with_modules``); it is ``torch.autograd.profiler.profile``
(``shardflow.profiler``'s recorder) with those arguments, so its tables and events answer the same.

Layering: like ``autograd/profiler.py``, a path module over ``shardflow.profiler`` (L3); nothing
in ``autograd`` imports it.
"""

from __future__ import annotations

from .profiler import profile as _profile

__all__ = ["profile"]


class profile(_profile):  # noqa: N801 - PyTorch's name
    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False) -> None:
        super().__init__(enabled, use_cuda=use_cuda, record_shapes=record_shapes, with_flops=with_flops,
                         profile_memory=profile_memory, with_stack=with_stack, with_modules=with_modules)
