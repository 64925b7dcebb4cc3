"""``DistributedDataParallel``: data parallel with bucketed, overlapped gradient averaging.

PyTorch's name, arguments and semantics; the communication goes through
:mod:`shardflow.comm` directly (layer L4 over L2), not through ``shardflow.distributed``.
The gradient averaging is the shared :class:`~shardflow.nn.parallel.reducer.Reducer`
(``ddp.reducer``, PyTorch's attribute name): buckets, hooks, overlap, communication hooks,
``no_sync``; this class adds what belongs to the module wrapper.

Algorithm
---------
* **Wrap.** Parameters and buffers are broadcast from rank 0, so every rank starts from
  the same model. The parameters that require grad go into the reducer's buckets (reverse
  registration order; the first bucket capped at 1 MB so that communication starts early,
  the others at ``bucket_cap_mb``). The process announces data parallel
  (``comm.set_data_parallel``) so that DataLoaders shard their data automatically.
* **Backward.** The reducer's post-accumulate-grad hook on every parameter copies ``p.grad``
  into its bucket slice; a full bucket's ``all_reduce(AVG)`` starts asynchronously, buckets
  strictly in index order, and every hook drives MPI progress. The hook that launches the
  last bucket waits for all of them and writes the averages back into ``p.grad`` (or, with
  ``gradient_as_bucket_view=True``, makes ``p.grad`` a view of the bucket). After
  ``backward()`` returns, every rank holds the same averaged gradients.
* ``no_sync()``: the reducer does nothing, gradients accumulate locally; the first backward
  outside the context averages the accumulated gradients (PyTorch's semantics).
* ``find_unused_parameters=True``: after each forward, the autograd graph of the output
  is walked to find the parameters it does not reach; their slices are zero-filled and
  counted as ready, so their buckets still complete. Without it, a parameter that gets no
  gradient leaves its bucket unfinished and the next forward raises PyTorch's error, naming
  the parameter (``b.weight``), as PyTorch does with ``TORCH_DISTRIBUTED_DEBUG=DETAIL``.
  With every parameter used, the first such forward warns as torch does (the walk costs
  time every iteration).
* ``static_graph=True``: the first iteration's graph is walked as with
  ``find_unused_parameters`` and its unused parameters are remembered (zero-filled every
  iteration); each later forward is checked against it, and a graph that uses another set of
  parameters raises torch's "graph has changed" error naming them, in that forward (torch
  raises at the next one, when a bucket is found unfinished).
* ``broadcast_buffers=True``: buffers (e.g. BatchNorm running stats) are broadcast from
  rank 0 before each forward. torch 2.13's arguments: ``broadcast_buffers`` (deprecated,
  torch's ``FutureWarning`` when passed) controls the sync at wrap too (``False``: buffers
  stay rank-local; they used to be synced at wrap anyway); ``forward_sync_buffers`` controls
  only the forward sync; ``init_sync=False`` skips the wrap-time check and broadcast.
* ``join()``: uneven numbers of batches per rank; see ``join.py`` for the protocol (ranks
  that ran out shadow the others' collectives with zeros, then the last joiner's model is
  broadcast).
* ``register_comm_hook(state, hook)``: PyTorch's communication hook, called per bucket
  instead of the all-reduce (``Reducer.register_comm_hook``); the hooks of
  ``shardflow.distributed.algorithms.ddp_comm_hooks`` compress the gradients (float16,
  bfloat16, PowerSGD). Inside ``join()`` the plain all-reduce is used (joined ranks shadow
  it with zeros and cannot run a hook's collectives).
* **Global parameters** (laid out by ``to_global`` / ``data_tensor_parallel``): with
  ``device_mesh=mesh["dp"]`` (PyTorch's argument; or ``process_group`` the communicator of
  that mesh dimension) every parameter replicated (``B``) on that mesh dimension has its
  data-parallel reduction done by the reducer's buckets: the sbp rules leave its gradient a
  partial sum there instead of all-reducing it at every use, and its buckets
  ``all_reduce(SUM)`` (the loss of a global batch is already a mean over it). DDP then does
  not announce data parallel to DataLoaders: the global batch is laid out by its sbp.

Gradients of plain parameters are averaged over ranks with equal weight (PyTorch's DDP):
with uneven local batches and a mean loss, the result is the mean of the per-rank mean
gradients.
"""

from __future__ import annotations

import contextlib
import warnings

from ... import comm as _comm
from ...autograd import is_grad_enabled
from ..module import Module
from .autograd_walk import reachable_leaves, tensors_in
from .join import DDPJoinHook, Join
from .reducer import Reducer, partial_dims, reducers_of

_ALL_USED_WARNING = (
    "find_unused_parameters=True was specified in DDP constructor, but did not find any unused "
    "parameters in the forward pass. This flag results in an extra traversal of the autograd "
    "graph every iteration, which can adversely affect performance. If your model indeed never "
    "has any unused parameters in the forward pass, consider turning this flag off. Note that "
    "this warning may be a false positive if your model has flow control causing later "
    "iterations to have unused parameters.")


def _buffer_sync(broadcast_buffers, forward_sync_buffers) -> tuple[bool, bool]:
    """torch 2.13's buffer arguments: ``(sync before each forward, sync at wrap)``.
    ``broadcast_buffers`` (deprecated, with torch's ``FutureWarning``) controls both, so
    ``False`` keeps rank-local buffers; ``forward_sync_buffers`` controls only the forward
    (buffers are always synced at wrap) and wins when both are given."""
    if broadcast_buffers is not None:
        if forward_sync_buffers is not None:
            warnings.warn(
                "Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                "`broadcast_buffers` is deprecated and its value is ignored when "
                "`forward_sync_buffers` is provided.", FutureWarning, stacklevel=3)
        else:
            warnings.warn(
                "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. "
                "IMPORTANT: unlike `broadcast_buffers=False`, `forward_sync_buffers=False` "
                "still syncs buffers at init. If you rely on buffers NOT being synced at init "
                "(e.g. rank-local buffers), keep using `broadcast_buffers=False` until "
                "`init_sync_buffers` is available.", FutureWarning, stacklevel=3)
    if forward_sync_buffers is not None:
        return bool(forward_sync_buffers), True
    sync = True if broadcast_buffers is None else bool(broadcast_buffers)
    return sync, sync


def _check_device_ids(module, device_ids, output_device) -> None:
    """torch's check: ``device_ids`` names the one GPU a module lives on; a CPU module with
    ``device_ids=[0]`` is a ValueError (a script written for GPUs run on CPU), before any
    communication."""
    if not device_ids:
        return
    devices = {p.device for p in module.parameters()}
    if all(d.type == "cpu" for d in devices):
        shown = "{" + ", ".join(sorted(repr(d) for d in devices)) + "}"
        raise ValueError(
            "DistributedDataParallel device_ids and output_device arguments only work with "
            "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
            f"{list(device_ids)}, output_device {output_device}, and module parameters {shown}. "
            "(For a CPU module leave device_ids out or pass None, e.g. DDP(model, "
            "device_ids=[rank] if torch.cuda.is_available() else None).)")


def _refuse_unsupported(**given) -> None:
    """torch 2.13's DDP arguments that change what is reduced or how; accepted at their
    defaults (None / False), refused with the alternative otherwise, before any state."""
    fixes = {"delay_all_reduce_named_params": "leave those parameters in the normal buckets",
             "param_to_hook_all_reduce": "leave those parameters in the normal buckets",
             "mixed_precision": "use torch.autocast around the forward, or FSDP's MixedPrecision",
             "skip_all_reduce_unused_params": "unused parameters' gradients are all-reduced as "
                                              "zeros here (find_unused_parameters=True)"}
    for name, value in given.items():
        if value is not None:
            raise NotImplementedError(f"DistributedDataParallel({name}=...) is not supported by "
                                      f"shardflow; {fixes[name]}")


class DistributedDataParallel(Module):
    """Data parallel over ``process_group`` (default: the world); see the module docstring."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool | None = None, init_sync: bool = True,
                 process_group=None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params: bool = False,
                 bucket_cap_mb_list=None, batched_grad_copy: bool = False,
                 forward_sync_buffers: bool | None = None):
        super().__init__()
        _refuse_unsupported(delay_all_reduce_named_params=delay_all_reduce_named_params,
                            param_to_hook_all_reduce=param_to_hook_all_reduce,
                            mixed_precision=mixed_precision,
                            skip_all_reduce_unused_params=skip_all_reduce_unused_params or None)
        # bucket_cap_mb_list / batched_grad_copy tune torch's bucketing and gradient copies
        # (no effect on values); shardflow's reducer sizes buckets from bucket_cap_mb
        forward_sync, init_sync_buffers = _buffer_sync(broadcast_buffers, forward_sync_buffers)
        if bucket_cap_mb is None:  # torch 2.13's default: None means 25 MB
            bucket_cap_mb = 25
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps an nn.Module, got {type(module).__name__}")
        if dim != 0:
            raise NotImplementedError(f"DistributedDataParallel(dim={dim}): only dim=0 is supported")
        if device_mesh is not None:
            if process_group is not None:
                raise RuntimeError("DistributedDataParallel: cannot specify both process_group "
                                   "and device_mesh; pass one")
            if device_mesh.ndim != 1:
                raise RuntimeError(f"DistributedDataParallel: device_mesh must be 1-D (the "
                                   f"data-parallel dimension, e.g. mesh['dp']), got "
                                   f"{device_mesh.ndim} dimensions")
            process_group = device_mesh.get_group(0)
        _check_device_ids(module, device_ids, output_device)
        self.module = module
        d = self.__dict__
        d["process_group"] = process_group if process_group is not None else _comm.get_world()
        d["device_ids"] = device_ids
        d["output_device"] = output_device
        d["broadcast_buffers"] = forward_sync  # before each forward (forward_sync_buffers)
        d["find_unused_parameters"] = find_unused_parameters
        d["static_graph"] = bool(static_graph)
        d["_static_unused"] = None  # static_graph: ids of the parameters iteration 1 left unused
        d["_warned_all_used"] = False
        d["gradient_as_bucket_view"] = gradient_as_bucket_view
        d["bucket_bytes_cap"] = int(bucket_cap_mb * 1024 * 1024)
        pg = self.process_group
        if init_sync:
            self._sync_module_states(init_sync_buffers)
        named = list(module.named_parameters())
        params = list(dict.fromkeys(p for p in module.parameters() if p.requires_grad))
        names = {id(p): n for n, p in named}
        stepped = [names.get(id(p), "?") for p in params if getattr(p, "_in_backward_optimizers", None)]
        if stepped:  # torch's DDP steps them after its all-reduce; stepping before would be wrong
            raise NotImplementedError(
                f"DistributedDataParallel: parameters {stepped[:3]} have optimizers applied in backward "
                "(_apply_optimizer_in_backward), which shardflow's DDP does not run after its all-reduce; "
                "step a regular optimizer after backward() instead")
        partial = partial_dims(params, pg)
        for p in params:  # a reducer over the same group (data_tensor_parallel's) hands over
            for other in reducers_of(p):
                if other.process_group is pg:
                    other.remove_hooks()
        d["_join"] = None  # the active join() context, if any
        d["reducer"] = Reducer(params, pg, bucket_cap_mb=bucket_cap_mb,
                               gradient_as_bucket_view=gradient_as_bucket_view,
                               names=[names.get(id(p), f"<parameter {i}>")
                                      for i, p in enumerate(params)],
                               partial_dims=partial)
        if pg.size > 1 and not (partial and len(partial) == len(params)):
            _comm.set_data_parallel(True)  # DataLoaders shard their data by rank

    # -- setup ---------------------------------------------------------------------------
    def _sync_module_states(self, buffers: bool = True) -> None:
        """Rank 0's parameters (and, unless ``broadcast_buffers=False``, buffers) on every
        rank, after checking that the ranks wrapped the same model."""
        pg = self.process_group
        if pg.size == 1:
            return
        self._verify_same_model()
        synced = list(self.module.parameters())
        if buffers:
            synced += [b for b in self.module.buffers() if b is not None]
        for t in synced:
            pg.broadcast(t.array, 0)
            t._version_counter[0] += 1

    def _verify_same_model(self) -> None:
        """Raise on every rank, before anything is broadcast, if the ranks wrapped different
        models (torch's ``_verify_param_shape_across_processes``): one small all-gather of
        each rank's parameter names, shapes and dtypes. Before, the first broadcast of a
        parameter of another shape raised a collective mismatch that named no parameter and
        did not say the models differ."""
        pg = self.process_group
        mine = [(n, tuple(p.array.shape), str(p.array.dtype), bool(p.requires_grad))
                for n, p in self.module.named_parameters()]
        every = pg.all_gather_object(mine)
        me = pg.rank
        ranks = getattr(pg, "world_ranks", list(range(pg.size)))
        fix = ("; build the same model on every rank (the same constructor arguments; code "
               "that depends on the rank must not change the parameters before wrapping)")
        for r, theirs in enumerate(every):
            if r == me:
                continue
            # torch counts the parameters that require grad (the reducer's), so a
            # requires_grad that differs is a count mismatch; the flags name the parameter
            n_mine, n_theirs = sum(a[3] for a in mine), sum(b[3] for b in theirs)
            flags = [(a[0], a[3]) for a, b in zip(mine, theirs) if a[0] == b[0] and a[3] != b[3]]
            if n_mine != n_theirs and flags and len(mine) == len(theirs):
                name, on_me = flags[0]
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {ranks[me]} has "
                    f"{n_mine} params, while rank {ranks[r]} has inconsistent {n_theirs} params: "
                    f"parameter {name} has requires_grad={on_me} on rank {ranks[me]} and "
                    f"requires_grad={not on_me} on rank {ranks[r]}; freeze (requires_grad_(False)) "
                    "the same parameters on every rank before wrapping the model in DDP")
            if len(theirs) != len(mine) or n_mine != n_theirs:
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {ranks[me]} has "
                    f"{n_mine} params, while rank {ranks[r]} has inconsistent "
                    f"{n_theirs} params{fix}")
            for i, (a, b) in enumerate(zip(mine, theirs)):
                if a[1:3] != b[1:3]:
                    raise RuntimeError(
                        f"DDP expects same model across all ranks, but params[{i}] ({a[0]}) "
                        f"has sizes {list(a[1])} ({a[2]}) on rank {ranks[me]} and sizes "
                        f"{list(b[1])} ({b[2]}) on rank {ranks[r]} ({b[0]}){fix}")

    @property
    def forward_sync_buffers(self) -> bool:
        """Whether buffers are broadcast from rank 0 before each forward (torch 2.13's name
        for what ``broadcast_buffers`` controlled)."""
        return self.broadcast_buffers

    @forward_sync_buffers.setter
    def forward_sync_buffers(self, value: bool) -> None:
        self.__dict__["broadcast_buffers"] = bool(value)

    # -- state the reducer keeps -------------------------------------------------------------
    @property
    def require_backward_grad_sync(self) -> bool:
        """False inside ``no_sync()``: backward accumulates local gradients (PyTorch's flag)."""
        return self.reducer.require_sync

    @require_backward_grad_sync.setter
    def require_backward_grad_sync(self, value: bool) -> None:
        self.reducer.require_sync = bool(value)

    @property
    def stats(self) -> dict:
        """The reducer's counters: ``backward_waits``, ``wait_s``, ``launches``."""
        return self.reducer.stats

    @property
    def _buckets(self) -> list:
        return self.reducer.buckets

    @property
    def join_active(self) -> bool:
        """True inside an enabled ``join()`` context."""
        return self._join is not None

    # -- public API ----------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        self.pre_forward()
        out = self.module(*inputs, **kwargs)
        if (self.find_unused_parameters or self.static_graph) and self.reducer.require_sync \
                and is_grad_enabled():
            used = reachable_leaves(tensors_in(out))
            unused = [p for p in self.reducer.params if id(p) not in used]
            if self.static_graph:
                self._check_static_graph(unused)
            if self.find_unused_parameters and not unused and not self._warned_all_used:
                self.__dict__["_warned_all_used"] = True
                warnings.warn(_ALL_USED_WARNING, UserWarning, stacklevel=2)
            self.reducer.mark_unused(unused)
        return out

    def _set_static_graph(self) -> None:
        """torch's private switch, as ``static_graph=True`` (recipes call it after wrapping,
        e.g. with activation checkpointing); before the first iteration only."""
        if self._static_unused is not None or self.reducer.touched:
            raise RuntimeError("_set_static_graph() must be called before the first "
                               "iteration; pass static_graph=True to DistributedDataParallel")
        self.__dict__["static_graph"] = True

    def _check_static_graph(self, unused) -> None:
        """``static_graph=True``: the first iteration records which parameters the graph
        leaves unused (they count as ready with zeros, as with ``find_unused_parameters``);
        a later forward that uses another set raises torch's "graph has changed" error,
        naming the parameters, before its backward can leave a bucket unfinished."""
        ids = frozenset(id(p) for p in unused)
        recorded = self._static_unused
        if recorded is None:
            self.__dict__["_static_unused"] = ids
            return
        if ids == recorded:
            return
        names = dict(zip(map(id, self.reducer.params), self.reducer.names))
        now_unused = [names[i] for i in names if i in ids and i not in recorded]
        now_used = [names[i] for i in names if i in recorded and i not in ids]
        parts = []
        if now_unused:
            parts.append(f"used in the first iteration but unused now: {', '.join(now_unused)}")
        if now_used:
            parts.append(f"unused in the first iteration but used now: {', '.join(now_used)}")
        raise RuntimeError(
            "Your training graph has changed in this iteration, e.g., one parameter is used in "
            "first iteration, but then got unused in the second iteration. This is not "
            f"compatible with static_graph set to True (rank {self.process_group.rank}: "
            f"{'; '.join(parts)}). Build DistributedDataParallel without static_graph=True "
            "(and with find_unused_parameters=True if parts of the model are skipped in some "
            "iterations).")

    def pre_forward(self) -> None:
        """What ``forward`` does before running the module: raise PyTorch's error if the
        previous backward left parameters without a gradient, and broadcast the buffers
        (from rank 0; inside ``join()`` from the last rank still training). A compiled step
        (``shardflow.compile_step``) calls it before its forward."""
        if self.reducer.touched:
            self.reducer.raise_unfinished()
        src = self._join.notify_forward() if self._join is not None else 0
        if self.broadcast_buffers and self.process_group.size > 1:
            self._broadcast_buffers(src)

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

    def join_hook(self, **kwargs) -> DDPJoinHook:
        """This model's hook for torch's generic ``Join([model, ...])``
        (``distributed.algorithms.join``): it takes ``divide_by_initial_world_size`` (default
        True) from the context's keywords, as torch's does."""
        return DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        """The device of the generic ``Join``'s own collectives (torch's property)."""
        params = list(self.module.parameters())
        return params[0].device if params else None

    @property
    def join_process_group(self):
        """The group of the generic ``Join``'s own collectives: this model's."""
        return self.process_group

    def register_comm_hook(self, state, hook) -> None:
        """Replace each bucket's all-reduce by ``hook(state, bucket)`` (PyTorch's API).

        ``bucket`` is a :class:`GradBucket`; the hook starts the communication and returns a
        future-like object whose ``wait()`` returns the reduced flat buffer (an array or a
        Tensor, ``bucket.buffer()`` itself when reduced in place). Call it once, before the
        first backward. Ready-made hooks: ``shardflow.distributed.algorithms.ddp_comm_hooks``
        (``default_hooks.allreduce_hook`` / ``fp16_compress_hook`` / ``bf16_compress_hook``,
        ``powerSGD_hook.powerSGD_hook`` with a ``PowerSGDState``).
        """
        self.reducer.register_comm_hook(state, hook)

    @contextlib.contextmanager
    def no_sync(self):
        """Skip gradient averaging inside the context (gradient accumulation)."""
        with self.reducer.no_sync():
            yield

    def bucket_sizes(self) -> list[int]:
        """Number of elements of each bucket, in launch order."""
        return self.reducer.bucket_sizes()

    def remove_hooks(self) -> None:
        self.reducer.remove_hooks()

    # No extra_repr: print(ddp_model) shows only `(module): ...`, as torch's does (scripts
    # print their wrapped model; the world size and buckets are in `bucket_sizes()`).
