"""``shardflow.horovod``: Horovod's PyTorch API, so that a Horovod script runs after
``import shardflow.horovod as hvd`` (and ``import shardflow as torch``).

Algorithm and communication plan
--------------------------------
* ``init()`` initialises the world communicator (:mod:`shardflow.comm`); ``size``, ``rank``,
  ``local_rank``, ``local_size`` read it.
* ``allreduce`` / ``allgather`` / ``broadcast`` return new tensors; the ``*_`` variants work
  in place; ``*_async`` return a handle for :func:`synchronize`. ``allgather`` accepts
  different first-dim sizes per rank (sizes are all-gathered first, then rows padded to
  the largest and trimmed).
* ``broadcast_parameters`` broadcasts each tensor of a ``state_dict`` or
  ``named_parameters`` list in place; ``broadcast_optimizer_state`` sends the root's
  optimizer ``state_dict`` (pickled, control-sized) and loads it everywhere.
* ``DistributedOptimizer`` wraps an optimizer: a post-accumulate-grad hook on every
  parameter counts backward passes; on the ``backward_passes_per_step``-th it hands the
  gradient to the shared gradient reducer (``shardflow.nn.parallel.reducer``: Horovod's
  tensor fusion), which copies it into a bucket; a full bucket is compressed
  (``Compression.fp16`` casts to float16) and an asynchronous ``all_reduce`` (sum, or
  average = sum / size) of it starts while backward continues; hooks drive MPI progress.
  ``step()`` waits for every bucket, decompresses into ``p.grad`` and runs the wrapped
  optimizer. ``DistributedOptimizer.comm_bytes`` counts the bytes handed to the
  all-reduces (after compression: ``Compression.fp16`` halves a float32 model's). Collectives are matched across ranks by issue order (the backward
  graph is the same on every rank); every collective checks that the ranks made the same
  call (op, dtype, element count, root: ``shardflow.comm``), and raises naming each
  rank's call if not.
"""

from __future__ import annotations

import contextlib

import numpy as np

from .. import comm as _comm
from ..autograd.tensor import Tensor, _wrap
from ..nn.parallel.reducer import Reducer

__all__ = [
    "init", "shutdown", "is_initialized", "size", "rank", "local_rank", "local_size",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_", "allgather",
    "broadcast", "broadcast_", "broadcast_async_", "synchronize", "poll",
    "broadcast_parameters", "broadcast_optimizer_state", "broadcast_object",
    "allgather_object", "DistributedOptimizer", "Compression", "Average", "Sum", "Min", "Max",
    "Product",
]

Average = "avg"
Sum = "sum"
Min = "min"
Max = "max"
Product = "prod"


class _NoneCompressor:
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class _FP16Compressor:
    @staticmethod
    def compress(tensor):
        arr = tensor.array if isinstance(tensor, Tensor) else tensor
        if arr.dtype.kind == "f" and arr.dtype != np.float16:
            return _wrap(arr.astype(np.float16)), arr.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        if ctx is None:
            return tensor
        return _wrap(tensor.array.astype(ctx))


class Compression:
    """Gradient compression for DistributedOptimizer: ``none`` or ``fp16``."""

    none = _NoneCompressor
    fp16 = _FP16Compressor


def init(comm=None) -> None:
    _comm.init()


def shutdown() -> None:
    _comm.destroy()


def is_initialized() -> bool:
    return _comm.is_initialized()


def _world():
    if not _comm.is_initialized():
        raise ValueError("Horovod has not been initialized; call hvd.init() first")
    return _comm.get_world()


def size() -> int:
    return _world().size


def rank() -> int:
    return _world().rank


def local_rank() -> int:
    _world()
    return _comm.world_info().local_rank


def local_size() -> int:
    _world()
    return _comm.world_info().local_world_size


def _op(average, op):
    if op is not None and average is not None:
        raise ValueError("pass either op= or the deprecated average=, not both")
    if op is None:
        op = Average if average in (None, True) else Sum
    return _comm.ReduceOp.parse(op)


class _Handle:
    __slots__ = ("work", "fn", "value")

    def __init__(self, work, fn):
        self.work, self.fn, self.value = work, fn, None


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0):
    op = _op(average, op)
    arr = tensor.array
    if prescale_factor != 1.0:
        arr *= prescale_factor

    def done():
        if postscale_factor != 1.0:
            arr[...] *= postscale_factor
        tensor._version_counter[0] += 1
        return tensor

    return _Handle(_world().all_reduce(arr, op, async_op=True), done)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0):
    out = _wrap(tensor.array.copy())
    return allreduce_async_(out, average, name, op, prescale_factor, postscale_factor)


def synchronize(handle):
    """Wait for an ``*_async`` handle and return its tensor."""
    handle.work.wait()
    if handle.fn is not None:
        handle.value = handle.fn()
        handle.fn = None
    return handle.value


def poll(handle) -> bool:
    return handle.work.is_completed()


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor))


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0):
    """A new tensor: the reduction of ``tensor`` over all ranks (default: average)."""
    c, ctx = compression.compress(tensor)
    out = _wrap(c.array.copy())
    allreduce_(out, average, name, op, prescale_factor, postscale_factor)
    return compression.decompress(out, ctx)


def allgather(tensor, name=None):
    """Concatenate every rank's ``tensor`` along dim 0 (first dims may differ)."""
    w = _world()
    arr = np.ascontiguousarray(tensor.array)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    rows = w.all_gather(np.array([arr.shape[0]], dtype=np.int64)).reshape(-1)
    top = int(rows.max())
    if (rows == top).all():
        return _wrap(w.all_gather(arr).reshape(-1, *arr.shape[1:]))
    pad = np.zeros((top, *arr.shape[1:]), dtype=arr.dtype)
    pad[: arr.shape[0]] = arr
    got = w.all_gather(pad)  # (world, top, ...)
    return _wrap(np.concatenate([got[k, : int(rows[k])] for k in range(w.size)]))


def broadcast_async_(tensor, root_rank, name=None):
    def done():
        tensor._version_counter[0] += 1
        return tensor

    return _Handle(_world().broadcast(tensor.array, root_rank, async_op=True), done)


def broadcast_(tensor, root_rank, name=None):
    return synchronize(broadcast_async_(tensor, root_rank, name))


def broadcast(tensor, root_rank, name=None):
    out = _wrap(tensor.array.copy())
    return broadcast_(out, root_rank, name)


def broadcast_object(obj, root_rank=0, name=None):
    return _world().broadcast_object(obj, root_rank)


def allgather_object(obj, name=None):
    return _world().all_gather_object(obj)


def broadcast_parameters(params, root_rank=0) -> None:
    """Broadcast, in place, a ``state_dict`` or an iterable of ``(name, tensor)`` pairs."""
    if isinstance(params, dict):
        items = sorted(params.items())
    else:
        items = list(params)
        if items and not isinstance(items[0], tuple):
            items = [(str(i), p) for i, p in enumerate(items)]
    w = _world()
    for _, p in items:
        if isinstance(p, Tensor):
            w.broadcast(p.array, root_rank)
            p._version_counter[0] += 1
        else:
            raise ValueError(f"broadcast_parameters expects tensors, got {type(p).__name__}")


def broadcast_optimizer_state(optimizer, root_rank=0) -> None:
    """Make every rank's optimizer state equal to the root's (state_dict broadcast + load)."""
    inner = getattr(optimizer, "_optimizer", optimizer)
    state = _world().broadcast_object(inner.state_dict() if rank() == root_rank else None,
                                      root_rank)
    inner.load_state_dict(state)


class DistributedOptimizer:
    """Wrap ``optimizer`` so that ``step()`` uses gradients averaged over all ranks.

    The gradients go through the shared gradient reducer
    (:class:`shardflow.nn.parallel.reducer.Reducer`, Horovod's tensor fusion): buckets of
    gradients launched during backward, waited for in ``step()`` / ``synchronize()``.
    Compression and the pre/post-division run in the reducer's communication hook
    (:func:`_reduce_bucket`), once per bucket."""

    def __init__(self, optimizer, named_parameters=None, compression=Compression.none,
                 backward_passes_per_step: int = 1, op=Average, gradient_predivide_factor=1.0,
                 num_groups=0, groups=None, sparse_as_dense=False):
        if backward_passes_per_step < 1:
            raise ValueError(f"backward_passes_per_step must be >= 1, got {backward_passes_per_step}")
        self._optimizer = optimizer
        self._compression = compression
        self._op = _comm.ReduceOp.parse(op)
        self._passes = backward_passes_per_step
        self._predivide = gradient_predivide_factor
        params = [p for g in optimizer.param_groups for p in g["params"]]
        names = None
        if named_parameters is not None:
            named = list(named_parameters)
            by_id = {id(p): n for n, p in named}
            missing = [i for i, p in enumerate(params) if id(p) not in by_id]
            if missing:
                raise ValueError(
                    f"named_parameters does not cover {len(missing)} optimizer parameter(s); "
                    "pass model.named_parameters() of the model whose parameters the optimizer holds"
                )
            names = [by_id[id(p)] for p in params]
        self._params = [p for p in params if p.requires_grad]
        self._names = names if names is None else [n for n, p in zip(names, params) if p.requires_grad]
        self._counts = {id(p): 0 for p in self._params}
        self._reducer = None  # made at the first gradient (hvd.init() may come after this)
        self.comm_bytes = 0  # bytes handed to the gradient all-reduces (after compression)
        self._sync = True
        self._hooks = [p.register_post_accumulate_grad_hook(self._ready) for p in self._params]

    def __getattr__(self, name):
        return getattr(self.__dict__["_optimizer"], name)

    @property
    def param_groups(self):
        return self._optimizer.param_groups

    @property
    def state(self):
        return self._optimizer.state

    def _get_reducer(self) -> Reducer:
        if self._reducer is None:
            self._reducer = Reducer(self._params, _world(), hooks=False,
                                    finalize_in_backward=False, names=self._names)
            self._reducer.register_comm_hook(self, _reduce_bucket)
        return self._reducer

    def _ready(self, p) -> None:
        key = id(p)
        self._counts[key] += 1
        if self._counts[key] < self._passes:
            return
        self._counts[key] = 0
        self._get_reducer().grad_ready(p)

    def synchronize(self) -> None:
        """Wait for every outstanding gradient all_reduce and write the results to ``.grad``."""
        if self._reducer is not None:
            self._reducer.finalize()

    @contextlib.contextmanager
    def skip_synchronize(self):
        self._sync = False
        try:
            yield
        finally:
            self._sync = True

    def step(self, closure=None):
        if self._sync:
            self.synchronize()
        return self._optimizer.step(closure) if closure is not None else self._optimizer.step()

    def zero_grad(self, set_to_none: bool = True):
        if self._reducer is not None and self._reducer.touched:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(); call step() first"
            )
        return self._optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self):
        return self._optimizer.state_dict()

    def load_state_dict(self, state):
        return self._optimizer.load_state_dict(state)


class _Pending:
    """What :func:`_reduce_bucket` returns: ``wait()`` completes the reduction once."""

    __slots__ = ("_complete", "_value")

    def __init__(self, complete):
        self._complete, self._value = complete, None

    def wait(self):
        if self._complete is not None:
            self._value, self._complete = self._complete(), None
        return self._value


def _reduce_bucket(opt: DistributedOptimizer, bucket) -> _Pending:
    """The reducer's communication hook for one bucket: compress (``Compression.fp16``:
    float16), divide by ``gradient_predivide_factor``, start the all_reduce (``op``), and on
    ``wait()`` decompress and multiply the factor back (so ``Average`` is the average)."""
    flat = bucket.buffer().array
    c, ctx = opt._compression.compress(_wrap(flat))
    buf = c.array  # the bucket itself, or its compressed copy
    if opt._predivide != 1.0:
        buf /= opt._predivide
    work = _world().all_reduce(buf, opt._op, async_op=True)
    opt.comm_bytes += int(buf.nbytes)

    def complete():
        work.wait()
        g = opt._compression.decompress(_wrap(buf), ctx).array
        if opt._predivide != 1.0 and opt._op in ("sum", "avg"):
            g = g * opt._predivide
        return g

    return _Pending(complete)
