"""``torch.distributed.elastic.utils.logging.get_logger``: a ``logging.Logger`` at the level
``LOGLEVEL`` names (default ``WARNING``), as torch's."""

from __future__ import annotations

import inspect
import logging
import os

from .... import _config

__all__ = ["get_logger"]


def get_logger(name: str | None = None) -> logging.Logger:
    """The logger ``name`` (default: the calling module's name), its level set from
    ``LOGLEVEL`` (default ``"WARNING"``)."""
    logger = logging.getLogger(name or _caller_module())
    logger.setLevel(_config.env("LOGLEVEL") or "WARNING")
    return logger


def _caller_module() -> str | None:
    frame = inspect.stack()[2]
    module = inspect.getmodule(frame[0])
    return module.__name__ if module else os.path.splitext(os.path.basename(frame[1]))[0]
