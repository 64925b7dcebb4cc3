"""NumPy's keyword spellings for ops: ``torch.sum(x, axis=0, keepdims=True)``.

PyTorch's argument parser takes, for every native op, NumPy's names as aliases of its own
(``python_arg_parser.cpp``: ``axis`` for ``dim``, ``keepdims`` for ``keepdim``, ``x`` / ``a``
/ ``x1`` for ``input``, ``x2`` for ``other``), so ``x.mean(axis=1)`` and
``torch.cat(ts, axis=0)`` run. shardflow's ops name only torch's spelling; the dispatcher's
routed form (``dispatch.py``) catches the TypeError Python raises for an unknown keyword
and, when :func:`translate` finds an alias the op does not take whose torch name it does,
calls again with torch's name. Nothing runs on a call that binds: no cost on the fast path,
and the retry cannot repeat work (Python refuses unknown keywords before the body runs).

Deviation: the aliases apply to every registered op, also those torch defines in Python
(a few ``nn.functional`` ones), where torch would raise.
"""

from __future__ import annotations

import inspect

__all__ = ["translate"]

# NumPy name -> torch name (torch/csrc/utils/python_arg_parser.cpp, numpy_compatibility_arg_names)
ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input", "x2": "other"}

_PARAMS: dict[object, frozenset | None] = {}


def _params(func) -> frozenset | None:
    """The keyword names ``func`` binds, or None when it takes ``**kwargs`` (it accepts any)."""
    try:
        return _PARAMS[func]
    except KeyError:
        pass
    try:
        ps = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        names = None
    else:
        names = None if any(p.kind is p.VAR_KEYWORD for p in ps) else frozenset(
            p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    _PARAMS[func] = names
    return names


def translate(func, kwargs: dict) -> dict | None:
    """``kwargs`` with NumPy aliases ``func`` does not take renamed to the torch names it does,
    or None when there is none to rename (the caller re-raises its TypeError)."""
    names = _params(func)
    if names is None:
        return None
    out, changed = {}, False
    for k, v in kwargs.items():
        t = ALIASES.get(k)
        if t is not None and k not in names and t in names and t not in kwargs:
            out[t] = v
            changed = True
        else:
            out[k] = v
    return out if changed else None
