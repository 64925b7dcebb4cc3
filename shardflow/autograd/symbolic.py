"""torch's ``sym_*`` helpers (``torch.sym_int``, ``sym_float``, ``sym_max``, ``sym_min``,
``sym_not``, ``sym_ite``, ``sym_sqrt``, ``sym_sum``) as torch runs them eagerly.

In torch they are SymInt-aware versions of ``int()``, ``max()`` ... for code traced with
symbolic shapes; on plain Python numbers (and tensors, through ``int()``/``float()``) they are
the plain operations with torch's rules, which is all shardflow has (no symbolic shapes):
``sym_max``/``sym_min`` take only int/float (NumPy scalars too) and return a float when either
is one; ``sym_ite`` needs a bool condition and two values of one type; ``sym_sqrt`` is
``math.sqrt``; ``sym_sum`` is ``sum`` of a list or of its arguments. Errors are torch 2.13's.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

__all__ = ["sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_ite", "sym_sqrt", "sym_sum"]

_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)
_FLOATS = (np.floating, builtins.float)


def sym_int(a):
    """``int(a)`` (truncates toward zero)."""
    return builtins.int(a)


def sym_float(a):
    """``float(a)``."""
    return builtins.float(a)


def _numbers(a, b) -> None:
    for v in (a, b):
        if not isinstance(v, _NUMBERS):
            raise AssertionError(f"expected {_NUMBERS}, got {type(v)}")


def sym_max(a, b):
    """``max(a, b)`` of two numbers; a float when either is a float."""
    _numbers(a, b)
    if isinstance(a, _FLOATS) or isinstance(b, _FLOATS):
        return builtins.float(builtins.max(a, b))
    return builtins.max(a, b)


def sym_min(a, b):
    """``min(a, b)`` of two numbers; a float when either is a float."""
    _numbers(a, b)
    if isinstance(a, _FLOATS) or isinstance(b, _FLOATS):
        return builtins.float(builtins.min(a, b))
    return builtins.min(a, b)


def sym_not(a):
    """``not a``."""
    return not a


def sym_ite(b, t, f):
    """``t if b else f``; ``b`` a bool, ``t`` and ``f`` of one type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sqrt(a):
    """``math.sqrt(a)``."""
    return math.sqrt(a)


def sym_sum(*args):
    """``sum`` of ``sym_sum([a, b, c])`` or ``sym_sum(a, b, c)``."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = args[0]
    return builtins.sum(args)
