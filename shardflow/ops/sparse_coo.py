"""Sparse COO tensors, the part graph networks (pygcn, pyGAT) use: ``sparse_coo_tensor``,
``Tensor.to_sparse``, ``coalesce``, ``indices``/``values``, ``to_dense``, ``is_sparse``,
``torch.sparse.mm`` / ``torch.spmm`` / ``torch.mm`` / ``matmul`` / ``@`` of a sparse matrix and
a dense one, with gradients to the dense operand and to the sparse values.

Representation: ``SparseTensor`` holds ``indices`` (an int64 backend array of shape
``(sparse_dim, nnz)``), ``values`` (a Tensor of shape ``(nnz, *dense_dims)`` that carries
the autograd graph) and the size. It is a ``Tensor`` subclass, so ``is_tensor`` and
``isinstance`` checks hold, but it has no dense ``array``: an op without a sparse form
raises an error naming the sparse ops and the ``to_dense()`` fix instead of computing on
wrong data. Its ``requires_grad``/``grad_fn``/``grad`` are those of its values (``grad`` of a
sparse leaf is sparse with the leaf's pattern, as in PyTorch).

Kernels are NumPy (or CuPy) index arithmetic, not SciPy: no new dependency, the same code on
both devices, and ``add.at`` is the scatter the dense index ops already use (measured best
or close among add.at / sort + reduceat / bincount, ``ops/index.py``):

* ``to_dense``: ``out[tuple(indices)] += values`` (``add.at``: duplicates add up); backward
  gathers ``g[tuple(indices)]``.
* ``coalesce``: linear index per entry, ``unique`` (sorted, so row-major order as PyTorch's),
  values summed per unique index with ``add.at``; backward ``g[inverse]``.
* ``spmm(S, D)`` for a 2-D ``S`` (n, m) and ``D`` (m, k): ``out[r] += v * D[c]`` per entry;
  backward ``gD[c] += v * g[r]`` and ``gv = sum_j g[r, j] D[c, j]``.
* ``to_sparse``: the non-zero positions of the dense tensor (``nonzero``, row-major) and the
  values gathered there by the differentiable index op, so gradients reach the dense input.

Validation is stricter than PyTorch's default: indices are checked against the size at
construction (PyTorch checks only with ``check_invariants=True`` and may crash otherwise).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, _wrap, no_grad
from ..autograd import _tensor_str as _ts
from ..autograd.dispatch import OPS, register
from ..backend import CPU, as_dtype, device_of, dtypes, get_array_module, to_device
from ..backend.layout import sparse_coo
from ._factory_options import check_factory_options
from ._util import as_tensor_arg
from .index import _add_at

# to_sparse / to_dense are Tensor methods only and sparse_mm is torch.sparse.mm (as in
# PyTorch): registered, not exported at the top level
__all__ = ["sparse_coo_tensor", "spmm"]

_SUPPORTED = ("to_dense, coalesce, indices/values, sparse.mm/spmm/mm/matmul/@ with a dense "
              "matrix, t/transpose, * and / by a number, +/- of sparse tensors, dense +/- sparse "
              "(dense result), to(device/dtype)")


class SparseTensor(Tensor):
    """A sparse COO tensor (``layout=torch.sparse_coo``); see the module docstring."""

    # ``array`` (a slot of Tensor) is shadowed: a dense view of sparse data does not exist
    @property
    def array(self):
        raise RuntimeError(
            "this operation does not support sparse tensors (layout=torch.sparse_coo); sparse "
            f"tensors support: {_SUPPORTED}. Convert with .to_dense() first"
        )

    @classmethod
    def _make(cls, indices, values: Tensor, shape, coalesced: bool) -> SparseTensor:
        t = object.__new__(cls)
        t._version_counter = [0]
        t._hooks = None
        t._post_hooks = None
        t._spec = None
        t._output_nr = 0
        t.__dict__["_idx"] = indices
        t.__dict__["_vals"] = values
        t.__dict__["_size"] = tuple(int(s) for s in shape)
        t.__dict__["_coalesced"] = bool(coalesced)
        return t

    # ---------------------------------------------------------------- autograd: the values'
    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        self._vals.requires_grad_(bool(value))

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @grad_fn.setter
    def grad_fn(self, value) -> None:
        if value is not None:
            raise RuntimeError("the grad_fn of a sparse tensor is the one of its values")

    @property
    def grad(self):
        """The leaf's gradient as a sparse tensor on its unique positions (PyTorch's
        ``sparse_mask``): every copy of a duplicated entry received the same gradient, so
        the first copy's is the gradient at that position."""
        g = self._vals.grad
        if g is None:
            return None
        if self._coalesced:
            return SparseTensor._make(self._idx, g, self._size, True)
        xp = get_array_module(self._idx)
        sdims = self._size[: self.sparse_dim()]
        uniq, first = xp.unique(xp.ravel_multi_index(tuple(self._idx), sdims), return_index=True)
        idx = xp.stack(xp.unravel_index(uniq, sdims)).astype(np.int64)
        return SparseTensor._make(idx, _wrap(g.array[first]), self._size, True)

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._vals.grad = None
        elif isinstance(value, SparseTensor):
            self._vals.grad = value._vals
        else:
            raise RuntimeError("the gradient of a sparse tensor must be sparse (or None)")

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        self._vals.requires_grad_(requires_grad)
        return self

    def detach(self) -> SparseTensor:
        return SparseTensor._make(self._idx, self._vals.detach(), self._size, self._coalesced)

    @property
    def data(self) -> SparseTensor:
        return self.detach()

    # ---------------------------------------------------------------- metadata
    @property
    def shape(self):
        from ..autograd import Size

        return Size(self._size)

    def size(self, dim=None):
        if dim is None:
            return self.shape
        return self._size[dim]

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def device(self):
        return self._vals.device

    @property
    def ndim(self) -> int:
        return len(self._size)

    def dim(self) -> int:
        return len(self._size)

    ndimension = dim

    def numel(self) -> int:
        return int(np.prod(self._size, dtype=np.int64))

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def layout(self):
        return sparse_coo

    def is_floating_point(self) -> bool:
        return self._vals.is_floating_point()

    def is_complex(self) -> bool:
        return self._vals.is_complex()

    def sparse_dim(self) -> int:
        return int(self._idx.shape[0])

    def dense_dim(self) -> int:
        return len(self._size) - self.sparse_dim()

    def _nnz(self) -> int:
        return int(self._idx.shape[1])

    def is_coalesced(self) -> bool:
        return self._coalesced

    def __len__(self) -> int:
        return self._size[0]

    # ---------------------------------------------------------------- contents
    def _indices(self) -> Tensor:
        return _wrap(self._idx)

    def _values(self) -> Tensor:
        return self._vals

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return _wrap(self._idx)

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def coalesce(self) -> SparseTensor:
        """Duplicates summed, entries in row-major order (a new tensor; this one if already)."""
        if self._coalesced:
            return self
        xp = get_array_module(self._idx)
        sdims = self._size[: self.sparse_dim()]
        if self._nnz() == 0:
            return SparseTensor._make(self._idx, self._vals, self._size, True)
        linear = xp.ravel_multi_index(tuple(self._idx), sdims)
        uniq, inverse = xp.unique(linear, return_inverse=True)
        idx = xp.stack(xp.unravel_index(uniq, sdims)).astype(np.int64)
        vals = Coalesce.apply(self._vals, inverse=inverse.reshape(-1), count=int(uniq.shape[0]))
        return SparseTensor._make(idx, vals, self._size, True)

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        out = ToDense.apply(self._vals, indices=self._idx, shape=self._size)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout is None or layout is sparse_coo:
            return self
        return to_sparse(self, sparse_dim, layout=layout, blocksize=blocksize, dense_dim=dense_dim)

    def t(self) -> SparseTensor:
        if self.ndim != 2 or self.sparse_dim() != 2:
            raise RuntimeError(f"t() expects a 2-D sparse tensor, got size {self._size}")
        return SparseTensor._make(self._idx[::-1].copy(), self._vals, self._size[::-1], False)

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        d = sorted(x % self.ndim for x in (dim0, dim1))
        if d == [0, 1] and self.ndim == 2:
            return self.t()
        raise RuntimeError("transpose of a sparse tensor: only the two dims of a 2-D matrix are supported")

    def to(self, *args, **kwargs) -> SparseTensor:
        values = self._vals.to(*args, **kwargs)
        idx = self._idx
        if str(device_of(idx)) != str(values.device):
            idx = to_device(idx, values.device)
        return SparseTensor._make(idx, values, self._size, self._coalesced)

    def type_as(self, other):
        return self.to(other.dtype)

    def numpy(self, *, force=False):
        raise TypeError("can't convert a sparse tensor to numpy; call .to_dense().numpy()")

    def __reduce_ex__(self, protocol):
        return (_rebuild_sparse, (to_device(self._idx, CPU), self._vals.detach().numpy().copy(),
                                  self._size, self._coalesced))

    # ---------------------------------------------------------------- arithmetic
    def __matmul__(self, other):
        return sparse_mm(self, other)

    def mm(self, other):
        return sparse_mm(self, other)

    matmul = mm

    def __rmatmul__(self, other):
        return _sparse_matmul(other, self)

    def _scaled(self, factor, divide=False) -> SparseTensor:
        if isinstance(factor, Tensor) and factor.numel() == 1 and not factor.is_sparse:
            factor = factor.reshape(())
        elif not isinstance(factor, int | float | complex | np.number):
            raise RuntimeError("a sparse tensor can be multiplied or divided by a number only; "
                               "use .to_dense() for elementwise products")
        vals = self._vals / factor if divide else self._vals * factor
        return SparseTensor._make(self._idx, vals, self._size, self._coalesced)

    def __mul__(self, other):
        return self._scaled(other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self._scaled(other, divide=True)

    def __neg__(self):
        return self._scaled(-1)

    def __add__(self, other):
        if not isinstance(other, SparseTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead (dense + sparse gives a dense tensor)")
        if other._size != self._size:
            raise RuntimeError(f"sparse add: sizes differ, {self._size} and {other._size}")
        from .shape import cat

        xp = get_array_module(self._idx)
        return SparseTensor._make(xp.concatenate([self._idx, other._idx], 1),
                                  cat([self._vals, other._vals], 0), self._size, False)

    def __sub__(self, other):
        return self + (-other)

    # dense + sparse / dense - sparse: a dense result (PyTorch's). SparseTensor subclasses
    # Tensor, so Python asks these reflected forms before Tensor.__add__ / __sub__.
    def __radd__(self, other):
        if isinstance(other, Tensor):
            return other + self.to_dense()
        raise RuntimeError("a sparse tensor can be added to a tensor only")

    def __rsub__(self, other):
        if isinstance(other, Tensor):
            return other - self.to_dense()
        raise RuntimeError("a sparse tensor can be subtracted from a tensor only")

    def __repr__(self) -> str:
        return _sparse_repr(self)

    __str__ = __repr__


def _rebuild_sparse(indices, values, size, coalesced):
    return SparseTensor._make(indices, Tensor(values), size, coalesced)


def _sparse_repr(t: SparseTensor) -> str:
    """PyTorch's format: ``tensor(indices=tensor(...),\\n       values=tensor(...),\\n
    size=..., nnz=..., layout=torch.sparse_coo)``."""
    indent = len("tensor(")
    idx = t._idx if isinstance(t._idx, np.ndarray) else to_device(t._idx, CPU)
    vals = t._vals.detach().numpy()
    ip, vp = "indices=tensor(", "values=tensor("
    istr = _ts.array_str(idx, indent + len(ip))
    if idx.size == 0:
        istr += f", size={tuple(idx.shape)}"
    vstr = _ts.array_str(vals, indent + len(vp))
    if vals.size == 0:
        vstr += f", size={tuple(vals.shape)}"
    body = "tensor(" + ip + istr + "),\n" + " " * indent + vp + vstr + ")"
    suffixes = []
    if t.device.type != "cpu":
        suffixes.insert(0, f"device='{t.device}'")
    suffixes += [f"size={t._size}", f"nnz={t._nnz()}"]
    d = t.dtype
    if d not in (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool_, dtypes.get_default_complex_dtype()):
        suffixes.append(f"dtype={d}")
    suffixes.append(f"layout={sparse_coo}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _ts._add_suffixes(body, suffixes, indent, force_newline=True)


# ------------------------------------------------------------------------------- Functions
class _SparseCooTensor(Function):
    """Identity on the values: makes a sparse tensor built from values that require grad a
    non-leaf with a ``grad_fn`` (PyTorch's ``SparseCooTensorWithDimsAndTensorsBackward``)."""

    save_inputs = ()

    def forward(self, values):
        return values

    def backward(self, g):
        return g

    def name(self) -> str:
        return "SparseCooTensor"


class ToDense(Function):
    save_inputs = ()

    def forward(self, values, indices=None, shape=None):
        xp = get_array_module(values)
        self.idx = tuple(indices)
        out = xp.zeros(shape, dtype=values.dtype)
        _add_at(out, self.idx, values)
        return out

    def backward(self, g):
        return g[self.idx]


class Coalesce(Function):
    save_inputs = ()

    def forward(self, values, inverse=None, count=0):
        xp = get_array_module(values)
        self.inverse = inverse
        out = xp.zeros((count,) + values.shape[1:], dtype=values.dtype)
        _add_at(out, inverse, values)
        return out

    def backward(self, g):
        return g[self.inverse]


class SpMM(Function):
    """out = S @ D for a 2-D sparse S given by (rows, cols, values)."""

    save_inputs = (0, 1)

    def forward(self, values, dense, rows=None, cols=None, n=0):
        xp = get_array_module(dense)
        self.values, self.dense, self.rows, self.cols = values, dense, rows, cols
        out = xp.zeros((n,) + dense.shape[1:], dtype=np.result_type(values, dense))
        contrib = values.reshape((-1,) + (1,) * (dense.ndim - 1)) * dense[cols]  # (nnz, k)
        _add_at(out, rows, contrib)
        return out

    def backward(self, g):
        xp = get_array_module(g)
        v, d, rows, cols = self.values, self.dense, self.rows, self.cols
        gv = gd = None
        g_rows = g[rows]  # (nnz, k)
        if self.needs_input_grad[0]:
            prod = g_rows * (d[cols].conjugate() if d.dtype.kind == "c" else d[cols])
            gv = prod.reshape(prod.shape[0], -1).sum(-1).astype(v.dtype, copy=False)
        if self.needs_input_grad[1]:
            gd = xp.zeros(d.shape, dtype=g.dtype)
            vv = v.conjugate() if v.dtype.kind == "c" else v
            _add_at(gd, cols, vv.reshape((-1,) + (1,) * (d.ndim - 1)) * g_rows)
        return gv, gd


# ------------------------------------------------------------------------------- functional
def _index_array(indices):
    if isinstance(indices, SparseTensor):
        raise TypeError("indices must be a dense integer tensor")
    if isinstance(indices, Tensor):
        a = indices.array
    else:
        a = np.asarray(indices)
    if a.dtype.kind not in "iu":
        raise RuntimeError(f"indices must be an int64 tensor, got {a.dtype}")
    return a.astype(np.int64, copy=False)


@register("sparse_coo_tensor")
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None) -> SparseTensor:
    """``torch.sparse_coo_tensor(indices, values, size)``: entries ``values[k]`` at
    ``indices[:, k]`` (duplicates allowed; they add up). ``size`` defaults to the smallest
    that holds every index. With ``requires_grad=True`` the tensor is a new leaf whose
    ``grad`` is sparse (the values' gradient on the same pattern). ``pin_memory=True`` as
    ``Tensor.pin_memory()`` (``_factory_options.py``)."""
    check_factory_options("sparse_coo_tensor", pin_memory=pin_memory)
    idx = _index_array(indices)
    if idx.ndim != 2:
        raise RuntimeError(
            f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}; pass a 2-D tensor "
            "with one row per sparse dimension")
    vals = values if isinstance(values, Tensor) else Tensor(values)
    if dtype is not None:
        vals = vals.to(as_dtype(dtype))
    if device is not None:
        vals = vals.to(device)
    if vals.ndim < 1 or vals.shape[0] != idx.shape[1]:
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices: {idx.shape[1]}, "
            f"nnz from values: {vals.shape[0] if vals.ndim else 'a 0-d tensor'}")
    sparse_dim = idx.shape[0]
    if size is None:
        mx = idx.max(axis=1) + 1 if idx.shape[1] else np.zeros(sparse_dim, np.int64)
        size = tuple(int(s) for s in mx) + tuple(vals.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + vals.ndim - 1:
        raise RuntimeError(
            f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim "
            f"({vals.ndim - 1}), but got {len(size)} (size {size})")
    if tuple(vals.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError(f"values has incorrect size, expected {[idx.shape[1], *size[sparse_dim:]]}, got {list(vals.shape)}")
    if idx.shape[1]:
        lo, hi = idx.min(axis=1), idx.max(axis=1)
        for d in range(sparse_dim):
            if int(lo[d]) < 0:
                raise RuntimeError(f"found negative index {int(lo[d])} for dim {d}")
            if int(hi[d]) >= size[d]:
                raise RuntimeError(
                    f"size is inconsistent with indices: for dim {d}, size is {size[d]} but "
                    f"found index {int(hi[d])}")
    if str(vals.device) != "cpu" or not isinstance(idx, np.ndarray):
        idx = to_device(idx, vals.device)
    if requires_grad:
        vals = vals.detach().requires_grad_(True)  # the sparse tensor is the new leaf
    elif vals.requires_grad:
        vals = _SparseCooTensor.apply(vals)  # a node, so the sparse tensor is not a leaf
    coalesced = bool(is_coalesced) if is_coalesced is not None else idx.shape[1] <= 1
    return SparseTensor._make(idx, vals, size, coalesced)


@register("_sparse_grad_tensor")
def _sparse_grad_tensor(rows, values, size) -> SparseTensor:
    """The sparse COO ``.grad`` of an embedding's weight: ``values[k]`` at row ``rows[k]``
    (uncoalesced, as PyTorch's ``embedding_sparse_backward``; ``autograd/sparse_grad.py``)."""
    xp = get_array_module(values)
    return SparseTensor._make(xp.asarray(rows, dtype=np.int64).reshape(1, -1), _wrap(values), size, False)


@register("to_sparse")
def to_sparse(input, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> SparseTensor:
    """``Tensor.to_sparse()``: the non-zero entries of a dense tensor as a coalesced COO
    tensor (``sparse_dim`` leading dims sparse, the rest dense in the values); the values
    keep the autograd graph to ``input``."""
    from .index import getitem

    if isinstance(input, SparseTensor) and (layout is None or layout is sparse_coo):
        return input.to_sparse() if input.layout is not sparse_coo else input  # CSR/CSC -> COO
    if layout is not None and layout is not sparse_coo:  # CSR/CSC: ops/sparse_compressed.py
        if blocksize is None and str(layout) in ("shardflow.sparse_csr", "shardflow.sparse_csc"):
            return OPS[f"to_{str(layout).split('.')[1]}"](input, dense_dim)
        if str(layout) in ("shardflow.sparse_bsr", "shardflow.sparse_bsc"):
            return OPS[f"to_{str(layout).split('.')[1]}"](input, blocksize, dense_dim)
        raise RuntimeError(f"to_sparse: expected a sparse layout, got {layout}")
    t = as_tensor_arg(input)
    if blocksize is not None:  # torch's error: block sizes belong to the BSR/BSC layouts
        raise RuntimeError("dense_to_sparse: conversion from Strided to Sparse with blocksize argument "
                           "given is not supported (blocksize is for layout=torch.sparse_bsr/bsc)")
    if dense_dim is not None:  # the trailing dense_dim dims stay dense in the values
        if sparse_dim is not None:
            raise TypeError("to_sparse() takes sparse_dim or dense_dim=, not both")
        sparse_dim = t.ndim - int(dense_dim)
    sd = t.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 < sd <= t.ndim:
        raise RuntimeError(f"sparse_dim must be in [1, {t.ndim}] for a {t.ndim}-D tensor, got {sparse_dim}")
    a = t.array
    xp = get_array_module(a)
    nz = a != 0
    if sd < a.ndim:
        nz = nz.any(axis=tuple(range(sd, a.ndim)))
    pos = xp.nonzero(nz)  # row-major, as PyTorch's
    idx = xp.stack(pos).astype(np.int64) if pos else xp.zeros((sd, 0), np.int64)
    values = getitem(t, tuple(Tensor(p) for p in pos))
    return SparseTensor._make(idx, values, tuple(a.shape), True)


@register("to_dense")
def to_dense(input, dtype=None, *, masked_grad=None) -> Tensor:
    """``Tensor.to_dense()``: a sparse tensor's dense form (a dense tensor is returned as is)."""
    if isinstance(input, SparseTensor):
        return input.to_dense(dtype)
    return input if dtype is None else input.to(dtype)


@register("sparse_mm")
def sparse_mm(sparse, dense) -> Tensor:
    """``torch.sparse.mm(S, D)``: a 2-D sparse ``(n, m)`` times a dense ``(m, k)`` (or
    ``(m,)``), dense result; gradients to ``D`` and to the values of ``S``."""
    if not isinstance(sparse, SparseTensor):
        raise RuntimeError(
            f"sparse.mm expects a sparse first argument (layout=torch.sparse_coo), got "
            f"{type(sparse).__name__}; use torch.mm for dense matrices")
    if isinstance(dense, SparseTensor):
        raise RuntimeError("sparse @ sparse is not supported; convert the second operand with .to_dense()")
    d = as_tensor_arg(dense, "mat2")
    if sparse.ndim != 2 or sparse.sparse_dim() != 2:
        raise RuntimeError(f"sparse.mm: expected a 2-D sparse matrix (sparse_dim 2), got size {sparse._size}")
    if d.ndim not in (1, 2) or d.shape[0] != sparse._size[1]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({sparse._size[0]}x{sparse._size[1]} and "
            f"{'x'.join(str(s) for s in d.shape)})")
    if d.dtype is not sparse.dtype:
        raise RuntimeError(
            f"expected mat1 and mat2 to have the same dtype, but got: {sparse.dtype} != {d.dtype}")
    if str(d.device) != str(sparse.device):
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found {sparse.device} and {d.device}")
    idx = sparse._idx
    return SpMM.apply(sparse._vals, d, rows=idx[0], cols=idx[1], n=sparse._size[0])


@register("_sparse_matmul")
def _sparse_matmul(a, b) -> Tensor:
    """``mm``/``matmul``/``@`` with a sparse operand: sparse @ dense directly, dense @ sparse
    as ``(S^T @ D^T)^T``."""
    if isinstance(a, SparseTensor):
        return sparse_mm(a, b)
    a = as_tensor_arg(a)
    if a.ndim != 2:
        raise RuntimeError(f"dense @ sparse needs a 2-D dense matrix, got shape {tuple(a.shape)}")
    return sparse_mm(b.t(), a.t()).t()


@register("spmm")
def spmm(input, mat2) -> Tensor:
    """``torch.spmm(sparse, dense)`` (the same product as ``torch.sparse.mm``)."""
    return sparse_mm(input, mat2)


def sparse_float_tensor(*args, dtype=None, device=None) -> SparseTensor:
    """The legacy constructor ``torch.sparse.FloatTensor(indices, values, size)`` (pygcn's
    ``sparse_mx_to_torch_sparse_tensor``) or ``torch.sparse.FloatTensor(*size)`` (empty)."""
    dtype = dtypes.float32 if dtype is None else dtype
    if args and (isinstance(args[0], Tensor) or hasattr(args[0], "shape")) and len(args) in (2, 3):
        # PyTorch keeps the values' dtype here (FloatTensor(i, float64 values) is float64)
        return sparse_coo_tensor(args[0], as_tensor_arg(args[1]), *args[2:], device=device)
    size = tuple(args[0]) if len(args) == 1 and not isinstance(args[0], int) else tuple(args)
    with no_grad():
        return sparse_coo_tensor(np.zeros((len(size), 0), np.int64), Tensor(np.zeros((0,), dtype.np)), size)
