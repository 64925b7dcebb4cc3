"""``torch.optim.adamw``: the module path programs import ``AdamW`` from (``from
torch.optim.adamw import AdamW``); the class is ``shardflow.optim.AdamW`` (``adam.py``).
torch's functional ``adamw(params, grads, exp_avgs, ...)`` is not built: step the optimizer."""

from .adam import AdamW

__all__ = ["AdamW"]
