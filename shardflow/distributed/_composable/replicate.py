"""``torch.distributed._composable.replicate``: data parallel applied to a module in place.

torch's ``replicate(module, **ddp_kwargs)`` adds forward hooks and builds a
``DistributedDataParallel`` over the module at the first forward (so ``module`` stays the
object the program calls, its parameter names unchanged). Here the same: the first forward
pre-hook builds shardflow's ``DistributedDataParallel`` (rank 0's parameters broadcast,
gradient buckets all-reduced during backward by its ``Reducer``) with the keyword arguments
``replicate`` was given; each forward then runs DDP's ``pre_forward`` (buffer broadcast,
unfinished-reduction check) and, with ``find_unused_parameters``, marks the unused parameters.

Deviations: the module's class is not changed to torch's ``DDP<Name>`` subclass
(``isinstance(module, DistributedDataParallel)`` is False here); ``ignored_modules`` and a
``device_mesh`` that is a slice of a larger mesh (DDP + TP) are refused with
NotImplementedError.
"""

from __future__ import annotations

from ...autograd import is_grad_enabled
from ...nn.parallel.autograd_walk import reachable_leaves, tensors_in
from ...nn.parallel.distributed import DistributedDataParallel

__all__ = ["replicate"]

_STATE = "_replicate_state"


class _ReplicateState:
    def __init__(self, kwargs):
        self.kwargs = kwargs
        self.ddp = None

    def forward_pre_hook(self, module, args, kwargs):
        if self.ddp is None:
            # built here, as torch builds its DDP lazily: the module is fully constructed
            # (and moved to its device) by its first forward
            self.ddp = DistributedDataParallel(module, **self.kwargs)
        self.ddp.pre_forward()
        return None

    def forward_post_hook(self, module, args, output):
        ddp = self.ddp
        if ddp.find_unused_parameters and ddp.reducer.require_sync and is_grad_enabled():
            used = reachable_leaves(tensors_in(output))
            ddp.reducer.mark_unused([p for p in ddp.reducer.params if id(p) not in used])
        return None


def replicate(module, ignored_modules=None, **kwargs):
    """Make ``module`` data parallel in place (module docstring); returns ``module``.
    ``kwargs`` are ``DistributedDataParallel``'s; ``device_id`` (torch's spelling here) is
    checked as torch checks it and passed on as DDP's ``device_ids=[device_id]``."""
    from ..fsdp.fully_shard import FSDPModule

    if "device_id" in kwargs:
        device_id = kwargs.pop("device_id")
        if not isinstance(device_id, int) and type(device_id).__name__ != "device":
            raise RuntimeError(f"Expected device_id to be int or torch.device, but got {type(device_id)}")
        if getattr(device_id, "type", None) != "cpu":  # torch: a CPU device means none
            kwargs["device_ids"] = [device_id]
    if isinstance(module, FSDPModule):
        raise RuntimeError("Cannot apply `replicate()` on a Module already managed by `fully_shard`")
    if ignored_modules:
        raise NotImplementedError(
            "replicate(ignored_modules=...): leaving some submodules' parameters out of the "
            "gradient all-reduce is not built; set requires_grad=False on them instead")
    mesh = kwargs.get("device_mesh")
    if mesh is not None and getattr(mesh, "ndim", 1) != 1:
        raise NotImplementedError(
            f"replicate(device_mesh=...): a {mesh.ndim}-D mesh (DDP combined with tensor "
            "parallelism) is not built; pass the 1-D data-parallel mesh, e.g. mesh['dp']")
    if _STATE in module.__dict__:
        raise RuntimeError("Each distinct composable distributed API can only be applied to a "
                           f"module once. replicate has already been applied to the following module:\n{module}")
    state = _ReplicateState(kwargs)
    module.__dict__[_STATE] = state
    module.register_forward_pre_hook(state.forward_pre_hook, with_kwargs=True)
    module.register_forward_hook(state.forward_post_hook)
    return module
