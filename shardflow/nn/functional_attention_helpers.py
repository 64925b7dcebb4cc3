"""PyTorch's private ``nn.functional`` helpers of multi-head attention that programs import
(custom attention layers copied from ``torch/nn/functional.py``: ``F._canonical_mask``,
``F._none_or_dtype``, ``F._in_projection_packed``, ``F._in_projection``), with torch's
behaviour: the same checks, warnings and results as the ops they are made of."""

from __future__ import annotations

import warnings

from ..autograd import Tensor
from ..backend import dtypes
from ..ops import linear, zeros_like


def _canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type,
                    check_other: bool = True):
    """A boolean mask as an additive float mask of ``target_type`` (-inf where True); a float
    mask unchanged. Any other dtype is refused; a dtype other than ``other_type`` warns."""
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype is not dtypes.bool_ and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same "
                      "type for both instead.", stacklevel=2)
    if not is_float:
        mask = zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _none_or_dtype(input):
    """``input.dtype``, or None for None."""
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _in_projection_packed(q, k, v, w, b=None) -> list:
    """Query, key and value projected by the thirds of the packed ``w`` (3E, E) and ``b``."""
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return [linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)]


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """Query, key and value projected by their own weights, with torch's shape checks."""
    eq, ek, ev = q.shape[-1], k.shape[-1], v.shape[-1]
    for name, wt, shape in (("q", w_q, (eq, eq)), ("k", w_k, (eq, ek)), ("v", w_v, (eq, ev))):
        if tuple(wt.shape) != shape:
            raise AssertionError(f"expecting {name} weights shape of {shape}, but got {tuple(wt.shape)}")
    for name, bias in (("q", b_q), ("k", b_k), ("v", b_v)):
        if bias is not None and tuple(bias.shape) != (eq,):
            raise AssertionError(f"expecting {name} bias shape of {(eq,)}, but got {tuple(bias.shape)}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)
