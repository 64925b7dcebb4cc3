"""``ZeroRedundancyOptimizer``: ZeRO stage 1, optimizer state sharded over the ranks.

PyTorch's name and signature::

    model = DistributedDataParallel(model)               # gradients averaged (all-reduce)
    opt = ZeroRedundancyOptimizer(model.parameters(), optim.AdamW, lr=1e-3)

Algorithm
---------
Every parameter ``p`` with ``p.ndim >= 1`` and ``p.shape[0] >= N`` (``N`` ranks of
``process_group``) is cut along dim 0 with ``torch.chunk``'s rule (uneven sizes allowed; the
last ranks may hold short or empty chunks): in the global-tensor vocabulary its optimizer
state is ``Split(0)`` over the group. Rank ``k`` builds ``optimizer_class`` over *views* of
its rows: ``p.array[lo:hi]`` as the parameter and ``p.grad.array[lo:hi]`` as its gradient,
so the inner optimizer allocates state (Adam's two moments: ``8Ψ/N`` bytes instead of
``8Ψ``) for its rows only and updates them in place. Smaller parameters (scalars, fewer rows
than ranks) are stepped whole on every rank (their state replicated; the gradients are equal
on every rank after DDP, so the results are too).

``step()``: copy the hyper-parameters of ``param_groups`` (what LR schedulers change) into
the inner optimizer, point the views' ``.grad`` at this step's gradients, run the inner
``step``, then rebuild whole parameters: per bucket of parameters (16 MB of whole values),
one ``all_gather`` of a flat buffer holding each rank's rows (padded to the longest rank).

Communication per step: this optimizer's all-gather moves Ψ; DDP's all-reduce before it
2Ψ (PyTorch's ZeroRedundancyOptimizer has the same plan with a broadcast per parameter
instead of one all-gather). The ZeRO paper's stage 1 reaches 2Ψ by reduce-scattering the
gradients instead; ``fully_shard(reshard_after_forward=False)`` (stage 2) does that.

State dict: ``consolidate_state_dict(to=0)`` (a collective) gathers the whole state on rank
``to``, whose ``state_dict()`` then returns a plain ``optimizer_class`` state dict (whole
tensors, PyTorch's format); ``load_state_dict`` takes that format from any world size and
keeps this rank's rows. ``sharded_state_dict()`` returns the state without communication,
each state tensor a global tensor ``Split(0)`` (for sharded checkpoints).

Uneven inputs: it is a joinable of torch's generic ``Join([ddp_model, zero_optimizer])``
(``distributed/algorithms/join.py``). As in torch, its ``step()`` first notifies the context,
and a rank that has run out of inputs runs ``step()`` as its main hook: it updates its
shard with the gradients it holds (those of its last backward: DDP's shadowing does not
write ``.grad``) and takes part in the all-gather. Deviation: torch gives each parameter
whole to one rank, shardflow gives each rank rows of it (and parameters with fewer rows than
ranks to every rank); so in the iterations where some rank has joined, the rows a joined
rank owns are updated from its stale gradients where torch updates the parameters it owns,
and the small replicated parameters differ between ranks until DDP's join hook broadcasts
the last joiner's model (torch's result mixes the two ranks' updates there).

``parameters_as_bucket_view`` and ``overlap_with_ddp`` are accepted with PyTorch's
defaults; ``overlap_with_ddp=True`` (stepping inside DDP's communication hook) is not
supported.
"""

from __future__ import annotations

import numpy as np

from .. import comm as _comm
from ..autograd import Tensor, _wrap
from ..backend.device import CPU
from ..backend.xp import device_of, new_array
from ..optim.optimizer import Optimizer
from . import layout
from .global_tensor import GlobalSpec, make_global
from .sbp import broadcast, split

__all__ = ["ZeroRedundancyOptimizer"]

_HPARAM_SKIP = ("params",)
_BUCKET_BYTES = 16 << 20  # whole-parameter bytes per all-gather of step()


class ZeroRedundancyOptimizer(Optimizer):
    """ZeRO-1 over ``process_group`` (default: the world); see the module docstring."""

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view: bool = False, overlap_with_ddp: bool = False,
                 **defaults):
        if overlap_with_ddp:
            raise NotImplementedError(
                "ZeroRedundancyOptimizer(overlap_with_ddp=True) is not supported; pass "
                "overlap_with_ddp=False (the step runs after backward, on DDP's averaged "
                "gradients)")
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError(
                f"optimizer_class must be a shardflow Optimizer class such as optim.AdamW, got "
                f"{optimizer_class!r}")
        super().__init__(params, defaults)
        self.optimizer_class = optimizer_class
        self.process_group = process_group if process_group is not None else _comm.get_world()
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self.overlap_with_ddp = overlap_with_ddp
        self._consolidated = None
        self._join_config = None  # torch's Joinable field, set by a generic Join context
        self.stats = {"all_gather": 0, "bytes": 0}  # bytes: all-gather outputs (ZeRO's count)
        self._build()

    # -- partition -----------------------------------------------------------------------
    def _build(self) -> None:
        pg = self.process_group
        n, r = pg.size, pg.rank
        self._all = [p for g in self.param_groups for p in g["params"]]
        self._group_ids = [[id(p) for p in g["params"]] for g in self.param_groups]
        self._rows = {}  # id(p) -> [(lo, hi)] per rank, for sharded params
        self._views = {}  # id(p) -> the Tensor the inner optimizer updates
        seg = [0] * n
        self._offsets = {}
        self._buckets = []  # [(params, segment length)]: one all-gather each
        cur = []
        for p in self._all:
            if p.array.ndim >= 1 and p.array.shape[0] >= n:
                if cur and (sum(q.array.nbytes for q in cur) + p.array.nbytes > _BUCKET_BYTES):
                    self._buckets.append((cur, max(seg)))
                    cur, seg = [], [0] * n
                cur.append(p)
                bounds = [layout.chunk_bounds(p.array.shape[0], n, k) for k in range(n)]
                row = int(np.prod(p.array.shape[1:], dtype=np.int64))
                self._rows[id(p)] = bounds
                self._offsets[id(p)] = list(seg)
                for k, (lo, hi) in enumerate(bounds):
                    seg[k] += (hi - lo) * row
                lo, hi = bounds[r]
                view = _wrap(p.array[lo:hi])
            else:
                view = _wrap(p.array)
            view.requires_grad = p.requires_grad
            self._views[id(p)] = view
        if cur:
            self._buckets.append((cur, max(seg)))
        dts = {p.array.dtype for p in self._all if id(p) in self._rows}
        if len(dts) > 1:
            raise TypeError(f"ZeroRedundancyOptimizer: sharded parameters must share one dtype, "
                            f"got {sorted(map(str, dts))}; cast the model first")
        self._dtype = dts.pop() if dts else np.dtype(np.float32)
        # the all-gather buffers live where the parameters do (NCCL on a GPU, MPI on the host)
        devs = {device_of(p.array) for p in self._all if id(p) in self._rows}
        if len(devs) > 1:
            raise TypeError(f"ZeroRedundancyOptimizer: sharded parameters must be on one device, "
                            f"got {sorted(map(str, devs))}; move the model first (model.to(...))")
        self._device = devs.pop() if devs else CPU
        inner_groups = []
        for g in self.param_groups:
            inner = {k: v for k, v in g.items() if k not in _HPARAM_SKIP}
            inner["params"] = [self._views[id(p)] for p in g["params"]]
            inner_groups.append(inner)
        self.optim = self.optimizer_class(inner_groups, **self.defaults)
        # the groups show every hyper-parameter (what schedulers and state dicts see)
        for g, ig in zip(self.param_groups, self.optim.param_groups):
            for k, v in ig.items():
                if k != "params":
                    g.setdefault(k, v)

    def _check_groups(self) -> None:
        now = [[id(p) for p in g["params"]] for g in self.param_groups]
        if now != self._group_ids:
            raise RuntimeError(
                "ZeroRedundancyOptimizer: param_groups changed after the optimizer state was "
                f"sharded (groups of {[len(x) for x in self._group_ids]} parameters when built, "
                f"now {[len(x) for x in now]}); the shards follow the parameters given at "
                "construction. Build a new ZeroRedundancyOptimizer with the new groups "
                "(consolidate_state_dict + state_dict to carry the state over)")

    def add_param_group(self, param_group: dict) -> None:
        if "optim" in self.__dict__:
            raise RuntimeError(
                "ZeroRedundancyOptimizer.add_param_group: adding a group after the optimizer "
                "state was sharded is not supported; pass every group to the constructor")
        super().add_param_group(param_group)

    def _rebind(self, p) -> Tensor:
        """The inner view of ``p``, re-pointed at ``p.array`` if the parameter's array was
        replaced (e.g. ``load_state_dict(assign=True)`` or a ``.data`` assignment)."""
        view = self._views[id(p)]
        rows = self._rows.get(id(p))
        if rows is None:
            if view.array is not p.array:
                view.array = p.array
        else:
            lo, hi = rows[self.process_group.rank]
            if view.array.size and not np.may_share_memory(view.array, p.array):
                view.array = p.array[lo:hi]
        return view

    # -- step ----------------------------------------------------------------------------
    def step(self, closure=None):
        if self._join_config is not None:  # inside a generic Join (module docstring)
            self._join_config.notify(self)
        self._check_groups()
        loss = self._closure(closure)
        for g, ig in zip(self.param_groups, self.optim.param_groups):
            for k, v in g.items():
                if k != "params":
                    ig[k] = v
        r = self.process_group.rank
        for p in self._all:
            view = self._rebind(p)
            if p.grad is None:
                view.grad = None
                continue
            rows = self._rows.get(id(p))
            if rows is None:
                view.grad = _wrap(p.grad.array)
            else:
                lo, hi = rows[r]
                view.grad = _wrap(p.grad.array[lo:hi])
        self.optim.step()
        self._gather_params()
        for p in self._all:
            self._views[id(p)].grad = None
            if p.grad is not None:
                p._version_counter[0] += 1
        self._consolidated = None
        return loss

    def _gather_params(self) -> None:
        """Rebuild whole parameters: per bucket of parameters (about ``_BUCKET_BYTES`` of
        whole values, so the gathered buffer stays small next to the model), one all-gather
        of every rank's rows, padded to the longest rank's; each parameter is then copied
        out of the gathered rows, this rank's own included."""
        pg = self.process_group
        n, r = pg.size, pg.rank
        dt = self._dtype
        for params, seg_len in self._buckets:
            flat = new_array(self._device, lambda xp, k=seg_len: xp.zeros(k, dtype=dt))
            for p in params:
                v = self._views[id(p)].array
                off = self._offsets[id(p)][r]
                flat[off: off + v.size] = v.reshape(-1)
            out = new_array(self._device, lambda xp, k=seg_len: xp.empty((n, k), dtype=dt))
            if n > 1:
                pg.all_gather(flat, out=out)
            else:
                out[0] = flat
            self.stats["all_gather"] += 1
            self.stats["bytes"] += out.nbytes
            for p in params:
                a = p.array
                row = a[0].size if a.ndim > 1 else 1
                for k, (lo, hi) in enumerate(self._rows[id(p)]):
                    off = self._offsets[id(p)][k]
                    a[lo:hi] = out[k, off: off + (hi - lo) * row].reshape(a[lo:hi].shape)

    # -- uneven inputs (torch's Joinable) ------------------------------------------------
    def join_hook(self, **kwargs):
        """The hook for torch's generic ``Join``: a joined rank steps (module docstring)."""
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        return self._device

    @property
    def join_process_group(self):
        return self.process_group

    # -- state dicts ---------------------------------------------------------------------
    def _index_of(self):
        return {id(p): i for i, p in enumerate(self._all)}

    def _local_state(self):
        """{param index: inner state dict} of this rank (shard-shaped tensors)."""
        views = {id(self._views[id(p)]): i for i, p in enumerate(self._all)}
        return {views[id(v)]: st for v, st in self.optim.state.items() if id(v) in views}

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather the whole optimizer state on rank ``to`` (a collective: every rank calls
        it); then ``state_dict()`` on that rank returns it."""
        pg = self.process_group
        local = self._local_state()
        keys = sorted({(i, k) for i, st in local.items() for k in st})
        # every rank must list the same keys (they do after a step on every rank); check
        all_keys = pg.all_gather_object(keys)
        if any(k != all_keys[0] for k in all_keys):
            raise RuntimeError(
                "consolidate_state_dict: ranks hold different optimizer state keys (a rank "
                "has not stepped yet?); call it after the same number of step() on every rank")
        state: dict = {}
        for i, k in keys:
            p = self._all[i]
            v = local[i][k]
            if (isinstance(v, Tensor) and id(p) in self._rows and v.array.ndim
                    and v.array.shape == self._views[id(p)].array.shape):
                whole = self._gather_rows(p, v.array)
                state.setdefault(i, {})[k] = _wrap(whole)
            else:
                state.setdefault(i, {})[k] = _wrap(v.array.copy()) if isinstance(v, Tensor) else v
        groups = self._packed_groups()
        self._consolidated = {"state": state, "param_groups": groups} if pg.rank == _group_rank(pg, to) else None
        self._consolidated_on = to

    def _gather_rows(self, p, arr):
        pg = self.process_group
        n = pg.size
        rows = self._rows[id(p)]
        cmax = max(hi - lo for lo, hi in rows)
        dev = device_of(arr)  # the state's device: the parameter's
        padded = new_array(dev, lambda xp: xp.zeros((cmax, *arr.shape[1:]), dtype=arr.dtype))
        padded[: arr.shape[0]] = arr
        got = pg.all_gather(padded) if n > 1 else padded[None]
        whole = new_array(dev, lambda xp: xp.empty((p.array.shape[0], *arr.shape[1:]), dtype=arr.dtype))
        for k, (lo, hi) in enumerate(rows):
            whole[lo:hi] = got[k][: hi - lo]
        return whole

    def _packed_groups(self):
        out, start = [], 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = list(range(start, start + len(g["params"])))
            start += len(g["params"])
            out.append(packed)
        return out

    def state_dict(self) -> dict:
        """The whole state (after ``consolidate_state_dict(to)``, on rank ``to``)."""
        if self._consolidated is None:
            on = getattr(self, "_consolidated_on", None)
            where = ("" if on is None else
                     f" It was consolidated to rank {on} (consolidate_state_dict(to={on})), so "
                     f"call state_dict() on rank {on} only (e.g. `if rank == {on}:`), or "
                     f"consolidate to rank {self.process_group.rank} to save from here.")
            raise RuntimeError(
                "Optimizer state has not been consolidated on this rank (rank "
                f"{self.process_group.rank}). ZeroRedundancyOptimizer.state_dict: the optimizer "
                "state is sharded; call consolidate_state_dict(to=RANK) on every rank first, "
                "then state_dict() on that rank (PyTorch's protocol), or use "
                "sharded_state_dict() for a per-rank state." + where)
        return self._consolidated

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a whole state dict (PyTorch format, any world size): this rank keeps its rows.
        Every state tensor is checked first (its parameter's whole shape; a global one must
        hold this rank's rows): nothing changes when one does not fit."""
        self._check_groups()
        self._check_loaded(state_dict["state"], whole=True)
        r = self.process_group.rank
        sliced = {}
        for i, st in state_dict["state"].items():
            p = self._all[i] if isinstance(i, int) and i < len(self._all) else None
            if p is None:
                continue
            sliced[i] = {}
            for k, v in st.items():
                if isinstance(v, Tensor) and v._spec is not None:
                    v = _wrap(v.array)  # a sharded state dict: already this rank's rows (checked)
                elif (isinstance(v, Tensor) and id(p) in self._rows and v.array.ndim
                        and tuple(v.array.shape) == tuple(p.array.shape)):
                    lo, hi = self._rows[id(p)][r]
                    v = _wrap(v.array[lo:hi].copy())  # on its own device: the inner load moves it
                sliced[i][k] = v
        self._load_local(sliced, state_dict["param_groups"])

    def _check_loaded(self, state: dict, whole: bool) -> None:
        """Raise one ValueError naming every per-parameter state tensor that does not fit:
        its logical shape must be the parameter's; a global one must hold this rank's rows
        (``Split(0)`` or ``Broadcast`` over the group, as :meth:`sharded_state_dict` makes);
        a plain one must be whole (``whole``, PyTorch's format) or this rank's rows."""
        errors = []
        for i, st in state.items():
            p = self._all[i] if isinstance(i, int) and i < len(self._all) else None
            if p is None or not isinstance(st, dict):
                continue
            want = tuple(p.array.shape)
            rows = tuple(self._views[id(p)].array.shape)
            for k, v in st.items():
                if not (isinstance(v, Tensor) or hasattr(v, "shape")) or not self.optim._is_param_shaped(k, v):
                    continue
                got = tuple(int(d) for d in v.shape)
                spec = v._spec if isinstance(v, Tensor) else None
                if spec is None and not whole:  # a shard array of a sharded state dict
                    if got != rows:
                        errors.append(f"state {k!r} of parameter {i} has shape {got}; a sharded "
                                      f"state dict holds this rank's rows {rows} of it")
                elif got != want:
                    errors.append(f"state {k!r} of parameter {i} has shape {got}, but the "
                                  f"parameter has shape {want}")
                elif spec is not None and tuple(v.array.shape) != rows:
                    errors.append(f"state {k!r} of parameter {i} is a global tensor laid out as "
                                  f"{spec.sbp} whose part on this rank is {tuple(v.array.shape)}, "
                                  f"but this rank's rows are {rows}; load it through dcp.load "
                                  "into get_state_dict(model, optimizer)'s tensors, which reshards")
        if errors:
            raise ValueError(
                "ZeroRedundancyOptimizer.load_state_dict: the loaded state does not fit this "
                "optimizer's parameters (nothing was loaded):\n  " + "\n  ".join(errors) + "\n"
                "Load state saved for the same model: consolidate_state_dict + state_dict "
                "(whole tensors) or dcp.save/dcp.load of get_state_dict(model, optimizer)")

    def _load_local(self, state, saved_groups) -> None:
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has {len(saved_groups)} parameter groups, this optimizer "
                f"{len(self.param_groups)}; build it with the same groups as the one saved")
        inner_groups = []
        for g, s in zip(self.param_groups, saved_groups):
            packed = {k: v for k, v in g.items() if k != "params"}
            packed.update({k: v for k, v in s.items() if k != "params"})
            packed["params"] = list(s["params"])
            inner_groups.append(packed)
        # the inner load checks everything before changing anything; then the groups follow
        self.optim.load_state_dict({"state": state, "param_groups": inner_groups})
        for g, s in zip(self.param_groups, saved_groups):
            for k, v in s.items():
                if k != "params":
                    g[k] = v

    def sharded_state_dict(self) -> dict:
        """This rank's state without communication: every per-parameter state tensor of a
        sharded parameter is a global tensor ``Split(0)`` over the group (logical shape = the
        parameter's), others ``Broadcast``; scalars (``step``) stay local."""
        pg = self.process_group
        if pg is not _comm.get_world() and pg.size != _comm.get_world().size:
            raise NotImplementedError("sharded_state_dict needs process_group = the world")
        from .placement import placement as Placement

        mesh = Placement(self._device.type, list(range(pg.size)))
        state = {}
        for i, st in self._local_state().items():
            p = self._all[i]
            state[i] = {}
            for k, v in st.items():
                if isinstance(v, Tensor) and v.array.ndim:
                    sbp = (split(0),) if id(p) in self._rows else (broadcast,)
                    v = make_global(_wrap(v.array), GlobalSpec(mesh, sbp, p.array.shape))
                state[i][k] = v
        return {"state": state, "param_groups": self._packed_groups()}

    def load_sharded_state_dict(self, state_dict: dict) -> None:
        """Inverse of :meth:`sharded_state_dict` (values: global tensors or this rank's rows),
        checked first as :meth:`load_state_dict` does."""
        self._check_groups()
        self._check_loaded(state_dict["state"], whole=False)
        state = {i: {k: (_wrap(v.array) if isinstance(v, Tensor) else v) for k, v in st.items()}
                 for i, st in state_dict["state"].items()}
        self._load_local(state, state_dict["param_groups"])

    def __repr__(self) -> str:
        return f"ZeroRedundancyOptimizer({self.optim!r}, world_size={self.process_group.size})"


def _group_rank(pg, rank: int) -> int:
    ranks = getattr(pg, "world_ranks", None)
    return rank if ranks is None else ranks.index(rank)


class _ZeROJoinHook:
    """torch's ``JoinHook`` of ZeroRedundancyOptimizer (the same two methods as
    ``algorithms.join.JoinHook``, which this module does not import: that module reaches
    the package, which imports this one): while others train, a joined rank runs the
    optimizer step (its shard's update and the all-gather the active ranks run)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def main_hook(self) -> None:
        self.optimizer.step()

    def post_hook(self, is_last_joiner: bool) -> None:
        """Nothing after all ranks joined."""
