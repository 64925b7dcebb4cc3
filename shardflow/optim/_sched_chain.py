"""``ChainedScheduler``: step several schedulers of one optimizer together, in order, each
acting on the lr the previous one left (``torch.optim.lr_scheduler``)."""

from __future__ import annotations

from ._sched_plateau import ReduceLROnPlateau
from .lr_scheduler import LRScheduler, _load_schedulers_state_dict, _lrs, _schedulers_state_dict


class ChainedScheduler(LRScheduler):
    def __init__(self, schedulers, optimizer=None):
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(
                    f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                    "additional kwargs to be specified when calling `step`, but got one at index "
                    f"{i} in the given schedulers sequence.")
            if optimizer is not s.optimizer:
                raise ValueError(
                    f"{name} expects all schedulers to belong to the same optimizer, but got "
                    f"scheduler {type(s).__name__} at index {i} has {s.optimizer}, which is "
                    f"different from {type(optimizer).__name__}.")
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _lrs(self._schedulers[-1])

    def step(self) -> None:  # type: ignore[override]
        for s in self._schedulers:
            s.step()
        self._last_lr = _lrs(self._schedulers[-1])

    state_dict = _schedulers_state_dict
    load_state_dict = _load_schedulers_state_dict


__all__ = ["ChainedScheduler"]
