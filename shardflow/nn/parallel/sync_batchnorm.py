"""``SyncBatchNorm``: batch norm whose statistics cover the global batch of all ranks.

Algorithm (PyTorch's SyncBatchNorm, one all_reduce each way):

* forward (training): each rank computes, per channel, its element count ``m_r``, sum and
  sum of squares over every dim but 1 (in float64); one ``all_reduce(SUM)`` of the packed
  ``(sum, sumsq, count)`` gives the global mean and biased variance; the running stats
  are updated with the global mean and the unbiased global variance.
* backward: each rank reduces ``sum(dy)`` and ``sum(dy * xhat)`` locally; one
  ``all_reduce(SUM)`` makes them global and
  ``dx = weight * invstd * (dy - sum_dy / M - xhat * sum_dy_xhat / M)``.
  ``dweight`` / ``dbias`` stay local sums: DistributedDataParallel averages them.
* eval mode, or a world of one: plain ``batch_norm``.

The communicator is the one of ``process_group`` (default: the world).
"""

from __future__ import annotations

import numpy as np

from ...autograd.function import Function
from ...backend import get_array_module
from ..module import Module
from ..modules.normalization import _BatchNorm


class _SyncBNFunction(Function):
    def forward(self, x, weight, bias, *, comm, eps, running_mean, running_var, momentum):
        C = x.shape[1]
        axes = (0,) + tuple(range(2, x.ndim))
        x64 = x.astype(np.float64, copy=False)
        local_m = x.size // max(C, 1)
        packed = get_array_module(x).empty(2 * C + 1, dtype=np.float64)  # on x's device: one all-reduce
        packed[:C] = x64.sum(axis=axes)
        packed[C:2 * C] = np.square(x64).sum(axis=axes)
        packed[2 * C] = local_m
        comm.all_reduce(packed, "sum")
        M = packed[2 * C]
        mean = packed[:C] / M
        var = np.maximum(packed[C:2 * C] / M - mean * mean, 0.0)
        invstd = 1.0 / np.sqrt(var + eps)
        bshape = (1, C) + (1,) * (x.ndim - 2)
        xhat = ((x64 - mean.reshape(bshape)) * invstd.reshape(bshape)).astype(x.dtype)
        if running_mean is not None:
            unbiased = var * (M / max(M - 1.0, 1.0))
            running_mean.array[...] = (1 - momentum) * running_mean.array + momentum * mean
            running_var.array[...] = (1 - momentum) * running_var.array + momentum * unbiased
            running_mean._version_counter[0] += 1
            running_var._version_counter[0] += 1
        self.comm, self.xhat, self.M = comm, xhat, M
        self.invstd = invstd.astype(x.dtype)
        self.weight = weight
        self.bshape, self.axes = bshape, axes
        y = xhat
        if weight is not None:
            y = y * weight.reshape(bshape)
        if bias is not None:
            y = y + bias.reshape(bshape)
        return y.astype(x.dtype, copy=False)

    def backward(self, dy):
        xhat, axes, bshape = self.xhat, self.axes, self.bshape
        C = xhat.shape[1]
        sum_dy_local = dy.sum(axis=axes, dtype=np.float64)
        sum_dyx_local = (dy * xhat).sum(axis=axes, dtype=np.float64)
        dx = None
        if self.needs_input_grad[0]:
            packed = np.concatenate([sum_dy_local, sum_dyx_local])
            self.comm.all_reduce(packed, "sum")
            sum_dy, sum_dyx = packed[:C], packed[C:]
            w = self.weight if self.weight is not None else get_array_module(dy).ones(C, dtype=dy.dtype)
            scale = (w * self.invstd).reshape(bshape)
            dx = (scale * (dy - (sum_dy / self.M).reshape(bshape)
                           - xhat * (sum_dyx / self.M).reshape(bshape))).astype(dy.dtype)
        dw = sum_dyx_local.astype(dy.dtype) if self.needs_input_grad[1] else None
        db = sum_dy_local.astype(dy.dtype) if self.needs_input_grad[2] else None
        return dx, dw, db


class SyncBatchNorm(_BatchNorm):
    """Batch norm over the global batch of ``process_group``; see the module docstring."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.__dict__["process_group"] = process_group

    def _check_input_dim(self, input) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        from ... import comm as _comm  # here, not at import: a one-process program never needs it

        pg = self.process_group if self.process_group is not None else (
            _comm.get_world() if _comm.is_initialized() else None)
        if not self.training or pg is None or pg.size == 1:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.array += 1
            self.num_batches_tracked._version_counter[0] += 1
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.array)
        track = self.track_running_stats and self.running_mean is not None
        w = self.weight if self.affine else None
        b = self.bias if self.affine else None
        return _SyncBNFunction.apply(
            input, w, b, comm=pg, eps=self.eps, momentum=factor,
            running_mean=self.running_mean if track else None,
            running_var=self.running_var if track else None,
        )

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """Return ``module`` with every ``BatchNorm*d`` replaced by a SyncBatchNorm (same state)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, cls):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            if module.track_running_stats:
                out.running_mean = module.running_mean
                out.running_var = module.running_var
                out.num_batches_tracked = module.num_batches_tracked
            out.train(module.training)
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


__all__ = ["SyncBatchNorm"]
