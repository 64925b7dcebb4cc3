"""``shardflow.parallelize(model, optimizer, dp=, tp=, pp=, zero=)``: one parallel config.

Validated before anything is laid out or sent (every rank runs the same checks, so a
bad config fails on all ranks with the same message):

* ``dp * tp * pp`` equals the world size;
* ``pp`` divides the number of layers (``model.config.n_layer`` when the model has one);
* ``tp`` divides the number of heads (``model.config.n_head``);
* ``dp * n_microbatches`` divides ``batch_size`` (when given);
* supported combinations: ``dp x tp`` (global tensors, ``data_tensor_parallel``),
  ``dp x tp x pp`` with ``pp > 1`` (``pipelining``: the mesh ``("pp", "dp", "tp")``; each
  stage's parameters are global tensors on its sub-mesh ``mesh["tp"]`` laid out by the
  model's tensor-parallel plan, activations travel whole between same-TP-index ranks of
  neighbouring stages: ``pipelining/mesh.py``, ``pipelining/tp_layout.py``),
  ``zero=1`` with ``dp`` only (``distributed/zero.py``'s ZeroRedundancyOptimizer).
  ``zero`` with ``tp``/``pp`` or ``zero > 1`` through this entry point are refused with
  NotImplementedError naming what is missing.

``layout="auto"`` (with ``batch_size=`` and a ``profile=``, see docs/PLANNER.md) lets the
planner (``distributed/planner``) choose dp, tp, pp, zero, the micro-batches and the schedule:
rank 0 prints the ranked layouts and why the winner wins, every rank takes the winner, and
after six steps (one measures memory, five are timed) rank 0 prints the predicted against the
measured step time and memory.

Then the communication plan is printed on rank 0 (before step 1) and a
:class:`Parallelized` is returned whose ``step(x, y)`` runs one training step from the
whole global batch (the same on every rank) and returns the global mean loss on every rank.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import comm as _comm
from ..autograd.tensor import Tensor
from ..backend.xp import device_of, get_array_module, new_array

__all__ = ["parallelize", "Parallelized", "validate_parallel_config"]


def _positive(name, v):
    if not isinstance(v, int) or v < 1:
        raise ValueError(f"parallelize: {name} must be a positive integer, got {v!r}")


def validate_parallel_config(world: int, dp: int = 1, tp: int = 1, pp: int = 1, zero: int = 0,
                             n_layer=None, n_head=None, batch_size=None, n_microbatches: int = 1) -> None:
    """Raise ValueError / NotImplementedError for a config that cannot run (module docstring)."""
    for name, v in (("dp", dp), ("tp", tp), ("pp", pp), ("n_microbatches", n_microbatches)):
        _positive(name, v)
    if dp * tp * pp != world:
        raise ValueError(f"parallelize: dp x tp x pp = {dp} x {tp} x {pp} = {dp * tp * pp}, but the job has "
                         f"{world} rank(s); launch with `shardflow run -n {dp * tp * pp}` or choose "
                         f"factors whose product is {world}")
    if n_layer is not None and n_layer % pp:
        raise ValueError(f"parallelize: pp={pp} does not divide the model's {n_layer} layers; "
                         f"choose pp among {[d for d in range(1, n_layer + 1) if n_layer % d == 0]} "
                         f"or a model with a multiple of {pp} layers (e.g. {n_layer + pp - n_layer % pp})")
    if n_head is not None and n_head % tp:
        raise ValueError(f"parallelize: tp={tp} does not divide the model's {n_head} attention heads; "
                         f"choose tp among {[d for d in range(1, n_head + 1) if n_head % d == 0]} "
                         f"or a model with a multiple of {tp} heads")
    if batch_size is not None and batch_size % (dp * n_microbatches):
        raise ValueError(f"parallelize: the global batch of {batch_size} does not split into dp={dp} "
                         f"replicas x {n_microbatches} micro-batches; use a batch divisible by "
                         f"{dp * n_microbatches}")
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"parallelize: zero must be 0, 1, 2 or 3, got {zero!r}")
    if zero and (tp > 1 or pp > 1):
        raise NotImplementedError(
            "parallelize: zero with tp or pp is not wired (ZeRO shards over the data-parallel "
            "ranks of plain DDP: shardflow/distributed/zero.py, fsdp/); use zero with dp only")
    if zero > 1:
        raise NotImplementedError(
            f"parallelize: zero={zero} through parallelize is not wired; use "
            "shardflow.distributed.fsdp.fully_shard directly (reshard_after_forward=False for "
            "ZeRO-2, True for ZeRO-3)")


def _mb(nbytes: float) -> str:
    if nbytes < 1e5:  # small test models: "0.00 MB" would hide the size
        return f"{nbytes / 1e3:.1f} kB"
    return f"{nbytes / 1e6:.2f} MB"


_SCHEDULES = {"1f1b": "Schedule1F1B", "gpipe": "ScheduleGPipe"}


def comm_plan_text(model, dp, tp, pp, zero, n_microbatches, batch_size=None, schedule="1f1b") -> str:
    """The per-step communication of a config, from the parameter sizes and ``model.config``."""
    n_params = sum(int(np.prod(p.shape)) for p in {id(p): p for p in model.parameters()}.values())
    cfg = getattr(model, "config", None)
    lines = [f"parallel plan: dp={dp} x tp={tp} x pp={pp}" + (f", zero={zero}" if zero else "")
             + f" on {dp * tp * pp} rank(s); {n_params:,} parameters"]
    grad_bytes = 4 * n_params / (tp * pp)
    if pp > 1:
        act = ""
        if cfg is not None and batch_size:
            act = (f", {_mb(4 * batch_size / dp / n_microbatches * cfg.block_size * cfg.n_embd)} per "
                   "micro-batch each way" + (f" in each of the {dp * tp} pipelines" if tp > 1 else ""))
        lines.append(f"  pp: {pp} stages of {cfg.n_layer // pp if cfg else '?'} layers; per step {n_microbatches} "
                     f"micro-batches x {pp - 1} boundaries: send/recv of activations forward and "
                     f"gradients backward{act}; bubble (p-1)/(m+p-1) = "
                     f"{(pp - 1) / (n_microbatches + pp - 1):.3f}; {_SCHEDULES[schedule][8:]} schedule")
        lines.append("  pp: tied parameters (embedding / LM head): one all-reduce between the first "
                     "and last stage per step" + (f", per TP index (matching shards, {tp} pairs)"
                                                  if tp > 1 else ""))
    if tp > 1 and pp == 1:
        per = ""
        if cfg is not None and batch_size:
            per = f" of {_mb(4 * batch_size / dp * cfg.block_size * cfg.n_embd)}"
        lines.append(f"  tp: Megatron layout over {tp} ranks: 2 all-reduces{per} per layer forward and 2 "
                     f"backward ({2 * cfg.n_layer if cfg else '?'} + {2 * cfg.n_layer if cfg else '?'} per step)")
    elif tp > 1:
        per, layers = "", "?"
        if cfg is not None:
            layers = cfg.n_layer // pp
            if batch_size:
                per = f" of {_mb(4 * batch_size / dp / n_microbatches * cfg.block_size * cfg.n_embd)}"
        lines.append(f"  tp: Megatron layout over the {tp} ranks of each stage (sub-mesh mesh['tp']): per "
                     f"micro-batch 2 all-reduces{per} per layer forward and 2 backward "
                     f"({layers} layers per stage); each stage's output is all-reduced whole before "
                     f"it is sent, to the same TP index of the next stage ({dp * tp} pipelines of {pp} "
                     "stages)")
    if dp > 1:
        what = "all-reduce (average) of" if not zero else "all-reduce of"
        lines.append(f"  dp: {what} {_mb(grad_bytes)} of gradients per rank per step over {dp} replicas"
                     + (" (per stage and TP index)" if pp > 1 and tp > 1 else ""))
        if zero == 1:
            lines.append(f"  zero-1: optimizer state Split(0) over {dp} ranks; all-gather of "
                         f"{_mb(grad_bytes)} of updated parameters after each step")
    if dp * tp * pp == 1:
        lines.append("  one process: no communication")
    return "\n".join(lines)


@dataclass
class Parallelized:
    """The laid-out model and its training step (see ``parallelize``)."""

    model: object
    optimizer: object
    dp: int
    tp: int
    pp: int
    zero: int
    loss_fn: object
    n_microbatches: int
    plan_text: str
    _state: dict = field(default_factory=dict)
    check: object = None  # layout="auto": the planner's StepCheck (predicted vs measured)

    def step(self, x, y) -> float:
        """Forward, backward and optimizer step on the global batch ``(x, y)`` (the same on
        every rank); returns the global mean loss on every rank."""
        if self.check is None:
            return self._step(x, y)
        if self.check.wants_memory():  # one step measures memory, untimed
            from .planner.auto import state_bytes

            return self.check.measure_memory(lambda: self._step(x, y), state_bytes(self.model, self.optimizer))
        t0 = time.perf_counter()
        loss = self._step(x, y)
        self.check.observe(time.perf_counter() - t0)
        return loss

    def _step(self, x, y) -> float:
        world = _comm.get_world()
        if self.pp > 1:
            return self._pipeline_step(world, x, y)
        self.optimizer.zero_grad(set_to_none=True)
        runner = self._state["runner"]
        loss = runner(x, y)
        loss.backward()
        self.optimizer.step()
        if self.zero:  # a local loss on this replica's rows: the global mean over replicas
            v = np.array([loss.item() / self.dp])
            world.all_reduce(v)
            return float(v[0])
        return float(loss.item())

    def full_state_dict(self) -> dict:
        """``model.state_dict()`` with every tensor whole, on every rank (for checkpoints: a
        plain one-process model loads it). A collective: every rank must call it.

        Communication: within a stage, one all-gather per split tensor over ``mesh["tp"]``
        (``full_tensor``); with ``pp > 1``, one broadcast per tensor over the pipeline group
        from the first stage that holds it (every rank built the same split, so every rank
        knows the owners and the shapes)."""
        from .full_state import full_state_dict

        if self.pp == 1:
            return {k: Tensor(_copy(v.array)) for k, v in full_state_dict(self.model).items()}
        st = self._state
        owner: dict = {}
        for s, mod in enumerate(st["pipe"].stages):
            for t in [*mod.parameters(), *mod.buffers()]:
                owner.setdefault(id(t), s)
        me, group = st["stage"].stage_index, st["stage"].group
        out = {}
        for k, t in self.model.state_dict(keep_vars=True).items():
            if not isinstance(t, Tensor):
                out[k] = t
                continue
            src = owner.get(id(t))
            if src == me:
                arr = _box_whole(t)
            else:
                shape = t._spec.shape if t._spec is not None else t.array.shape
                dt = t.array.dtype  # received on the tensor's device (NCCL for a GPU model)
                arr = new_array(device_of(t.array), lambda xp, s=shape, d=dt: xp.empty(s, dtype=d))
            if src is not None:
                group.broadcast(arr, src=src)
            out[k] = Tensor(arr)
        return out

    def _pipeline_step(self, world, x, y) -> float:
        st = self._state
        stage, sched = st["stage"], st["schedule"]
        rows = x.shape[0] // self.dp
        rep = st["replica"]
        sl = slice(rep * rows, (rep + 1) * rows)
        xa = x.array if isinstance(x, Tensor) else np.asarray(x)
        ya = y.array if isinstance(y, Tensor) else np.asarray(y)
        self.optimizer.zero_grad(set_to_none=True)
        losses = []
        args = (_rows(xa, sl),) if stage.is_first else ()
        kw = dict(target=_rows(ya, sl), losses=losses) if stage.is_last else {}
        sched.step(*args, **kw)
        self.optimizer.step()
        # The last stage's TP ranks all hold the same losses: TP index 0 speaks for them.
        speak = losses and st.get("tp_index", 0) == 0
        mine = np.array([np.mean([lo.item() for lo in losses]) / self.dp if speak else 0.0])
        world.all_reduce(mine)
        return float(mine[0])


def parallelize(model, optimizer, dp: int = 1, tp: int = 1, pp: int = 1, zero: int = 0, *,
                loss_fn=None, split=None, n_microbatches: int | None = None, batch_size=None,
                plan=None, print_plan: bool = True, schedule: str = "1f1b", layout: str | None = None,
                profile=None, mem_per_rank=None) -> Parallelized:
    """Lay ``model`` out for ``dp x tp x pp`` ranks (with ZeRO stage ``zero``), after validation.

    ``loss_fn(output, target)``; ``split(model, num_stages) -> Pipe`` cuts the model for
    ``pp > 1`` (for GPT: ``shardflow.models.gpt_pipeline.gpt_pipe``, whose stage outputs are
    logits: pass ``loss_fn=gpt_loss``); ``n_microbatches`` defaults to ``2 * pp``; ``schedule``
    is ``"1f1b"`` (default: at most ``pp`` micro-batches in flight) or ``"gpipe"``; ``plan`` is
    the tensor-parallel plan (default ``model.tensor_parallel_plan()``). Every rank must call
    it with the same arguments (it builds communicator groups). ``layout="auto"``: the
    planner chooses dp/tp/pp/zero/n_microbatches/schedule (module docstring); ``profile`` is
    its machine profile (a path, a built-in name, or None: ``planner-profile.json`` here),
    ``mem_per_rank`` a memory limit in bytes.
    """
    world = _comm.get_world()
    check = None
    if layout == "auto":
        dp, tp, pp, zero, n_microbatches, schedule, check = _choose_layout(
            model, world, dp, tp, pp, zero, n_microbatches, batch_size, profile, mem_per_rank, split)
    elif layout is not None:
        raise ValueError(f"parallelize: layout must be None (give dp/tp/pp/zero) or 'auto', got {layout!r}")
    if plan is None and tp > 1 and hasattr(model, "tensor_parallel_plan"):
        plan = model.tensor_parallel_plan()
    m = n_microbatches or (2 * pp if pp > 1 else 1)
    _check_layout_arguments(model, world, dp, tp, pp, zero, m, batch_size, plan, schedule, loss_fn, split)
    text = comm_plan_text(model, dp, tp, pp, zero, m, batch_size, schedule)
    if print_plan and world.rank == 0:
        print(text, flush=True)
    par = Parallelized(model, optimizer, dp, tp, pp, zero, loss_fn, m, text, check=check)
    if pp > 1:
        _lay_out_pipeline(par, model, split, plan, dp, tp, pp, m, schedule, loss_fn)
    elif zero == 1 and dp > 1:
        _lay_out_zero1(par, model, optimizer, world, dp, loss_fn)
    elif dp * tp == 1:
        par._state["runner"] = lambda x, y: loss_fn(model(x), y)
    else:
        _lay_out_global(par, model, dp, tp, plan, loss_fn)
    return par


def _choose_layout(model, world, dp, tp, pp, zero, n_microbatches, batch_size, profile, mem_per_rank,
                   split):
    """``layout="auto"``: the planner's dp/tp/pp/zero/n_microbatches/schedule and its check."""
    if (dp, tp, pp, zero) != (1, 1, 1, 0) or n_microbatches is not None:
        raise ValueError(f"parallelize: layout='auto' chooses dp/tp/pp/zero/n_microbatches itself, but "
                         f"dp={dp}, tp={tp}, pp={pp}, zero={zero}, n_microbatches={n_microbatches} were "
                         "given; drop them, or drop layout='auto'")
    from .planner.auto import parallelize_choice

    say = print if world.rank == 0 else None
    chosen, check = parallelize_choice(model, world, batch_size, profile, mem_per_rank,
                                       can_pipeline=split is not None, say=say)
    return (chosen["dp"], chosen["tp"], chosen["pp"], chosen["zero"], chosen["n_microbatches"],
            chosen["schedule"], check)


def _check_layout_arguments(model, world, dp, tp, pp, zero, m, batch_size, plan, schedule, loss_fn, split):
    """Every argument error of :func:`parallelize`, raised before any communicator is built."""
    if tp > 1 and not plan:
        raise ValueError(f"parallelize: tp={tp} needs a tensor-parallel plan ({{module path pattern: "
                         "ColwiseParallel(use_local_output=False) / RowwiseParallel(use_local_output=False)}: "
                         "the model computes on global tensors); pass plan=... or give the model a "
                         "tensor_parallel_plan() method (GPT has one)")
    if schedule not in _SCHEDULES:
        raise ValueError(f"parallelize: schedule must be one of {sorted(_SCHEDULES)}, got {schedule!r} "
                         "(interleaved 1F1B needs several stages per rank: build it with "
                         "ScheduleInterleaved1F1B directly, docs/PIPELINE.md)")
    cfg = getattr(model, "config", None)
    validate_parallel_config(world.size, dp, tp, pp, zero, getattr(cfg, "n_layer", None),
                             getattr(cfg, "n_head", None), batch_size, m)
    if loss_fn is None:
        raise ValueError("parallelize: pass loss_fn=lambda output, target: ... (the loss of one batch)")
    if pp > 1 and split is None:
        raise ValueError("parallelize: pp > 1 needs split=(model, num_stages) -> Pipe, e.g. "
                         "shardflow.models.gpt_pipeline.gpt_pipe, or a lambda over split_module")


def _lay_out_pipeline(par, model, split, plan, dp, tp, pp, m, schedule, loss_fn):
    """``pp > 1``: this rank's stage of ``split(model, pp)`` (tensor-parallel inside it when
    ``tp > 1``) and its schedule; every communicator is built before the stages diverge."""
    from . import pipelining
    from .pipelining import PipelineStage, lay_out_stage, pipeline_mesh

    kind = next((q.device.type for q in model.parameters()), "cpu")  # the mesh's device type
    pm = pipeline_mesh(pp, dp, tp, device_type=kind)  # every communicator, before stages diverge
    st = pm.stage
    pipe = split(model, pp)
    tp_mesh = None
    if tp > 1:
        tp_mesh = pm.tp_mesh
        lay_out_stage(model, pipe.stages[st], tp_mesh, plan)
    stage = PipelineStage(pipe.stages[st], st, pp, group=pm.pp_group, tied=pipe.tied_for(st),
                          dp_group=pm.dp_group, tp_mesh=tp_mesh)
    par._state.update(stage=stage, pipe=pipe, dp_group=pm.dp_group, replica=pm.replica,
                      tp_index=pm.tp_index, mesh=pm.mesh,
                      schedule=getattr(pipelining, _SCHEDULES[schedule])(stage, m, loss_fn=loss_fn))


def _lay_out_zero1(par, model, optimizer, world, dp, loss_fn):
    """ZeRO-1 over ``dp`` ranks: DDP on this rank's rows of the batch, the optimizer state sharded."""
    from ..nn.parallel import DistributedDataParallel
    from ..optim.optimizer import constructor_kwargs
    from .zero import ZeroRedundancyOptimizer

    ddp = DistributedDataParallel(model)
    par.optimizer = ZeroRedundancyOptimizer(list(model.parameters()), type(optimizer),
                                            **constructor_kwargs(optimizer))

    def run_zero(x, y):
        rows = x.shape[0] // dp
        sl = slice(world.rank * rows, (world.rank + 1) * rows)
        return loss_fn(ddp(_rows(x, sl)), _rows(y, sl))

    par._state["runner"] = run_zero


def _lay_out_global(par, model, dp, tp, plan, loss_fn):
    """``dp x tp`` on global tensors: the batch enters broadcast, then takes the data sbp."""
    from .tensor_parallel import data_tensor_parallel

    mesh, data_sbp = data_tensor_parallel(model, dp, tp, plan)
    from . import sbp as _sbp

    whole = [_sbp.broadcast] * mesh.ndim

    def run_global(x, y):
        xg = x.to_global(mesh, whole).to_global(sbp=data_sbp)
        yg = y.to_global(mesh, whole).to_global(sbp=data_sbp)
        return loss_fn(model(xg), yg)

    par._state["runner"] = run_global


def _copy(a, order="K"):
    """A fresh copy of ``a`` on its own device (NumPy's ``np.array(a, copy=True)`` on the host)."""
    return get_array_module(a).array(a, copy=True, order=order)


def _box_whole(t):
    """The whole value of a (possibly global) tensor as a fresh C-contiguous array (on the
    tensor's device)."""
    if t._spec is None:
        return _copy(t.array, order="C")
    from .global_tensor import full_tensor

    return _copy(full_tensor(t.detach()).array, order="C")


def _rows(t, sl):
    arr = t.array if isinstance(t, Tensor) else t if hasattr(t, "shape") else np.asarray(t)
    return Tensor(get_array_module(arr).ascontiguousarray(arr[sl]))  # on the batch's device
