"""``torch.utils.deterministic.fill_uninitialized_memory``: with deterministic algorithms on
(``torch.use_deterministic_algorithms(True)``) and this switch True (the default), memory a
program did not initialise is filled, so results cannot depend on leftovers: ``empty``,
``empty_like``, ``new_empty``, ``empty_strided``, ``empty_permuted`` and the grown part of
``resize_`` hold NaN (floating and complex dtypes), the largest value (integers) or True
(bool), as torch's. The setting is kept with the other determinism switches
(``shardflow.backends``); as in torch the module's class makes it a property.
"""

from __future__ import annotations

import sys
import types

from ..backends import _deterministic

__all__: list[str] = []  # the property fill_uninitialized_memory (see _DeterministicModule)


class _DeterministicModule(types.ModuleType):
    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether uninitialised memory is filled when deterministic algorithms are on."""
        return _deterministic["fill_uninitialized_memory"]

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode) -> None:
        if not isinstance(mode, bool):
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__} (fill_uninitialized_memory = True or False)")
        _deterministic["fill_uninitialized_memory"] = mode


sys.modules[__name__].__class__ = _DeterministicModule
