"""SciPy, imported on first use: the special functions (``torch.special``) and LAPACK
factorisations (``torch.linalg.lu_factor`` ...) that NumPy lacks come from SciPy rather than
being written again. ``import shardflow`` never imports SciPy (about 0.2 s); the first op
that needs it does. SciPy is a base dependency; the hint is for an install that lost it."""

from __future__ import annotations

import importlib


def scipy_module(name: str = "special"):
    """``scipy.<name>`` (``special``, ``linalg``, ...), with an install hint if SciPy is absent."""
    try:
        return importlib.import_module(f"scipy.{name}")
    except ImportError as err:  # pragma: no cover - scipy is a base dependency
        raise ImportError(
            f"this operation needs scipy.{name}, which is not installed: "
            "`pip install scipy` (it is a base dependency of shardflow; reinstall with "
            "`pip install -e .`)") from err
