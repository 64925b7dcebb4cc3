"""``DistributedDataParallel``: data parallel with bucketed, overlapped gradient averaging.

PyTorch's name, arguments and semantics; the communication goes through
:mod:`shardflow.comm` directly (layer L2), not through ``shardflow.distributed``.

Algorithm
---------
* **Wrap.** Parameters and buffers are broadcast from rank 0, so every rank starts from
  the same model. The parameters that require grad are laid into *buckets* in reverse
  registration order (the order backward produces their gradients): the first bucket is
  capped at 1 MB so that communication starts early, the others at ``bucket_cap_mb``;
  a bucket holds one dtype. Each bucket owns one flat array; each parameter a slice of it.
  The process announces data parallel (``comm.set_data_parallel``) so that DataLoaders
  shard their data automatically.
* **Backward.** A post-accumulate-grad hook on every parameter (the engine calls it once a
  leaf received its whole gradient) copies ``p.grad`` into its slice. When the last slice
  of a bucket is filled, the bucket's ``all_reduce(AVG)`` starts asynchronously
  (``Iallreduce``). Buckets are launched strictly in index order, so every rank issues the
  same collectives in the same sequence even if hooks fire in a different order. Each
  hook also calls ``comm.progress()`` (``MPI_Test`` on outstanding requests): Open MPI only
  advances a non-blocking collective inside MPI calls, so this is what lets the transfer
  run while the rest of backward computes.
* **Finalize.** When the last bucket has been launched (inside the hook of the last
  parameter to receive its gradient, i.e. at the end of backward, like PyTorch's
  end-of-backward callback), the hook waits for every bucket and copies the averages back
  into ``p.grad`` (or, with ``gradient_as_bucket_view=True``, makes ``p.grad`` a view of
  the bucket so there is no copy). After ``backward()`` returns, every rank holds the same
  averaged gradients and ``optimizer.step()`` can run.
* ``no_sync()``: hooks do nothing, gradients accumulate locally; the first backward outside
  the context averages the accumulated gradients (PyTorch's semantics).
* ``find_unused_parameters=True``: after each forward, the autograd graph of the output
  is walked to find the parameters it does not reach; their slices are zero-filled and
  counted as ready, so their buckets still complete. Without it, a parameter that gets no
  gradient leaves its bucket unfinished and the next forward raises PyTorch's error.
* ``broadcast_buffers=True``: buffers (e.g. BatchNorm running stats) are broadcast from
  rank 0 before each forward.
* A parameter that got no gradient (without ``find_unused_parameters``) is reported at the
  next forward by its name in the module (``b.weight``), as PyTorch does with
  ``TORCH_DISTRIBUTED_DEBUG=DETAIL``: each bucket keeps a ready flag per parameter.
* ``join()``: uneven numbers of batches per rank; see ``join.py`` for the protocol (ranks
  that ran out shadow the others' collectives with zeros, then the last joiner's model is
  broadcast).
* ``register_comm_hook(state, hook)``: PyTorch's communication hook. Instead of the
  bucket's ``all_reduce(AVG)``, ``hook(state, GradBucket)`` is called (same moment, same
  order); it returns a future whose ``wait()`` gives the reduced flat array, and
  ``_finalize`` waits on it instead of the all-reduce handle. The hooks of
  ``shardflow.distributed.algorithms.ddp_comm_hooks`` compress the gradients (float16,
  bfloat16, PowerSGD). Inside ``join()`` the plain all-reduce is used (joined ranks shadow
  it with zeros and cannot run a hook's collectives).

Gradients are averaged over ranks with equal weight (PyTorch's DDP): with uneven local
batches and a mean loss, the result is the mean of the per-rank mean gradients.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from ... import comm as _comm
from ...autograd import is_grad_enabled
from ...autograd.tensor import Tensor, _wrap
from ...backend import device_of, new_array
from ..module import Module
from .grad_bucket import GradBucket
from .join import Join

_FIRST_BUCKET_BYTES = 1 << 20


class _Bucket:
    __slots__ = ("index", "params", "offsets", "flat", "pending", "work", "dtype", "launched",
                 "ready")

    def __init__(self, index, params, dtype):
        self.index = index
        self.params = params
        self.dtype = dtype
        sizes = [p.array.size for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        dev = device_of(params[0].array)  # on the parameters' device: NCCL reduces it in place
        self.flat = new_array(dev, lambda xp: xp.zeros(int(self.offsets[-1]), dtype=dtype))
        self.pending = len(params)
        self.ready = [False] * len(params)
        self.work = None
        self.launched = False

    def view(self, i, shape):
        return self.flat[self.offsets[i]:self.offsets[i + 1]].reshape(shape)


def _tensors_in(obj, out):
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, list | tuple):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


def _reachable_leaves(outputs) -> set:
    """ids of the leaf tensors the autograd graph of ``outputs`` reaches."""
    seen_fn, leaves = set(), set()
    stack = []
    for t in outputs:
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            leaves.add(id(t))
    while stack:
        fn = stack.pop()
        if id(fn) in seen_fn:
            continue
        seen_fn.add(id(fn))
        for edge in fn.next:
            if edge is None:
                continue
            node = edge[0]
            if isinstance(node, Tensor):
                leaves.add(id(node))
            else:
                stack.append(node)
    return leaves


class DistributedDataParallel(Module):
    """Data parallel over ``process_group`` (default: the world); see the module docstring."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb: float = 25,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps an nn.Module, got {type(module).__name__}")
        if dim != 0:
            raise NotImplementedError(f"DistributedDataParallel(dim={dim}): only dim=0 is supported")
        self.module = module
        d = self.__dict__
        d["process_group"] = process_group if process_group is not None else _comm.get_world()
        d["device_ids"] = device_ids
        d["output_device"] = output_device
        d["broadcast_buffers"] = broadcast_buffers
        d["find_unused_parameters"] = find_unused_parameters
        d["gradient_as_bucket_view"] = gradient_as_bucket_view
        d["bucket_bytes_cap"] = int(bucket_cap_mb * 1024 * 1024)
        d["require_backward_grad_sync"] = True
        d["stats"] = {"backward_waits": 0, "wait_s": 0.0, "launches": 0}
        pg = self.process_group
        self._sync_module_states()
        params = list(dict.fromkeys(p for p in module.parameters() if p.requires_grad))
        d["_params"] = params
        names = {id(p): n for n, p in module.named_parameters()}
        d["_names"] = [names.get(id(p), f"<parameter {i}>") for i, p in enumerate(params)]
        d["_index"] = {id(p): i for i, p in enumerate(params)}
        d["_join"] = None  # the active join() context, if any
        d["_comm_hook"] = None  # (state, hook) from register_comm_hook
        d["_grad_divisor"] = None  # in join(): what summed gradients are divided by
        d["_buckets"] = self._build_buckets(params)
        d["_slot"] = {}
        for b in self._buckets:
            for i, p in enumerate(b.params):
                self._slot[id(p)] = (b, i)
        d["_next_launch"] = 0
        d["_touched"] = False
        d["_hook_handles"] = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]
        if pg.size > 1:
            _comm.set_data_parallel(True)
            try:  # the DataLoader's auto-sharding switch (shardflow/data/_world.py)
                from ...data import _world as _data_world
            except ImportError:  # pragma: no cover - data package without the hook
                _data_world = None
            if _data_world is not None and hasattr(_data_world, "note_data_parallel"):
                _data_world.note_data_parallel(True)

    # -- setup ---------------------------------------------------------------------------
    def _sync_module_states(self) -> None:
        pg = self.process_group
        if pg.size == 1:
            return
        for t in list(self.module.parameters()) + [b for b in self.module.buffers() if b is not None]:
            pg.broadcast(t.array, 0)
            t._version[0] += 1

    def _build_buckets(self, params):
        buckets, cur, cur_bytes, cur_dtype = [], [], 0, None
        cap = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        for p in reversed(params):
            nbytes = p.array.nbytes
            if cur and (p.array.dtype != cur_dtype or cur_bytes + nbytes > cap):
                buckets.append(_Bucket(len(buckets), cur, cur_dtype))
                cur, cur_bytes = [], 0
                cap = self.bucket_bytes_cap
            cur.append(p)
            cur_bytes += nbytes
            cur_dtype = p.array.dtype
        if cur:
            buckets.append(_Bucket(len(buckets), cur, cur_dtype))
        return buckets

    # -- backward machinery --------------------------------------------------------------
    def _grad_ready(self, p) -> None:
        if not self.require_backward_grad_sync:
            return
        b, i = self._slot[id(p)]
        b.ready[i] = True
        g = p.grad.array
        dst = b.view(i, g.shape)
        if not np.shares_memory(g, dst):
            np.copyto(dst, g, casting="unsafe")
        self.__dict__["_touched"] = True
        b.pending -= 1
        if b.pending == 0:
            self._launch_ready()
        self.process_group.progress()

    def _launch_ready(self) -> None:
        buckets = self._buckets
        k = self._next_launch
        while k < len(buckets) and buckets[k].pending == 0:
            b = buckets[k]
            # join(): summed, divided in _finalize by what join decided (joined ranks add 0)
            if self._comm_hook is not None and self._grad_divisor is None:
                state, hook = self._comm_hook
                b.work = hook(state, GradBucket(b, k == len(buckets) - 1))
            else:
                op = "avg" if self._grad_divisor is None else "sum"
                b.work = self.process_group.all_reduce(b.flat, op, async_op=True)
            b.launched = True
            self.stats["launches"] += 1
            k += 1
        self.__dict__["_next_launch"] = k
        if k == len(buckets):
            self._finalize()

    def _finalize(self) -> None:
        t0 = time.perf_counter()
        hooked = self._comm_hook is not None and self._grad_divisor is None
        for b in self._buckets:
            out = b.work.wait()
            if hooked:
                out = getattr(out, "array", out)
                if out is not b.flat:
                    if out is None or out.size != b.flat.size:
                        raise RuntimeError(
                            f"DDP communication hook: the future of bucket {b.index} gave "
                            f"{'None' if out is None else f'{out.size} elements'}, expected "
                            f"the reduced bucket ({b.flat.size} elements). A hook returns a "
                            "future whose wait() gives the bucket's reduced flat buffer.")
                    np.copyto(b.flat, out.reshape(b.flat.shape), casting="unsafe")
        self.stats["wait_s"] += time.perf_counter() - t0
        self.stats["backward_waits"] += 1
        if self._grad_divisor is not None:
            for b in self._buckets:
                np.divide(b.flat, self._grad_divisor, out=b.flat, casting="unsafe")
        as_view = self.gradient_as_bucket_view
        for b in self._buckets:
            for i, p in enumerate(b.params):
                v = b.view(i, p.array.shape)
                if p.grad is None:
                    p.grad = _wrap(v if as_view else v.copy())
                elif as_view:
                    if p.grad.array is not v and not np.shares_memory(p.grad.array, v):
                        p.grad = _wrap(v)
                else:
                    np.copyto(p.grad.array, v, casting="unsafe")
        self._reset()

    def _reset(self) -> None:
        for b in self._buckets:
            b.pending = len(b.params)
            b.ready = [False] * len(b.params)
            b.work = None
            b.launched = False
        self.__dict__["_next_launch"] = 0
        self.__dict__["_touched"] = False

    def _mark_unused(self, output) -> None:
        used = _reachable_leaves(_tensors_in(output, []))
        self._mark_params_unused([p for p in self._params if id(p) not in used])

    def _mark_params_unused(self, params) -> None:
        """``params`` get no gradient this iteration: their bucket slots count as ready
        (zeros), so their buckets still complete. Called by ``forward`` (eager) and by a
        compiled step (``shardflow.compile_step``), which knows them from its graph."""
        unused = {id(p) for p in params}
        if not unused or not self.require_backward_grad_sync:
            return
        for b in self._buckets:
            for i, p in enumerate(b.params):
                if id(p) in unused:
                    b.view(i, p.array.shape)[...] = 0
                    b.ready[i] = True
                    b.pending -= 1
        if any(b.pending == 0 for b in self._buckets):
            self.__dict__["_touched"] = True
            self._launch_ready()

    # -- public API ----------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._touched:
            self._raise_unfinished()
        pg = self.process_group
        src = self._join.notify_forward() if self._join is not None else 0
        if self.broadcast_buffers and pg.size > 1:
            self._broadcast_buffers(src)
        out = self.module(*inputs, **kwargs)
        if self.find_unused_parameters and self.require_backward_grad_sync and is_grad_enabled():
            self._mark_unused(out)
        return out

    def _raise_unfinished(self) -> None:
        """PyTorch's error for a backward that left parameters without a gradient, naming them."""
        missing = sorted(self._index[id(p)] for b in self._buckets
                         for i, p in enumerate(b.params) if not b.ready[i])
        self._reset()
        names = ", ".join(self._names[i] for i in missing)
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new "
            "one. This error indicates that your module has parameters that were not used in "
            "producing loss. Parameters which did not receive grad for rank "
            f"{self.process_group.rank}: {names} ({len(missing)} of {len(self._params)} "
            f"parameters; indices {', '.join(map(str, missing))}). Pass "
            "find_unused_parameters=True to DistributedDataParallel if parts of the model are "
            "not used in every forward, and make sure every output used in the loss comes from "
            "forward()."
        )

    def _broadcast_buffers(self, src: int) -> None:
        pg = self.process_group
        for buf in self.module.buffers():
            if buf is not None:
                pg.broadcast(buf.array, src)

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """Context manager for uneven inputs (PyTorch's ``DistributedDataParallel.join``).

        ``with model.join(): for batch in loader: ...`` -- a rank that runs out of batches
        shadows the others' collectives with zero gradients until every rank is done; then
        the model of the last rank to finish is broadcast to all. Gradients are divided by
        the initial world size (default) or, with ``divide_by_initial_world_size=False``, by
        the number of ranks still training. ``throw_on_early_termination=True`` raises on
        every rank as soon as one has run out. See ``join.py``.
        """
        return Join(self, divide_by_initial_world_size, enable, throw_on_early_termination)

    def register_comm_hook(self, state, hook) -> None:
        """Replace each bucket's all-reduce by ``hook(state, bucket)`` (PyTorch's API).

        ``bucket`` is a :class:`GradBucket`; the hook starts the communication and returns a
        future-like object whose ``wait()`` returns the reduced flat buffer (an array or a
        Tensor, ``bucket.buffer()`` itself when reduced in place). Call it once, before the
        first backward. Ready-made hooks: ``shardflow.distributed.algorithms.ddp_comm_hooks``
        (``default_hooks.allreduce_hook`` / ``fp16_compress_hook`` / ``bf16_compress_hook``,
        ``powerSGD_hook.powerSGD_hook`` with a ``PowerSGDState``).
        """
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable as hook(state, bucket), "
                            f"got {type(hook).__name__}")
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook can only be called once (a hook is already "
                               "registered on this DistributedDataParallel).")
        if self._touched:
            raise RuntimeError("register_comm_hook must be called before the first backward "
                               "(gradients of this iteration are already being reduced).")
        self.__dict__["_comm_hook"] = (state, hook)

    @contextlib.contextmanager
    def no_sync(self):
        """Skip gradient averaging inside the context (gradient accumulation)."""
        old = self.require_backward_grad_sync
        self.__dict__["require_backward_grad_sync"] = False
        try:
            yield
        finally:
            self.__dict__["require_backward_grad_sync"] = old

    def bucket_sizes(self) -> list[int]:
        """Number of elements of each bucket, in launch order."""
        return [b.flat.size for b in self._buckets]

    def remove_hooks(self) -> None:
        for h in self._hook_handles:
            h.remove()
        self._hook_handles.clear()

    def extra_repr(self) -> str:
        return (f"world_size={self.process_group.size}, buckets={len(self._buckets)}, "
                f"find_unused_parameters={self.find_unused_parameters}")
