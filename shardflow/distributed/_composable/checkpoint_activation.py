"""``torch.distributed._composable.checkpoint`` (composable activation checkpointing): refused.

torch implements it with forward hooks around a non-reentrant checkpoint driven by
saved-tensor hooks (each saved activation is dropped and recomputed on first use in
backward); shardflow's activation checkpointing is the function form
(``shardflow.utils.checkpoint.checkpoint``, ``autograd/recompute.py``), which the error names.
Importing the name works, so a program that imports it but does not apply it runs.
"""

from __future__ import annotations

__all__ = ["checkpoint"]


def checkpoint(module, **kwargs):
    """Refused (module docstring)."""
    raise NotImplementedError(
        f"torch.distributed._composable.checkpoint({type(module).__name__}): composable "
        "activation checkpointing (hooks on the module) is not built in shardflow; wrap the "
        "module's forward instead: out = torch.utils.checkpoint.checkpoint(module, x, "
        "use_reentrant=False)")
