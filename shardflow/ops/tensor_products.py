"""Products PyTorch has beside matmul: ``kron``, ``tensordot``, ``cross``
(and ``linalg_cross``), ``addmv``, ``addr``. Each is composed of differentiable ops
(reshape/permute/mul/matmul/index), so its gradient is theirs.

Dtypes follow PyTorch, which is not uniform here: ``kron`` and ``addr`` promote mixed operands
(``kron(int64, float32)`` is float32, like ``outer``); ``tensordot``, ``cross`` and
``addmv`` require one dtype and raise PyTorch's error naming both.

* ``kron(a, b)``: both padded to the same rank, ``a`` reshaped to ``(a0, 1, a1, 1, ...)``
  and ``b`` to ``(1, b0, 1, b1, ...)``, multiplied, and the pairs of dims merged:
  ``out[i*B + k] = a[i] * b[k]`` per dim.
* ``tensordot(a, b, dims)``: the contracted dims of ``a`` moved last, those of ``b`` first,
  both flattened to matrices, one ``matmul``, then reshaped to the free dims.
* ``cross(a, b, dim)``: the three components along ``dim`` (``a1 b2 - a2 b1``, ...), after
  broadcasting; ``dim=None`` takes the first dim of size 3 of ``input`` (PyTorch's deprecated default);
  the cross dim itself must have length 3 in both inputs (it does not broadcast).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd import Tensor
from ..autograd.dispatch import register
from ..backend.user_warning import first_time
from ._util import as_tensor_arg, promote, wrap_dim

__all__ = ["kron", "tensordot", "cross", "linalg_cross", "addmv", "addr"]


def _same(a: Tensor, b: Tensor, op: str) -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{op}: expected both inputs to have the same dtype, but got {a.dtype} and {b.dtype}; "
            "cast one with .to(other.dtype)"
        )


@register("kron")
def kron(input, other) -> Tensor:
    """``torch.kron``: the Kronecker product (mixed dtypes promote, as in PyTorch)."""
    a, b = promote(as_tensor_arg(input), as_tensor_arg(other, "other"))
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + tuple(a.shape)
    sb = (1,) * (n - b.ndim) + tuple(b.shape)
    a2 = a.reshape(tuple(x for d in sa for x in (d, 1)))  # (a0, 1, a1, 1, ...)
    b2 = b.reshape(tuple(x for d in sb for x in (1, d)))  # (1, b0, 1, b1, ...)
    return (a2 * b2).reshape(tuple(x * y for x, y in zip(sa, sb)))


def _dims_lists(dims, na: int, nb: int):
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int | np.integer):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        return list(range(na - dims, na)), list(range(dims))
    da, db = dims
    da = [da] if isinstance(da, int | np.integer) else list(da)
    db = [db] if isinstance(db, int | np.integer) else list(db)
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got {da} and {db}")
    return [wrap_dim(int(d), na) for d in da], [wrap_dim(int(d), nb) for d in db]


@register("tensordot")
def tensordot(a, b, dims=2) -> Tensor:
    """``torch.tensordot``: contract ``dims`` (an int: the last dims of ``a`` with the first
    of ``b``; or two lists of dims) in one matrix product."""
    from .matmul import matmul

    a, b = as_tensor_arg(a, "a"), as_tensor_arg(b, "b")
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"both inputs should have same dtype, got {a.dtype} and {b.dtype}; cast one with "
            ".to(other.dtype)")
    da, db = _dims_lists(dims, a.ndim, b.ndim)
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} "
                f"and second has size {b.shape[j]} in dim {j}")
    free_a = [i for i in range(a.ndim) if i not in da]
    free_b = [j for j in range(b.ndim) if j not in db]
    k = int(np.prod([a.shape[i] for i in da], dtype=np.int64))
    am = a.permute(free_a + da).reshape(-1, k)  # (free_a, k)
    bm = b.permute(db + free_b).reshape(k, -1)  # (k, free_b)
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[j] for j in free_b)
    return matmul(am, bm).reshape(out_shape)


def _cross(a: Tensor, b: Tensor, dim: int, op: str) -> Tensor:
    from .shape import broadcast_tensors, select, stack

    _same(a, b, op)
    if a.ndim != b.ndim:
        raise RuntimeError(
            f"linalg.cross: inputs must have the same number of dimensions (got shapes "
            f"{tuple(a.shape)} and {tuple(b.shape)}); unsqueeze the smaller one")
    n = a.ndim
    d = wrap_dim(dim, n)
    sizes = [t.shape[d - (n - t.ndim)] if d - (n - t.ndim) >= 0 else 1 for t in (a, b)]
    if sizes != [3, 3]:  # the cross dim itself does not broadcast (PyTorch)
        raise RuntimeError(
            f"{op}: inputs dimension {dim} must have length 3. Got {sizes[0]} and {sizes[1]}")
    a, b = broadcast_tensors(a, b)
    a0, a1, a2 = (select(a, d, i) for i in range(3))
    b0, b1, b2 = (select(b, d, i) for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def _warn_cross_once() -> None:
    """torch's deprecation warning for ``cross`` without ``dim``, once per process as torch's
    ``TORCH_WARN_ONCE``."""
    if first_time("cross_without_dim"):
        warnings.warn("Using cross without specifying the dim arg is deprecated.\nPlease either pass "
                      "the dim explicitly or simply use linalg.cross.\nThe default value of dim will "
                      "change to agree with that of linalg.cross in a future release.", UserWarning,
                      stacklevel=4)


@register("cross")
def cross(input, other, dim=None) -> Tensor:
    """``torch.cross``: the 3-vector cross product along ``dim`` (``None``: the first dim of
    size 3, PyTorch's deprecated default)."""
    a, b = as_tensor_arg(input), as_tensor_arg(other, "other")
    if dim is None:  # PyTorch: the first dim of size 3 of the input, with its deprecation warning
        _warn_cross_once()
        dim = next((i for i, s in enumerate(a.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input (shape {tuple(a.shape)})")
    return _cross(a, b, dim, "cross")


@register("linalg_cross")
def linalg_cross(input, other, *, dim=-1) -> Tensor:
    """``torch.linalg.cross``: the cross product along ``dim`` (default the last)."""
    return _cross(as_tensor_arg(input), as_tensor_arg(other, "other"), dim, "linalg.cross")


@register("addmv")
def addmv(input, mat, vec, *, beta=1, alpha=1) -> Tensor:
    """``torch.addmv``: ``beta * input + alpha * (mat @ vec)`` (one dtype, as PyTorch)."""
    from .matmul import _scaled_add, mv

    t = as_tensor_arg(input)
    mat, vec = as_tensor_arg(mat, "mat"), as_tensor_arg(vec, "vec")
    if not (t.dtype is mat.dtype is vec.dtype):
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {t.dtype}, {mat.dtype} and "
            f"{vec.dtype}; cast them with .to(dtype)")
    return _scaled_add(t, mv(mat, vec), beta, alpha)


@register("addr")
def addr(input, vec1, vec2, *, beta=1, alpha=1) -> Tensor:
    """``torch.addr``: ``beta * input + alpha * outer(vec1, vec2)`` (mixed dtypes promote)."""
    from .matmul import _scaled_add, outer

    return _scaled_add(as_tensor_arg(input), outer(vec1, vec2), beta, alpha)
