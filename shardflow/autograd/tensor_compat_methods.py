"""``Tensor`` methods torch has for devices, layouts and dtypes shardflow does not make, kept in
one mixin so ``tensor.py`` stays about the tensor itself. Each answers as torch 2.13 answers
for a dense CPU tensor, or refuses clearly:

* ``xpu()`` / ``mtia()``: AssertionError "Torch not compiled with XPU/MTIA enabled", ``ipu()``:
  RuntimeError, as torch's CPU build (no such device here either);
* ``record_stream(stream)``: a no-op for a stream object (NumPy memory is not stream-ordered,
  and CuPy's pool frees on the allocating stream's order), torch's RuntimeError "unknown
  parameter type" for anything else;
* ``chalf()``: ``to(complex32)``, which refuses (shardflow has no complex32 storage);
* ``conj_physical_()``: the in-place conjugate (nothing to do for a real tensor);
* ``hash_tensor(dim=None, *, keepdim=False, mode=0)``: torch's xor-reduction of the elements
  upcast to 64-bit (float64 / int64) and reinterpreted as uint64, a uint64 result;
* the quantized accessors ``int_repr``, ``q_scale``, ``q_zero_point``,
  ``q_per_channel_scales``, ``q_per_channel_zero_points``, ``q_per_channel_axis``,
  ``qscheme``: torch's NotImplementedError for a non-quantized tensor (shardflow's quantized
  tensors are ``quant.QuantizedTensor``, which has them); ``dequantize()`` of a float tensor is
  the tensor itself, as torch;
* the sparse surface of a dense tensor: ``sparse_dim()`` 0, ``dense_dim()`` ``ndim``;
  ``indices``/``values``/``coalesce``/``is_coalesced`` torch's RuntimeError, ``_indices``/
  ``_values``/``_nnz`` its NotImplementedError; ``sparse_mask(mask)`` the values of this dense
  tensor at a sparse COO ``mask``'s indices (differentiable; torch 2.13's CPU build has no
  dense kernel for it: shardflow's extends it);
* ``slice_inverse(src, dim, start, end, step)`` (and ``torch.slice_inverse``): the slice
  viewed with its base's size, strides and offset (torch's kernel), differentiable as torch's
  (the slice's gradient to ``self``, the rest to ``src``); a view only while ``src`` needs no
  gradient (then the result is a new tensor);
* ``index(positions, dims)``: torch's first-class-dimension binding (functorch.dim), not built.
"""

from __future__ import annotations

import numpy as np

from ..backend import dtypes
from .dispatch import OPS

__all__ = ["TensorCompatMethods", "hash_tensor", "conj_physical_", "slice_inverse"]

_QUANTIZED = ("int_repr", "q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
              "q_per_channel_axis", "qscheme")


def _not_for_dense(name: str, why: str):
    def refused(self, *args, **kwargs):
        raise NotImplementedError(
            f"Could not run 'aten::{name}' with arguments from the 'CPU' backend: {why}")

    refused.__name__ = refused.__qualname__ = name
    refused.__doc__ = f"``Tensor.{name}``: torch's NotImplementedError for a dense tensor."
    return refused


def _sparse_only(name: str, layout: str = "sparse coordinate tensor"):
    def refused(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected {layout} layout but got Strided; make one with "
                           "tensor.to_sparse() or sparse_coo_tensor(indices, values, size)")

    refused.__name__ = refused.__qualname__ = name
    refused.__doc__ = f"``Tensor.{name}``: for sparse COO tensors; torch's RuntimeError for a dense one."
    return refused


class TensorCompatMethods:
    """Mixed into ``Tensor`` (see the module docstring)."""

    __slots__ = ()

    # ---------------------------------------------------------------- devices
    def xpu(self, device=None, non_blocking=False, memory_format=None):
        raise AssertionError("Torch not compiled with XPU enabled: shardflow has no XPU device; expected "
                             "'cpu' or 'cuda' (tensor.to('cpu'))")

    def mtia(self, device=None, non_blocking=False, memory_format=None):
        raise AssertionError("Torch not compiled with MTIA enabled: shardflow has no MTIA device; expected "
                             "'cpu' or 'cuda' (tensor.to('cpu'))")

    def ipu(self, device=None, non_blocking=False, memory_format=None):
        raise RuntimeError("PyTorch is not linked with support for ipu devices: shardflow has no IPU device; "
                           "expected 'cpu' or 'cuda' (tensor.to('cpu'))")

    def record_stream(self, stream):
        """Mark this tensor's memory as used by ``stream`` (a no-op here: see the module docstring)."""
        if not hasattr(stream, "wait_stream"):
            raise RuntimeError(f"unknown parameter type: record_stream expected a Stream, got "
                               f"{type(stream).__name__}")

    # ---------------------------------------------------------------- dtypes
    def chalf(self, memory_format=None):
        return self.to(dtypes.complex32)

    def conj_physical_(self):
        """In-place conjugate: ``self`` holds ``conj(self)`` (a real tensor is unchanged)."""
        if self.is_complex():
            self.copy_(self.conj_physical())
        return self

    def hash_tensor(self, dim=None, *, keepdim=False, mode=0):
        return hash_tensor(self, dim, keepdim=keepdim, mode=mode)

    # ---------------------------------------------------------------- quantized
    locals().update({n: _not_for_dense(n, "the tensor is not quantized; quantize it with "
                                          "quantize_per_tensor(x, scale, zero_point, dtype)") for n in _QUANTIZED})

    def dequantize(self):
        """A float tensor is already dequantized: ``self``, as torch."""
        return self

    # ---------------------------------------------------------------- sparse surface
    def sparse_dim(self) -> int:
        return 0

    def dense_dim(self) -> int:
        return self.ndim

    indices = _sparse_only("indices")
    values = _sparse_only("values", "sparse tensor")
    coalesce = _sparse_only("coalesce")
    is_coalesced = _sparse_only("is_coalesced")
    _indices = _not_for_dense("_indices", "the tensor is dense; make a sparse one with tensor.to_sparse()")
    _values = _not_for_dense("_values", "the tensor is dense; make a sparse one with tensor.to_sparse()")
    _nnz = _not_for_dense("_nnz", "the tensor is dense; count its nonzeros with count_nonzero()")
    def to_padded_tensor(self, padding, output_size=None):
        """torch's for nested tensors only; a dense tensor is refused as torch refuses it."""
        raise NotImplementedError("Could not run 'aten::to_padded_tensor' with arguments from the 'CPU' backend: "
                                  "the tensor is not nested (shardflow has no nested tensors); it is already padded")

    def sparse_mask(self, mask):
        """A sparse COO tensor with this tensor's values at ``mask``'s (coalesced) indices."""
        if not getattr(mask, "is_sparse", False):
            raise RuntimeError(f"sparse_mask expected a sparse COO mask, got a {mask.layout} tensor; make one with "
                               "mask.to_sparse()")
        if tuple(mask.shape) != tuple(self.shape):
            raise RuntimeError(f"sparse_mask(): expected mask and self to have the same shape, got "
                               f"{list(mask.shape)} and {list(self.shape)}")
        mask = mask.coalesce()
        idx = mask.indices()
        values = self[tuple(idx[k] for k in range(idx.shape[0]))]
        return OPS["sparse_coo_tensor"](idx, values, tuple(self.shape), is_coalesced=True)

    def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
        """``Tensor.slice_inverse``: this slice viewed with ``src`` (its base)'s geometry, i.e.
        ``self.as_strided(src.size(), src.stride(), src.storage_offset())``, as torch's
        kernel; ``dim``/``start``/``end``/``step`` (the slice) shape only the gradient: the slice's
        part flows to ``self``, the rest to ``src``, as torch's derivative."""
        out = self.as_strided(tuple(src.shape), src.stride(), src.storage_offset())
        if src.requires_grad:
            # torch's derivative gives ``src`` the gradient outside the slice
            # (``slice_scatter(grad, zeros_like(self), dim, start, end, step)``): added as a
            # term whose value is zero
            keep = np.ones(tuple(src.shape), dtype=src.array.dtype)
            where = [slice(None)] * src.ndim
            where[dim] = slice(start, end, step)
            keep[tuple(where)] = 0
            outside = src * type(src)(keep)
            out = out + (outside - outside.detach())
        return out

    def index(self, positions, dims):
        raise NotImplementedError(
            "Tensor.index(positions, dims) binds first-class dimensions (functorch.dim), which shardflow "
            "does not build; expected ordinary indexing: use tensor[...], permute or einsum instead")


def hash_tensor(input, dim=None, *, keepdim=False, mode=0):
    """``torch.hash_tensor``: xor of the elements upcast to 64 bits and read as uint64 (see
    the module docstring); ``dim`` an int or a list of ints, None for all."""
    if mode != 0:
        raise ValueError(f"hash_tensor: expected mode 0 (xor reduction), got {mode}; torch has no other mode")
    a = np.asarray(input.detach().cpu().numpy())
    kind = a.dtype.kind
    wide = a.astype(np.float64) if kind == "f" or a.dtype.name == "bfloat16" else a.astype(np.int64)
    if kind == "u" and a.dtype.itemsize == 8:
        wide = a
    bits = wide.view(np.uint64)
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        if bits.size == 0:
            raise RuntimeError("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        axes = tuple(range(bits.ndim))
    else:
        axes = tuple(d % max(bits.ndim, 1) for d in ((dim,) if isinstance(dim, int) else dim))
        for d in axes:
            if bits.ndim and bits.shape[d] == 0:
                raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    out = bits
    for d in sorted(axes, reverse=True):
        out = np.bitwise_xor.reduce(out, axis=d, keepdims=keepdim) if out.ndim else out
    return type(input)(np.asarray(out, dtype=np.uint64))


def conj_physical_(input):
    """``torch.conj_physical_``: ``input.conj_physical_()``."""
    return input.conj_physical_()


def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """``torch.slice_inverse``: ``input.slice_inverse(src, dim, start, end, step)``."""
    return input.slice_inverse(src, dim, start, end, step)
