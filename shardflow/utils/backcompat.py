"""``torch.utils.backcompat``: ``broadcast_warning`` and ``keepdim_warning``, the switches of
warnings old torch versions gave when broadcasting and ``keepdim`` defaults changed (torch
0.2). Both are off, as in torch, and setting ``enabled`` changes nothing: no such warning
exists any more (nor in torch)."""

from __future__ import annotations

__all__ = ["Warning", "broadcast_warning", "keepdim_warning"]


class Warning:  # noqa: A001 - torch's name
    """A switch with an ``enabled`` flag (kept and read back)."""

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled


broadcast_warning = Warning()
keepdim_warning = Warning()
