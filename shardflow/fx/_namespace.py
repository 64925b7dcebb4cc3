"""Unique, legal Python names for graph nodes, as torch.fx picks them.

A node's name comes from its target (``linear`` for ``self.linear``, ``add`` for
``operator.add``, ``relu`` for ``torch.relu``, ``nested_0`` for ``self.nested[0]``); a name
already taken, a Python keyword or builtin (``sum`` -> ``sum_1``), or one of the names the
generated code itself uses (``self``, ``torch``) gets the next ``_N`` suffix of its base, so a
graph reads ``relu``, ``relu_1``, ``relu_2`` as torch's does.
"""

from __future__ import annotations

import builtins
import keyword
import re

_ILLEGAL_CHAR = re.compile("[^0-9a-zA-Z_]+")
_SUFFIX = re.compile(r"(.*)_(\d+)$")
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")
# names the generated forward binds itself (its globals and ``self``)
RESERVED = frozenset({"self", "torch", "operator", "builtins", "device", "inf", "nan", "fx_pytree"})


def snake_case(s: str) -> str:
    """``BatchNorm2d`` -> ``batch_norm2d`` (how torch names a node from a class name)."""
    return _CAMEL.sub(r"_\1", s).lower()


class Namespace:
    """The names used in one graph, and the next suffix per base name."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        candidate = _ILLEGAL_CHAR.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        match = _SUFFIX.match(candidate)
        if match is None:
            base, num = candidate, None
        else:
            base, num = match.group(1), int(match.group(2))
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._base_count.get(base, 0)
        while candidate in self._used or self._illegal(candidate):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        return candidate

    def release(self, name: str) -> None:
        self._used.discard(name)

    @staticmethod
    def _illegal(name: str) -> bool:
        return keyword.iskeyword(name) or name in RESERVED or hasattr(builtins, name)
