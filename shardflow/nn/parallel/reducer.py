"""``Reducer``: the one data-parallel gradient reducer (buckets, hooks, overlap, comm hooks).

Every data-parallel gradient reduction of shardflow goes through this class:
``DistributedDataParallel`` (and through it global-tensor data parallelism), Horovod's
``DistributedOptimizer``, the tf.distribute-style strategies and the pipeline schedules'
data-parallel step (docs/DISTRIBUTED.md, "The gradient reducer"). It sits in ``nn.parallel``
(layer L4, beside DDP) and talks to :mod:`shardflow.comm` directly.

Algorithm
---------
* **Buckets.** The parameters that require grad are laid into buckets in reverse order
  (the order backward produces their gradients): the first bucket is capped at
  ``first_bucket_cap_mb`` (1 MB) so that communication starts early, the others at
  ``bucket_cap_mb``; a bucket holds one dtype, one device and one reduction op. Each bucket
  owns one flat array on the parameters' device (NCCL reduces it in place); each parameter
  a slice of it.
* **Pieces.** A bucket's plain all-reduce is issued as consecutive *pieces* of at most
  ``piece_cap_mb`` (1 MB) of its flat array, each its own async ``all_reduce`` on a slice.
  A piece starts as soon as every parameter overlapping it is ready (not when the whole
  25 MB bucket is), so the communication of a large bucket starts early in backward and
  Open MPI pipelines it (its non-blocking ``Iallreduce`` of one 32 MB buffer measured
  slower than the blocking call, 1 MB pieces faster; docs/DISTRIBUTED.md, "Overlap").
  The reduction is elementwise, so the result is the same as the whole bucket's.
* **In place.** A parameter of at least a quarter piece gets pieces of its own (smaller
  ones are packed), and with ``finalize_in_backward`` (DDP), no communication hook and no
  ``gradient_as_bucket_view``, its pieces are all-reduced in ``p.grad`` itself (a contiguous
  array of the bucket's dtype, owned by ``.grad``: autograd's first accumulation copies):
  no copy into the bucket and none back (on MLP-wide the two copies of 38 MB took 21 ms,
  as long as the all-reduce). The piece layout depends only on the sizes, so ranks that
  fall back to the bucket for some gradient (non-contiguous) still issue the same calls.
* **Gradient ready** (:meth:`grad_ready`, a post-accumulate-grad hook on every parameter
  when ``hooks=True``; callers with their own hooks call it themselves): the parameter's
  ``.grad`` is copied into its slice. When the last parameter of a piece is in, the piece's
  ``all_reduce(op)`` starts asynchronously; with a communication hook, the whole bucket's
  ``hook(state, GradBucket)`` starts when its last slice is filled. Pieces (and buckets)
  are launched strictly in order, so every rank issues the same collectives in the same
  sequence even if gradients arrive in a different order. Each call also drives
  ``process_group.progress()``: Open MPI advances a non-blocking collective only inside
  MPI calls. The reducer may also hold the
  communicator's background progress thread from its first launch to the end of
  :meth:`finalize` (``background_progress``; by default as ``SHARDFLOW_PROGRESS_THREAD``
  says, auto = when this host runs more ranks than it has cores; MPI: a thread polling
  every 100 us, ``comm/mpi_progress.py``).
* **Finalize** (:meth:`finalize`): wait for every launched bucket (a hook's future gives the
  reduced flat array, copied into the bucket), divide by ``divide_by`` if set (``join()``:
  summed, then divided by what join decided), and write each reduced slice back to
  ``p.grad`` (in place; with ``gradient_as_bucket_view=True`` ``p.grad`` becomes a view of
  the bucket). ``finalize_in_backward=True`` (DDP): the hook that launches the last bucket
  finalizes, so ``backward()`` returns with reduced gradients. ``False`` (Horovod): the
  caller finalizes (``optimizer.step()``); buckets still incomplete then are launched with
  zeros in the missing slices, and only the slices that received a gradient are written.
* :meth:`reduce_gradients`: the after-backward form (strategies, pipeline): every
  parameter's current ``.grad`` is put in its bucket, the buckets reduced, and the results
  written back, before it returns.
* :meth:`no_sync` / ``require_sync = False``: :meth:`grad_ready` does nothing, gradients
  accumulate locally in ``.grad``; the first reduction after it reduces the sum.
* :meth:`mark_unused`: parameters that get no gradient this iteration (DDP's
  ``find_unused_parameters``, or a compiled step that knows them from its graph) count as
  ready with a zero slice, so their buckets still complete.
* **Partial-sum parameters** (``partial_dims``): global tensors replicated (``B``) on the mesh
  dimension whose communicator is ``process_group``. Their gradients are partial sums over
  that dimension (the loss is a global tensor, a mean over the global batch), so their
  buckets use ``all_reduce(SUM)``, and the sbp rules leave that dimension's reduction to
  these buckets instead of all-reducing at every use (``deferred_reduction``, read by
  ``distributed/boxing.py``).

Communication plan per synchronised iteration: per bucket, in bucket order, one
``all_reduce`` per piece (``ceil(bucket bytes / piece_cap_mb)``, in piece order), or
whatever the communication hook issues once per bucket, on ``process_group``.
"""

from __future__ import annotations

import bisect
import contextlib
import time
import weakref

import numpy as np

from ...autograd.tensor import _wrap
from ...backend import device_of, new_array
from .grad_bucket import GradBucket

__all__ = ["Reducer", "Bucket", "piece_bounds", "reducers_of", "deferred_reduction"]

_MB = 1024 * 1024

# id(parameter) -> (weakref to it, weakref to the reducer, mesh dimension): global parameters
# whose data-parallel reduction over that mesh dimension a reducer's buckets do (weak both
# ways: a discarded model and its reducer are collected, and their entries go with them)
_DEFERRED: dict[int, tuple] = {}


def deferred_reduction(t):
    """``(reducer, mesh_dim)`` when a reducer's buckets reduce the gradient of the global
    parameter ``t`` over mesh dimension ``mesh_dim`` (so a use of ``t`` must leave its
    gradient a partial sum there), else None."""
    entry = _DEFERRED.get(id(t)) if _DEFERRED else None
    if entry is None or entry[0]() is not t:
        return None
    reducer = entry[1]()
    return None if reducer is None else (reducer, entry[2])


def partial_dims(params, pg) -> dict:
    """``{id(p): k}`` for the global parameters replicated on a mesh dimension ``k`` whose
    communicator is ``pg``: their gradients are partial sums over it (module docstring)."""
    dims = {}
    for p in params:
        if not p.is_global or pg.size == 1:
            continue
        pl, sbp = p.placement, p.sbp
        for k in range(pl.ndim):
            if pl.size(k) == pg.size and sbp[k].is_broadcast() and pl.group(k) is pg:
                dims[id(p)] = k
                break
    return dims


def reducers_of(p) -> list:
    """The reducers whose gradient-ready hooks sit on parameter ``p`` (e.g. the one of the
    ``DistributedDataParallel`` that wraps ``p``'s module)."""
    return [h.__self__ for h in (p._post_hooks or ())
            if isinstance(getattr(h, "__self__", None), Reducer)]


def piece_bounds(sizes: list, piece_elems: int) -> tuple[list, list]:
    """``(bounds, direct_of)`` of the pieces a bucket of parameters of ``sizes`` elements (flat
    order) is reduced in (``Bucket.set_pieces``' rule; the planner costs the same cut):
    ``bounds[j]:bounds[j + 1]`` is piece ``j``, ``direct_of[j]`` its ``(param, offset in
    it)`` when the piece lies inside one direct parameter (at least ``piece_elems // 4``
    elements), None when it packs small ones (never splitting one, at most ``piece_elems``)."""
    small = max(1, piece_elems // 4)
    bounds, direct_of, lo = [0], [], 0
    for i, size in enumerate(sizes):
        size = int(size)
        if size >= small:
            if bounds[-1] != lo:  # close the packed piece before it
                bounds.append(lo)
                direct_of.append(None)
            for start in range(0, size, piece_elems):
                bounds.append(lo + min(size, start + piece_elems))
                direct_of.append((i, start))
        elif lo + size - bounds[-1] > piece_elems and bounds[-1] != lo:
            bounds.append(lo)
            direct_of.append(None)
        lo += size
    if bounds[-1] != lo or len(bounds) == 1:
        bounds.append(lo)
        direct_of.append(None)
    return bounds, direct_of


class Bucket:
    """One flat gradient buffer: ``params`` back to back, reduced by one collective."""

    __slots__ = ("index", "params", "offsets", "flat", "pending", "works", "dtype", "op",
                 "launched", "ready", "hooked", "pieces", "param_pieces", "piece_params",
                 "piece_pending", "next_piece", "piece_direct", "directable", "direct")

    def __init__(self, index, params, dtype, op):
        self.index = index
        self.params = params
        self.dtype = dtype
        self.op = op
        sizes = [p.array.size for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        dev = device_of(params[0].array)  # on the parameters' device: NCCL reduces it in place
        self.flat = new_array(dev, lambda xp: xp.zeros(int(self.offsets[-1]), dtype=dtype))
        self.pending = len(params)
        self.ready = [False] * len(params)
        self.works = []
        self.launched = False
        self.hooked = False
        self.set_pieces(max(1, int(self.offsets[-1])))

    def set_pieces(self, piece_elems: int) -> None:
        """Cut the flat array into the consecutive pieces reduced one collective each.

        A parameter of at least ``piece_elems // 4`` elements is *direct*: it gets pieces of
        its own (at most ``piece_elems`` each), so that its gradient can be reduced in place
        in ``p.grad`` without the copy into the bucket and back. Smaller ones are packed
        into shared pieces of at most ``piece_elems`` (a packed parameter is never split).
        Piece ``j`` waits for every parameter whose slice overlaps it (a zero-size
        parameter: for the piece its offset falls in). The layout depends only on the
        sizes, so every rank cuts the same pieces whichever gradients it reduces in place.
        """
        sizes = [int(self.offsets[i + 1] - self.offsets[i]) for i in range(len(self.params))]
        bounds, direct_of = piece_bounds(sizes, piece_elems)
        small = max(1, piece_elems // 4)
        self.directable = [size >= small for size in sizes]
        self.pieces = list(zip(bounds[:-1], bounds[1:]))
        self.piece_direct = direct_of
        last = len(self.pieces) - 1
        self.param_pieces = []
        for i in range(len(self.params)):
            lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
            first = min(bisect.bisect_right(bounds, lo) - 1, last)
            stop = max(first, min(bisect.bisect_left(bounds, hi) - 1, last))
            self.param_pieces.append(range(first, stop + 1))
        self.piece_params = [0] * len(self.pieces)
        for r in self.param_pieces:
            for j in r:
                self.piece_params[j] += 1
        self.piece_pending = list(self.piece_params)
        self.next_piece = 0
        self.direct = [None] * len(self.params)

    def piece_buffer(self, j):
        """The array piece ``j`` is reduced in: the gradient itself when its parameter's
        gradient is reduced in place this iteration, else the bucket's slice."""
        lo, hi = self.pieces[j]
        d = self.piece_direct[j]
        if d is not None and self.direct[d[0]] is not None:
            return self.direct[d[0]][d[1]:d[1] + hi - lo]
        return self.flat[lo:hi]

    def view(self, i, shape):
        """Parameter ``i``'s slice of the flat buffer, shaped ``shape``."""
        return self.flat[self.offsets[i]:self.offsets[i + 1]].reshape(shape)

    def reset(self) -> None:
        self.pending = len(self.params)
        self.ready = [False] * len(self.params)
        self.works = []
        self.launched = False
        self.hooked = False
        self.piece_pending = list(self.piece_params)
        self.next_piece = 0
        self.direct = [None] * len(self.params)


class Reducer:
    """Data-parallel gradient reduction over ``process_group``; see the module docstring.

    ``params``: the parameters (those that do not require grad are left out; duplicates
    once). ``op``: ``"avg"`` (DDP, Horovod's default) or ``"sum"`` (tf.distribute). ``hooks``:
    register :meth:`grad_ready` as each parameter's post-accumulate-grad hook.
    ``finalize_in_backward``: finalize inside the hook that launches the last bucket.
    ``names``: the parameters' names for error messages. ``partial_dims``: ``{id(p): mesh
    dim}`` for global parameters whose gradients are partial sums over ``process_group``.
    ``piece_cap_mb``: the most a bucket's all-reduce moves in one collective (pieces, above).
    ``background_progress``: hold the communicator's background progress while buckets are
    in flight (above): None (default) as ``SHARDFLOW_PROGRESS_THREAD`` says (auto: when the
    host runs more ranks than it has cores), True always, False never.
    """

    def __init__(self, params, process_group, *, op: str = "avg", bucket_cap_mb: float = 25,
                 first_bucket_cap_mb: float = 1, hooks: bool = True,
                 finalize_in_backward: bool = True, gradient_as_bucket_view: bool = False,
                 names=None, partial_dims: dict | None = None, piece_cap_mb: float = 1,
                 background_progress: bool | None = None):
        if op not in ("avg", "sum"):
            raise ValueError(f"Reducer: op must be 'avg' or 'sum', got {op!r}")
        params = list(params)
        if names is None:
            names = [f"<parameter {i}>" for i in range(len(params))]
        name_of = {id(p): n for p, n in zip(params, names)}
        self.params = list(dict.fromkeys(p for p in params if p.requires_grad))
        self.names = [name_of[id(p)] for p in self.params]
        self.process_group = process_group
        self.op = op
        self.bucket_bytes_cap = int(bucket_cap_mb * _MB)
        self.first_bucket_bytes_cap = min(int(first_bucket_cap_mb * _MB), self.bucket_bytes_cap)
        self.finalize_in_backward = finalize_in_backward
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.partial_dims = dict(partial_dims or {})
        self.require_sync = True
        self.divide_by = None  # join(): sum the buckets, then divide by this
        self.comm_hook = None  # (state, hook) from register_comm_hook
        self.stats = {"backward_waits": 0, "wait_s": 0.0, "launches": 0}
        self.buckets = self._build_buckets(self.params)
        self._slot = {id(p): (b, i) for b in self.buckets for i, p in enumerate(b.params)}
        self._index = {id(p): i for i, p in enumerate(self.params)}
        self._next_launch = 0
        self._touched = False
        self.piece_bytes = None
        self.set_piece_bytes(int(piece_cap_mb * _MB))
        self.background_progress = background_progress
        self._progress_held = False
        self._launch_hooks: list = []
        self._hook_handles = ([p.register_post_accumulate_grad_hook(self.grad_ready)
                               for p in self.params] if hooks else [])
        for p in self.params:
            k = self.partial_dims.get(id(p))
            if k is not None:
                _DEFERRED[id(p)] = (weakref.ref(p, _forget(id(p))), weakref.ref(self), k)

    # -- buckets ---------------------------------------------------------------------------
    def _op_of(self, p) -> str:
        return "sum" if id(p) in self.partial_dims else self.op

    def _build_buckets(self, params) -> list[Bucket]:
        buckets, cur, cur_bytes, key = [], [], 0, None
        cap = self.first_bucket_bytes_cap
        for p in reversed(params):
            nbytes = p.array.nbytes
            pkey = (p.array.dtype, device_of(p.array), self._op_of(p))
            if cur and (pkey != key or cur_bytes + nbytes > cap):
                buckets.append(Bucket(len(buckets), cur, key[0], key[2]))
                cur, cur_bytes = [], 0
                cap = self.bucket_bytes_cap
            cur.append(p)
            cur_bytes += nbytes
            key = pkey
        if cur:
            buckets.append(Bucket(len(buckets), cur, key[0], key[2]))
        return buckets

    def bucket_sizes(self) -> list[int]:
        """Number of elements of each bucket, in launch order."""
        return [b.flat.size for b in self.buckets]

    def set_piece_bytes(self, nbytes: int) -> None:
        """Reduce each bucket in pieces of at most ``nbytes`` (module docstring); between
        iterations only, and the same on every rank (it decides the collectives issued)."""
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise ValueError(f"Reducer.set_piece_bytes: expected a positive byte count, got {nbytes}")
        if self._touched:
            raise RuntimeError("Reducer.set_piece_bytes: gradients of this iteration are being "
                               "reduced; call it before backward or after the reduction")
        self.piece_bytes = nbytes
        for b in self.buckets:
            b.set_pieces(max(1, nbytes // np.dtype(b.dtype).itemsize))

    def piece_sizes(self) -> list[list[int]]:
        """Elements of each piece of each bucket: the all-reduces one iteration issues."""
        return [[hi - lo for lo, hi in b.pieces] for b in self.buckets]

    @property
    def touched(self) -> bool:
        """True between the first gradient of an iteration and its :meth:`finalize`."""
        return self._touched

    # -- backward --------------------------------------------------------------------------
    def grad_ready(self, p) -> None:
        """``p.grad`` holds this iteration's whole local gradient: copy it into its bucket and
        launch the buckets that are complete (in order). The post-accumulate-grad hook."""
        if not self.require_sync:
            return
        b, i = self._slot[id(p)]
        b.ready[i] = True
        g = p.grad.array
        if b.directable[i] and self._in_place_ok() and g.dtype == b.dtype and g.flags.c_contiguous:
            b.direct[i] = g.reshape(-1)  # reduced in place: no copy in, none back
        else:
            dst = b.view(i, g.shape)
            if not np.shares_memory(g, dst):
                np.copyto(dst, g, casting="unsafe")
        self._touched = True
        if self._mark_ready(b, i):
            self._launch_ready()
        self.process_group.progress()

    @staticmethod
    def _mark_ready(b: Bucket, i: int) -> bool:
        """Slot ``i`` of ``b`` is filled: True when that completed a piece (so maybe
        something can launch; the bucket's last slot always completes a piece)."""
        b.ready[i] = True
        b.pending -= 1
        completed = False
        pending = b.piece_pending
        for j in b.param_pieces[i]:
            pending[j] -= 1
            if pending[j] == 0:
                completed = True
        return completed

    def mark_unused(self, params) -> None:
        """``params`` get no gradient this iteration: their slots count as ready (zeros), so
        their buckets still complete."""
        unused = {id(p) for p in params}
        if not unused or not self.require_sync:
            return
        completed = False
        for b in self.buckets:
            for i, p in enumerate(b.params):
                if id(p) in unused and not b.ready[i]:
                    b.view(i, p.array.shape)[...] = 0
                    completed = self._mark_ready(b, i) or completed
        if completed:
            self._touched = True
            self._launch_ready()

    def _in_place_ok(self) -> bool:
        """Reduce large gradients in ``p.grad`` itself: only when backward returns with them
        reduced (DDP: nobody reads ``.grad`` while MPI writes it; the caller-finalized form
        leaves local gradients readable until ``finalize``), not into bucket views, and not
        under a communication hook (it gets the whole bucket)."""
        return (self.finalize_in_backward and not self.gradient_as_bucket_view
                and not self._by_hook())

    def _by_hook(self) -> bool:
        """A communication hook reduces whole buckets (inside ``join()``: pieces, plain)."""
        return self.comm_hook is not None and self.divide_by is None

    def _launch_ready(self) -> None:
        """Launch, in order, every piece (or, with a hook, bucket) whose slots are all in."""
        buckets = self.buckets
        k = self._next_launch
        by_hook = self._by_hook()
        while k < len(buckets):
            b = buckets[k]
            if by_hook:
                if b.pending:
                    break
                self._launch(b, k == len(buckets) - 1)
            else:
                npieces = len(b.pieces)
                while b.next_piece < npieces and b.piece_pending[b.next_piece] == 0:
                    self._launch_piece(b)
                if b.next_piece < npieces:
                    break
            k += 1
        self._next_launch = k
        if k == len(buckets) and self.finalize_in_backward:
            self.finalize()

    def _launched(self, b: Bucket) -> None:
        if self.background_progress is not False and not self._progress_held:
            hold = getattr(self.process_group, "background_progress", None)
            if hold is not None:  # wrappers of a communicator may not have it
                self._progress_held = bool(hold(True, force=self.background_progress is True))
        b.launched = True
        self.stats["launches"] += 1
        for fn in self._launch_hooks:
            fn(b)

    def _launch(self, b: Bucket, is_last: bool) -> None:
        """The whole bucket's collective: the communication hook's, else every piece left."""
        if not self._by_hook():
            while b.next_piece < len(b.pieces):
                self._launch_piece(b)
            return
        state, hook = self.comm_hook
        b.works = [hook(state, GradBucket(b, is_last))]
        b.hooked = True
        self._launched(b)

    def _launch_piece(self, b: Bucket) -> None:
        """Start the async all_reduce of ``b``'s next piece (the bucket counts as launched
        at its first piece: launch hooks and ``stats['launches']`` see buckets)."""
        b.next_piece += 1
        if not b.launched:
            self._launched(b)
        op = b.op if self.divide_by is None else "sum"
        buf = b.piece_buffer(b.next_piece - 1)
        b.works.append(self.process_group.all_reduce(buf, op, async_op=True))

    def finalize(self) -> None:
        """Wait for the buckets' collectives and write the reduced gradients to ``.grad``
        (see the module docstring); a no-op when nothing was reduced this iteration."""
        if not self._touched:
            return
        for k in range(self._next_launch, len(self.buckets)):  # finalize_in_backward=False
            b = self.buckets[k]
            if any(b.ready):
                self._launch(b, k == len(self.buckets) - 1)
        self._next_launch = len(self.buckets)
        t0 = time.perf_counter()
        launched = [b for b in self.buckets if b.launched]
        for b in launched:
            for work in b.works:
                out = work.wait()
            if b.hooked:
                self._take_hook_result(b, out)
        self.stats["wait_s"] += time.perf_counter() - t0
        self.stats["backward_waits"] += 1
        if self.divide_by is not None:
            for b in launched:
                if b.op == "avg":
                    for arr in [b.flat, *(d for d in b.direct if d is not None)]:
                        np.divide(arr, self.divide_by, out=arr, casting="unsafe")
        for b in launched:
            self._write_back(b)
        self._reset()

    @staticmethod
    def _take_hook_result(b: Bucket, out) -> None:
        out = getattr(out, "array", out)
        if out is b.flat:
            return
        if out is None or out.size != b.flat.size:
            raise RuntimeError(
                f"DDP communication hook: the future of bucket {b.index} gave "
                f"{'None' if out is None else f'{out.size} elements'}, expected "
                f"the reduced bucket ({b.flat.size} elements). A hook returns a "
                "future whose wait() gives the bucket's reduced flat buffer.")
        np.copyto(b.flat, out.reshape(b.flat.shape), casting="unsafe")

    def _write_back(self, b: Bucket) -> None:
        as_view = self.gradient_as_bucket_view
        for i, p in enumerate(b.params):
            if not b.ready[i] or b.direct[i] is not None:  # direct: reduced in p.grad itself
                continue
            v = b.view(i, p.array.shape)
            g = p.grad
            if g is None:
                p.grad = _wrap(v if as_view else v.copy())
            elif as_view:
                if g.array is not v and not np.shares_memory(g.array, v):
                    p.grad = _wrap(v)
                    p.grad._spec = g._spec  # a global parameter's gradient keeps its layout
            else:
                np.copyto(g.array, v, casting="unsafe")

    def _reset(self) -> None:
        if self._progress_held:
            self._progress_held = False
            self.process_group.background_progress(False)
        for b in self.buckets:
            b.reset()
        self._next_launch = 0
        self._touched = False

    def reduce_gradients(self) -> None:
        """Reduce every parameter's current ``.grad`` now and write the results back (the
        after-backward form: strategies, pipeline). Every parameter needs a ``.grad``."""
        missing = [n for n, p in zip(self.names, self.params) if p.grad is None]
        if missing:
            raise RuntimeError(
                f"Reducer.reduce_gradients: {len(missing)} parameter(s) have no .grad "
                f"({', '.join(missing[:5])}); give them a zero gradient first")
        for b in self.buckets:
            for p in b.params:
                self.grad_ready(p)
        self.finalize()

    # -- errors ----------------------------------------------------------------------------
    def raise_unfinished(self) -> None:
        """PyTorch's error for a backward that left parameters without a gradient (their
        buckets never completed), naming them; the reducer is reset first."""
        missing = sorted(self._index[id(p)] for b in self.buckets
                         for i, p in enumerate(b.params) if not b.ready[i])
        self._reset()
        names = ", ".join(self.names[i] for i in missing)
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new "
            "one. This error indicates that your module has parameters that were not used in "
            "producing loss. Parameters which did not receive grad for rank "
            f"{self.process_group.rank}: {names} ({len(missing)} of {len(self.params)} "
            f"parameters; indices {', '.join(map(str, missing))}). Pass "
            "find_unused_parameters=True to DistributedDataParallel if parts of the model are "
            "not used in every forward, and make sure every output used in the loss comes from "
            "forward()."
        )

    # -- configuration ---------------------------------------------------------------------
    def register_comm_hook(self, state, hook) -> None:
        """Replace each bucket's all-reduce by ``hook(state, GradBucket)``, which starts the
        communication and returns a future-like object whose ``wait()`` gives the reduced flat
        buffer (PyTorch's DDP communication hook). Once, before the first reduction."""
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable as hook(state, bucket), "
                            f"got {type(hook).__name__}")
        if self.comm_hook is not None:
            raise RuntimeError("register_comm_hook can only be called once (a hook is already "
                               "registered on this DistributedDataParallel).")
        if self._touched:
            raise RuntimeError("register_comm_hook must be called before the first backward "
                               "(gradients of this iteration are already being reduced).")
        if any(b.op == "sum" for b in self.buckets) and self.op != "sum":
            raise RuntimeError(
                "register_comm_hook: this reducer sums the partial gradients of global "
                "parameters (their loss is a mean over the global batch), while communication "
                "hooks average; wrap only plain (local) parameters in a reducer with a hook")
        self.comm_hook = (state, hook)

    def register_launch_hook(self, fn) -> None:
        """Call ``fn(bucket)`` each time a bucket's collective starts (observers: the global
        tensors' ``comm_plan()`` records, tests)."""
        self._launch_hooks.append(fn)

    @contextlib.contextmanager
    def no_sync(self):
        """No reduction inside the context: gradients accumulate locally."""
        old = self.require_sync
        self.require_sync = False
        try:
            yield
        finally:
            self.require_sync = old

    def remove_hooks(self) -> None:
        """Take the reducer's hooks off the parameters (and its partial-sum registrations)."""
        for h in self._hook_handles:
            h.remove()
        self._hook_handles.clear()
        for p in self.params:
            entry = _DEFERRED.get(id(p))
            if entry is not None and entry[1]() is self:
                del _DEFERRED[id(p)]


def _forget(key: int):
    def drop(_ref) -> None:
        entry = _DEFERRED.get(key)
        if entry is not None and entry[0] is _ref:
            del _DEFERRED[key]

    return drop
