"""``PostLocalSGDOptimizer`` (torch's ``torch.distributed.optim``): a local optimizer whose
steps are followed by a model averager (post-local SGD, Lin et al. 2018).

``step()`` runs the wrapped optimizer's step, then ``averager.average_parameters(
param_groups)`` (``PeriodicModelAverager``: one all-reduce of the parameters every
``period`` steps after the warm-up). ``state_dict()`` is the wrapped optimizer's plus
``"step"``, the averager's count, so a resumed run does not warm up again.
"""

from __future__ import annotations

import warnings

from ...optim.optimizer import Optimizer

__all__ = ["PostLocalSGDOptimizer"]


class PostLocalSGDOptimizer(Optimizer):
    """Wrap ``optim`` (any optimizer) with ``averager`` (module docstring)."""

    def __init__(self, optim, averager):  # no Optimizer.__init__: the state is optim's
        self.optim = optim
        self.averager = averager

    @property
    def param_groups(self) -> list:
        """The wrapped optimizer's groups (read through, so they stay its own after its
        ``load_state_dict`` replaces the list; torch's copy of the list would go stale)."""
        return self.optim.param_groups

    @param_groups.setter
    def param_groups(self, groups) -> None:
        self.optim.param_groups = groups

    @property
    def state(self):
        return self.optim.state

    @property
    def defaults(self):
        return self.optim.defaults

    def __repr__(self) -> str:
        return repr(self.optim)

    def state_dict(self) -> dict:
        sd = self.optim.state_dict()
        sd["step"] = self.averager.step
        return sd

    def load_state_dict(self, state_dict) -> None:
        """The wrapped optimizer's ``load_state_dict``, and the averager's ``step`` (0, with
        torch's warning, when the dict has none)."""
        self.optim.load_state_dict(state_dict)
        if "step" in state_dict:
            self.averager.step = state_dict["step"]
        else:
            warnings.warn("Loaded state dict does not contain a step counter for an averager. "
                          "Setting step counter to 0.", stacklevel=2)
            self.averager.step = 0

    def step(self):
        self.optim.step()
        self.averager.average_parameters(params=self.param_groups)

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optim.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group) -> None:
        self.optim.add_param_group(param_group)
