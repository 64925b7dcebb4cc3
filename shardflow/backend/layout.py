"""Tensor layouts: ``shardflow.strided`` (every dense tensor) and ``shardflow.sparse_coo``
(``ops/sparse_coo.py``), PyTorch's ``torch.layout`` values (``t.layout``)."""

from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo", "jagged"]


class NamedConstant:
    """A named module-level constant (compared by identity, printed as PyTorch prints it):
    the base of ``layout`` and ``memory_format`` (``memory_format.py``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"shardflow.{self.name}"

    def __reduce__(self):
        return self.name  # pickles as the module attribute, so identity survives


class layout(NamedConstant):
    """A named tensor layout."""

    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
# torch.jagged: the layout of nested tensors, which shardflow does not build (shardflow.nested
# refuses clearly); the constant exists for code that names it
jagged = layout("jagged")
