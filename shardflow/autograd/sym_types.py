"""torch's symbolic scalar types ``SymInt``, ``SymFloat``, ``SymBool``, for annotations and
``isinstance`` checks.

In torch they wrap a symbolic node while a program is traced with dynamic shapes; eagerly
every size is a plain Python ``int``, so ``isinstance(3, torch.SymInt)`` is False. shardflow
has no symbolic shapes (sizes are always ints), so nothing is ever an instance of these, and
making one raises TypeError (torch's constructor takes an internal ``SymNode``).
"""

from __future__ import annotations

__all__ = ["SymInt", "SymFloat", "SymBool"]


class _SymScalar:
    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise TypeError(
            f"{cls.__name__}: shardflow has no symbolic shapes, so it cannot make a {cls.__name__} "
            f"(expected a traced size, got a call); sizes are plain Python numbers: use "
            f"{_PLAIN[cls.__name__]} instead")


class SymInt(_SymScalar):
    """A symbolic integer (never made by shardflow: sizes are ``int``)."""

    __slots__ = ()


class SymFloat(_SymScalar):
    """A symbolic float (never made by shardflow)."""

    __slots__ = ()


class SymBool(_SymScalar):
    """A symbolic bool (never made by shardflow)."""

    __slots__ = ()


_PLAIN = {"SymInt": "int", "SymFloat": "float", "SymBool": "bool"}
