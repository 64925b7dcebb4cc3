"""``warn_at_caller``: a warning attributed to the user's line, however deep in shardflow it
is raised (Python 3.11 has no ``skip_file_prefixes``)."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../shardflow


def warn_at_caller(message: str, category=UserWarning) -> None:
    """``warnings.warn`` attributed to the first frame outside shardflow: the user's line that
    called the op, however many shardflow frames (routed op, nn.functional, module) lie between."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level - 1 if frame is None else level)


# torch's TORCH_WARN_ONCE: a warning given once per process, unless ``set_warn_always(True)``
_warn_always = [False]
_given: set = set()


def set_warn_always(flag: bool) -> None:
    """``torch.set_warn_always``: every once-per-process warning is given every time."""
    _warn_always[0] = bool(flag)


def is_warn_always_enabled() -> bool:
    return _warn_always[0]


def first_time(key: str) -> bool:
    """Whether the once-per-process warning ``key`` is to be given now (its first time, or
    every time under ``set_warn_always(True)``); records it as given."""
    if _warn_always[0]:
        return True
    if key in _given:
        return False
    _given.add(key)
    return True
