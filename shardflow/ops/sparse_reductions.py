"""``torch.sparse.softmax`` / ``log_softmax`` / ``sum`` / ``addmm`` / ``spdiags`` on sparse COO
tensors (``ops/sparse_coo.py``), with gradients to the values.

* ``softmax(S, dim)`` over a sparse dimension: the specified entries that share every other
  sparse index form a group; unspecified entries count as ``-inf`` (so the result has ``S``'s
  pattern): ``y = exp(v - max_group) / sum_group exp(v - max_group)``, backward
  ``gv = y (gy - sum_group gy y)``; ``log_softmax``: ``y = v - max - log sum exp``, backward
  ``gv = gy - exp(y) sum_group gy``. Over a dense dimension it is the values' own softmax.
* ``sum(S, dim=None)``: all values (a dense 0-d tensor); over dense dimensions the values are
  summed; over sparse dimensions those index rows are dropped and the entries that then
  coincide are summed (``coalesce``); a result with no sparse dimension left is dense, as
  PyTorch's.
* ``addmm(mat, S, D, beta, alpha)``: ``beta * mat + alpha * (S @ D)`` (dense result).
* ``check_sparse_tensor_invariants``: PyTorch's switch, recorded (indices are always checked).
* ``spdiags(diagonals, offsets, shape)``: SciPy's convention: ``diagonals[k, j]`` goes to row
  ``j - offsets[k]``, column ``j`` (a coalesced COO matrix).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..backend import get_array_module
from ..backend.ufuncs import scatter_at
from .index import _add_at
from .sparse_coo import SparseTensor

# not ops of the dispatch table (COO tensors have their own paths): shardflow.sparse imports
# them by name
__all__: list[str] = []


def _groups(xp, idx, dim: int):
    """(nnz,) group id of each entry: the entries sharing every sparse index but ``dim``'s."""
    others = xp.concatenate([idx[:dim], idx[dim + 1:]], axis=0)  # (sparse_dim - 1, nnz)
    if others.shape[0] == 0:
        return xp.zeros(idx.shape[1], dtype=np.int64), 1
    _, inverse = xp.unique(others, axis=1, return_inverse=True)
    inverse = inverse.reshape(-1)
    return inverse, int(inverse.max()) + 1 if inverse.size else 0


class _GroupSoftmax(Function):
    """Softmax (or log-softmax) of ``values`` (nnz, *dense) within groups of entries."""

    save_inputs = ()

    def forward(self, values, groups=None, count=0, log=False):
        xp = get_array_module(values)
        self.groups, self.count, self.log = groups, count, log
        vmax = xp.full((count,) + values.shape[1:], -np.inf, dtype=values.dtype)
        scatter_at("maximum", vmax, groups, values)
        shifted = values - vmax[groups]
        e = xp.exp(shifted)
        total = xp.zeros((count,) + values.shape[1:], dtype=values.dtype)
        _add_at(total, groups, e)
        self.y = shifted - xp.log(total)[groups] if log else e / total[groups]
        return self.y

    def backward(self, g):
        xp = get_array_module(g)
        groups, y = self.groups, self.y
        total = xp.zeros((self.count,) + g.shape[1:], dtype=g.dtype)
        if self.log:
            _add_at(total, groups, g)
            return g - xp.exp(y) * total[groups]
        _add_at(total, groups, g * y)
        return y * (g - total[groups])


def _check_sparse(fn: str, input) -> SparseTensor:
    if not isinstance(input, SparseTensor):
        raise TypeError(f"torch.sparse.{fn}: expected a sparse COO tensor, got a dense tensor "
                        f"(use torch.{fn} for dense tensors, or .to_sparse() first)")
    return input


def _softmax(fn: str, input, dim: int, dtype, log: bool):
    s = _check_sparse(fn, input).coalesce()
    if dtype is not None:
        s = s.to(dtype)
    nd = s.ndim
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                         f"but got {dim})")
    dim %= nd
    sd = s.sparse_dim()
    vals = s._vals
    if dim >= sd:  # a dense dimension: the values' own softmax
        d = dim - sd + 1
        out = vals.log_softmax(d) if log else vals.softmax(d)
    else:
        xp = get_array_module(s._idx)
        groups, count = _groups(xp, s._idx, dim)
        out = _GroupSoftmax.apply(vals, groups=groups, count=count, log=log)
    return SparseTensor._make(s._idx, out, s.shape, True)


def sparse_softmax(input, dim: int, *, dtype=None):
    """``torch.sparse.softmax``: softmax over ``dim`` of the specified entries (see above)."""
    return _softmax("softmax", input, dim, dtype, log=False)


def sparse_log_softmax(input, dim: int, *, dtype=None):
    """``torch.sparse.log_softmax`` (see above)."""
    return _softmax("log_softmax", input, dim, dtype, log=True)


def sparse_sum(input, dim=None, dtype=None):
    """``torch.sparse.sum`` (see the module docstring)."""
    s = _check_sparse("sum", input)
    if dtype is not None:
        s = s.to(dtype)
    vals = s._vals
    if dim is None:
        return vals.sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    nd, sd = s.ndim, s.sparse_dim()
    norm = sorted({d % nd for d in dims})
    if any(not -nd <= d < nd for d in dims):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                         f"but got {dims})")
    dense_red = [d - sd + 1 for d in norm if d >= sd]
    if dense_red:
        vals = vals.sum(tuple(dense_red))
    sparse_red = [d for d in norm if d < sd]
    size = [n for i, n in enumerate(s.shape) if i not in norm]
    if not sparse_red:
        return SparseTensor._make(s._idx, vals, size, s.is_coalesced())
    keep = [i for i in range(sd) if i not in sparse_red]
    if not keep:
        return vals.sum(0)  # no sparse dimension left: dense, as PyTorch's
    idx = s._idx[keep]
    return SparseTensor._make(idx, vals, size, False).coalesce()


def sparse_addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0) -> Tensor:
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)``, ``mat1`` sparse."""
    prod = _check_sparse("addmm", mat1) @ mat2
    return mat * beta + prod * alpha


def spdiags(diagonals, offsets, shape, layout=None) -> SparseTensor:
    """``torch.sparse.spdiags``: a sparse matrix from rows of diagonals (see above)."""
    from ..backend.layout import sparse_coo

    if layout is not None and layout is not sparse_coo:
        raise ValueError(f"spdiags: only layout=torch.sparse_coo is supported here, got {layout}")
    if diagonals.ndim != 2:
        raise RuntimeError(f"Diagonals must be 2-dimensional, but got {diagonals.ndim} dimensions")
    offs = [int(o) for o in (offsets.tolist() if isinstance(offsets, Tensor) else offsets)]
    if len(offs) != diagonals.shape[0]:
        raise RuntimeError("Number of diagonals (" + str(diagonals.shape[0]) + ") does not match the "
                           "number of offsets (" + str(len(offs)) + ")")
    if len(set(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    m, n = (int(v) for v in shape)
    rows, cols, picks = [], [], []
    width = diagonals.shape[1]
    for k, off in enumerate(offs):
        j = np.arange(max(0, off), min(n, m + off, width))  # columns this diagonal reaches
        rows.append(j - off), cols.append(j), picks.append(k * width + j)
    rows, cols, picks = (np.concatenate(a) if a else np.zeros(0, np.int64) for a in (rows, cols, picks))
    order = np.lexsort((cols, rows))  # row-major, as coalesce
    flat = diagonals.reshape(-1)
    xp = get_array_module(diagonals.array)
    vals = flat[xp.asarray(picks[order])]
    idx = xp.asarray(np.stack([rows[order], cols[order]]).astype(np.int64))
    return SparseTensor._make(idx, vals, (m, n), True)


_check_invariants = [False]


class check_sparse_tensor_invariants:  # noqa: N801 - PyTorch's name
    """PyTorch's switch for checking sparse constructors' indices: a context manager, decorator
    and ``enable()`` / ``disable()`` / ``is_enabled()``. The flag is recorded and answered, but
    shardflow checks COO indices against the size at every construction whatever it says
    (``ops/sparse_coo.py``), so disabling it skips nothing."""

    @staticmethod
    def is_enabled() -> bool:
        return _check_invariants[0]

    @staticmethod
    def enable() -> None:
        _check_invariants[0] = True

    @staticmethod
    def disable() -> None:
        _check_invariants[0] = False

    def __init__(self, enable=True):
        self.state = enable
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated."
                               " Use a different context manager instance for context nesting.")
        self.saved_state = self.is_enabled()
        _check_invariants[0] = self.state

    def __exit__(self, type, value, traceback):
        _check_invariants[0] = self.saved_state
        self.saved_state = None

    def __call__(self, mth):
        def test_mth(*args, **kwargs):
            with type(self)(self.state):
                return mth(*args, **kwargs)

        return test_mth
