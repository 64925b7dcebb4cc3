"""One ``fully_shard`` unit's parameters: their dim-0 shards, the all-gather that rebuilds
them, and the reduce-scatter of their gradients (FSDP2's ``FSDPParamGroup``).

Layout
------
A unit holds parameters ``p_1 .. p_m`` (one dtype). Over the shard group of ``N`` ranks
each parameter whose ``shape[0] >= N`` is cut along dim 0 with ``torch.chunk``'s rule
(:func:`shardflow.distributed.layout.chunk_bounds`; the last chunks may be short or
empty): rank ``k`` holds rows ``[lo_k, hi_k)``. Rank ``k``'s chunks of all parameters are
laid end to end in one flat *segment* of ``S = max_k (sum of its chunk sizes)`` elements
(shorter segments are zero-padded), so one collective reduces a whole unit's gradients:

    shard_flat (S,)         this rank's segment; each parameter's shard is a view into it
    rs_out (S,)             this rank's segment of the averaged gradients: each parameter's
                            reduce_scatter(avg) writes its chunk there, ``.grad`` is a view

The gradients are reduce-scattered one collective per parameter, straight from the full
gradient autograd gave the parameter (its ``.grad`` array, which the parameter owns: the
engine adopts the backward's own array when nothing else holds it, else copies it; see
``autograd/engine.py``): a parameter whose rows divide evenly is, C-contiguous,
its ranks' chunks in rank order, so no packed copy of the unit's gradients is made (it
used to be: a unit-sized buffer beside the engine's gradient at the peak of backward); an
uneven one is packed into a padded ``(N, ceil(rows / N) * row)`` buffer.

A plain ``nn.Linear`` unit's weight skips the whole gradient: its backward node hands the
gradient over in row blocks (:meth:`FSDPParamGroup.reduce_weight_grad_in_blocks`, each block
a slice of every rank's rows reduce-scattered into ``rs_out``; ``streamed_linear.py``).

The parameters are gathered one all-gather each: a parameter whose rows divide evenly
is, as a C-contiguous array, its ranks' chunks in rank order, so the all-gather writes into
its whole storage directly (a unit-sized gather buffer would be one more unit of peak
memory); an uneven one goes through a padded buffer.

Parameters with ``ndim == 0`` or ``shape[0] < N`` are *replicated* (sbp Broadcast): each
rank keeps the whole tensor and their gradients are all-reduced (avg), also as one flat
buffer. On a 2-D (HSDP) mesh the segments are sharded over the shard dimension and every
reduced gradient is then all-reduced (avg) over the replicate dimension.

Mixed precision and the meta device
-----------------------------------
With ``MixedPrecisionPolicy(param_dtype=pd, reduce_dtype=rd)`` the shards stay in the
parameters' dtype; each all-gather sends the shards cast to ``pd`` into ``pd`` full storage
(replicated parameters get a ``pd`` copy while unsharded), and the gradients are cast to
``rd`` and reduce-scattered in it (default ``pd``), then cast back for ``.grad``. A unit whose
parameters are meta arrays (a model built under ``device("meta")``) computes the same layout
with meta buffers; the first all-gather after ``to_empty`` / ``load_state_dict(assign=True)``
allocates them on the parameters' new device (``_materialize_if_needed``).

Memory
------
The full parameters live in one anonymous private ``mmap`` per unit; the arrays autograd
saves during forward are views of it. ``free_full()`` gives those pages back to the OS
(``madvise(MADV_DONTNEED)``: the addresses stay valid and read as zeros until the next
all-gather writes them again), which is how stage 3 frees gathered parameters between
forward and backward even though the graph holds references to them (PyTorch resizes the
storage to 0 for the same reason). ``tracemalloc`` does not see an ``mmap``: each gathered
parameter is reported to it (``backend/traced_memory.py``) from its all-gather until its
pages are given back, so a ``tracemalloc`` measurement counts the gathered units. On a device (CuPy) the full parameters are one
allocation of the parameters' array module, kept for the unit's lifetime (see
``free_full``); every other buffer (shards, padded gathers, reduced gradients) is also made
on the parameters' device, so a GPU model's collectives go through NCCL.
"""

from __future__ import annotations

import mmap

import numpy as np

from ...autograd import _wrap
from ...backend.device import CPU
from ...backend.meta import is_meta_array
from ...backend.traced_memory import TracedRegions
from ...backend.xp import device_of, get_array_module, new_array
from .. import layout
from ..global_tensor import GlobalSpec, make_global
from ..plan import record

SHARDED, UNSHARDED = "sharded", "unsharded"


class FSDPParamGroup:
    """The parameters of one ``fully_shard`` unit; see the module docstring."""

    def __init__(self, params, names, mesh, shard_dim: int, replicate_dim: int | None, label: str,
                 param_dtype=None, reduce_dtype=None):
        self.params = list(params)
        self.names = list(names)
        self.label = label
        self.mesh = mesh
        self.shard_pg = mesh.group(shard_dim)
        self.rep_pg = None if replicate_dim is None else mesh.group(replicate_dim)
        n = self.N = self.shard_pg.size
        self.rank = mesh.index(shard_dim)
        dtypes = {p.array.dtype for p in self.params}
        if len(dtypes) > 1:
            listed = ", ".join(f"{nm}: {p.array.dtype}" for nm, p in zip(self.names, self.params))
            raise TypeError(
                f"fully_shard({label}): the parameters of one unit must share one dtype, got "
                f"{listed}; cast the module first (module.float()) or wrap the differing "
                "submodules with their own fully_shard")
        self.dtype = dtypes.pop() if dtypes else np.dtype(np.float32)
        # mixed precision (MixedPrecisionPolicy, NumPy dtypes here): the shards (what the
        # optimizer updates) stay in self.dtype; the gathered parameters that forward and
        # backward use are in compute_dtype; gradients are reduced in reduce_dtype
        # (default: the compute dtype, as PyTorch) and stored as self.dtype shards
        self.compute_dtype = np.dtype(param_dtype) if param_dtype is not None else self.dtype
        self.reduce_dtype = np.dtype(reduce_dtype) if reduce_dtype is not None else self.compute_dtype
        self._repl_master = {}  # id(p) -> its self.dtype array while p holds a cast copy
        devices = {device_of(p.array) for p in self.params}
        if len(devices) > 1:
            listed = ", ".join(f"{nm}: {device_of(p.array)}" for nm, p in zip(self.names, self.params))
            raise TypeError(
                f"fully_shard({label}): the parameters of one unit must be on one device, got "
                f"{listed}; move the module first (module.to(device))")
        # every buffer of the unit (shards, gathered parameters, reduced gradients) lives on the
        # parameters' device, so a GPU model's collectives go through NCCL
        self.device = devices.pop() if devices else CPU
        self.on_host = self.device.type == "cpu"
        split_sbp = [None] * mesh.ndim
        repl_sbp = [None] * mesh.ndim
        from ..sbp import broadcast, split

        for k in range(mesh.ndim):
            split_sbp[k] = split(0) if k == shard_dim else broadcast
            repl_sbp[k] = broadcast
        self.split = [p for p in self.params if p.array.ndim >= 1 and p.array.shape[0] >= n]
        self.repl = [p for p in self.params if not (p.array.ndim >= 1 and p.array.shape[0] >= n)]
        self.specs = {}
        split_ids = {id(p) for p in self.split}
        for p in self.params:
            sbp = split_sbp if id(p) in split_ids else repl_sbp
            self.specs[id(p)] = GlobalSpec(mesh, sbp, p.array.shape)
        # -- per-rank segments: rows, offsets
        self.rows = []  # per split param: [(lo, hi)] for each rank
        self.offsets = []  # per split param: [offset in rank k's segment]
        seg = [0] * n
        for p in self.split:
            row = int(np.prod(p.array.shape[1:], dtype=np.int64))
            bounds = [layout.chunk_bounds(p.array.shape[0], n, k) for k in range(n)]
            self.rows.append(bounds)
            self.offsets.append(list(seg))
            for k, (lo, hi) in enumerate(bounds):
                seg[k] += (hi - lo) * row
        self.S = max(seg) if seg else 0
        self.full_numel = sum(p.array.size for p in self.split)
        self._traced = TracedRegions()  # the gathered pages, as tracemalloc sees them
        self._allocate([p.array[lo:hi] for p, ((lo, hi)) in
                        zip(self.split, (r[self.rank] for r in self.rows))])
        self.repl_numel = sum(p.array.size for p in self.repl)
        self.trainable = [p for p in self.params if p.requires_grad]
        self.index = {id(p): i for i, p in enumerate(self.split)}
        self.rindex = {}
        off = 0
        for p in self.repl:
            self.rindex[id(p)] = (off, p.array.size)
            off += p.array.size
        self.state = UNSHARDED  # the params hold whole arrays until reshard() below
        self.gather_work = None
        self.stats = {"all_gather": 0, "reduce_scatter": 0, "all_reduce": 0, "unshard": 0,
                      "bytes": {}}
        self._stash = {}  # id(p) -> sharded grad kept from before this backward (accumulation)
        self.reset_grad_state()
        for p in self.params:
            make_global(p, self.specs[id(p)])  # registers the grad-layout hook once
        self.reshard()

    def _allocate(self, shards) -> None:
        """The unit's storage on ``self.device``: ``shard_flat`` (S,) with each parameter's
        shard a view (filled from ``shards``), and the full parameters' storage (on the host
        an anonymous private mmap, freed with madvise; on a device one allocation, kept: see
        ``free_full``). On the meta device every buffer is a shape without memory."""
        self.shard_flat = self._zeros(self.S)
        self.shard_views = []
        for i, (p, src) in enumerate(zip(self.split, shards)):
            lo, hi = self.rows[i][self.rank]
            off = self.offsets[i][self.rank]
            shape = (hi - lo, *self.specs[id(p)].shape[1:])
            v = self.shard_flat[off: off + (hi - lo) * int(np.prod(shape[1:], dtype=np.int64))].reshape(shape)
            v[...] = src
            self.shard_views.append(v)
        cdt = self.compute_dtype
        if self.on_host:
            nbytes = max(self.full_numel * cdt.itemsize, 1)
            self._mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            flat_full = np.frombuffer(self._mm, dtype=cdt, count=self.full_numel)
        else:
            self._mm = None
            flat_full = self._empty(self.full_numel, cdt)
        self.full_views, off = [], 0
        for p in self.split:
            shape = tuple(self.specs[id(p)].shape)
            n = int(np.prod(shape, dtype=np.int64))
            self.full_views.append(flat_full[off: off + n].reshape(shape))
            off += n

    @property
    def is_meta(self) -> bool:
        return self.device.type == "meta"

    def _materialize_if_needed(self) -> None:
        """A unit built on the meta device (FSDP2's ``with torch.device("meta")`` init) has
        shapes only; once ``module.to_empty(device=...)`` (or ``load_state_dict(...,
        assign=True)``) gave its parameters real shards, allocate the unit's buffers on
        that device and adopt the shards' values. Raises, naming the parameters, while some
        are still meta and others not (a partial ``to_empty``)."""
        if not self.is_meta:
            return
        arrays = [p.array for p in self.params]
        real = [device_of(a) for a in arrays if not is_meta_array(a)]
        if not real:
            return
        if len(real) != len(arrays) or len(set(real)) > 1:
            listed = ", ".join(f"{nm}: {device_of(p.array)}" for nm, p in zip(self.names, self.params))
            raise RuntimeError(
                f"fully_shard({self.label}): the unit was built on the meta device and only some "
                f"of its parameters were materialised ({listed}); call model.to_empty(device=...) "
                "on the whole model (then reset_parameters()), or load every parameter with "
                "load_state_dict(..., assign=True)")
        self.device = real[0]
        self.on_host = self.device.type == "cpu"
        self._allocate([p.array for p in self.split])
        for p, v in zip(self.split, self.shard_views):
            p.array = v

    def _zeros(self, shape, dtype=None):
        dt = self.dtype if dtype is None else dtype
        return new_array(self.device, lambda xp: xp.zeros(shape, dtype=dt))

    def _empty(self, shape, dtype=None):
        dt = self.dtype if dtype is None else dtype
        return new_array(self.device, lambda xp: xp.empty(shape, dtype=dt))

    # -- gradients of one backward ---------------------------------------------------------
    def reset_grad_state(self) -> None:
        self.pending = len(self.trainable)
        self.ready = {id(p): False for p in self.trainable}
        self.full_grads = {}  # split index -> the whole gradient of this backward (or the sum)
        self.repl_grad = None
        self.rs_works = []  # (work, send buffer, padded output or None, split index) in flight
        self.ar_work = None
        self.rs_out = None
        self.launched = False

    # -- unshard / reshard -----------------------------------------------------------------
    def _sync_shards(self) -> None:
        """Make ``shard_flat`` hold the current shard values (an optimizer or a load may have
        rebound ``p.array``), and rebind ``p.array`` to its view."""
        self._materialize_if_needed()
        if self.is_meta:
            raise RuntimeError(
                f"fully_shard({self.label}): the parameters are on the meta device (no data); "
                "materialise the model first: model.to_empty(device='cpu') then "
                "model.reset_parameters(), or load a checkpoint with "
                "load_state_dict(state_dict, assign=True)")
        for p, v in zip(self.split, self.shard_views):
            if p.array is not v:
                if p.array.shape != v.shape:
                    name = self.names[[id(q) for q in self.params].index(id(p))]
                    raise RuntimeError(
                        f"fully_shard({self.label}): parameter {name} "
                        f"holds shape {tuple(p.array.shape)} but its shard is {tuple(v.shape)}; "
                        "assign shard-shaped values to a sharded parameter (load a sharded state "
                        "dict, or load the whole state before fully_shard)")
                v[...] = p.array
                p.array = v

    def start_unshard(self, phase: str = "forward") -> None:
        """Issue the all-gathers of this unit's parameters (non-blocking), one per parameter:
        when its rows divide evenly the gathered chunks, in rank order, *are* the whole
        parameter, so the all-gather writes straight into its storage (no gather buffer the
        size of the unit); otherwise into a padded buffer, copied out in ``finish_unshard``."""
        if self.state == UNSHARDED or self.gather_work is not None:
            return
        self._sync_shards()
        if not self.split:
            return
        works = []
        for i, (full, shard) in enumerate(zip(self.full_views, self.shard_views)):
            rows = self.rows[i]
            c = max(hi - lo for lo, hi in rows)
            row = full[0].size if full.ndim > 1 else 1
            cdt = self.compute_dtype
            if all(hi - lo == c for lo, hi in rows):
                inp = shard.reshape(-1)
                if inp.dtype != cdt:  # mixed precision: gather the shards cast to param_dtype
                    inp = inp.astype(cdt)
                out, padded = full.reshape(self.N, c * row), False
            else:
                out = self._empty((self.N, c * row), cdt)
                inp = self._zeros(c * row, cdt)
                inp[: shard.size] = shard.reshape(-1).astype(cdt, copy=False)
                padded = True
            works.append((i, self.shard_pg.all_gather(inp, out=out, async_op=True),
                          out if padded else None))
            self._count("all_gather", out.nbytes, phase, sent=inp.nbytes)
        self.gather_work = works
        if self._mm is not None:  # the pages the all-gathers write become resident: tracemalloc sees them
            for full in self.full_views:
                self._traced.track(full)
        self.stats["unshard"] += 1

    def finish_unshard(self, phase: str = "forward") -> None:
        """Wait for the all-gathers and make the parameters whole local tensors."""
        if self.state == UNSHARDED:
            return
        self.start_unshard(phase)
        if self.gather_work is not None:
            for i, work, out in self.gather_work:
                work.wait()
                if out is not None:
                    full = self.full_views[i]
                    for k, (lo, hi) in enumerate(self.rows[i]):
                        full[lo:hi] = out[k, : full[lo:hi].size].reshape(full[lo:hi].shape)
            self.gather_work = None
        for p, full in zip(self.split, self.full_views):
            p.array = full
            p._spec = None
        for p in self.repl:
            if p.array.dtype != self.compute_dtype:  # mixed precision: a cast copy; the
                self._repl_master[id(p)] = p.array   # self.dtype array comes back at reshard
                p.array = p.array.astype(self.compute_dtype)
            p._spec = None
        self.state = UNSHARDED

    def stash_grads(self) -> None:
        """Sharded ``.grad``s left from an earlier step (no zero_grad): kept aside and added
        to this backward's reduced gradients (PyTorch accumulates in the same way). Called
        when backward reaches the unit (its pre-backward hook), not when a forward unshards
        it: a forward that no backward follows (an eval pass, under no_grad or not) leaves
        ``.grad`` where it was, for the next ``zero_grad()`` to clear (stashed at the forward,
        an eval pass between ``step()`` and ``zero_grad()`` made the next step add the old
        gradient to the new one)."""
        for p in (*self.split, *self.repl):
            if p.grad is not None and p.grad._spec is not None:
                self._stash[id(p)] = p.grad
                p.grad = None

    def reshard(self) -> None:
        """Parameters back to their shards (global tensors); the full pages are freed."""
        if self.state == SHARDED:
            return
        for p, v in zip(self.split, self.shard_views):
            p.array = v
            p._spec = self.specs[id(p)]
        for p in self.repl:
            master = self._repl_master.pop(id(p), None)
            if master is not None:
                p.array = master
            p._spec = self.specs[id(p)]
        self.free_full()
        self.state = SHARDED

    def free_full(self) -> None:
        """Give the gathered parameters' pages back (host). On a device the storage is kept:
        the graph's saved views pin a CuPy allocation, which cannot be released under them
        (PyTorch resizes the storage to 0 instead), so on a device stage 3 keeps the
        gathered parameters' memory between forward and backward (it still re-gathers them)."""
        if self.full_numel and self._mm is not None:
            self._mm.madvise(mmap.MADV_DONTNEED)
            self._traced.untrack_all()

    def free_full_of(self, p) -> None:
        """Give back the pages that only ``p``'s gathered array occupies (host); the unit
        stays unsharded (its other parameters keep their values), ``p`` reads zeros until
        the next all-gather. For a weight whose last reader ran (streamed_linear.py)."""
        if self._mm is None or id(p) not in self.index:
            return
        full = self.full_views[self.index[id(p)]]
        self._traced.untrack(full)
        base = np.frombuffer(self._mm, dtype=np.uint8, count=1).ctypes.data
        start = full.ctypes.data - base
        page = mmap.PAGESIZE
        lo = -(-start // page) * page  # whole pages inside the array only: a page shared
        hi = (start + full.nbytes) // page * page  # with a neighbour keeps its values
        if hi > lo:
            self._mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    # -- gradients -------------------------------------------------------------------------
    def take_grad(self, p) -> bool:
        """Take ``p.grad`` (the full local gradient, owned by the parameter) and drop it: kept
        as it is for the reduce-scatter, or added to the sum kept after
        ``set_requires_gradient_sync(False)`` steps; True when every trainable parameter of
        the unit has delivered its gradient."""
        if not self.ready.get(id(p), True):
            self.ready[id(p)] = True
            self.pending -= 1
        g = p.grad.array
        p.grad = None
        if g.dtype != self.reduce_dtype:  # mixed precision: reduced in reduce_dtype
            g = g.astype(self.reduce_dtype)
        if id(p) in self.index:
            i = self.index[id(p)]
            held = self.full_grads.get(i)
            if held is None:
                xp = get_array_module(g)
                self.full_grads[i] = xp.ascontiguousarray(g)  # no copy: the engine's .grad is C order
            else:
                held += g
        else:
            if self.repl_grad is None:
                self.repl_grad = self._zeros(self.repl_numel, self.reduce_dtype)
            off, size = self.rindex[id(p)]
            self.repl_grad[off: off + size] += g.reshape(-1)
        return self.pending == 0

    def rows_divide_evenly(self, p) -> bool:
        """``p`` is sharded and its rows split evenly over the shard group."""
        i = self.index.get(id(p))
        if i is None:
            return False
        rows = self.rows[i]
        return all(hi - lo == rows[0][1] - rows[0][0] for lo, hi in rows)

    def can_stream_grad(self, p) -> bool:
        """``p``'s gradient of this backward may be reduced in blocks as it is computed
        (:meth:`reduce_weight_grad_in_blocks`): it is owed and no gradient of it is held from
        an unsynchronised backward (that sum must be added to the whole gradient first)."""
        i = self.index.get(id(p))
        return (i is not None and self.ready.get(id(p)) is False and i not in self.full_grads
                and self.rows_divide_evenly(p))

    def reduce_weight_grad_in_blocks(self, p, g2, x2, block_bytes: int, window: int = 2) -> bool:
        """Deliver the gradient ``g2^T @ x2`` of the sharded weight ``p`` (out, in) without
        making it whole: in blocks of ``s`` rows of every rank's chunk, each block a
        ``(N * s, in)`` buffer (rank ``k``'s rows ``k * c + j .. k * c + j + s``, in rank order:
        a reduce-scatter input) that is reduce-scattered (avg, non-blocking) into this rank's
        gradient segment ``rs_out``. At most ``window`` blocks are in flight: before a new one
        is made the oldest is waited for (after ``window`` GEMMs its peers have long posted
        theirs, so the wait is short; a blocking collective per block made every rank wait
        for the slowest one that many times per step). The last ones stay in flight with the
        unit's other reduce-scatters (``rs_works``), finished when backward reaches the next
        unit, as the whole-gradient path's are. ``g2`` (R, out) is the output gradient, ``x2``
        (R, in) the input, both with the leading dims folded. Returns True when this was the
        unit's last owed gradient (as :meth:`take_grad`). Communication: the bytes of one
        reduce-scatter of the whole gradient, in ``ceil(c / s)`` collectives; ``s`` keeps a
        block within ``block_bytes``."""
        i = self.index[id(p)]
        self.ready[id(p)] = True
        self.pending -= 1
        if self.rs_out is None:
            self.rs_out = self._empty(self.S, self.reduce_dtype)
        n = self.N
        c = self.rows[i][0][1] - self.rows[i][0][0]  # rows per rank (even split)
        width = x2.shape[1]
        off = self.offsets[i][self.rank]
        s = max(1, min(c, block_bytes // max(1, n * width * g2.dtype.itemsize)))
        inflight = []
        for j0 in range(0, c, s):
            while len(inflight) >= window:
                inflight.pop(0).wait()  # its send buffer goes with the finished work
            j1 = min(c, j0 + s)
            m = j1 - j0
            send = np.empty((n * m, width), dtype=g2.dtype)  # (N * m, in)
            for k in range(n):
                np.matmul(g2[:, k * c + j0: k * c + j1].T, x2, out=send[k * m:(k + 1) * m])
            if send.dtype != self.reduce_dtype:  # mixed precision: reduced in reduce_dtype
                send = send.astype(self.reduce_dtype)
            out = self.rs_out[off + j0 * width: off + j1 * width]
            inflight.append(self.shard_pg.reduce_scatter(send.reshape(-1), "avg", out=out,
                                                         async_op=True))
            self._count("reduce_scatter", send.nbytes, "backward")
            del send  # the collective holds it until it is done
            self.shard_pg.progress()
        self.rs_works.extend((work, None, None, i) for work in inflight)
        return self.pending == 0

    def launch_reduce(self) -> None:
        """Start the reduce-scatters, one per sharded parameter in the unit's order (the same
        on every rank), and the all-reduce of the replicated gradients; non-blocking. An
        evenly split gradient is sent as it is (its rows are the ranks' chunks in order) and
        lands in its place in ``rs_out``; an uneven one goes through a padded buffer and its
        whole gradient is dropped at once."""
        if self.full_grads:
            if self.rs_out is None:  # (a streamed weight may have made it already)
                self.rs_out = self._empty(self.S, self.reduce_dtype)
            for i in range(len(self.split)):
                full = self.full_grads.pop(i, None)
                if full is None:  # frozen parameter: no gradient to reduce
                    continue
                rows = self.rows[i]
                c = max(hi - lo for lo, hi in rows)
                row = full[0].size if full.ndim > 1 else 1
                off = self.offsets[i][self.rank]
                if all(hi - lo == c for lo, hi in rows):
                    send, padded = full.reshape(-1), None
                    out = self.rs_out[off: off + c * row]
                else:
                    send = self._zeros(self.N * c * row, self.reduce_dtype)
                    for k, (lo, hi) in enumerate(rows):
                        send[k * c * row: (k * c + hi - lo) * row] = full[lo:hi].reshape(-1)
                    del full
                    padded = out = self._empty(c * row, self.reduce_dtype)
                work = self.shard_pg.reduce_scatter(send, "avg", out=out, async_op=True)
                self.rs_works.append((work, send, padded, i))
                self._count("reduce_scatter", send.nbytes, "backward")
        if self.repl_grad is not None:
            self.ar_work = self.shard_pg.all_reduce(self.repl_grad, "avg", async_op=True)
            self._count("all_reduce", self.repl_grad.nbytes, "backward")
        self.launched = True

    def finish_reduce(self) -> None:
        """Wait, average over replicas (HSDP), and set each ``p.grad`` to its global shard."""
        for work, _send, padded, i in self.rs_works:
            work.wait()
            if padded is not None:
                size = self.shard_views[i].size
                off = self.offsets[i][self.rank]
                self.rs_out[off: off + size] = padded[:size]
        self.rs_works = []  # the send buffers (whole gradients) go now
        if self.ar_work is not None:
            self.ar_work.wait()
        if self.rep_pg is not None and self.rep_pg.size > 1:
            for buf in (self.rs_out, self.repl_grad):
                if buf is not None:
                    self.rep_pg.all_reduce(buf, "avg")
                    self._count("all_reduce", buf.nbytes, "backward", replicate=True)
        for i, p in enumerate(self.split):
            if not p.requires_grad or self.rs_out is None:
                continue
            v = self.shard_views[i]
            off = self.offsets[i][self.rank]
            self._set_grad(p, self.rs_out[off: off + v.size].reshape(v.shape))
        for p in self.repl:
            if not p.requires_grad or self.repl_grad is None:
                continue
            off, size = self.rindex[id(p)]
            self._set_grad(p, self.repl_grad[off: off + size].reshape(p.array.shape).copy())
        self.reset_grad_state()

    def _set_grad(self, p, arr) -> None:
        if arr.dtype != self.dtype:  # a reduce_dtype gradient, stored in the shards' dtype
            arr = arr.astype(self.dtype)
        old = self._stash.pop(id(p), None)
        if old is not None:
            old.array += arr
            g = old
        else:
            g = _wrap(arr)
        g._spec = self.specs[id(p)].grad_spec()
        p.grad = g

    def drop_stash(self) -> None:
        """Sharded grads stashed but not accumulated (no backward ran): put them back."""
        for p in self.params:
            old = self._stash.pop(id(p), None)
            if old is not None and p.grad is None:
                p.grad = old

    # -- bookkeeping -----------------------------------------------------------------------
    def _count(self, collective: str, nbytes: int, phase: str, replicate: bool = False,
               sent: int | None = None) -> None:
        """Count a collective: ``stats["bytes"]`` adds its logical size as the ZeRO paper
        counts it (all-gather: the output, reduce-scatter: the input, all-reduce: the
        buffer); the communication plan gets this rank's input bytes."""
        self.stats[collective] += 1
        key = collective + (":replicate" if replicate else "")
        self.stats["bytes"][key] = self.stats["bytes"].get(key, 0) + int(nbytes)
        pg = self.rep_pg if replicate else self.shard_pg
        record(phase, f"fsdp:{self.label}", collective, nbytes if sent is None else sent,
               0 if replicate or self.rep_pg is None else 1, pg.size)

    def missing(self) -> list[str]:
        return [nm for nm, p in zip(self.names, self.params)
                if p.requires_grad and not self.ready.get(id(p), True)]

