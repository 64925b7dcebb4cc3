"""``torch.func.stack_module_state`` (ensembling: one stacked tensor per parameter/buffer name,
to map over with ``vmap`` + ``functional_call``) and ``replace_all_batch_norm_modules_``."""

from __future__ import annotations

from .. import ops
from ..nn.modules.batchnorm import _BatchNorm

__all__ = ["stack_module_state", "replace_all_batch_norm_modules_"]


def _stacked_leaf(tensors, name: str):
    """``stack(tensors)``; a new leaf that requires grad when every input does (torch's rule)."""
    all_rg = all(t.requires_grad for t in tensors)
    if not all_rg and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = ops.stack([t.detach() for t in tensors])
    return result.requires_grad_() if all_rg else result


def check_ensemble(models, op: str) -> None:
    """torch's refusals for an ensemble: no models, mixed train/eval modes, mixed classes."""
    if len(models) == 0:
        raise RuntimeError(f"{op}: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(f"{op}: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError(f"{op}: Expected all models to be of the same class.")


def stack_module_state(models):
    """``(params, buffers)``: dicts from each state-dict name to the stack (new leading
    dimension, one entry per model) of that tensor over ``models``. All models must be of one
    class and in the same training/eval mode."""
    models = list(models)
    check_ensemble(models, "stack_module_state")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """In place: every batch-norm module in ``root`` stops tracking running statistics
    (``running_mean``/``running_var``/``num_batches_tracked`` become None,
    ``track_running_stats=False``), so it normalizes with batch statistics under vmap."""
    for m in root.modules():
        if isinstance(m, _BatchNorm) and m.track_running_stats:
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root
