"""``torch.distributed.algorithms.join``: ``Join``, ``Joinable``, ``JoinHook`` (layer L6).

``with Join([ddp_model]): for batch in my_uneven_loader: ...`` is torch's generic form of
``ddp_model.join()``, and that is what it runs here (``nn/parallel/join.py``: the ranks
that run out of batches shadow the others' collectives with zeros, then the last joiner's
model is broadcast; ``divide_by_initial_world_size`` is passed through as a keyword, as in
torch). The generic hook protocol for other joinables (torch's ``ZeroRedundancyOptimizer``
join hook, one's own ``Joinable``) is not run: such a joinable is refused when the context is
made, before any collective, with the fix.
"""

from __future__ import annotations

import abc

from ...nn.parallel import DistributedDataParallel

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """torch's per-joinable hooks: ``main_hook()`` while others still train, ``post_hook(
    is_last_joiner)`` once all have joined. No-ops by default."""

    def main_hook(self) -> None:
        """Shadow one training iteration's collectives (torch's protocol)."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run once every rank has joined."""


class Joinable(abc.ABC):
    """torch's base of classes that take part in ``Join``: ``join_hook``, ``join_device``,
    ``join_process_group``. shardflow's ``Join`` runs DistributedDataParallel only (module
    docstring)."""

    @abc.abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        ...

    @property
    @abc.abstractmethod
    def join_device(self):
        ...

    @property
    @abc.abstractmethod
    def join_process_group(self):
        ...


def _refuse(what: str):
    raise NotImplementedError(
        f"Join({what}): shardflow's Join runs DistributedDataParallel's uneven-input protocol "
        "(Join([ddp_model]) is ddp_model.join()); the generic join-hook protocol for other "
        "joinables (ZeroRedundancyOptimizer, a Joinable of one's own) is not built. Give every "
        "rank the same number of batches (e.g. DistributedSampler(drop_last=True)) or use "
        "Join([ddp_model]) with a plain optimizer"
    )


class Join:
    """torch's ``Join(joinables, enable=True, throw_on_early_termination=False, **kwargs)``
    context manager, for a list holding one ``DistributedDataParallel`` (module docstring)."""

    def __init__(self, joinables, enable: bool = True, throw_on_early_termination: bool = False,
                 **kwargs):
        joinables = list(joinables)
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        others = [type(j).__name__ for j in joinables
                  if not isinstance(j, DistributedDataParallel)]
        if others or len(joinables) != 1:
            _refuse(", ".join(others) or f"{len(joinables)} DistributedDataParallel models")
        unknown = sorted(set(kwargs) - {"divide_by_initial_world_size"})
        if unknown:
            raise TypeError(f"Join got unknown keyword arguments {unknown}; DDP's join hook "
                            "takes divide_by_initial_world_size")
        self._context = joinables[0].join(
            divide_by_initial_world_size=kwargs.get("divide_by_initial_world_size", True),
            enable=enable, throw_on_early_termination=throw_on_early_termination)

    def __enter__(self):
        self._context.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        return self._context.__exit__(exc_type, exc, tb)

    @staticmethod
    def notify_join_context(joinable):
        """torch's per-iteration notice from a custom joinable; not run here (module
        docstring): DistributedDataParallel notifies its own join context."""
        _refuse(type(joinable).__name__)
