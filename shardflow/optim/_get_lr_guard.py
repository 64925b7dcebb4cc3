"""The warning PyTorch gives when a program calls a scheduler's ``get_lr()`` itself.

``get_lr()`` computes the *next* learning rate from the current one (the recursive form that
``step()`` applies), so a program that calls it to read the lr (the transformer tutorial's
progress line prints ``scheduler.get_lr()[0]``) may get a value the optimizer never used.
PyTorch's built-in schedulers therefore warn ("To get the last learning rate computed by the
scheduler, please use `get_last_lr()`.") unless the call comes from inside ``step()``;
shardflow's built-in schedulers do the same, with the same flag name
(``_get_lr_called_within_step``), and a user's own ``get_lr`` does not warn unless it calls
:func:`_warn_get_lr_called_within_step`, as in PyTorch.
"""

from __future__ import annotations

import warnings


class _enable_get_lr_call:
    """``with _enable_get_lr_call(scheduler):`` marks ``get_lr()`` calls as made by ``step()``."""

    def __init__(self, scheduler) -> None:
        self.scheduler = scheduler

    def __enter__(self):
        self.scheduler._get_lr_called_within_step = True
        return self

    def __exit__(self, *exc) -> None:
        self.scheduler._get_lr_called_within_step = False


def _warn_get_lr_called_within_step(scheduler) -> None:
    """Warn, as PyTorch does, when ``get_lr()`` was called from outside ``step()``."""
    if not getattr(scheduler, "_get_lr_called_within_step", False):
        # stacklevel 2: the line in get_lr() that called this, as torch's (a filter on the
        # scheduler's module then applies alike)
        warnings.warn("To get the last learning rate computed by the scheduler, please use "
                      "`get_last_lr()`.", UserWarning, stacklevel=2)
