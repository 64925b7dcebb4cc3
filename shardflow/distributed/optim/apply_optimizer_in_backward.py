"""``torch.distributed.optim.apply_optimizer_in_backward``: ``_apply_optimizer_in_backward(
optimizer_class, params, optimizer_kwargs, register_hook=True)`` gives each parameter its own
optimizer that steps as soon as the parameter's gradient is accumulated during ``backward()``
(then its ``.grad`` is set to None), so gradients need not all be held until the step;
``_get_in_backward_optimizers(module)`` lists them (for checkpointing). As torch's: the
optimizers, classes and kwargs are kept on the parameter (``_in_backward_optimizers``,
``_optimizer_classes``, ``_optimizer_kwargs``); the step runs from a post-accumulate-grad
hook (torch's AccumulateGrad node hook).

Deviation: torch's DistributedDataParallel notices these optimizers and steps them after its
all-reduce; shardflow's DDP refuses a module whose parameters have them (stepping before the
all-reduce would be silently wrong).
"""

from __future__ import annotations

import weakref

__all__: list[str] = []

# id(param) -> the hook handles, dropped when the parameter is collected (torch keeps them in
# a weak-key map too: nothing is added to what a saved parameter carries but the optimizers)
_handles: dict[int, list] = {}


def _apply_optimizer_in_backward(optimizer_class, params, optimizer_kwargs, register_hook: bool = True) -> None:
    """Step ``optimizer_class(param, **optimizer_kwargs)`` for each parameter during backward."""
    for param in params:
        optimizer = optimizer_class([param], **optimizer_kwargs)
        if not hasattr(param, "_in_backward_optimizers"):
            param._in_backward_optimizers = []
            param._optimizer_classes = []
            param._optimizer_kwargs = []
        param._in_backward_optimizers.append(optimizer)
        param._optimizer_classes.append(optimizer_class)
        param._optimizer_kwargs.append(optimizer_kwargs)
        if not register_hook:
            continue

        def optimizer_hook(p) -> None:
            for opt in p._in_backward_optimizers:
                opt.step()
            p.grad = None

        key = id(param)
        if key not in _handles:
            _handles[key] = []
            weakref.finalize(param, _handles.pop, key, None)
        _handles[key].append(param.register_post_accumulate_grad_hook(optimizer_hook))


def _get_in_backward_optimizers(module) -> list:
    """The in-backward optimizers of ``module``'s parameters (not to be stepped by hand)."""
    optims: list = []
    for param in module.parameters():
        optims.extend(getattr(param, "_in_backward_optimizers", []))
    return optims
