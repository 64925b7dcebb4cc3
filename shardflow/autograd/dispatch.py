"""The op dispatch hook: how ``Tensor`` methods reach ops without importing upward.

``autograd`` (L2) defines ``Tensor``; the differentiable ops live in ``ops`` (L3). Each op
registers its functional form here under its PyTorch name (``register("add")``), and
``Tensor.add`` looks the name up in ``OPS``. The distributed layer can later wrap an entry
(global tensors) through the same table.
"""

from __future__ import annotations

from collections.abc import Callable

OPS: dict[str, Callable] = {}


def register(name: str, *aliases: str):
    """Decorator: make ``func`` the implementation of op ``name`` (and ``aliases``)."""

    def deco(func):
        for n in (name, *aliases):
            OPS[n] = func
        return func

    return deco


class _MissingOp:
    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"op '{self.name}' is not implemented in shardflow (no function registered for it); "
            "import shardflow (which registers all ops) or open an issue naming the op"
        )


def op(name: str) -> Callable:
    f = OPS.get(name)
    return f if f is not None else _MissingOp(name)
