"""tf.distribute-style strategies: thin facades over the communicator (docs/PIPELINE.md).

TensorFlow's custom-training-loop shape, on shardflow Tensors::

    strategy = MirroredStrategy()                  # one replica per rank of the world
    with strategy.scope():
        model, opt = build()                       # the same seed on every rank
    for x, y in strategy.experimental_distribute_dataset(batches):   # this replica's rows
        loss = strategy.run(step_fn, args=(x, y))  # forward + backward on this replica
        strategy.apply_gradients(opt, model.parameters())
        total = strategy.reduce("SUM", loss, axis=None)

As in TensorFlow, gradients are **summed** over the replicas (scale the per-replica loss by
``1 / global_batch_size``, ``compute_average_loss``) and ``reduce`` takes ``"SUM"`` or
``"MEAN"`` (``axis=0`` also reduces the batch dimension). Strategies:

* ``OneDeviceStrategy``: one replica, no communication.
* ``MirroredStrategy`` / ``MultiWorkerMirroredStrategy``: one replica per rank (one device per
  process; several hosts through ``shardflow run --hosts``): ``broadcast_parameters`` gives
  every replica rank 0's values; ``apply_gradients`` all-reduces the gradients (SUM).
* ``CentralStorageStrategy``: the variables live on rank 0: gradients are summed there, rank 0
  steps the optimizer, the new values are broadcast (the optimizer state exists on rank 0 only).
* ``ParameterServerStrategy``: refused with a pointer to ``shardflow.distributed.ps`` (the
  parameter server runs over TCP between plain processes, not inside an MPI world).
"""

from __future__ import annotations

import contextlib

import numpy as np

from .. import comm as _comm
from ..autograd.tensor import Tensor

__all__ = ["OneDeviceStrategy", "MirroredStrategy", "MultiWorkerMirroredStrategy",
           "CentralStorageStrategy", "ParameterServerStrategy", "get_strategy"]

_CURRENT: list = []


def get_strategy():
    """The strategy whose ``scope()`` is active (``OneDeviceStrategy`` outside any scope)."""
    return _CURRENT[-1] if _CURRENT else OneDeviceStrategy()


class _Strategy:
    def __init__(self):
        self._world = _comm.get_world() if self._replicas_are_ranks else None

    _replicas_are_ranks = True

    @property
    def num_replicas_in_sync(self) -> int:
        return self._world.size if self._world is not None else 1

    @property
    def _rank(self) -> int:
        return self._world.rank if self._world is not None else 0

    @contextlib.contextmanager
    def scope(self):
        _CURRENT.append(self)
        try:
            yield self
        finally:
            _CURRENT.pop()

    def run(self, fn, args=(), kwargs=None):
        """Call ``fn`` on this replica (one replica per process)."""
        return fn(*args, **(kwargs or {}))

    def experimental_distribute_dataset(self, dataset):
        """Yield this replica's rows of each global batch (a tuple of arrays/Tensors split
        along dim 0 into ``num_replicas_in_sync`` chunks, ``numpy.array_split``'s sizes)."""
        n, r = self.num_replicas_in_sync, self._rank
        for batch in dataset:
            parts = batch if isinstance(batch, tuple) else (batch,)
            out = []
            for t in parts:
                arr = t.array if isinstance(t, Tensor) else np.asarray(t)
                out.append(Tensor(np.ascontiguousarray(np.array_split(arr, n, axis=0)[r])))
            yield tuple(out) if isinstance(batch, tuple) else out[0]

    def reduce(self, reduce_op, value, axis=None) -> Tensor:
        """Sum or mean of a per-replica value over the replicas (``axis`` also reduces that
        dimension of the value first, TensorFlow's semantics)."""
        op = str(reduce_op).upper().split(".")[-1]
        if op not in ("SUM", "MEAN"):
            raise ValueError(f"reduce_op must be 'SUM' or 'MEAN', got {reduce_op!r}")
        v = np.asarray(value.array if isinstance(value, Tensor) else value, dtype=np.float64)
        count = 1
        if axis is not None:
            count = v.shape[axis]
            v = v.sum(axis=axis)
        shape = v.shape
        buf = np.ascontiguousarray(v.reshape(-1))
        total = np.array([float(count)])
        if self.num_replicas_in_sync > 1:
            self._world.all_reduce(buf)
            self._world.all_reduce(total)
        if op == "MEAN":
            buf = buf / (total[0] if axis is not None else self.num_replicas_in_sync)
        return Tensor(buf.reshape(shape).astype(np.float32))

    def broadcast_parameters(self, params) -> None:
        """Give every replica rank 0's values (call after building the model in ``scope``)."""
        if self.num_replicas_in_sync > 1:
            for p in params:
                self._world.broadcast(p.array, src=0)

    def apply_gradients(self, optimizer, params) -> None:
        """Sum the gradients over the replicas and step ``optimizer`` (TF's apply_gradients)."""
        params = list(params)
        if self.num_replicas_in_sync > 1:
            for p in params:
                if p.grad is None:
                    p.grad = Tensor(np.zeros_like(p.array))
                self._world.all_reduce(p.grad.array)
        optimizer.step()


class OneDeviceStrategy(_Strategy):
    _replicas_are_ranks = False

    def __init__(self, device: str = "/cpu:0"):
        super().__init__()
        self.device = device


class MirroredStrategy(_Strategy):
    def __init__(self, devices=None, cross_device_ops=None):
        super().__init__()


class MultiWorkerMirroredStrategy(MirroredStrategy):
    def __init__(self, cluster_resolver=None, communication_options=None):
        super().__init__()


class CentralStorageStrategy(_Strategy):
    """Variables on rank 0 (see the module docstring)."""

    def __init__(self, compute_devices=None, parameter_device=None):
        super().__init__()

    def apply_gradients(self, optimizer, params) -> None:
        params = list(params)
        if self.num_replicas_in_sync == 1:
            optimizer.step()
            return
        for p in params:
            if p.grad is None:
                p.grad = Tensor(np.zeros_like(p.array))
            self._world.all_reduce(p.grad.array)  # the sum is used on rank 0 only
        if self._rank == 0:
            optimizer.step()
        for p in params:
            self._world.broadcast(p.array, src=0)


class ParameterServerStrategy:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "ParameterServerStrategy is not a facade here: the parameter server runs over TCP "
            "between plain processes (a lost worker must not end an MPI job); use "
            "shardflow.distributed.ps.ParameterServer / PSWorker (docs/PIPELINE.md)")
