"""Sparse compressed tensors, CSR and CSC (``layout=torch.sparse_csr`` / ``torch.sparse_csc``):
what graph networks with a normalised adjacency in CSR use: ``sparse_csr_tensor`` /
``sparse_csc_tensor`` / ``sparse_compressed_tensor``, ``Tensor.to_sparse_csr()`` /
``to_sparse_csc()`` (of dense and COO tensors, and between the two), ``crow_indices`` /
``col_indices`` (CSR), ``ccol_indices`` / ``row_indices`` (CSC), ``values``, ``to_dense``,
``to_sparse`` (to COO), ``t()`` (CSR <-> CSC, as torch), ``_nnz``, ``* /`` by numbers,
``+`` with a dense tensor (dense result) or another compressed tensor, ``to(dtype)``, and the
products ``torch.sparse.mm`` / ``torch.mm`` / ``matmul`` / ``@`` / ``torch.sparse.addmm`` with
a dense matrix or vector (and dense @ compressed), with gradients to the dense operand and the
values, as torch's.

Representation: ``SparseCompressedTensor`` is a ``SparseTensor`` (``ops/sparse_coo.py``) whose
COO coordinates ``_idx`` (2, nnz) are kept in storage order (row-major for CSR, column-major
for CSC) next to the compressed and plain index arrays the user sees. So every kernel of the
COO tensors (``to_dense``, the ``SpMM`` product and its backward, the values carrying the
autograd graph, the sparse ``grad`` of a leaf) serves these layouts unchanged: one set of
kernels, NumPy or CuPy, no SciPy.

Deviations from torch, said plainly:

* Only 2-D matrices with scalar values: batched (3-D and more) and hybrid (values with dense
  dimensions) compressed tensors raise ``NotImplementedError``; BSR/BSC
  (``sparse_bsr_tensor``, ``to_sparse_bsr`` ...) raise ``NotImplementedError`` naming CSR and
  COO as the alternatives.
* Invariants are always checked (torch checks only under ``check_sparse_tensor_invariants``
  and may crash otherwise); the messages are torch's. The column indices within a row need not
  be sorted (duplicates add up in ``to_dense`` and the products).
* ``is_sparse`` is False and ``is_sparse_csr`` True for CSR, as torch's; ops without a
  compressed form (``exp``, ``sum`` ...) raise naming the supported ones and ``.to_dense()``.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd import _tensor_str as _ts
from ..autograd.dispatch import register
from ..backend import CPU, as_dtype, device_of, dtypes, get_array_module, to_device
from ..backend.layout import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from ._factory_options import check_factory_options
from ._util import as_tensor_arg
from .sparse_coo import SparseTensor

__all__ = ["sparse_csr_tensor", "sparse_csc_tensor", "sparse_compressed_tensor", "sparse_bsr_tensor",
           "sparse_bsc_tensor", "crow_indices_copy", "col_indices_copy", "ccol_indices_copy",
           "row_indices_copy"]

_SUPPORTED = ("to_dense, to_sparse/to_sparse_csr/to_sparse_csc, crow_indices/col_indices (CSR), "
              "ccol_indices/row_indices (CSC), values, t, * and / by a number, + with a dense or "
              "compressed tensor, sparse.mm/sparse.addmm/mm/matmul/@ with a dense matrix, to(dtype)")
# torch's names of the layouts in its messages ("... but got SparseCsr")
_LAYOUT_NAMES = {strided: "Strided", sparse_coo: "Sparse", sparse_csr: "SparseCsr",
                 sparse_csc: "SparseCsc", sparse_bsr: "SparseBsr", sparse_bsc: "SparseBsc"}
_BLOCKED = ("the blocked layouts (torch.sparse_bsr / torch.sparse_bsc) are not built in shardflow; "
            "use torch.sparse_csr / torch.sparse_csc (to_sparse_csr()) or COO (to_sparse()), "
            "which the same programs accept")


def _layout_name(t) -> str:
    return _LAYOUT_NAMES.get(getattr(t, "layout", strided), str(getattr(t, "layout", "Strided")))


class SparseCompressedTensor(SparseTensor):
    """A 2-D sparse CSR or CSC matrix; see the module docstring."""

    @property
    def array(self):
        raise RuntimeError(
            f"this operation does not support sparse compressed tensors (layout={self._layout}); "
            f"they support: {_SUPPORTED}. Convert with .to_dense() first")

    @classmethod
    def _make_compressed(cls, compressed, plain, values: Tensor, shape, layout) -> SparseCompressedTensor:
        """``compressed``/``plain`` as the user gave them (their dtype kept, as torch's);
        the COO coordinates are derived once here."""
        xp = get_array_module(compressed)
        inner = plain.astype(np.int64)
        # entry e belongs to the row (column) r with compressed[r] <= e < compressed[r + 1]
        # (searchsorted, not repeat(counts): CuPy's repeat takes no array of counts)
        outer = xp.searchsorted(compressed[1:].astype(np.int64), xp.arange(inner.shape[0], dtype=np.int64),
                                side="right").astype(np.int64)
        idx = xp.stack([outer, inner]) if layout is sparse_csr else xp.stack([inner, outer])
        t = cls._make(idx, values, shape, True)
        t.__dict__["_compressed"] = compressed
        t.__dict__["_plain"] = plain
        t.__dict__["_layout"] = layout
        return t

    def _like(self, values: Tensor) -> SparseCompressedTensor:
        return SparseCompressedTensor._make_compressed(self._compressed, self._plain, values,
                                                       self._size, self._layout)

    # ---------------------------------------------------------------- autograd
    @property
    def grad(self):
        """A leaf's gradient: a compressed tensor on the leaf's pattern (torch's)."""
        g = self._vals.grad
        return None if g is None else self._like(g)

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._vals.grad = None
        elif isinstance(value, SparseCompressedTensor) and value._layout is self._layout:
            self._vals.grad = value._vals
        else:
            raise RuntimeError(f"the gradient of a {self._layout} tensor must have its layout (or be None)")

    def detach(self) -> SparseCompressedTensor:
        return self._like(self._vals.detach())

    @property
    def data(self) -> SparseCompressedTensor:
        return self.detach()

    # ---------------------------------------------------------------- metadata
    @property
    def layout(self):
        return self._layout

    @property
    def is_sparse(self) -> bool:
        return False  # torch: True for COO only

    @property
    def is_sparse_csr(self) -> bool:
        return self._layout is sparse_csr

    def _wrong_layout(self, name: str, want: str):
        raise RuntimeError(f"{name} expected {want} tensor layout but got {_layout_name(self)}")

    def indices(self):
        self._wrong_layout("indices", "sparse coordinate")

    _indices = indices

    def coalesce(self):
        self._wrong_layout("coalesce", "sparse coordinate")

    def is_coalesced(self):
        self._wrong_layout("is_coalesced", "sparse coordinate")

    def _values(self) -> Tensor:
        return self._vals

    def values(self) -> Tensor:
        return self._vals

    def crow_indices(self) -> Tensor:
        if self._layout is not sparse_csr:
            self._wrong_layout("crow_indices", "sparse row compressed")
        return _wrap(self._compressed)

    def col_indices(self) -> Tensor:
        if self._layout is not sparse_csr:
            self._wrong_layout("col_indices", "sparse row compressed")
        return _wrap(self._plain)

    def ccol_indices(self) -> Tensor:
        if self._layout is not sparse_csc:
            self._wrong_layout("ccol_indices", "sparse column compressed")
        return _wrap(self._compressed)

    def row_indices(self) -> Tensor:
        if self._layout is not sparse_csc:
            self._wrong_layout("row_indices", "sparse column compressed")
        return _wrap(self._plain)

    # ---------------------------------------------------------------- conversions
    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout is not None and layout is not sparse_coo:
            return _to_layout(self, layout, blocksize, dense_dim)
        # torch's: a CSR's entries are already row-major (coalesced); a CSC's stay in column
        # order, marked uncoalesced
        if self._layout is sparse_csr:
            return SparseTensor._make(self._idx, self._vals, self._size, False).coalesce()
        return SparseTensor._make(self._idx, self._vals, self._size, False)

    def to_sparse_csr(self, dense_dim=None) -> SparseCompressedTensor:
        return self if self._layout is sparse_csr else to_sparse_csr(self, dense_dim)

    def to_sparse_csc(self, dense_dim=None) -> SparseCompressedTensor:
        return self if self._layout is sparse_csc else to_sparse_csc(self, dense_dim)

    def t(self) -> SparseCompressedTensor:
        """CSR (n, m) -> CSC (m, n) on the same arrays, and back: torch's transpose."""
        other = sparse_csc if self._layout is sparse_csr else sparse_csr
        return SparseCompressedTensor._make_compressed(self._compressed, self._plain, self._vals,
                                                       self._size[::-1], other)

    def transpose(self, dim0: int, dim1: int) -> SparseCompressedTensor:
        if sorted(d % 2 for d in (dim0, dim1)) == [0, 1]:
            return self.t()
        return self

    def to(self, *args, **kwargs) -> SparseCompressedTensor:
        values = self._vals.to(*args, **kwargs)
        comp, plain = self._compressed, self._plain
        if str(device_of(comp)) != str(values.device):
            comp, plain = to_device(comp, values.device), to_device(plain, values.device)
        return SparseCompressedTensor._make_compressed(comp, plain, values, self._size, self._layout)

    def numpy(self, *, force=False):
        raise TypeError(f"can't convert {_layout_name(self)} layout tensor to numpy. Use Tensor.to_dense() first.")

    def __reduce_ex__(self, protocol):
        return (_rebuild_compressed, (to_device(self._compressed, CPU), to_device(self._plain, CPU),
                                      self._vals.detach().numpy().copy(), self._size, self._layout))

    # ---------------------------------------------------------------- arithmetic
    def _scaled(self, factor, divide=False) -> SparseCompressedTensor:
        return self._like(SparseTensor._scaled(self, factor, divide)._vals)

    def __add__(self, other):
        if isinstance(other, SparseCompressedTensor):
            if other._size != self._size:
                raise RuntimeError(f"sparse add: sizes differ, {self._size} and {other._size}")
            return _to_layout(self.to_sparse() + other.to_sparse(), self._layout, None, None)
        if isinstance(other, Tensor) and not isinstance(other, SparseTensor):
            return self.to_dense() + other  # torch: a dense result
        raise RuntimeError(f"add of a {self._layout} tensor and {type(other).__name__}: only a dense "
                           "or a compressed tensor of the same layout can be added")

    def __radd__(self, other):
        if isinstance(other, Tensor):
            return other + self.to_dense()
        raise RuntimeError("a sparse compressed tensor can be added to a tensor only")

    def __sub__(self, other):
        return self + (-other)

    def __repr__(self) -> str:
        return _compressed_repr(self)

    __str__ = __repr__


def _rebuild_compressed(compressed, plain, values, size, layout):
    return SparseCompressedTensor._make_compressed(compressed, plain, Tensor(values), size, layout)


def _compressed_repr(t: SparseCompressedTensor) -> str:
    """torch's format: ``tensor(crow_indices=tensor(...),\\n       col_indices=tensor(...),\\n
    values=tensor(...), size=..., nnz=..., layout=torch.sparse_csr)``."""
    indent = len("tensor(")
    names = ("crow_indices", "col_indices") if t._layout is sparse_csr else ("ccol_indices", "row_indices")
    parts = []
    for name, arr in zip(names, (t._compressed, t._plain), strict=True):
        a = arr if isinstance(arr, np.ndarray) else to_device(arr, CPU)
        prefix = name + "=tensor("
        s = _ts.array_str(a, indent + len(prefix))
        if a.size == 0:
            s += f", size={tuple(a.shape)}"
        parts.append(prefix + s + ")")
    vals = t._vals.detach().numpy()
    vp = "values=tensor("
    vstr = _ts.array_str(vals, indent + len(vp))
    if vals.size == 0:
        vstr += f", size={tuple(vals.shape)}"
    parts.append(vp + vstr + ")")
    body = "tensor(" + (",\n" + " " * indent).join(parts)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    suffixes += [f"size={t._size}", f"nnz={t._nnz()}"]
    d = t.dtype
    if d not in (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool_, dtypes.get_default_complex_dtype()):
        suffixes.append(f"dtype={d}")
    suffixes.append(f"layout={t._layout}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _ts._add_suffixes(body, suffixes, indent, force_newline=False)


class _SparseCompressedTensor(Function):
    """Identity on the values: a compressed tensor built from values that require grad is a
    non-leaf (torch's ``SparseCompressedTensorBackward0``)."""

    save_inputs = ()

    def forward(self, values):
        return values

    def backward(self, g):
        return g

    def name(self) -> str:
        return "SparseCompressedTensorBackward0"  # torch's node name


# ------------------------------------------------------------------------------- constructors
def _int_array(a, name: str):
    if isinstance(a, SparseTensor):
        raise TypeError(f"{name} must be a dense integer tensor")
    a = a.array if isinstance(a, Tensor) else np.asarray(a)
    if a.dtype.kind not in "iu":  # torch: "... must be an int32 or int64 tensor"
        raise RuntimeError(f"{name}: expected int32 or int64 indices, got {a.dtype}; pass integer tensors")
    return a


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise RuntimeError(f"`{what}` is not satisfied.")


def _build(name, layout, compressed, plain, values, size, dtype, device, pin_memory, requires_grad):
    check_factory_options(name, pin_memory=pin_memory)
    if layout in (sparse_bsr, sparse_bsc):
        raise NotImplementedError(f"{name}: {_BLOCKED}")
    comp, pl = _int_array(compressed, "compressed_indices"), _int_array(plain, "plain_indices")
    cname, pname = ("crow_indices", "col_indices") if layout is sparse_csr else ("ccol_indices", "row_indices")
    vals = values if isinstance(values, Tensor) else Tensor(values)
    if dtype is not None:
        vals = vals.to(as_dtype(dtype))
    if device is not None:
        vals = vals.to(device)
    if comp.ndim != 1 or pl.ndim != 1 or vals.ndim != 1:
        raise NotImplementedError(
            f"{name}: batched or hybrid compressed tensors are not built in shardflow (got "
            f"{cname} of {comp.ndim} dims, values of {vals.ndim}); pass 1-D indices and values "
            "(a 2-D matrix), or use sparse_coo_tensor for more dimensions")
    if size is None:  # torch's inference: rows from the compressed indices, columns from the max
        n_plain = int(pl.max()) + 1 if pl.size else 0
        size = (comp.shape[0] - 1, n_plain) if layout is sparse_csr else (n_plain, comp.shape[0] - 1)
    size = tuple(int(s) for s in size)
    if len(size) != 2:
        raise NotImplementedError(f"{name}: only 2-D compressed tensors are built, got size {size}")
    n_comp, n_plain = (size[0], size[1]) if layout is sparse_csr else (size[1], size[0])
    what = "rows" if layout is sparse_csr else "columns"
    if comp.shape[0] != n_comp + 1:
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {what} + 1 (={n_comp + 1}), "
                           f"but got {comp.shape[0]}")
    if pl.shape[0] != vals.shape[0]:
        raise RuntimeError(f"{pname}.shape[-1] must be equal to nnz (={vals.shape[0]}) as defined by "
                           f"values.shape[0], but got {pl.shape[0]}")
    c64 = comp.astype(np.int64)
    _check(int(c64[0]) == 0, f"{cname}[..., 0] == 0")
    _check(int(c64[-1]) == pl.shape[0], f"{cname}[..., -1] == nnz")
    _check(bool((get_array_module(c64).diff(c64) >= 0).all()),
           f"0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {'ncols' if layout is sparse_csr else 'nrows'}")
    if pl.size:
        _check(int(pl.min()) >= 0 and int(pl.max()) < n_plain,
               f"0 <= {pname} < {'ncols' if layout is sparse_csr else 'nrows'}")
    if str(vals.device) != "cpu":
        comp, pl = to_device(comp, vals.device), to_device(pl, vals.device)
    if requires_grad:
        vals = vals.detach().requires_grad_(True)  # the compressed tensor is the new leaf
    elif vals.requires_grad:
        vals = _SparseCompressedTensor.apply(vals)
    return SparseCompressedTensor._make_compressed(comp, pl, vals, size, layout)


@register("sparse_csr_tensor")
def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, layout=None,
                      device=None, pin_memory=False, requires_grad=False, check_invariants=None):
    """``torch.sparse_csr_tensor``: row ``i``'s entries are ``values[crow[i]:crow[i+1]]`` at
    columns ``col_indices[crow[i]:crow[i+1]]``. ``size`` defaults to (len(crow) - 1,
    max(col) + 1). Invariants are always checked (``check_invariants`` changes nothing)."""
    if layout is not None and layout is not sparse_csr:
        raise RuntimeError(f"sparse_csr_tensor: layout must be SparseCsr but got {_LAYOUT_NAMES.get(layout, layout)}")
    return _build("sparse_csr_tensor", sparse_csr, crow_indices, col_indices, values, size, dtype, device,
                  pin_memory, requires_grad)


@register("sparse_csc_tensor")
def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, layout=None,
                      device=None, pin_memory=False, requires_grad=False, check_invariants=None):
    """``torch.sparse_csc_tensor``: the column-compressed form (see ``sparse_csr_tensor``)."""
    if layout is not None and layout is not sparse_csc:
        raise RuntimeError(f"sparse_csc_tensor: layout must be SparseCsc but got {_LAYOUT_NAMES.get(layout, layout)}")
    return _build("sparse_csc_tensor", sparse_csc, ccol_indices, row_indices, values, size, dtype, device,
                  pin_memory, requires_grad)


@register("sparse_compressed_tensor")
def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *, dtype=None,
                             layout=None, device=None, pin_memory=False, requires_grad=False,
                             check_invariants=None):
    """``torch.sparse_compressed_tensor(..., layout=)``: CSR or CSC by ``layout`` (required,
    as torch's)."""
    if layout not in (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc):
        got = "none" if layout is None else _LAYOUT_NAMES.get(layout, layout)
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor layout but got {got}")
    return _build("sparse_compressed_tensor", layout, compressed_indices, plain_indices, values, size, dtype,
                  device, pin_memory, requires_grad)


@register("sparse_bsr_tensor")
def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """``torch.sparse_bsr_tensor``: not built (raises, naming CSR and COO)."""
    raise NotImplementedError(f"sparse_bsr_tensor: {_BLOCKED}")


@register("sparse_bsc_tensor")
def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """``torch.sparse_bsc_tensor``: not built (raises, naming CSC and COO)."""
    raise NotImplementedError(f"sparse_bsc_tensor: {_BLOCKED}")


# ------------------------------------------------------------------------------- conversions
def _compress(outer, n_outer: int, xp):
    counts = xp.bincount(outer, minlength=n_outer) if outer.size else xp.zeros(n_outer, np.int64)
    return xp.concatenate([xp.zeros(1, np.int64), xp.cumsum(counts)]).astype(np.int64)


def _to_compressed(input, layout, dense_dim):
    from .index import getitem

    if dense_dim is not None:
        raise NotImplementedError(f"to_sparse_{'csr' if layout is sparse_csr else 'csc'}(dense_dim={dense_dim}): "
                                  "hybrid compressed tensors are not built in shardflow; leave dense_dim out")
    if isinstance(input, SparseCompressedTensor):
        if input._layout is layout:
            return input
        input = input.to_sparse()
    if isinstance(input, SparseTensor):  # COO: coalesced, then ordered for the layout
        s = input.coalesce()
        if s.ndim != 2 or s.sparse_dim() != 2:
            raise NotImplementedError(f"to_sparse_csr/csc of a COO tensor of size {s._size} (sparse_dim "
                                      f"{s.sparse_dim()}): only 2-D matrices are built in shardflow")
        xp = get_array_module(s._idx)
        rows, cols = s._idx[0], s._idx[1]
        vals = s._vals
        if layout is sparse_csc:
            order = xp.lexsort((rows, cols))
            rows, cols = rows[order], cols[order]
            vals = getitem(vals, Tensor(order))
        outer, inner = (rows, cols) if layout is sparse_csr else (cols, rows)
        n_outer = s._size[0] if layout is sparse_csr else s._size[1]
        return SparseCompressedTensor._make_compressed(_compress(outer, n_outer, xp), inner, vals,
                                                       s._size, layout)
    t = as_tensor_arg(input)
    if t.ndim != 2:
        raise NotImplementedError(
            f"to_sparse_csr/csc of a {t.ndim}-D tensor: only 2-D matrices are built in shardflow "
            "(torch batches 3-D and more); use to_sparse() (COO) for other shapes")
    a = t.array
    xp = get_array_module(a)
    if layout is sparse_csr:
        rows, cols = xp.nonzero(a != 0)  # row-major
        outer, inner, n_outer = rows, cols, a.shape[0]
    else:
        cols, rows = xp.nonzero((a != 0).T)  # column-major
        outer, inner, n_outer = cols, rows, a.shape[1]
    values = getitem(t, (Tensor(rows), Tensor(cols)))  # differentiable: gradients reach `input`
    return SparseCompressedTensor._make_compressed(_compress(outer, n_outer, xp), inner.astype(np.int64),
                                                   values, tuple(a.shape), layout)


def _to_layout(input, layout, blocksize, dense_dim):
    if layout in (sparse_bsr, sparse_bsc) or blocksize is not None:
        raise NotImplementedError(f"to_sparse(layout={layout}, blocksize={blocksize}): {_BLOCKED}")
    if layout is sparse_coo:
        return input.to_sparse()
    if layout in (sparse_csr, sparse_csc):
        return _to_compressed(input, layout, dense_dim)
    raise RuntimeError(f"to_sparse: expected a sparse layout, got {layout}")


@register("to_sparse_csr")
def to_sparse_csr(input, dense_dim=None) -> SparseCompressedTensor:
    """``Tensor.to_sparse_csr()``: a 2-D dense (or COO/CSC) matrix as CSR; the values keep the
    autograd graph to ``input``."""
    return _to_compressed(input, sparse_csr, dense_dim)


@register("to_sparse_csc")
def to_sparse_csc(input, dense_dim=None) -> SparseCompressedTensor:
    """``Tensor.to_sparse_csc()``: a 2-D dense (or COO/CSR) matrix as CSC."""
    return _to_compressed(input, sparse_csc, dense_dim)


@register("to_sparse_bsr")
def to_sparse_bsr(input, blocksize, dense_dim=None):
    """``Tensor.to_sparse_bsr``: not built (raises, naming CSR and COO)."""
    raise NotImplementedError(f"to_sparse_bsr: {_BLOCKED}")


@register("to_sparse_bsc")
def to_sparse_bsc(input, blocksize, dense_dim=None):
    """``Tensor.to_sparse_bsc``: not built (raises, naming CSC and COO)."""
    raise NotImplementedError(f"to_sparse_bsc: {_BLOCKED}")


# ------------------------------------------------------------------------------- index getters
def _getter(name: str, want, method: str, kind: str):
    def get(input):
        if not isinstance(input, SparseCompressedTensor) or input._layout is not want:
            raise RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but got {_layout_name(input)}")
        return getattr(input, method)()

    get.__name__ = name
    get.__doc__ = f"``Tensor.{method}()`` ({want} only; torch's error for another layout)."
    return get


crow_indices = register("crow_indices")(_getter("crow_indices", sparse_csr, "crow_indices", "row"))
col_indices = register("col_indices")(_getter("col_indices", sparse_csr, "col_indices", "row"))
ccol_indices = register("ccol_indices")(_getter("ccol_indices", sparse_csc, "ccol_indices", "column"))
row_indices = register("row_indices")(_getter("row_indices", sparse_csc, "row_indices", "column"))


def _copy(name: str, getter):
    def copy(input):
        return _wrap(getter(input).array.copy())

    copy.__name__ = name
    copy.__doc__ = f"``torch.{name}``: a copy of ``{getter.__name__}()``."
    return register(name)(copy)


crow_indices_copy = _copy("crow_indices_copy", crow_indices)
col_indices_copy = _copy("col_indices_copy", col_indices)
ccol_indices_copy = _copy("ccol_indices_copy", ccol_indices)
row_indices_copy = _copy("row_indices_copy", row_indices)
