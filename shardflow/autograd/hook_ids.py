"""The process-wide counter of hook-handle ids.

torch numbers every hook handle from one counter (``torch.utils.hooks.RemovableHandle``: a
Module's forward hooks, a Tensor's ``register_hook`` and ``register_post_accumulate_grad_hook``,
a node's ``register_hook``/``register_prehook``), so a program that prints a Module's
``_forward_pre_hooks`` (pytorch/tutorials' pruning tutorial) shows ids that count all of them.
shardflow's Module handles (``nn.module.RemovableHandle``) and Tensor/node handles
(``autograd.tensor._RemovableHandle``, a subclass of it) draw from this one counter too, so the same
registrations give the same ids as in torch.
"""

from __future__ import annotations

import itertools

_ids = itertools.count()


def next_handle_id() -> int:
    """The id of a new hook handle (module docstring)."""
    return next(_ids)
