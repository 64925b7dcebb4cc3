"""``torch.distributed.algorithms.join``: ``Join``, ``Joinable``, ``JoinHook`` (layer L6).

torch's generic context manager for uneven inputs, with torch's protocol:

* ``Join(joinables, enable=True, throw_on_early_termination=False, **kwargs)`` asks each
  joinable for its hook (``joinable.join_hook(**kwargs)``: the keywords are shared by all)
  and tells each its ``_join_config`` (enabled, throw, whether it is the first joinable).
* Each iteration, a rank still training sends a heartbeat: the first joinable calls
  ``Join.notify_join_context(self)`` before its collectives, which all-reduces a one (and,
  with ``throw_on_early_termination``, a second value that says whether some rank has run
  out, raising torch's "Detected at least one rank that exhausted inputs." if so).
* A rank that has run out waits in ``__exit__``: it all-reduces a zero (the count of ranks
  still training); while that is not zero it runs every hook's ``main_hook()`` (which
  shadows one iteration's collectives), in the joinables' order. When all have joined, every
  hook's ``post_hook(is_last_joiner)`` runs.

Joinables here: ``DistributedDataParallel`` (its hook shadows forward's flags, the buffers'
broadcast and the gradient buckets with zeros, and broadcasts the last joiner's model at the
end: ``nn/parallel/join.py``), ``ZeroRedundancyOptimizer`` (its main hook is a ``step()``,
as torch's: the joined rank updates its shard with the gradients it has and takes part in
the all-gather), and any ``Joinable`` of one's own. ``Join([ddp_model])`` alone is
``ddp_model.join()`` (one all-reduce per iteration instead of two; the same results).

Deviation: the keywords go to every joinable's ``join_hook``, as in torch; a keyword that
none of shardflow's joinables takes is refused when only shardflow's are in the context
(with a joinable of one's own, it may be that one's).
"""

from __future__ import annotations

import abc
from typing import NamedTuple

import numpy as np

from ...comm import CommError
from ...nn.parallel import DistributedDataParallel
from ...nn.parallel.join import GENERIC_UNSHADOWED_NOTE, note_unshadowed

__all__ = ["JoinHook", "Joinable", "Join"]

_MEMBERS = ("join_hook", "join_device", "join_process_group")
# the keywords the join hooks of shardflow's joinables take
_KNOWN_KWARGS = {"divide_by_initial_world_size"}


class JoinHook:
    """torch's per-joinable hooks: ``main_hook()`` while others still train, ``post_hook(
    is_last_joiner)`` once all have joined. No-ops by default."""

    def main_hook(self) -> None:
        """Shadow one training iteration's collectives (torch's protocol)."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run once every rank has joined."""


class _JoinConfig(NamedTuple):
    """What a joinable knows of its context (torch's fields)."""

    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)

    def notify(self, joinable) -> None:
        """``Join.notify_join_context(joinable)``, reached through the config, so a joinable
        below this module (``distributed/zero.py``) needs no import of it."""
        Join.notify_join_context(joinable)


class Joinable(abc.ABC):
    """torch's base of classes that take part in ``Join``: ``join_hook``, ``join_device``,
    ``join_process_group``; its constructor sets ``_join_config`` (subclasses call it)."""

    @abc.abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @classmethod
    def __subclasshook__(cls, other):
        # DistributedDataParallel and ZeroRedundancyOptimizer live in lower layers and cannot
        # subclass this; they are Joinables by having the three members, so that
        # isinstance(ddp_model, Joinable) is True as in torch
        if cls is Joinable and all(any(n in vars(k) for k in other.__mro__) for n in _MEMBERS):
            return True
        return NotImplemented

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


def _communicator(group):
    """The communicator of a process group given as torch code gives it (None and
    ``dist.group.WORLD`` are the world)."""
    from .. import _group

    return _group(group)


def _refuse_unknown_kwargs(kwargs: dict, joinables) -> None:
    """The keywords shardflow's own join hooks take; any other would be dropped silently."""
    unknown = sorted(set(kwargs) - _KNOWN_KWARGS)
    if unknown:
        raise TypeError(f"Join got unknown keyword arguments {unknown}; the join hooks of "
                        f"{', '.join(type(j).__name__ for j in joinables)} take "
                        f"{sorted(_KNOWN_KWARGS)}")


def _all_reduce_scalar(pg, value: float) -> float:
    buf = np.array([value], dtype=np.float32)
    pg.all_reduce(buf, "sum")
    return float(buf[0])


class Join:
    """torch's ``Join(joinables, enable=True, throw_on_early_termination=False, **kwargs)``
    (module docstring)."""

    def __init__(self, joinables, enable: bool = True, throw_on_early_termination: bool = False,
                 **kwargs):
        joinables = list(joinables)
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._single = None
        if len(joinables) == 1 and isinstance(joinables[0], DistributedDataParallel):
            _refuse_unknown_kwargs(kwargs, joinables)
            self._single = joinables[0].join(
                divide_by_initial_world_size=kwargs.get("divide_by_initial_world_size", True),
                enable=enable, throw_on_early_termination=throw_on_early_termination)
            return
        missing = [type(j).__name__ for j in joinables if not isinstance(j, Joinable)]
        if missing:
            raise TypeError(
                f"Join got {', '.join(missing)}, which is not a Joinable (join_hook, join_device "
                "and join_process_group): pass DistributedDataParallel, ZeroRedundancyOptimizer "
                "or a subclass of torch.distributed.algorithms.join.Joinable")
        if all(type(j).__module__.startswith("shardflow.") for j in joinables):
            _refuse_unknown_kwargs(kwargs, joinables)
        self._joinables = joinables
        self._join_hooks = [j.join_hook(**kwargs) for j in joinables]
        self._enable = bool(enable)
        self._throw_on_early_termination = bool(throw_on_early_termination)
        for i, j in enumerate(joinables):
            j._join_config = _JoinConfig(self._enable, self._throw_on_early_termination, i == 0)
        groups = [_communicator(j.join_process_group) for j in joinables]
        if any(g is not groups[0] for g in groups):
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = groups[0]
        self._rank = self._process_group.rank

    def __enter__(self):
        if self._single is not None:
            self._single.__enter__()
            return self
        for j, hook in zip(self._joinables, self._join_hooks):
            enter = getattr(hook, "enter", None)
            if isinstance(j, DistributedDataParallel) and enter is not None:
                first = j._join_config.is_first_joinable and self._enable
                enter(self._enable, (lambda j=j: Join.notify_join_context(j)) if first else None)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._single is not None:
            return self._single.__exit__(exc_type, exc, tb)
        for hook in self._join_hooks:
            leave = getattr(hook, "leave", None)
            if leave is not None and hasattr(hook, "enter"):
                leave()
        if not self._enable or exc_type is not None:
            if exc is not None:  # a collective of the program's own met a shadowing call
                note_unshadowed(exc, GENERIC_UNSHADOWED_NOTE)
            return False  # the exception propagates as it is (torch's behaviour)
        pg = self._process_group
        is_last_joiner = True
        try:
            while _all_reduce_scalar(pg, 0.0) != 0:
                if self._throw_on_early_termination:
                    _all_reduce_scalar(pg, 1.0)
                    raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
        except CommError as e:
            note_unshadowed(e, GENERIC_UNSHADOWED_NOTE)
            raise
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)
        return False

    @staticmethod
    def notify_join_context(joinable):
        """Tell the context that this rank has not joined (module docstring). Only the first
        joinable of an enabled context communicates; for the others this does nothing.
        torch returns the all-reduce's work handle; here the all-reduce is done and None is
        returned."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the "
                                 "``Joinable`` constructor")
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        pg = _communicator(joinable.join_process_group)
        _all_reduce_scalar(pg, 1.0)
        if config.throw_on_early_termination and _all_reduce_scalar(pg, 0.0):
            raise RuntimeError("Detected at least one rank that exhausted inputs. "
                               "Throwing across all ranks.")
        return None
