"""``t.data = x`` seen by the graphs that saved ``t``, as in PyTorch.

PyTorch's ``.data`` setter (``set_data``) swaps the storage under ``t``'s TensorImpl. A graph
that saved ``t`` for backward holds that same TensorImpl, so its backward reads the *new*
values: christiancosgrove/pytorch-spectral-normalization-gan's ``SpectralNorm`` runs its
power iteration by ``u.data = l2normalize(...)`` inside every forward, and a discriminator
called twice before one backward (real, then fake images) back-propagates its first call
through the second call's ``u`` and ``v``. shardflow's nodes save raw arrays (a backward
reads ``self.a``), so rebinding ``t.array`` left them on the old values: the weight
gradients differed by a few percent.

Algorithm: the setter calls :func:`record` with the old and new arrays when something besides
the tensor still references the old one (``sys.getrefcount``: a saved graph, or a user's
``p.data`` alias; an array referenced by nothing else cannot be in any graph, so the common
EMA/``p.data = p.data.clone()`` patterns record nothing). A record maps the old array
(by identity, through a weak reference) to the newest array bound after it: rebinding
``a -> b -> c`` maps both ``a`` and ``b`` to ``c``, as the TensorImpl would read. At the start
of a backward pass, while records exist, :func:`substitute` replaces each saved attribute of
the pass's nodes that *is* a recorded old array (same shape and dtype) by its new array;
records whose old array is gone are dropped then. Cost: one dict test per backward pass, and
the walk only while records exist. Only the nodes of ``run_backward`` and of the higher-order engine's
pass are visited (the compiled step plan's are not); a user alias of the old array (``old = p.data``)
keeps the old values, as in PyTorch, since only graph nodes are rewritten.
"""

from __future__ import annotations

import sys
import weakref

__all__ = ["record", "substitute", "pending"]

# id(old array) -> (weak reference to it, the newest array bound after it)
_rebound: dict[int, tuple] = {}


def pending() -> bool:
    """Whether any rebinding is recorded (the engine's one test per pass)."""
    return bool(_rebound)


def record(old, new) -> None:
    """Note that a tensor's array ``old`` was replaced by ``new`` (``t.data = ...``)."""
    if old is new:
        return
    for key, (r, n) in list(_rebound.items()):  # (empty unless a graph saw a rebinding)
        if r() is None:
            del _rebound[key]
        elif n is old:  # a -> old was recorded: a now reads new
            _rebound[key] = (r, new)
    # getrefcount counts its own argument, this frame's ``old`` and the setter's local: 3
    # when nothing else (no graph, no alias) holds the old array
    if sys.getrefcount(old) <= 3:
        return
    try:
        _rebound[id(old)] = (weakref.ref(old), new)
    except TypeError:  # an array type without weak references: not tracked
        pass


def substitute(nodes) -> None:
    """Give the nodes' saved arrays that were rebound their new arrays (see the module
    docstring), then drop the records whose old array no longer exists."""
    for fn in nodes:
        state = getattr(fn, "__dict__", None)
        if not state:
            continue
        for name, value in list(state.items()):
            entry = _rebound.get(id(value))
            if entry is None or entry[0]() is not value:
                continue
            new = entry[1]
            if getattr(new, "shape", None) == value.shape and getattr(new, "dtype", None) == value.dtype:
                state[name] = new
    for key, (r, _) in list(_rebound.items()):
        if r() is None:
            del _rebound[key]
