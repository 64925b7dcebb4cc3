"""``torch._inductor``: only ``config`` (``config.py``), the settings scripts set for
Inductor's code generation. shardflow has no Inductor, so they are recorded, not used."""

from __future__ import annotations

from . import config

__all__ = ["config"]
