"""``torch.backends.mha``: ``get_fastpath_enabled()`` / ``set_fastpath_enabled(value)``, torch's
switch for the fused inference path of ``nn.MultiheadAttention`` and ``nn.TransformerEncoder``.
shardflow's layers have no separate fast path (they run the same ops in training and
inference), so the switch is kept and read back and changes no result."""

from __future__ import annotations

__all__ = ["get_fastpath_enabled", "set_fastpath_enabled"]

_fastpath = [True]  # torch's default


def get_fastpath_enabled() -> bool:
    return _fastpath[0]


def set_fastpath_enabled(value: bool) -> None:
    _fastpath[0] = value
