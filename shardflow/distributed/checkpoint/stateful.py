"""``Stateful``: PyTorch's ``torch.distributed.checkpoint.stateful.Stateful``.

A runtime-checkable Protocol: any object with ``state_dict()`` and ``load_state_dict(sd)``
(an ``nn.Module``, an optimizer, a user's ``AppState`` wrapping both). ``dcp.save`` replaces
each top-level value that is ``Stateful`` by its ``state_dict()`` before saving; ``dcp.load``
loads into each one's ``state_dict()`` in place and then calls its ``load_state_dict`` with
it (``saver.py``, ``loader.py``), as PyTorch's ``save``/``load`` do.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Stateful", "StatefulT"]


@runtime_checkable
class Stateful(Protocol):
    """An object that can be checkpointed (``state_dict``) and restored (``load_state_dict``)."""

    def state_dict(self) -> dict[str, Any]:
        """The object's state as a dictionary. Also called by ``dcp.load``: the checkpoint is
        read into it in place before ``load_state_dict`` gets it."""
        ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the object's state from ``state_dict``."""
        ...


StatefulT = TypeVar("StatefulT", bound=Stateful)


def stateful_to_state_dict(state_dict: dict) -> dict:
    """A shallow copy of ``state_dict`` with each ``Stateful`` top-level value replaced by its
    ``state_dict()``."""
    return {k: (v.state_dict() if isinstance(v, Stateful) else v) for k, v in state_dict.items()}
