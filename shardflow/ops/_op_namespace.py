"""``torch.ops.<namespace>.<op>``: the registry behind ``shardflow.ops``'s namespace attributes.

In torch, ``torch.ops`` is the dispatcher's operator table: ``torch.ops.aten.add`` is the
built-in ``add``, ``torch.ops.mylib.crop`` an operator a program defined with
``torch.library`` (``custom_op``, ``Library.define``). In shardflow ``shardflow.ops`` is this
package of differentiable ops, and its module ``__getattr__`` (PEP 562) answers the names it
does not define from here:

* ``aten`` — the registered ops (``autograd/dispatch.py``) by their torch names; any overload
  name (``torch.ops.aten.add.Tensor``, ``.default``, ``.out``) is the same function, since a
  shardflow op takes every overload's arguments (Tensor or Scalar ``other``, ``out=``).
* a namespace ``shardflow.library`` registered (``register_namespace``, ``register_op``):
  its operators (``OpOverloadPacket`` objects, which live in ``shardflow.library``, a layer
  above: this module only stores them).

Any other name raises AttributeError, so ``hasattr(shardflow.ops, name)`` stays False for
names no library defined (torch creates a namespace for any name on first access).
"""

from __future__ import annotations

from ..autograd import dispatch

__all__ = ["namespace", "register_namespace", "register_op", "remove_op", "lookup"]

# namespace -> {op name -> packet}; a namespace with no ops yet is an empty dict
_NAMESPACES: dict[str, dict[str, object]] = {}


class OpNamespace:
    """``torch.ops.<name>``: attribute access gives the namespace's operators."""

    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, op_name: str):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        packet = _NAMESPACES.get(self.name, {}).get(op_name)
        if packet is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'")
        return packet

    def __dir__(self):
        return sorted(_NAMESPACES.get(self.name, {}))

    def __repr__(self) -> str:
        return f"<module 'torch.ops.{self.name}' from 'torch.ops'>"


class _AtenOverload:
    """``torch.ops.aten.<op>`` and each of its overloads: the registered op ``name``."""

    def __init__(self, name: str, overload: str | None = None):
        self._name = name
        self._overloadname = overload

    def __call__(self, *args, **kwargs):
        return dispatch.op(self._name)(*args, **kwargs)

    def __getattr__(self, overload: str):
        if overload.startswith("_") or self._overloadname is not None:
            raise AttributeError(overload)
        return _AtenOverload(self._name, overload)

    def name(self) -> str:
        return f"aten::{self._name}" + ("" if self._overloadname in (None, "default") else f".{self._overloadname}")

    def __repr__(self) -> str:
        tail = "" if self._overloadname is None else f".{self._overloadname}"
        return f"aten.{self._name}{tail}"


class _AtenNamespace(OpNamespace):
    def __getattr__(self, op_name: str):
        if op_name.startswith("__") or op_name not in dispatch.OPS:
            raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{op_name}'")
        return _AtenOverload(op_name)

    def __dir__(self):
        return sorted(dispatch.OPS)


_ATEN = _AtenNamespace("aten")


def namespace(name: str):
    """The namespace object for ``shardflow.ops.<name>``; AttributeError if none is defined."""
    if name == "aten":
        return _ATEN
    if name in _NAMESPACES:
        return OpNamespace(name)
    raise AttributeError(f"module 'shardflow.ops' has no attribute {name!r} (no torch.library "
                         f"namespace {name!r} is defined: define its operators with "
                         "torch.library.custom_op or torch.library.Library first)")


def register_namespace(ns: str) -> None:
    _NAMESPACES.setdefault(ns, {})


def register_op(ns: str, name: str, packet) -> None:
    _NAMESPACES.setdefault(ns, {})[name] = packet


def remove_op(ns: str, name: str) -> None:
    _NAMESPACES.get(ns, {}).pop(name, None)


def lookup(ns: str, name: str):
    """The packet ``ns::name`` or None."""
    return _NAMESPACES.get(ns, {}).get(name)
