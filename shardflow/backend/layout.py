"""Tensor layouts: ``shardflow.strided`` (every dense tensor), ``shardflow.sparse_coo``
(``ops/sparse_coo.py``), ``sparse_csr`` / ``sparse_csc`` (``ops/sparse_compressed.py``) and
``sparse_bsr`` / ``sparse_bsc`` (named only: their constructors refuse), PyTorch's ``torch.layout`` values (``t.layout``)."""

from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged"]


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
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
# torch.jagged: the layout of nested tensors, which shardflow does not build (shardflow.nested
# refuses clearly); the constant exists for code that names it
jagged = layout("jagged")
