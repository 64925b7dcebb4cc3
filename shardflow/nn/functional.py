"""``shardflow.nn.functional``: ``torch.nn.functional``'s names over the ops in ``shardflow.ops``.

Every function here is a thin wrapper that maps PyTorch's functional signature onto the op
(the math, including backward, lives in ``shardflow/ops/*``). The op is looked up when the
wrapper is *called*, so importing this module never fails even where an op is missing; a
missing op raises ``NotImplementedError`` naming it. A few functions that PyTorch itself
writes in Python on top of other ops (``normalize``, ``multi_head_attention_forward``,
``softmin``, ``glu`` ...) are composed the same way here.
"""

from __future__ import annotations

import math
import warnings

from .. import ops
from ..autograd import Tensor
from ..backend.dtypes import _SCALAR_TYPE_NAMES, promote_types
from ..ops._util import inplace as _inplace
from ..ops._util import refuse_complex as _refuse_complex

__all__ = [
    # activations
    "relu", "relu_", "relu6", "gelu", "silu", "mish", "softplus", "leaky_relu", "leaky_relu_",
    "elu", "elu_", "selu", "celu", "hardtanh", "hardtanh_", "hardswish", "hardsigmoid", "tanh",
    "sigmoid", "softsign", "tanhshrink", "logsigmoid", "softmax", "log_softmax", "softmin", "glu",
    "threshold", "hardshrink", "softshrink", "prelu",
    # losses
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "cosine_embedding_loss", "margin_ranking_loss", "ctc_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    # normalisation
    "layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm", "normalize",
    # dropout
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    # attention
    "scaled_dot_product_attention", "multi_head_attention_forward",
    # conv / pool
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "unfold", "fold",
    # linear / embedding / misc
    "linear", "bilinear", "embedding", "embedding_bag", "pad", "one_hot", "cosine_similarity",
    "pairwise_distance", "interpolate", "pixel_shuffle", "pixel_unshuffle",
]


def _op(name: str):
    """The op ``name`` from ``shardflow.ops`` (resolved now, at call time)."""
    f = getattr(ops, name, None)
    if f is None:
        raise NotImplementedError(
            f"shardflow.nn.functional needs the op '{name}', which shardflow.ops does not "
            "provide (yet); implement it in shardflow/ops or avoid this function"
        )
    return f


def _kw(**kwargs):
    """Drop ``None`` values so ops that lack an optional argument still accept the call."""
    return {k: v for k, v in kwargs.items() if v is not None}


# ----------------------------------------------------------------------------- activations
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return _op("relu_")(input) if inplace else _op("relu")(input)


def relu_(input: Tensor) -> Tensor:
    return _op("relu_")(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    if approximate == "none":
        return _op("gelu")(input)
    return _op("gelu")(input, approximate=approximate)


def _written_back(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    """``out``, or with ``inplace=True`` ``input`` made to hold it (``ops._util.inplace``: a
    leaf that requires grad raises torch's error; a recorded graph rebases ``input``), so an
    activation's ``inplace=`` is honoured, not dropped."""
    return _inplace(input, out) if inplace else out


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _written_back(input, _op("silu")(input), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _written_back(input, _op("mish")(input), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    if beta == 1.0 and threshold == 20.0:
        return _op("softplus")(input)
    return _op("softplus")(input, beta=beta, threshold=threshold)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    if inplace:
        return _op("leaky_relu_")(input, negative_slope)
    return _op("leaky_relu")(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return _op("leaky_relu_")(input, negative_slope)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _op("elu_")(input, alpha) if inplace else _op("elu")(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _op("elu_")(input, alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    return _op("selu_")(input) if inplace else _op("selu")(input)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _written_back(input, _op("celu")(input, alpha), inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if inplace:
        return _op("hardtanh_")(input, min_val, max_val)
    f = getattr(ops, "hardtanh", None)
    if f is not None:
        return f(input, min_val, max_val)
    return _op("clamp")(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return _op("hardtanh_")(input, min_val, max_val)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    return _written_back(input, _op("hardswish")(input), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    return _written_back(input, _op("hardsigmoid")(input), inplace)


def tanh(input: Tensor) -> Tensor:
    return _op("tanh")(input)


def sigmoid(input: Tensor) -> Tensor:
    return _op("sigmoid")(input)


def softsign(input: Tensor) -> Tensor:
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    return input - _op("tanh")(input)


def logsigmoid(input: Tensor) -> Tensor:
    f = getattr(ops, "logsigmoid", None)
    if f is not None:
        return f(input)
    return -softplus(-input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``value where x <= threshold, else x`` (PyTorch's test: a NaN is kept, and its
    gradient passes); ``inplace=True`` writes the result into ``input``."""
    _refuse_complex(input, kernel="threshold_cpu")
    f = getattr(ops, "threshold", None)
    if f is not None:
        return f(input, threshold, value)
    out = _op("where")(input <= threshold, value, input)
    return input._inplace(out) if inplace else out


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``0 where -lambd <= x <= lambd, else x`` (a NaN is kept)."""
    _refuse_complex(input, kernel="hardshrink_cpu")
    f = getattr(ops, "hardshrink", None)
    if f is not None:
        return f(input, lambd)
    return _op("where")((input >= -lambd) & (input <= lambd), 0.0, input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd if x > lambd, x + lambd if x < -lambd, 0 between`` (PyTorch's tests: a NaN
    is none of these and is kept, its gradient passing)."""
    _refuse_complex(input, kernel="softshrink_check")
    f = getattr(ops, "softshrink", None)
    if f is not None:
        return f(input, lambd)
    where = _op("where")
    inside = (input >= -lambd) & (input <= lambd)
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, where(inside, 0.0, input)))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``max(0, x) + weight * min(0, x)``; ``weight`` (C,) applies per channel (dim 1). The
    registered op (``ops/tensor_compat.py``), so autocast and the global-tensor rules see it."""
    return _op("prelu")(input, weight)


def _softmax_dim(ndim: int, name: str = "softmax") -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.", stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim(input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return _op("softmax")(input, dim)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim(input.ndim, "log_softmax")
    if dtype is not None:
        input = input.to(dtype)
    return _op("log_softmax")(input, dim)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim(input.ndim, "softmin")
    return softmax(-input, dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """GLU(a, b) = a * sigmoid(b), where ``input`` is split in half along ``dim``."""
    _refuse_complex(input, kernel="glu_cpu")
    f = getattr(ops, "glu", None)
    if f is not None:
        return f(input, dim)
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size {n}")
    a, b = _op("chunk")(input, 2, dim)
    return a * sigmoid(b)


# ----------------------------------------------------------------------------- losses
def _reduction(size_average, reduce, reduction: str) -> str:
    """The ``reduction`` the legacy ``size_average`` / ``reduce`` arguments mean, with
    PyTorch's deprecation warning when either is given."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "none" if not reduce else "mean" if size_average else "sum"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100,
                  reduce=None, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    kw = _kw(weight=weight)
    if ignore_index != -100:
        kw["ignore_index"] = ignore_index
    if label_smoothing:
        kw["label_smoothing"] = label_smoothing
    return _op("cross_entropy")(input, target, reduction=reduction, **kw)


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100,
             reduce=None, reduction: str = "mean") -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    kw = _kw(weight=weight)
    if ignore_index != -100:
        kw["ignore_index"] = ignore_index
    return _op("nll_loss")(input, target, reduction=reduction, **kw)


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None) -> Tensor:
    """``weight``: per-element weights ('mean' divides by their sum), torch 2.13's keyword."""
    if weight is None:
        return _op("mse_loss")(input, target, reduction=_reduction(size_average, reduce, reduction))
    return _op("mse_loss")(input, target, reduction=_reduction(size_average, reduce, reduction), weight=weight)


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None) -> Tensor:
    """``weight``: per-element weights ('mean' divides by their sum), torch 2.13's keyword."""
    if weight is None:
        return _op("l1_loss")(input, target, reduction=_reduction(size_average, reduce, reduction))
    return _op("l1_loss")(input, target, reduction=_reduction(size_average, reduce, reduction), weight=weight)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    if beta == 1.0:
        return _op("smooth_l1_loss")(input, target, reduction=reduction)
    return _op("smooth_l1_loss")(input, target, reduction=reduction, beta=beta)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None) -> Tensor:
    """``weight``: per-element weights ('mean' divides by their sum), torch 2.13's keyword."""
    if weight is not None:
        return _op("huber_loss")(input, target, reduction=reduction, delta=delta, weight=weight)
    if delta == 1.0:
        return _op("huber_loss")(input, target, reduction=reduction)
    return _op("huber_loss")(input, target, reduction=reduction, delta=delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    return _op("binary_cross_entropy")(input, target, reduction=reduction, **_kw(weight=weight))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None) -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    return _op("binary_cross_entropy_with_logits")(
        input, target, reduction=reduction, **_kw(weight=weight, pos_weight=pos_weight)
    )


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    if log_target:
        return _op("kl_div")(input, target, reduction=reduction, log_target=True)
    return _op("kl_div")(input, target, reduction=reduction)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss (``shardflow/ops/ctc.py``)."""
    return _op("ctc_loss")(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)


def _reduce(x: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return x.mean()
    if reduction == "sum":
        return x.sum()
    if reduction == "none":
        return x
    raise ValueError(f"{reduction} is not a valid value for reduction; use 'none', 'mean' or 'sum'")


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, size_average=None,
                          reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target == 1; max(0, cos(x1, x2) - margin) where target == -1;
    0 for any other target. ``cos = <x1, x2> / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12))``,
    torch's formula (aten ``cosine_embedding_loss``): ``cosine_similarity``'s per-norm clamp
    at 1e-8 gave a zero vector a gradient 100x torch's."""
    _check_cosine_embedding(input1, input2, target)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag1 = (input1 * input1).sum(-1) + eps
    mag2 = (input2 * input2).sum(-1) + eps
    cos = prod / (mag1 * mag2).sqrt()
    zeros = _op("zeros_like")(cos)
    pos = _op("where")(target == 1, 1 - cos, zeros)
    neg = _op("where")(target == -1, _op("clamp")(cos - margin, 0.0, None), zeros)
    return _reduce(pos + neg, _reduction(size_average, reduce, reduction))


def _check_cosine_embedding(input1, input2, target) -> None:
    """torch's checks (aten ``cosine_embedding_loss``): a 1-D target with 2-D inputs, a 0-D
    one with 1-D inputs; shardflow computed a value for the other combinations."""
    if not all(isinstance(t, Tensor) for t in (input1, input2, target)):
        return
    if target.ndim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if target.ndim == 1 else 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"{target.ndim}D target tensor expects {want}D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    n = max(input1.shape[0], input2.shape[0]) if target.ndim == 1 else 1
    if target.ndim == 1 and target.shape[0] not in (1, n) and input1.shape[0] == input2.shape[0]:
        raise RuntimeError(f"The size of tensor a ({target.shape[0]}) must match the size of tensor b ({n}) at "
                           "non-singleton dimension 0")


def _check_triplet_dims(anchor, positive, negative, op: str) -> None:
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError(
            f"{op}: The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D inputs"
        )


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the ``p``-norm ``pairwise_distance``;
    ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative distance."""
    _check_triplet_dims(anchor, positive, negative, "triplet_margin_loss")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _op("minimum")(d_neg, pairwise_distance(positive, negative, p, eps))
    loss = _op("clamp")(margin + d_pos - d_neg, 0.0, None)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``triplet_margin_loss`` with any ``distance_function(x1, x2)`` (default
    ``pairwise_distance``)."""
    _check_triplet_dims(anchor, positive, negative, "triplet_margin_with_distance_loss")
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = _op("minimum")(d_neg, dist(positive, negative))
    loss = _op("clamp")(margin + d_pos - d_neg, 0.0, None)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, -target * (x1 - x2) + margin)."""
    loss = _op("clamp")(-target * (input1 - input2) + margin, 0.0, None)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


# ----------------------------------------------------------------------------- normalisation
def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _op("layer_norm")(input, tuple(normalized_shape), weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise over every dim but 1; with ``training`` the running stats are updated in
    place (``running = (1 - momentum) * running + momentum * batch_stat``, unbiased var)."""
    if momentum is None:  # (the module's cumulative average is the module's; torch refuses it here)
        raise TypeError("batch_norm(): argument 'momentum' (position 7) must be float, not NoneType")
    return _op("batch_norm")(
        input, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias,
        training=training, momentum=momentum, eps=eps,
    )


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    # torch's F.group_norm refuses (N * C / G) * prod(spatial) == 1 (its _verify_batch_size)
    shape = tuple(input.shape)
    if len(shape) >= 2 and num_groups and math.prod(shape[2:], start=shape[0] * shape[1] // num_groups) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{[shape[0] * shape[1] // num_groups, num_groups] + list(shape[2:])}")
    return _op("group_norm")(input, num_groups, weight, bias, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    if use_input_stats and math.prod(tuple(input.shape)[2:]) == 1:  # torch's _verify_spatial_size
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"shardflow.Size({list(input.shape)})")
    return _op("instance_norm")(
        input, running_mean=running_mean, running_var=running_var, weight=weight, bias=bias,
        use_input_stats=use_input_stats, momentum=momentum, eps=eps,
    )


def rms_norm(input, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _op("rms_norm")(input, tuple(normalized_shape), weight, eps)


def _vector_norm(input, p, dim, keepdim=True):
    f = getattr(ops, "norm", None)
    if f is not None:
        return f(input, p, dim, keepdim=keepdim)
    return _op("linalg_vector_norm")(input, p, dim, keepdim=keepdim)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:
    """``input / max(||input||_p over dim, eps)``."""
    f = getattr(ops, "normalize", None)
    if out is not None:  # written by the routed op (autograd/out_arg.py)
        return f(input, p, dim, eps, out=out)
    if f is not None:
        return f(input, p, dim, eps)
    denom = _op("clamp")(_vector_norm(input, p, dim, keepdim=True), eps, None)
    return input / denom.expand_as(input)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim``; real
    floating inputs only (torch's check: a complex or integer pair raises)."""
    _check_common_float(x1, x2)
    f = getattr(ops, "cosine_similarity", None)
    if f is not None:
        return f(x1, x2, dim, eps)
    n1 = _op("clamp")(_vector_norm(x1, 2, dim, keepdim=False), eps, None)
    n2 = _op("clamp")(_vector_norm(x2, 2, dim, keepdim=False), eps, None)
    return (x1 * x2).sum(dim) / (n1 * n2)


def _check_common_float(x1, x2) -> None:
    """torch's ``expected common dtype to be floating point`` (cosine_similarity): the
    promoted dtype of two tensors must be a real floating one."""
    if not (isinstance(x1, Tensor) and isinstance(x2, Tensor)):
        return
    common = promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{_SCALAR_TYPE_NAMES.get(common.name, common.name)}")


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    return _vector_norm(x1 - x2 + eps, p, -1, keepdim=keepdim)


# ----------------------------------------------------------------------------- dropout
def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _op("dropout")(input, p, training, inplace)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _op("dropout1d")(input, p, training, inplace)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    _check_p(p)
    return _op("dropout2d")(input, p, training, inplace)  # warns on odd ranks even in eval, as torch


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    _check_p(p)
    return _op("dropout3d")(input, p, training, inplace)  # warns on odd ranks even in eval, as torch


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _written_back(input, _op("alpha_dropout")(input, p, training), inplace)


# ----------------------------------------------------------------------------- attention
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q @ k^T * scale + mask) @ v`` (see ``shardflow.ops.attention``). A tensor
    argument whose type defines ``__torch_function__`` (``nn.attention.bias.CausalBias``)
    is asked first, as PyTorch's SDPA asks it."""
    overloaded = [a for a in (query, key, value, attn_mask) if hasattr(type(a), "__torch_function__")]
    if overloaded:
        return _torch_function(scaled_dot_product_attention, overloaded, (query, key, value, attn_mask),
                               {"dropout_p": dropout_p, "is_causal": is_causal, "scale": scale,
                                "enable_gqa": enable_gqa})
    kw = _kw(attn_mask=attn_mask, scale=scale)
    if dropout_p:
        kw["dropout_p"] = dropout_p
    if is_causal:
        kw["is_causal"] = True
    if enable_gqa:
        kw["enable_gqa"] = True
    return _op("scaled_dot_product_attention")(query, key, value, **kw)


def _torch_function(func, overloaded, args, kwargs):
    """PyTorch's ``__torch_function__`` protocol for one function: each distinct overloaded
    type (subclasses first) is asked in turn; the first answer that is not
    ``NotImplemented`` is the result."""
    types_ = []
    for a in overloaded:
        t = type(a)
        if t not in types_:  # left to right, a subclass before its base classes
            at = next((i for i, u in enumerate(types_) if issubclass(t, u)), len(types_))
            types_.insert(at, t)
    for t in types_:
        result = t.__torch_function__(func, tuple(types_), args, kwargs)
        if result is not NotImplemented:
            return result
    raise TypeError(f"no implementation found for '{func.__module__}.{func.__name__}' on types that implement "
                    f"__torch_function__: {types_}")


def _additive_mask(mask, dtype_like: Tensor, name: str):
    """A bool mask (True = masked out) becomes 0 / -inf of the query's dtype; a float mask
    is used as is."""
    if mask is None:
        return None
    if mask.dtype.is_floating_point:
        return mask.to(dtype_like.dtype)
    if mask.dtype.name != "bool":
        raise TypeError(f"{name} must be a bool or floating tensor, got dtype {mask.dtype}")
    zeros = _op("zeros")(tuple(mask.shape), dtype=dtype_like.dtype)
    return zeros.masked_fill(mask, float("-inf"))


def multi_head_attention_forward(
    query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight, in_proj_bias,
    bias_k, bias_v, add_zero_attn: bool, dropout_p: float, out_proj_weight, out_proj_bias,
    training: bool = True, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
    use_separate_proj_weight: bool = False, q_proj_weight=None, k_proj_weight=None,
    v_proj_weight=None, static_k=None, static_v=None, average_attn_weights: bool = True,
    is_causal: bool = False,
):
    """PyTorch's multi-head attention on sequence-first inputs ``(L, N, E)`` (or unbatched
    ``(L, E)``). Projects q/k/v (one packed ``in_proj_weight`` of shape ``(3E, E)`` or three
    separate weights), splits heads, computes ``softmax(q k^T / sqrt(hd) + mask) v`` per
    head, and applies ``out_proj`` (whose output width ``E_out`` may differ from E, as in
    torch). Bool masks are True where attention is *not* allowed.
    Returns ``(attn_output (L, N, E_out), attn_weights (N, L, S) averaged over heads, or
    (N, H, L, S) when not ``average_attn_weights``; None unless ``need_weights``)``.

    Steps: input projections; the additive attention mask (causal when asked); the extra key
    positions (``bias_k``/``bias_v``, then ``add_zero_attn``, each widening the masks by
    one column); heads split into the batch dimension; the key padding mask folded into the
    attention mask; attention; heads merged and ``out_proj``."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("static_k / static_v are not supported by shardflow")
    if key_padding_mask is not None and attn_mask is not None and key_padding_mask.dtype != attn_mask.dtype:
        # torch's _canonical_mask: a bool padding mask beside a float attention mask
        # (nn.Transformer with a float causal mask) works but is deprecated
        warnings.warn("Support for mismatched key_padding_mask and attn_mask is deprecated. Use same "
                      "type for both instead.", UserWarning, stacklevel=2)
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")

    if use_separate_proj_weight:
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        weights = in_proj_weight.chunk(3)
    q, k, v = _in_projections(query, key, value, weights, in_proj_bias)  # (L|S, N, E)
    attn_mask = _attention_mask(attn_mask, is_causal, q, key.shape[0], query.device)
    if bias_k is not None and bias_v is not None:
        k = _op("cat")([k, bias_k.expand(1, bsz, embed_dim)], 0)
        v = _op("cat")([v, bias_v.expand(1, bsz, embed_dim)], 0)
        attn_mask, key_padding_mask = _one_more_key(attn_mask, key_padding_mask)
    q, k, v = (_split_heads(t, bsz * num_heads, head_dim) for t in (q, k, v))  # (N*H, L|S, hd)
    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = _op("cat")([k, _op("zeros")(zshape, dtype=k.dtype)], 1)
        v = _op("cat")([v, _op("zeros")(zshape, dtype=v.dtype)], 1)
        attn_mask, key_padding_mask = _one_more_key(attn_mask, key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        attn_mask = _add_key_padding_mask(attn_mask, key_padding_mask, q, bsz, num_heads, src_len)

    if need_weights:
        out, weights = _attend(q, k, v, attn_mask, dropout_p if training else 0.0)
    else:  # torch's path without weights: scaled_dot_product_attention (its order and bits)
        out, weights = _attend_sdpa(q, k, v, attn_mask, bsz, num_heads, dropout_p if training else 0.0), None
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)  # heads merged: (L*N, E)
    out = linear(out, out_proj_weight, out_proj_bias)
    # the output projection may change the width (CLIP's AttentionPool2d: c_proj is
    # embed_dim -> output_dim), as torch's ``view(tgt_len, bsz, attn_output.size(1))``
    out = out.reshape(tgt_len, bsz, out.shape[-1])
    if unbatched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    if unbatched:
        weights = weights.squeeze(0)
    return out, weights


def _in_projections(query, key, value, weights, in_proj_bias):
    """``linear`` of query, key and value with the q/k/v weights and the thirds of
    ``in_proj_bias`` (None: no biases)."""
    biases = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _attention_mask(attn_mask, is_causal: bool, q, src_len: int, device):
    """The additive attention mask of q's dtype, ``(1, L, S)`` or ``(N*H, L, S)``, or None;
    ``is_causal`` without a mask makes the causal one (True above the diagonal)."""
    if is_causal and attn_mask is None:
        attn_mask = _op("ones")(q.shape[0], src_len, dtype=_bool_dtype(), device=device).triu(1)
    attn_mask = _additive_mask(attn_mask, q, "attn_mask")
    if attn_mask is not None and attn_mask.ndim == 2:
        attn_mask = attn_mask.unsqueeze(0)  # (1, L, S)
    return attn_mask


def _one_more_key(attn_mask, key_padding_mask):
    """The masks widened by one key column, attended (an appended bias or zero key)."""
    if attn_mask is not None:
        attn_mask = pad(attn_mask, (0, 1))
    if key_padding_mask is not None:
        key_padding_mask = pad(key_padding_mask, (0, 1))
    return attn_mask, key_padding_mask


def _split_heads(x, batch_heads: int, head_dim: int):
    """``(T, N, E)`` -> ``(N*H, T, hd)``: each head a batch entry."""
    return x.reshape(x.shape[0], batch_heads, head_dim).transpose(0, 1)


def _add_key_padding_mask(attn_mask, key_padding_mask, q, bsz: int, num_heads: int, src_len: int):
    """The key padding mask ``(N, S)`` as an additive ``(N*H, 1, S)`` mask, added to
    ``attn_mask`` (or alone)."""
    if tuple(key_padding_mask.shape) != (bsz, src_len):
        raise AssertionError(
            f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
            f"{tuple(key_padding_mask.shape)}"
        )
    kpm = _additive_mask(key_padding_mask, q, "key_padding_mask")
    kpm = kpm.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
    kpm = kpm.reshape(bsz * num_heads, 1, src_len)
    return kpm if attn_mask is None else attn_mask + kpm


def _attend(q, k, v, attn_mask, dropout_p: float):
    """``softmax(q k^T / sqrt(hd) + mask) v`` on ``(N*H, T, hd)`` heads: ``(output (N*H, L,
    hd), weights (N*H, L, S))``; dropout on the weights when ``dropout_p`` > 0."""
    q = q * (1.0 / math.sqrt(q.shape[-1]))
    scores = _op("matmul")(q, k.transpose(-2, -1))  # (N*H, L, S)
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = dropout(weights, p=dropout_p)
    return _op("matmul")(weights, v), weights  # (N*H, L, hd)


def _attend_sdpa(q, k, v, attn_mask, bsz: int, num_heads: int, dropout_p: float):
    """``_attend``'s output through ``scaled_dot_product_attention`` on ``(N, H, T, hd)``, as
    torch's ``multi_head_attention_forward`` computes it when ``need_weights=False``
    (``nn.TransformerEncoderLayer``, CLIP's blocks): its float16/bfloat16 rounding order and
    its dropout on the weights. ``attn_mask`` ``(1, L, S)`` or ``(N*H, L|1, S)``."""
    def heads(t):
        return t.reshape(bsz, num_heads, t.shape[1], t.shape[2])

    if attn_mask is not None:
        attn_mask = (attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1
                     else attn_mask.reshape(bsz, num_heads, -1, attn_mask.shape[-1]))
    out = _op("scaled_dot_product_attention")(heads(q), heads(k), heads(v), attn_mask=attn_mask,
                                              dropout_p=dropout_p)
    return out.reshape(bsz * num_heads, out.shape[2], out.shape[3])


def _bool_dtype():
    from ..backend import bool_

    return bool_


# ----------------------------------------------------------------------------- conv / pool
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _op("conv1d")(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _op("conv2d")(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _op("conv3d")(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    return _op("conv_transpose1d")(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    return _op("conv_transpose2d")(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    return _op("conv_transpose3d")(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    return _op("max_pool1d")(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                             return_indices=return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    return _op("max_pool2d")(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                             return_indices=return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    return _op("max_pool3d")(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                             return_indices=return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    return _op("avg_pool1d")(input, kernel_size, stride, padding, ceil_mode=ceil_mode,
                             count_include_pad=count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    kw = _kw(divisor_override=divisor_override)
    return _op("avg_pool2d")(input, kernel_size, stride, padding, ceil_mode=ceil_mode,
                             count_include_pad=count_include_pad, **kw)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    kw = _kw(divisor_override=divisor_override)
    return _op("avg_pool3d")(input, kernel_size, stride, padding, ceil_mode=ceil_mode,
                             count_include_pad=count_include_pad, **kw)


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    return _op("adaptive_avg_pool1d")(input, output_size)


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    return _op("adaptive_avg_pool2d")(input, output_size)


def adaptive_avg_pool3d(input, output_size) -> Tensor:
    return _op("adaptive_avg_pool3d")(input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices: bool = False):
    return _op("adaptive_max_pool1d")(input, output_size, return_indices=return_indices)


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):
    return _op("adaptive_max_pool2d")(input, output_size, return_indices=return_indices)


def adaptive_max_pool3d(input, output_size, return_indices: bool = False):
    return _op("adaptive_max_pool3d")(input, output_size, return_indices=return_indices)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding local blocks of (N, C, H, W) as columns (N, C * prod(kernel_size), L)."""
    return _op("im2col")(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum columns (N, C * prod(kernel_size), L) back into (N, C, *output_size)."""
    return _op("col2im")(input, output_size, kernel_size, dilation, padding, stride)


# ----------------------------------------------------------------------------- linear / misc
def linear(input, weight, bias=None) -> Tensor:
    """``input @ weight.T + bias``."""
    return _op("linear")(input, weight, bias)


def bilinear(input1, input2, weight, bias=None) -> Tensor:
    """``y_k = x1^T W_k x2 + b_k`` with ``weight`` of shape (out, in1, in2)."""
    f = getattr(ops, "bilinear", None)
    if f is not None:
        return f(input1, input2, weight, bias)
    if all(isinstance(t, Tensor) for t in (input1, input2, weight)):
        _check_bilinear(input1, input2, weight, bias)
    if _bilinear_as_matmul(input1, input2, weight):
        y = _bilinear_matmul(input1, input2, weight)
    else:
        y = _op("einsum")("...i,kij,...j->...k", input1, weight, input2)
    return y if bias is None else y + bias


def _check_bilinear(input1, input2, weight, bias) -> None:
    """torch's checks, in its order and with its messages (the einsum below would broadcast
    mismatched batch dimensions, or fail with its own message)."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    for name, x, d in (("input1", input1, 1), ("input2", input2, 2)):
        if weight.dim() <= d:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-weight.dim()}, "
                             f"{weight.dim() - 1}], but got {d})")
        if x.shape[-1] != weight.shape[d]:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {x.shape[-1]} but "
                               f"expected {weight.shape[d]}")
    if isinstance(bias, Tensor) and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but "
                           f"expected {weight.shape[0]}")


def _bilinear_as_matmul(input1, input2, weight) -> bool:
    """Whether :func:`_bilinear_matmul` applies: float32/float64 operands of one dtype, rows
    of ``input1`` and ``input2`` paired one to one (torch's own requirement; other shapes keep
    the einsum, which broadcasts)."""
    ts = (input1, input2, weight)
    return (all(isinstance(t, Tensor) for t in ts)
            and len({str(t.dtype) for t in ts}) == 1
            and str(input1.dtype).rsplit(".", 1)[-1] in ("float32", "float64")
            and input1.dim() >= 1 and weight.dim() == 3
            and tuple(input1.shape[:-1]) == tuple(input2.shape[:-1])
            and input1.shape[-1] == weight.shape[1] and input2.shape[-1] == weight.shape[2])


def _bilinear_matmul(input1, input2, weight) -> Tensor:
    """``y[n, k] = x1[n] . W[k] . x2[n]`` as one GEMM (``x1 @ W`` laid out (in1, out * in2))
    and a batched matrix-vector product with ``x2``; the backward is GEMMs too (torch's
    ``_trilinear`` is also GEMM-based). The einsum of all three at once found no contraction
    order within NumPy's memory limit and ran as one unblocked loop, 7x behind torch. The sums
    run in another order than before: values agree with torch to float rounding, as the
    einsum's did, not bit for bit with it."""
    n_in1, n_in2 = weight.shape[1], weight.shape[2]
    lead = tuple(input1.shape[:-1])
    a = input1.reshape(-1, n_in1)
    w = weight.permute(1, 0, 2).reshape(n_in1, -1)  # (in1, out * in2)
    t = (a @ w).reshape(a.shape[0], weight.shape[0], n_in2)
    y = (t @ input2.reshape(-1, n_in2, 1)).reshape(a.shape[0], weight.shape[0])
    return y.reshape(*lead, weight.shape[0])


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``; no gradient flows to row
    ``padding_idx``."""
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _op("embedding")(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                            sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx=None) -> Tensor:
    """Sums / means / maxima of bags of rows of ``weight`` (``shardflow/ops/embedding_bag.py``)."""
    return _op("embedding_bag")(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                                per_sample_weights, include_last_offset, padding_idx)


def pad(input, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left_last, right_last, left_prev, ...)``."""
    kw = {}
    if mode != "constant":
        kw["mode"] = mode
    if value is not None and value != 0:
        kw["value"] = value
    return _op("pad")(input, tuple(pad), **kw)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape ``tensor.shape + (num_classes,)`` with a 1 at each index
    (``num_classes=-1``: ``max + 1``)."""
    f = getattr(ops, "one_hot", None)
    if f is not None:
        return f(tensor, num_classes)
    if tensor.dtype.is_floating_point:
        raise RuntimeError("one_hot is only applicable to index tensor of integer dtype")
    if num_classes < 0:
        num_classes = int(tensor.max()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min()) < 0 or int(tensor.max()) >= num_classes):
        raise RuntimeError(f"Class values must be in [0, {num_classes}) for one_hot")
    classes = _op("arange")(num_classes)
    return (tensor.unsqueeze(-1) == classes).long()


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims (modes nearest, nearest-exact, linear, bilinear, bicubic,
    trilinear, area); see ``shardflow/ops/sampling.py``."""
    return _op("interpolate")(input, size=size, scale_factor=scale_factor, mode=mode,
                              align_corners=align_corners,
                              recompute_scale_factor=recompute_scale_factor, antialias=antialias)


def _pixel_dims(input, op: str):
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)")
    *lead, c, h, w = input.shape
    return tuple(lead), c, h, w


def pixel_shuffle(input, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): channel ``c*r*r + i*r + j`` goes to pixel
    ``(h*r + i, w*r + j)`` of channel ``c``."""
    lead, c, h, w = _pixel_dims(input, "pixel_shuffle")
    r = int(upscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
            f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)  # (*, C, H, r, W, r)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of ``pixel_shuffle``."""
    lead, c, h, w = _pixel_dims(input, "pixel_unshuffle")
    r = int(downscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    for name, size, d in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                f"input.size({d})={size} is not divisible by {r}"
            )
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)  # (*, C, r, r, H, W)
    return x.reshape(*lead, c * r * r, h // r, w // r)


# The rest of torch.nn.functional (remaining losses, lp/unpool pooling, local_response_norm,
# channel_shuffle, rrelu, gumbel_softmax, pdist, affine_grid, upsample*, in-place activations),
# and torch's private attention helpers that custom attention layers import (F._canonical_mask ...)
from .aten_conv import conv_tbc  # noqa: E402  (F.conv_tbc is torch.conv_tbc)
from .functional_attention_helpers import (  # noqa: E402,F401
    _canonical_mask,
    _in_projection,
    _in_projection_packed,
    _none_or_dtype,
)
from .functional_extra import *  # noqa: E402,F403
from .functional_extra import __all__ as _extra_all  # noqa: E402
from .functional_fractional import *  # noqa: E402,F403
from .functional_fractional import __all__ as _fractional_all  # noqa: E402
from .functional_linear_ce import linear_cross_entropy  # noqa: E402

__all__ += _extra_all + _fractional_all + ["conv_tbc", "linear_cross_entropy"]
