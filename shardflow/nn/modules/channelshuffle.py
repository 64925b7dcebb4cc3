"""``ChannelShuffle`` (``torch.nn.modules.channelshuffle``): ``F.channel_shuffle``."""

from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """``(N, g * c, *) -> (N, c * g, *)``: interleave the channels of ``groups`` groups."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
