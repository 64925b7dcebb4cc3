"""``torch.jit``'s executor and fuser switches that programs call around their models:
``optimized_execution(bool)``, ``fuser(name)``, ``set_fusion_strategy(list)`` and the exception
class ``torch.jit.Error``.

shardflow has no TorchScript executor or fuser (``torchscript.py``: scripted code runs
eagerly), so these change nothing that runs: the context managers enter and leave, and
``set_fusion_strategy`` records the strategy and returns the previous one, as torch's does
(torch's default is ``[("STATIC", 2), ("DYNAMIC", 10)]``). Arguments torch refuses are refused
with torch's exception types: an unknown fuser name (torch raises a bare ``Exception``), a
strategy kind other than ``"STATIC"``/``"DYNAMIC"`` (``ValueError``), a strategy that is not a
list of ``(str, non-negative int)`` pairs or a non-boolean ``should_optimize`` (``TypeError``).
"""

from __future__ import annotations

import contextlib
import warnings

__all__ = ["optimized_execution", "fuser", "set_fusion_strategy", "Error"]

_FUSERS = ("fuser0", "fuser1", "fuser2", "fuser3", "none")
_strategy: list[tuple[str, int]] = [("STATIC", 2), ("DYNAMIC", 10)]


class Error(Exception):
    """``torch.jit.Error``: what an exception raised inside TorchScript code becomes in torch.
    shardflow runs scripted code as Python, so its own exceptions propagate unchanged; the class
    exists for ``except torch.jit.Error:`` clauses."""


Error.__module__ = "shardflow.jit"


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """Whether torch's JIT executor optimizes graphs inside the block. Nothing here (no JIT
    executor); ``should_optimize`` must be what torch's binding accepts (a bool, int or None)."""
    if not (should_optimize is None or isinstance(should_optimize, bool | int)):
        raise TypeError(
            f"optimized_execution(): expected a bool should_optimize, got {type(should_optimize).__name__} "
            f"({should_optimize!r}); pass True or False")
    yield


@contextlib.contextmanager
def fuser(name):
    """torch's fuser switch (``"fuser0"`` legacy, ``"fuser1"`` NNC, ``"fuser2"`` nvFuser,
    ``"fuser3"`` oneDNN Graph, ``"none"``). Nothing here (no fuser); other names raise as
    torch's (a bare ``Exception``)."""
    if name not in _FUSERS:
        raise Exception(  # noqa: TRY002 - torch's exception type
            f"unrecognized fuser option (name: {name}); expected one of {', '.join(_FUSERS)}")
    yield


def set_fusion_strategy(strategy):
    """Record torch's fusion specialization strategy (a list of ``(kind, depth)`` pairs, kind
    ``"STATIC"`` or ``"DYNAMIC"``) and return the previous one. Nothing is fused here. Warns as
    torch 2.13 (the function is deprecated there)."""
    warnings.warn("`torch.jit.set_fusion_strategy` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning, stacklevel=2)
    global _strategy
    if isinstance(strategy, str | bytes) or not hasattr(strategy, "__iter__"):
        raise TypeError(f"set_fusion_strategy(): expected a list of (str, int) pairs, got {strategy!r}")
    new = []
    for item in strategy:
        ok = (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)
              and isinstance(item[1], int) and not isinstance(item[1], bool) and item[1] >= 0)
        if not ok:
            raise TypeError(f"set_fusion_strategy(): expected a list of (str, non-negative int) pairs, "
                            f"got {list(strategy)!r}")
        if item[0] not in ("STATIC", "DYNAMIC"):
            raise ValueError(f"FusionBehavior only supported 'STATIC' or 'DYNAMIC', got: {item[0]}")
        new.append((item[0], int(item[1])))
    old, _strategy = _strategy, new
    return old
