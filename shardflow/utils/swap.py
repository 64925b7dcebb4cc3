"""``torch.utils.swap_tensors`` and ``torch.utils.set_module``.

``swap_tensors(t1, t2)`` exchanges everything two tensor objects hold while each keeps its
identity (``id``, the references to it): the class (a ``Parameter`` and a plain tensor swap
kinds), the attribute dict and every slot (the array, ``requires_grad``, ``grad``,
``grad_fn``, hooks, version counter, global-tensor spec). PyTorch's checks: no weak
references to either, the same slots. PyTorch also refuses a tensor that an autograd graph
still uses (its use count); shardflow keeps no use count, so swapping a tensor that a pending
backward saved changes what that backward reads: swap before the forward, or after the
backward.
"""

from __future__ import annotations

import weakref

__all__ = ["swap_tensors", "set_module"]

_MISSING = object()


def _slot_names(cls) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        slots = vars(klass).get("__slots__", ())
        names.update((slots,) if isinstance(slots, str) else slots)
    return names - {"__dict__", "__weakref__"}


def swap_tensors(t1, t2) -> None:
    """Make ``t1`` hold what ``t2`` held and the reverse (see the module docstring)."""
    if weakref.getweakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    slots = _slot_names(type(t1))
    if slots != _slot_names(type(t2)):
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    c1, c2 = type(t1), type(t2)
    t1.__class__, t2.__class__ = c2, c1
    d1, d2 = dict(vars(t1)), dict(vars(t2))
    vars(t1).clear(), vars(t1).update(d2)
    vars(t2).clear(), vars(t2).update(d1)
    for name in slots:
        v1, v2 = getattr(t1, name, _MISSING), getattr(t2, name, _MISSING)
        for obj, value in ((t1, v2), (t2, v1)):
            if value is _MISSING:
                if hasattr(obj, name):
                    delattr(obj, name)
            else:
                object.__setattr__(obj, name, value)


def set_module(obj, mod) -> None:
    """Set ``obj.__module__`` (for nicer printing); ``mod`` must be a string."""
    if not isinstance(mod, str):
        raise TypeError("The mod argument should be a string")
    obj.__module__ = mod
