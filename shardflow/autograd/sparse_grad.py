"""A sparse COO gradient carried through the backward engine: what ``Embedding(sparse=True)``
/ ``F.embedding(..., sparse=True)`` and ``EmbeddingBag(sparse=True)`` give their weight, as
PyTorch's ``embedding_sparse_backward`` does, so ``.grad`` is a sparse COO tensor and
``SparseAdam``, ``SGD`` and ``Adagrad`` update only the rows a batch used.

Representation: ``indices`` (1-D int64 rows, duplicates allowed: uncoalesced, in the order
the ids came, as PyTorch's) and ``values`` (``(nnz, *D)``) of a ``shape = (V, *D)`` gradient.

Rules (PyTorch's accumulation of a sparse gradient):

* the engine sums gradients with ``+``: sparse + sparse concatenates (still sparse, as two
  sparse gradients of one leaf accumulate in PyTorch); sparse + dense scatters the rows
  into a dense copy (``__array_ufunc__ = None`` makes ``ndarray + SparseGrad`` come here);
* at the leaf (``engine._accumulate_leaf``): no ``.grad`` yet -> a sparse tensor; a sparse
  ``.grad`` -> a sparse tensor of both; a dense ``.grad`` -> the rows added into it in place.

The embedding's backward makes one only when its weight is a leaf whose gradient the plain
engine delivers (no post-accumulate hooks, as DDP/FSDP install, which read dense arrays):
every other path keeps the dense gradient. The sparse ``Tensor`` is made by the op
``_sparse_grad_tensor`` (``ops/sparse_coo.py``), looked up in the dispatch table because
sparse tensors live in the layer above.
"""

from __future__ import annotations

import numpy as np

from ..backend import get_array_module
from .dispatch import OPS


class SparseGrad:
    """Rows ``indices`` of a ``shape`` gradient hold ``values`` (see the module docstring)."""

    __slots__ = ("indices", "values", "shape")
    __array_ufunc__ = None  # ``ndarray + SparseGrad`` -> ``SparseGrad.__radd__``

    def __init__(self, indices, values, shape):
        self.indices, self.values, self.shape = indices, values, tuple(shape)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def astype(self, dtype) -> SparseGrad:
        return SparseGrad(self.indices, self.values.astype(dtype), self.shape)

    def to_dense(self):
        xp = get_array_module(self.values)
        out = xp.zeros(self.shape, self.values.dtype)
        xp.add.at(out, self.indices, self.values)
        return out

    def __add__(self, other):
        if isinstance(other, SparseGrad):
            xp = get_array_module(self.values)
            return SparseGrad(xp.concatenate([self.indices, other.indices]),
                              xp.concatenate([self.values, other.values]), self.shape)
        out = self.to_dense()
        out += other
        return out

    __radd__ = __add__

    def tensor(self):
        """The sparse COO ``Tensor`` of this gradient (``layout=sparse_coo``, uncoalesced)."""
        return OPS["_sparse_grad_tensor"](self.indices, self.values, self.shape)

    @classmethod
    def of_tensor(cls, t) -> SparseGrad:
        """A sparse COO tensor with one sparse dim (what a tensor hook may return) as rows."""
        if t.sparse_dim() != 1:
            raise RuntimeError(f"a hook on an embedding's weight returned a sparse gradient with "
                               f"{t.sparse_dim()} sparse dims; it must keep the rows (1 sparse dim)")
        return cls(t._indices().array[0], t._values().array, tuple(t.shape))


# whether any sparse .grad was made in this process: optimizers without a sparse step check
# their gradients (optim/sparse_steps.py) only then, so dense training pays one list read
made = [False]


def accumulate_sparse(leaf, g: SparseGrad) -> None:
    """Add the sparse gradient ``g`` into ``leaf.grad`` (PyTorch's AccumulateGrad rules)."""
    made[0] = True
    grad = leaf.grad
    if grad is None:
        leaf.grad = g.tensor()
    elif grad.is_sparse:
        leaf.grad = (SparseGrad.of_tensor(grad) + g).tensor()
    else:  # dense .grad (set by the user, or an earlier dense backward): rows added in place
        a = grad.array
        get_array_module(a).add.at(a, g.indices, g.values.astype(a.dtype, copy=False))


def zeroed(grad):
    """``grad.zero_()`` of a sparse ``.grad`` (``zero_grad(set_to_none=False)``): no rows."""
    vals = grad._values().array
    xp = get_array_module(vals)
    return SparseGrad(xp.zeros(0, np.int64), vals[:0].copy(), tuple(grad.shape)).tensor()


def rows_of(ids, grad_rows, shape, padding_idx=None) -> SparseGrad:
    """The sparse weight gradient of an embedding: ``grad_rows[k]`` at row ``ids[k]``, rows
    equal to ``padding_idx`` left out (PyTorch drops them from the sparse gradient)."""
    ids = ids.reshape(-1).astype(np.int64, copy=False)
    if padding_idx is not None:
        keep = ids != padding_idx
        ids, grad_rows = ids[keep], grad_rows[keep]
    return SparseGrad(ids, grad_rows, shape)
