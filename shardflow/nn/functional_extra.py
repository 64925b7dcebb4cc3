"""More of ``torch.nn.functional``, re-exported by ``functional.py``: the remaining losses
(``gaussian_nll_loss``, ``poisson_nll_loss``, ``hinge_embedding_loss``, ``soft_margin_loss``,
``multilabel_soft_margin_loss``, ``multi_margin_loss``, ``multilabel_margin_loss``), pooling
relatives (``lp_pool1d/2d/3d``, ``max_unpool1d/2d/3d``, the ``*_with_indices`` forms),
``local_response_norm``, ``channel_shuffle``, ``rrelu``, ``gumbel_softmax``, ``pdist``,
``affine_grid``, the deprecated ``upsample*``, and in-place activations.

Each is written as PyTorch writes it in Python (``torch/nn/functional.py``) on top of ops, so
the gradients are those ops'; the formulas are in the docstrings. ``rrelu`` in training and
``gumbel_softmax`` draw from the default generator (``manual_seed`` repeats them).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import ops
from ..autograd import Tensor
from ..ops.loss import no_grad_argument

__all__ = [
    "gaussian_nll_loss", "poisson_nll_loss", "hinge_embedding_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "local_response_norm", "channel_shuffle", "native_channel_shuffle", "rrelu", "rrelu_", "gumbel_softmax",
    "pdist", "affine_grid", "upsample", "upsample_nearest", "upsample_bilinear", "celu_", "selu_", "threshold_",
    "feature_alpha_dropout", "grid_sample",
]


def _reduction(size_average, reduce, reduction):
    from .functional import _reduction as r

    return r(size_average, reduce, reduction)


def _reduce(x, reduction):
    from .functional import _reduce as r

    return r(x, reduction)


# ----------------------------------------------------------------------------- losses
def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``0.5 (log(var) + (input - target)^2 / var)`` (+ ``0.5 log(2 pi)`` with ``full``);
    ``var`` is clamped to ``eps`` for the value while its gradient flows unclamped, and may
    omit the last dim (or have one broadcast dim) for a shared variance, as PyTorch."""
    if not isinstance(var, Tensor):
        var = ops.full(tuple(input.shape), float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if (var.detach() < 0).any().item():
        raise ValueError("var has negative entry/entries")
    clamped = var + (ops.clamp(var.detach(), eps, None) - var.detach())  # value clamped, gradient of var
    loss = 0.5 * (ops.log(clamped) + (input - target) ** 2 / clamped)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean") -> Tensor:
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``;
    ``full`` adds Stirling's ``target log(target) - target + 0.5 log(2 pi target)`` where
    ``target > 1``."""
    reduction = _reduction(size_average, reduce, reduction)
    if log_input:
        loss = ops.exp(input) - target * input
    else:
        loss = input - target * ops.log(input + eps)
    if full:
        t = target
        stirling = t * ops.log(ops.where(t > 1, t, 1.0)) - t + 0.5 * ops.log(2 * math.pi * ops.where(t > 1, t, 1.0))
        loss = loss + ops.where(t > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``."""
    reduction = _reduction(size_average, reduce, reduction)
    margin_clamp = ops.clamp(margin - input, 0.0, None)
    out = ops.where(target != 1, margin_clamp, 0.0) + ops.where(target != -1, input, 0.0)
    return _reduce(out, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``. A target that would broadcast the loss past the
    input's shape is refused, as PyTorch (its kernel writes the loss in the input's shape)."""
    reduction = _reduction(size_average, reduce, reduction)
    if isinstance(target, Tensor) and tuple(target.shape) != tuple(input.shape):
        wide = tuple(np.broadcast_shapes(tuple(input.shape), tuple(target.shape)))
        if wide != tuple(input.shape):
            raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape "
                               f"{list(wide)}: soft_margin_loss needs a target of the input's shape "
                               f"(got {list(target.shape)}); reshape it, e.g. target.view_as(input)")
    no_grad_argument("soft_margin_loss", "target", target)
    return _reduce(ops.softplus(-target * input), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """``-(t logsigmoid(x) + (1 - t) logsigmoid(-x))``, weighted, averaged over the classes."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * ops.logsigmoid(input) + (1 - target) * ops.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                      reduce=None, reduction: str = "mean") -> Tensor:
    """Per sample ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` (times ``weight[y]``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    no_grad_argument("multi_margin_loss", "weight", weight)
    x = input if input.ndim == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    C = x.shape[1]
    x_y = ops.gather(x, 1, t.reshape(-1, 1))  # (N, 1)
    z = ops.relu(margin - x_y + x)  # relu, not clamp: no gradient at z == 0 (torch's ``z > 0``)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * ops.index_select(weight, 0, t).reshape(-1, 1)
    not_y = ops.one_hot(t, C) == 0
    loss = ops.where(not_y, z, 0.0).sum(1) / C
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Per sample ``sum_{j in y} sum_{i not in y} max(0, 1 - (x[j] - x[i])) / C``, where ``y`` are
    the leading non-negative entries of the target row (up to its first -1), repeats included."""
    reduction = _reduction(size_average, reduce, reduction)
    x = input if input.ndim == 2 else input.reshape(1, -1)
    t = target.array if target.ndim == 2 else target.array.reshape(1, -1)
    t = t.get() if hasattr(t, "get") else np.asarray(t)
    N, C = x.shape
    is_target = np.zeros((N, C), bool)
    count = np.zeros((N, C), np.float64)  # a class listed twice counts twice, as torch's kernel
    for n in range(N):
        for c in t[n]:
            if c < 0:
                break
            is_target[n, c] = True
            count[n, c] += 1
    pair = count[:, :, None] * ~is_target[:, None, :]  # (N, j, i)
    pair_t = ops.tensor(pair, dtype=x.dtype, device=x.device)
    hinge = ops.relu(1 - (x.unsqueeze(2) - x.unsqueeze(1)))  # (N, j, i); no gradient at 0, as torch
    loss = (hinge * pair_t).sum((1, 2)) / C
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


# ----------------------------------------------------------------------------- pooling
def _tuple(v, n):
    return tuple(v) if isinstance(v, list | tuple) else (v,) * n


def _lp_pool(n, input, norm_type, kernel_size, stride, ceil_mode):
    avg = {1: ops.avg_pool1d, 2: ops.avg_pool2d, 3: ops.avg_pool3d}[n]
    k = _tuple(kernel_size, n)
    if norm_type in (math.inf, -math.inf):  # the limit of the p-norm: max (min) of |x|, as torch
        mx = {1: ops.max_pool1d, 2: ops.max_pool2d, 3: ops.max_pool3d}[n]
        s = stride if stride is not None else k
        if norm_type > 0:
            return mx(input.abs(), k, s, 0, 1, ceil_mode=ceil_mode)
        return -mx(-input.abs(), k, s, 0, 1, ceil_mode=ceil_mode)
    out = avg(input.pow(norm_type), k, stride if stride is not None else k, 0, ceil_mode=ceil_mode)
    return (ops.sign(out) * ops.relu(ops.abs(out))).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` (PyTorch: ``(avg_pool(x^p) * k)^(1/p)``)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def _unpool_size(input, kernel, stride, padding, output_size, n):
    spatial = tuple(input.shape[-n:])
    default = [(spatial[d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d in range(n):
        if not default[d] - stride[d] < output_size[d] < default[d] + stride[d]:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{default[d] - stride[d]} and {default[d] + stride[d]})")
    return output_size


def _max_unpool(n, input, indices, kernel_size, stride, padding, output_size):
    k = _tuple(kernel_size, n)
    s = _tuple(stride if stride is not None else kernel_size, n)
    p = _tuple(padding, n)
    size = _unpool_size(input, k, s, p, output_size, n)
    lead = tuple(input.shape[:-n])
    flat_in = input.reshape(*lead, -1)
    out = ops.zeros(*lead, math.prod(size), dtype=input.dtype, device=input.device)
    out = ops.scatter(out, flat_in.ndim - 1, indices.reshape(*lead, -1), flat_in)
    return out.reshape(*lead, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The inverse of ``max_pool1d(return_indices=True)``: each value back at its index, zeros elsewhere."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return ops.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return ops.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return ops.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return ops.adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return ops.adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return ops.adaptive_max_pool3d(input, output_size, return_indices=True)


# ----------------------------------------------------------------------------- normalisation, shuffles
def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """``x / (k + alpha * mean over a window of `size` channels of x^2)^beta``."""
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = ops.pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = ops.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = ops.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = ops.avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(sizes)
    return input / (div * alpha + k).pow(beta)


def channel_shuffle(input, groups: int) -> Tensor:
    """``(N, g * c, *) -> (N, c * g, *)``: channel ``i`` of group ``j`` moves to ``i * g + j``."""
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


# ----------------------------------------------------------------------------- activations
def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with a negative slope drawn uniformly from ``[lower, upper]`` per element in
    training, ``(lower + upper) / 2`` in eval. In training the slopes are torch's: one 53-bit
    uniform per element ``<= 0``, in order (``backend/random_stream.py``); positive elements
    pass through (slope 1)."""
    if not training:
        out = ops.leaky_relu(input, (lower + upper) / 2)
    else:
        from ..backend import CPU, to_device
        from ..backend import random as _random
        from ..backend import random_stream as _stream

        x = np.ascontiguousarray(to_device(input.detach().array, CPU))
        neg = x <= 0
        u = _stream.uniform53(_random.get().mt, int(neg.sum())).astype(np.longdouble)
        slope = np.ones(x.shape, np.float64)
        slope[neg] = (u * np.longdouble(upper - lower) + np.longdouble(lower)).astype(np.float64)
        slope_t = ops.tensor(slope, dtype=input.dtype, device=input.device)
        out = input * slope_t
    return _inplace(input, out) if inplace else out


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


def _inplace(target, result):
    from ..ops._util import inplace

    return inplace(target, result)


def celu_(input, alpha: float = 1.0) -> Tensor:
    return _inplace(input, ops.celu(input, alpha))


def selu_(input) -> Tensor:
    return ops.selu_(input)


def threshold_(input, threshold: float, value: float) -> Tensor:
    from .functional import threshold as th

    return _inplace(input, th(input, threshold, value))


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (``ops.feature_alpha_dropout``)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    return ops.feature_alpha_dropout(input, p, training, inplace)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """``softmax((logits + g) / tau)`` with Gumbel noise ``g = -log(Exp(1))``; ``hard``: the
    one-hot of the argmax in the forward pass with the soft sample's gradient."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -ops.empty_like(logits).exponential_().log()
    y_soft = ops.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = ops.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ----------------------------------------------------------------------------- distances, grids, resizing
def pdist(input, p: float = 2) -> Tensor:
    """The ``p``-norm distance between every pair of rows ``i < j`` of an ``(N, M)`` input,
    in row-major order of the pairs (``N (N - 1) / 2`` values)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    i, j = ops.triu_indices(n, n, 1, device=input.device)
    return ops.vector_norm(ops.index_select(input, 0, i) - ops.index_select(input, 0, j), p, -1)


_ALIGN_CORNERS_NOTE = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                       "Please specify align_corners=True if the old behavior is desired. "
                       "See the documentation of grid_sample for details.")


def affine_grid(theta, size, align_corners=None) -> Tensor:
    """Sampling grid ``(N, H, W, 2)`` (``(N, D, H, W, 3)``) of the affine maps ``theta``
    ``(N, 2, 3)`` (``(N, 3, 4)``) applied to the normalised output coordinates in ``[-1, 1]``
    (pixel centres when ``align_corners=False``, the default; left unset, PyTorch's warning
    that the default changed in 1.3)."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_NOTE, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    spatial = tuple(size[2:])
    nd = len(spatial)
    if nd not in (2, 3) or theta.ndim != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size {list(size)}. "
                         f"Got {list(theta.shape)}.")
    if min(spatial) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {list(size)}")

    def coords(n):
        # as PyTorch builds them, in theta's dtype: linspace(-1, 1, n), then `* (n - 1)` and
        # `/ n` (two roundings) for pixel centres. Rounded otherwise, a centre such as
        # pixel 14 of 28 lands an ulp below the integer, and grid_sample's bilinear
        # gradient (one-sided at a pixel) takes the other neighbours' difference.
        if n <= 1:
            return np.zeros(max(n, 1), theta.dtype.np)
        c = ops.linspace(-1.0, 1.0, n, dtype=theta.dtype).numpy()
        if not align_corners:
            c = c * c.dtype.type(n - 1) / c.dtype.type(n)
        return c

    axes = [coords(n) for n in reversed(spatial)]  # x (width) first, as the grid's last dim
    mesh = np.meshgrid(*axes, indexing="ij")  # each (W, H[, D])
    base = np.stack([m.T if nd == 2 else m.transpose(2, 1, 0) for m in mesh] + [np.ones(spatial[::-1]).T
                    if nd == 2 else np.ones(spatial)], axis=-1)  # (*spatial, nd + 1)
    base_t = ops.tensor(base.reshape(-1, nd + 1), dtype=theta.dtype, device=theta.device)
    grid = ops.matmul(base_t, theta.transpose(1, 2))  # (N, prod(spatial), nd)
    return grid.reshape(theta.shape[0], *spatial, nd)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """Deprecated ``interpolate``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return ops.interpolate(input, size=size, scale_factor=scale_factor, mode=mode, align_corners=align_corners)


def upsample_nearest(input, size=None, scale_factor=None) -> Tensor:
    """Deprecated ``interpolate(mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return ops.interpolate(input, size=size, scale_factor=scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None) -> Tensor:
    """Deprecated ``interpolate(mode='bilinear', align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return ops.interpolate(input, size=size, scale_factor=scale_factor, mode="bilinear", align_corners=True)


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners=None) -> Tensor:
    """Sample ``input`` at the ``grid`` locations (``shardflow/ops/grid_sample.py``);
    ``align_corners`` left unset warns as ``affine_grid``."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_NOTE, stacklevel=2)
        align_corners = False
    return ops.grid_sample(input, grid, mode, padding_mode, align_corners)
