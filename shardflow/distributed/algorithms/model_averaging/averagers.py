"""``ModelAverager`` and ``PeriodicModelAverager`` (torch's ``model_averaging.averagers``).

``PeriodicModelAverager(period, warmup_steps=0, process_group=None)``: each call of
``average_parameters(params)`` counts a step; on steps ``warmup_steps, warmup_steps + period,
...`` the parameters that have gradients are averaged over the group (``utils.py``: one
all-reduce of their flattened values), on the others nothing is communicated.
"""

from __future__ import annotations

import abc
import warnings

from . import utils

__all__ = ["ModelAverager", "PeriodicModelAverager"]


class ModelAverager(abc.ABC):
    """Base of the averagers: ``process_group`` (None: the world) and a ``step`` count."""

    def __init__(self, process_group=None):
        self.process_group = process_group
        self.step = 0

    @abc.abstractmethod
    def average_parameters(self, params):
        raise NotImplementedError


class PeriodicModelAverager(ModelAverager):
    """Average parameters every ``period`` steps after ``warmup_steps`` (module docstring)."""

    def __init__(self, period, warmup_steps=0, process_group=None):
        super().__init__(process_group)
        if warmup_steps < 0:
            raise ValueError("Arg ``warmup_steps`` must be a non-negative number.")
        self.warmup_steps = warmup_steps
        if period < 1:
            raise ValueError("Arg ``period`` must be a positive value.")
        if period == 1:
            warnings.warn(
                "When period is 1, no need to use model averaging because the communication "
                "cost of all-reducing parameters will be no less than the cost of all-reducing "
                "gradients by DistributedDataParallel in the backward pass. Therefore, only "
                "DistributedDataParallel should be used for this case.", stacklevel=2)
        self.period = period

    def average_parameters(self, params) -> None:
        """Average ``params`` (a model's parameters or an optimizer's param_groups) when this
        step is an averaging step; count the step either way."""
        if self.step >= self.warmup_steps and (self.step - self.warmup_steps) % self.period == 0:
            utils.average_parameters_or_parameter_groups(params, self.process_group)
        self.step += 1
