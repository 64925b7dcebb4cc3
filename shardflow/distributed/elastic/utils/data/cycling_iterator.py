"""``CyclingIterator(n, generator_fn, start_epoch=0)``: the items of ``generator_fn(epoch)`` for
``epoch`` = ``start_epoch`` ... ``n - 1`` in turn, as one iterator (torch's)."""

from __future__ import annotations

__all__ = ["CyclingIterator"]


class CyclingIterator:
    """Iterate ``generator_fn(epoch)`` for each epoch up to ``n`` (see the module docstring)."""

    def __init__(self, n: int, generator_fn, start_epoch: int = 0):
        self._n = n
        self._epoch = start_epoch
        self._generator_fn = generator_fn
        self._iter = generator_fn(self._epoch)

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            try:
                return next(self._iter)
            except StopIteration:
                if self._epoch >= self._n - 1:
                    raise
                self._epoch += 1
                self._iter = self._generator_fn(self._epoch)
