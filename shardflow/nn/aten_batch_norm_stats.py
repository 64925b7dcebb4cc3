"""The building blocks of synchronised batch norm, torch's top-level names, as hand-written
SyncBatchNorm code calls them (torch's ``nn.modules._functions.SyncBatchNorm``):

* ``batch_norm_stats(input, eps)`` -> per-channel ``(mean, invstd)`` of this rank's batch
  (biased variance; channels are dim 1);
* ``batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
  momentum, eps, count)`` -> the global ``(mean, invstd)`` from every rank's ``(W, C)``
  statistics and ``(W,)`` counts, updating the running stats in place (unbiased variance);
  ``batch_norm_gather_stats`` takes one ``count`` for every rank;
* ``batch_norm_elemt(input, weight, bias, mean, invstd, eps)``: ``(x - mean) * invstd * w + b``;
* ``batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g,
  bias_g)`` -> ``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)`` per channel (None where the
  flag is False);
* ``batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
  count_tensor)``: the input gradient from the all-reduced sums (``count``: every rank's count);
* ``batch_norm_update_stats(input, running_mean, running_var, momentum)`` -> ``(mean, var)``
  (biased ``var``), running stats updated in place (unbiased).

Deviation: torch 2.13 runs all but ``batch_norm_update_stats`` on CUDA only (its CPU build
raises NotImplementedError); shardflow computes them on any device, so the same SyncBN code
runs on CPU ranks. The statistics carry no gradient (SyncBN's own Function calls the
backward pieces); ``batch_norm_elemt`` is built from differentiable ops.
"""

from __future__ import annotations

from ..autograd import Tensor, no_grad
from ..ops import as_tensor

__all__ = ["batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
           "batch_norm_backward_reduce", "batch_norm_backward_elemt", "batch_norm_update_stats"]


def _axes(x: Tensor):
    if x.ndim < 2:
        raise ValueError(f"batch norm statistics: expected an input of at least 2 dims (N, C, ...), got "
                         f"shape {list(x.shape)}")
    return (0, *range(2, x.ndim))


def _channel(t: Tensor, ndim: int) -> Tensor:
    """A ``(C,)`` tensor shaped to broadcast against ``(N, C, ...)``."""
    return t.reshape(1, -1, *([1] * (ndim - 2)))


def batch_norm_stats(input, eps):
    with no_grad():
        axes = _axes(input)
        mean = input.mean(axes)
        var = input.var(axes, correction=0)
        return mean, (var + eps).rsqrt()


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    out = (input - _channel(mean, input.ndim)) * _channel(invstd, input.ndim)
    if weight is not None:
        out = out * _channel(weight, input.ndim)
    if bias is not None:
        out = out + _channel(bias, input.ndim)
    return out


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, count):
    # ``count``: every rank's count (torch's keyword name, a tensor of counts)
    with no_grad():
        counts = as_tensor(count, dtype=mean.dtype).reshape(-1, 1)
        total = counts.sum()
        g_mean = (mean * counts).sum(0) / total
        var_each = 1.0 / (invstd * invstd) - eps  # each rank's biased variance
        g_var = ((var_each + (mean - g_mean) ** 2) * counts).sum(0) / total
        n = float(total)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(g_mean.to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = g_var * (n / (n - 1)) if n > 1 else g_var
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        return g_mean, (g_var + eps).rsqrt()


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps, count):
    counts = [float(count)] * mean.shape[0]
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps,
                                               counts)


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    with no_grad():
        axes = _axes(input)
        sum_dy = grad_out.sum(axes)
        sum_dy_xmu = (grad_out * (input - _channel(mean, input.ndim))).sum(axes)
        grad_weight = sum_dy_xmu * invstd if weight_g else None
        grad_bias = sum_dy if bias_g else None
        if not input_g:
            sum_dy = sum_dy_xmu = None
        return sum_dy, sum_dy_xmu, grad_weight, grad_bias


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count_tensor):
    with no_grad():
        n = float(as_tensor(count_tensor).sum())
        nd = input.ndim
        istd = _channel(invstd, nd)
        grad = (grad_out - _channel(sum_dy / n, nd)
                - (input - _channel(mean, nd)) * istd * istd * _channel(sum_dy_xmu / n, nd)) * istd
        if weight is not None:
            grad = grad * _channel(weight, nd)
        return grad


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    with no_grad():
        axes = _axes(input)
        mean = input.mean(axes)
        var = input.var(axes, correction=0)
        n = input.numel() // input.shape[1]
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = var * (n / (n - 1)) if n > 1 else var
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        return mean, var
