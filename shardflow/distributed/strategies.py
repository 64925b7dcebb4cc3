"""tf.distribute-style strategies: thin facades over the communicator and the parameter server (docs/PS.md).

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

The gradient sums go through the shared gradient reducer
(:class:`shardflow.nn.parallel.reducer.Reducer`, ``op="sum"``, its after-backward form
``reduce_gradients``), one bucket per gradient: one ``all_reduce(SUM)`` per parameter, the
collectives these strategies have always issued (fewer, larger ones are a bucket cap away:
``_GRADIENT_BUCKET_MB``); a parameter without a gradient contributes zeros.
* ``ParameterServerStrategy``: the first ``num_ps`` ranks serve the variables (split across
  them), the others are workers that push gradients and pull parameters over the ps
  package's TCP protocol; sync or async (see the class).
"""

from __future__ import annotations

import contextlib

import numpy as np

from .. import comm as _comm
from ..autograd.tensor import Tensor
from ..backend.xp import get_array_module
from ..nn.parallel.reducer import Reducer
from .ps import ParameterServer, PSWorker
from .ps.cluster import check_optimizer, mpi_cluster, tf_config_cluster
from .ps.optim import make_shard_optimizer

__all__ = ["OneDeviceStrategy", "MirroredStrategy", "MultiWorkerMirroredStrategy",
           "CentralStorageStrategy", "ParameterServerStrategy", "get_strategy"]

_CURRENT: list = []
_GRADIENT_BUCKET_MB = 0  # one all-reduce per gradient (see the module docstring)


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
                xp = get_array_module(arr)  # a device batch stays on its device
                out.append(Tensor(xp.ascontiguousarray(xp.array_split(arr, n, axis=0)[r])))
            yield tuple(out) if isinstance(batch, tuple) else out[0]

    def reduce(self, reduce_op, value, axis=None) -> Tensor:
        """Sum or mean of a per-replica value over the replicas (``axis`` also reduces that
        dimension of the value first, TensorFlow's semantics)."""
        op = str(reduce_op).upper().split(".")[-1]
        if op not in ("SUM", "MEAN"):
            raise ValueError(f"reduce_op must be 'SUM' or 'MEAN', got {reduce_op!r}")
        # a device value is reduced on its device (NCCL), host values over MPI
        arr = value.array if isinstance(value, Tensor) else value
        xp = get_array_module(arr)
        v = xp.asarray(arr, dtype=xp.float64)
        count = 1
        if axis is not None:
            count = v.shape[axis]
            v = v.sum(axis=axis)
        shape = v.shape
        buf = xp.ascontiguousarray(v.reshape(-1))
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
        if self.num_replicas_in_sync > 1:
            self._sum_gradients(list(params))
        optimizer.step()

    def _sum_gradients(self, params) -> None:
        """Every replica's gradients summed, in place, through the gradient reducer (one made
        per parameter list, kept for the next steps)."""
        for p in params:
            if p.grad is None:
                p.grad = Tensor(np.zeros_like(p.array))
        key = tuple(id(p) for p in params)
        reducers = self.__dict__.setdefault("_reducers", {})
        if key not in reducers:
            reducers[key] = Reducer(params, self._world, op="sum", hooks=False,
                                    finalize_in_backward=False,
                                    bucket_cap_mb=_GRADIENT_BUCKET_MB)
        reducers[key].reduce_gradients()


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
        self._sum_gradients(params)  # the sum is used on rank 0 only
        if self._rank == 0:
            optimizer.step()
        for p in params:
            self._world.broadcast(p.array, src=0)


class ParameterServerStrategy(_Strategy):
    """Parameter servers hold the variables, workers compute (TensorFlow's name; the
    machinery is ``shardflow.distributed.ps``, docs/PS.md).

    Launched under ``shardflow run -n N`` (``cluster_resolver=None``): the first ``num_ps``
    ranks are servers, the other ``N - num_ps`` ranks workers (``ps.cluster.mpi_cluster``:
    addresses exchanged once over MPI, then the ps package's TCP protocol). Plain
    processes: ``cluster_resolver`` a TF_CONFIG-shaped dict (``ps.cluster.tf_config_cluster``);
    needed for "continue without a lost worker", since mpiexec ends the job when a rank dies.

    Every task runs the same script::

        strategy = ParameterServerStrategy(num_ps=1, mode="sync", optimizer="sgd", lr=0.1)
        if strategy.task_type == "ps":
            strategy.join()                         # serve until every worker is done or lost
        else:
            with strategy.scope():
                model = build()
            strategy.broadcast_parameters(model.parameters())   # worker 0's values, pulled
            for x, y in strategy.experimental_distribute_dataset(batches):
                loss = strategy.run(step_fn, args=(x, y))
                strategy.apply_gradients(None, model.parameters())   # push, then pull
            strategy.join()                         # tell the servers this worker is done

    Per step a worker pushes its gradients (times ``num_workers``, so that the servers'
    mean is the replicas' SUM, as for the other strategies) and pulls the parameters the
    servers allow at its clock: ``mode="sync"`` equals one process stepping the update on
    the summed gradients (``MirroredStrategy``'s result), ``mode="async"`` applies each push
    on arrival with the staleness bound. The update (``optimizer`` ``"sgd"`` or ``"adam"``,
    ``lr``, ``betas``, ``eps``) runs on the servers, its state kept with each shard; a local
    optimizer given to ``apply_gradients`` must describe the same update (it is never
    stepped). ``num_replicas_in_sync`` is the number of workers; ``reduce`` is over the
    workers (MPI launch only).
    """

    def __init__(self, cluster_resolver=None, variable_partitioner=None, *, num_ps: int = 1,
                 mode: str = "sync", staleness: int = 0, optimizer: str = "sgd", lr: float = 0.01,
                 betas=(0.9, 0.999), eps: float = 1e-8, worker_timeout: float = 10.0,
                 on_worker_loss: str | None = None, timeout: float = 30.0, heartbeat: float = 0.5):
        if variable_partitioner is not None:
            raise NotImplementedError(
                "variable_partitioner: the parameters are always one flat vector split evenly "
                "across the servers (numpy.array_split); pass None")
        make_shard_optimizer(optimizer, lr, betas, eps)  # refuse a bad update before any socket opens
        self._opt_config = {"optimizer": optimizer, "lr": float(lr), "betas": tuple(betas), "eps": float(eps)}
        self._timeout, self._heartbeat = float(timeout), float(heartbeat)

        def make_server(server_id, num_workers, host, port=0):
            return ParameterServer(server_id, num_workers, lr=lr, mode=mode, staleness=staleness,
                                   worker_timeout=worker_timeout, on_worker_loss=on_worker_loss,
                                   host=host, port=port, optimizer=optimizer, betas=betas, eps=eps)

        if cluster_resolver is None:
            self.cluster = mpi_cluster(_comm.get_world(), num_ps, make_server)
        else:
            self.cluster = tf_config_cluster(cluster_resolver, make_server)
        self._world = self.cluster.worker_group  # reduce / dataset split over the workers
        self._client = None

    @property
    def task_type(self) -> str:
        return self.cluster.task_type

    @property
    def task_id(self) -> int:
        return self.cluster.task_id

    @property
    def num_replicas_in_sync(self) -> int:
        return self.cluster.num_workers

    @property
    def _rank(self) -> int:
        return self.cluster.task_id

    def _worker(self, what: str):
        if self.task_type != "worker":
            raise RuntimeError(f"{what} runs on workers; this task is parameter server "
                               f"{self.task_id}: call strategy.join() there")
        if self._client is None:
            raise RuntimeError(f"{what} before broadcast_parameters(model.parameters()): the "
                               "worker has no parameters to pull into yet")
        return self._client

    def broadcast_parameters(self, params) -> None:
        """Worker 0's values become the servers' initial values; every worker pulls them."""
        if self.task_type != "worker":
            raise RuntimeError(f"broadcast_parameters runs on workers; this task is parameter "
                               f"server {self.task_id}: call strategy.join() there")
        self._client = PSWorker(params, self.cluster.servers, self.task_id, timeout=self._timeout,
                                heartbeat=self._heartbeat)
        if self.task_id == 0:
            self._client.init_params()
        self._client.pull()

    def apply_gradients(self, optimizer, params) -> None:
        """Push this worker's gradients (SUM convention), then pull the parameters."""
        check_optimizer(optimizer, self._opt_config)
        client = self._worker("apply_gradients")
        client.push(scale=float(self.num_replicas_in_sync))
        client.pull()

    def reduce(self, reduce_op, value, axis=None) -> Tensor:
        if self.num_replicas_in_sync > 1 and self._world is None:
            raise NotImplementedError(
                "ParameterServerStrategy.reduce over the workers needs the MPI launch "
                "(cluster_resolver=None under `shardflow run`); with a TF_CONFIG cluster the "
                "workers share no communicator: reduce locally (OneDeviceStrategy().reduce)")
        return super().reduce(reduce_op, value, axis)

    def join(self):
        """Server: serve until every worker is done or lost, return its stats. Worker: tell
        the servers this worker is done (its last call)."""
        if self.task_type == "ps":
            return self.cluster.server.serve()
        if self._client is not None:
            self._client.close()
        return None
