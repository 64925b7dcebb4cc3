"""Tensor layouts: ``shardflow.strided`` (every dense tensor) and ``shardflow.sparse_coo``
(``ops/sparse_coo.py``), PyTorch's ``torch.layout`` values (``t.layout``)."""

from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo"]


class layout:
    """A named tensor layout (compared by identity, printed as PyTorch prints it)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"shardflow.{self.name}"

    def __reduce__(self):
        return self.name  # pickles as the module attribute, so identity survives


strided = layout("strided")
sparse_coo = layout("sparse_coo")
