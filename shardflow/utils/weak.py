"""``torch.utils.weak``: weak references and a weak-key dictionary keyed by object identity,
for tensors (whose ``==`` is elementwise and whose truth value is ambiguous, so a plain
``weakref.WeakKeyDictionary`` cannot hold them): ``WeakIdRef``, ``WeakIdKeyDictionary`` (also
``WeakTensorKeyDictionary``) and ``TensorWeakRef``. Libraries keep per-tensor metadata in them
without keeping the tensors alive.

As torch's: a ``WeakIdRef`` hashes by the object's ``id`` and two refs are equal when they
reach the same live object (a dead ref equals only itself, so a new object that reuses the
id is not mistaken for the old one); an entry goes away when its key is collected, also while
the dictionary is being iterated (the removal then waits until the iteration ends).
"""

from __future__ import annotations

import weakref
from collections.abc import MutableMapping

from ..autograd.tensor import Tensor

__all__ = ["TensorWeakRef", "WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary"]


class WeakIdRef(weakref.ref):
    """A weak reference hashed and compared by the referent's identity."""

    __slots__ = ["_id"]

    def __init__(self, key, callback=None) -> None:
        self._id = id(key)
        super().__init__(key, callback)

    def __hash__(self) -> int:
        return self._id

    def __eq__(self, other) -> bool:
        a, b = self(), other()
        if a is not None and b is not None:
            return a is b
        return self is other


class _Iterating:
    """While alive, removals of collected keys wait (the dict must not change size mid-loop)."""

    def __init__(self, owner):
        self.owner = owner

    def __enter__(self):
        self.owner._iterating += 1
        return self

    def __exit__(self, *exc):
        self.owner._iterating -= 1
        if not self.owner._iterating:
            self.owner._commit_removals()


class WeakIdKeyDictionary(MutableMapping):
    """A mapping whose keys are held weakly and compared by identity (``WeakIdRef``)."""

    def __init__(self, dict=None, ref_type=WeakIdRef) -> None:
        self.data: dict = {}
        self.ref_type = ref_type
        self._pending_removals: list = []
        self._iterating = 0

        def remove(k, selfref=weakref.ref(self)) -> None:
            owner = selfref()
            if owner is None:
                return
            if owner._iterating:
                owner._pending_removals.append(k)
            else:
                owner.data.pop(k, None)

        self._remove = remove
        if dict is not None:
            self.update(dict)

    def _commit_removals(self) -> None:
        while self._pending_removals:
            self.data.pop(self._pending_removals.pop(), None)

    def __getitem__(self, key):
        return self.data[self.ref_type(key)]

    def __setitem__(self, key, value) -> None:
        self.data[self.ref_type(key, self._remove)] = value

    def __delitem__(self, key) -> None:
        del self.data[self.ref_type(key)]

    def __contains__(self, key) -> bool:
        try:
            ref = self.ref_type(key)
        except TypeError:
            return False
        return ref in self.data

    def __len__(self) -> int:
        self._commit_removals()
        return sum(1 for ref in list(self.data) if ref() is not None)

    def __iter__(self):
        with _Iterating(self):
            for ref in list(self.data):
                obj = ref()
                if obj is not None:
                    yield obj

    def keyrefs(self) -> list:
        """The weak references to the keys."""
        return list(self.data)

    def copy(self) -> WeakIdKeyDictionary:
        new = WeakIdKeyDictionary(ref_type=self.ref_type)
        for key, value in self.items():
            new[key] = value
        return new

    __copy__ = copy

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {id(self):#x}>"


WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a tensor: ``ref()`` gives the tensor, or None once it is collected."""

    def __init__(self, tensor: Tensor) -> None:
        if not isinstance(tensor, Tensor):
            raise AssertionError(f"expected torch.Tensor, got {type(tensor)}.")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        return self.ref()
