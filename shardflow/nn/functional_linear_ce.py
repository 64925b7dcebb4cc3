"""``F.linear_cross_entropy`` and ``nn.LinearCrossEntropyOptions`` (new in PyTorch 2.13):
cross entropy of linearly transformed inputs, ``cross_entropy(linear(input, W, b), target, ...)``.

``linear_weight`` is ``(C, in_features)`` or, for a K-dimensional loss, ``(C, d_1, ..., d_K,
in_features)`` (then the input must be batched ``(N, in_features)`` and the logits are
``(N, C, d_1, ..., d_K)``); ``linear_bias`` has the weight's shape without ``in_features``.
``weight``, ``reduction``, ``ignore_index`` (``None`` means -100, and must stay ``None`` for
probability targets) and ``label_smoothing`` are ``cross_entropy``'s, and so are the values and
gradients: shardflow computes PyTorch's reference path (linear, then cross entropy).

Deviation: ``options`` (a ``LinearCrossEntropyOptions``) selects PyTorch's chunked path, which
saves memory by never holding the whole ``(N, C)`` logits and gives the same loss. shardflow has
no chunked kernel: with ``options`` given it validates them (as PyTorch's dataclass does) and
warns that it computes the reference path, as PyTorch itself does for configurations its
chunked path does not take. The chunked path's other behaviour (a second ``backward`` raising
unless ``allow_retain_graph``) is not reproduced.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

from ..autograd import Tensor
from ..backend import dtypes

__all__ = ["linear_cross_entropy", "LinearCrossEntropyOptions"]


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """PyTorch's chunking options for ``linear_cross_entropy`` (fields and checks as torch's;
    see the module docstring for what shardflow does with them)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in ("auto", "accurate", "balanced", "compact"):
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and not isinstance(size, bool) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        allowed = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
        if self.acc_dtype is not None and self.acc_dtype not in allowed:
            raise ValueError(
                f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, torch.float32, "
                f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick automatically.")


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction: str = "mean",
                         ignore_index: int | None = None, label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` with PyTorch
    2.13's shape rules and errors (see the module docstring)."""
    from .functional import cross_entropy, linear

    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batch = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), "
                           f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires batched "
            f"input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batch, num_classes, *out_features)
    # cross_entropy tells probability targets by their shape equal to the logits'
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if options is not None:
        if not isinstance(options, LinearCrossEntropyOptions):
            raise TypeError(f"linear_cross_entropy: options must be a LinearCrossEntropyOptions or None, "
                            f"got {type(options).__name__}")
        warnings.warn("linear_cross_entropy: ``options`` (PyTorch's chunked path) are not built in shardflow; "
                      "the reference path (linear, then cross_entropy) computes the same loss with the whole "
                      "logits in memory. Pass options=None to silence this.", stacklevel=2)
    if out_features:
        rows = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape(rows, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(rows)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)
