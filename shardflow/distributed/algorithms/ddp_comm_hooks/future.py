"""``Future``: the value a communication hook returns (the part of ``torch.futures.Future``
hooks use): ``wait()`` runs the pending completion once and returns its value; ``then(fn)``
chains ``fn(future)``; ``value()`` / ``done()``.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Future"]

_UNSET = object()


class Future:
    __slots__ = ("_complete", "_value")

    def __init__(self, complete: Callable[[], object]):
        self._complete = complete  # called once, by the first wait()
        self._value = _UNSET

    @classmethod
    def completed(cls, value) -> Future:
        fut = cls(lambda: value)
        fut._value = value
        return fut

    def wait(self):
        if self._value is _UNSET:
            self._value = self._complete()
            self._complete = None
        return self._value

    def value(self):
        if self._value is _UNSET:
            raise RuntimeError("Future.value() before the future completed: call wait() first")
        return self._value

    def done(self) -> bool:
        return self._value is not _UNSET

    def then(self, callback: Callable[[Future], object]) -> Future:
        """A future of ``callback(self)``, run when the new future is waited on."""
        return Future(lambda: (self.wait(), callback(self))[1])
