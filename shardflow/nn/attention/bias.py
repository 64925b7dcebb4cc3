"""``torch.nn.attention.bias``: causal attention biases for ``scaled_dot_product_attention``.

``causal_upper_left(L, S)`` and ``causal_lower_right(L, S)`` make a :class:`CausalBias`, a
``Tensor`` subclass passed as SDPA's ``attn_mask``. ``F.scaled_dot_product_attention`` asks
its tensor arguments' ``__torch_function__`` first (as PyTorch's does), and
``CausalBias.__torch_function__`` computes the attention:

* ``UPPER_LEFT`` (or ``L == S``): ``is_causal=True`` -- query ``i`` sees keys ``0..i``;
* ``LOWER_RIGHT``: the causal mask aligned to the lower-right corner (query ``i`` sees keys
  ``0..i + S - L``), the materialized bool mask ``tril(ones(L, S), S - L)``; a query row
  with no key (``L > S``) gives what SDPA gives for a fully masked row (torch warns at
  construction that it "will produce NaNs"; both frameworks' CPU SDPA give zeros);
* ``is_causal=True`` together with a ``CausalBias`` raises ValueError, as in torch.

``repr`` is the materialized mask's, as torch's.

Deviation: torch's ``CausalBias`` is a tensor whose own storage is an unused, uninitialised
float tensor (an artifact of its constructor: its ``shape`` is ``(variant, L, S)``); here
the tensor holds the materialized bool mask (``shape (L, S)``, ``dtype bool``), so an op other
than SDPA applied to it computes with the mask rather than with garbage.
"""

from __future__ import annotations

import warnings
from enum import IntEnum, auto

import numpy as np

from ... import ops as _ops
from ...autograd import Tensor

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """Where the causal triangle is aligned when ``L != S`` (torch's values)."""

    UPPER_LEFT = auto()
    LOWER_RIGHT = auto()


def _mask(variant, seq_len_q: int, seq_len_kv: int) -> np.ndarray:
    offset = 0 if variant == CausalVariant.UPPER_LEFT else seq_len_kv - seq_len_q
    return np.tri(seq_len_q, seq_len_kv, k=offset, dtype=bool)


class CausalBias(Tensor):
    """A causal attention bias (module docstring); make one with :func:`causal_upper_left` or
    :func:`causal_lower_right`."""

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        super().__init__(_mask(variant, seq_len_q, seq_len_kv))
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!",
                          stacklevel=2)

    def _materialize(self, device=None) -> Tensor:
        """The bool mask as a plain tensor on ``device`` (the CPU by default)."""
        return _ops.tensor(_mask(self.variant, self.seq_len_q, self.seq_len_kv), device=device or "cpu")

    @staticmethod
    def _dispatch(query, key, value, attn_mask, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        from .. import functional as F  # the function that called here (same layer)

        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.seq_len_q == attn_mask.seq_len_kv or attn_mask.variant == CausalVariant.UPPER_LEFT:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout_p,
                                                  is_causal=True, scale=scale, enable_gqa=enable_gqa)
        if attn_mask.variant == CausalVariant.LOWER_RIGHT:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask._materialize(query.device),
                                                  dropout_p=dropout_p, is_causal=False, scale=scale,
                                                  enable_gqa=enable_gqa)
        raise ValueError(f"CausalBias.variant must be a CausalVariant type, but found: {attn_mask.variant}")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Only ``scaled_dot_product_attention`` consults it (module docstring)."""
        kwargs = kwargs or {}
        if getattr(func, "__name__", None) == "scaled_dot_product_attention":
            return cls._dispatch(*args, **kwargs)
        return NotImplemented

    def __repr__(self) -> str:
        return self._materialize().__repr__()


def causal_upper_left(*size) -> CausalBias:
    """The upper-left causal bias (``is_causal=True``'s mask) of ``size = (L, S)``."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size) -> CausalBias:
    """The lower-right causal bias of ``size = (L, S)``: ``tril(ones(L, S), S - L)``."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
