"""``shardflow train gpt --pp N``: the training loop's step through ``shardflow.parallelize``.

``check_pipeline_config`` runs ``parallelize``'s own validation (``validate_parallel_config``:
dp x tp x pp = world size, pp divides the layers, tp the heads, dp x micro-batches the
batch, supported combinations) and turns its refusal into a ``ConfigError`` naming the
flags, before anything is built: once with the world size implied by the flags (from
``config.validate``, before launch questions arise), once with the real one
(``layout.plan_layout``, at the start of ``train``).

``PipelineTraining`` builds the layout with ``parallelize(model, gate, dp=, tp=, pp=,
split=gpt_pipe, loss_fn=gpt_loss)``, which prints the communication plan on rank 0, and
runs each step through ``Parallelized.step``. What the loop must do between backward and
the update happens in :class:`_UpdateGate`, the optimizer ``parallelize`` is given, whose
``step()`` is called once the schedule's last backward (and the tied / data-parallel
gradient reductions) are done:

1. one SUM all-reduce over the world of ``[loss share, squared gradient norm share, one
   flag per stop signal]``: the last stage's ranks (TP index 0) give their replica's mean
   micro-batch loss / dp, and each parameter's squared gradient norm is counted once: on
   replica 0 of the first stage holding it (``pipelining/sync.py``), there on every TP rank
   for a split parameter (each its shard) and on TP index 0 for the others. So every rank
   gets the global batch's loss and the global gradient norm across stages;
2. gradient clipping with that norm (``clip_grad_norm_``'s rule: scale by
   ``max_norm / (norm + 1e-6)`` when below 1), applied by every rank to its own stage;
3. the non-finite decision (``decide``: the loop's ``NonFiniteGuard``; it may raise, on
   every rank alike since they decide on the same reduced numbers), then the real
   optimizer's ``step()`` unless the update is skipped.

Evaluation, checkpoints and the final sample need the whole model: ``sync()`` brings every
parameter from its owner to every rank and returns the whole model on rank 0 (with ``--tp``
a plain copy, since rank 0's own stage holds shards), ``optimizer_state()`` the whole
optimizer state (``shardflow/distributed/pipelining/sync.py`` has their communication plans).
"""

from __future__ import annotations

import math

import numpy as np

from shardflow import comm
from shardflow.backend.xp import get_array_module

__all__ = ["check_pipeline_config", "PipelineTraining"]


def _microbatches(cfg) -> int:
    return cfg.microbatches or 2 * cfg.pp


def check_pipeline_config(cfg, world: int | None, error) -> int:
    """The data-parallel degree of a ``--pp`` run; raises ``error`` (ConfigError) for a config
    ``parallelize`` refuses. ``world`` None: check what does not depend on the world size."""
    from shardflow.distributed.parallel_config import validate_parallel_config

    per = cfg.tp * cfg.pp
    dp = cfg.dp or (max(1, world // per) if world is not None else 1)
    w = world if world is not None else dp * per
    try:
        validate_parallel_config(w, dp, cfg.tp, cfg.pp, cfg.zero, cfg.n_layer, cfg.n_head,
                                 cfg.batch_size, _microbatches(cfg))
    except (ValueError, NotImplementedError) as e:
        flags = (f"--dp {cfg.dp or dp} --tp {cfg.tp} --pp {cfg.pp} --microbatches "
                 f"{_microbatches(cfg)} --batch-size {cfg.batch_size} --n-layer {cfg.n_layer}")
        raise error(f"{flags}" + (f" on {world} rank(s)" if world is not None else "")
                    + f": {str(e).removeprefix('parallelize: ')}") from None
    return dp


def _is_split(p) -> bool:
    spec = getattr(p, "_spec", None)
    return spec is not None and any(s.is_split() for s in spec.sbp)


class _UpdateGate:
    """The optimizer handed to ``parallelize``: its ``step()`` agrees, clips and decides
    before the real update (module docstring). Anything else goes to the real optimizer."""

    def __init__(self, run, optimizer):
        self._run, self._optimizer = run, optimizer

    def __getattr__(self, name):  # param_groups, state, defaults, state_dict, ...
        return getattr(self._optimizer, name)

    def zero_grad(self, set_to_none: bool = True):
        self._optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None):
        self._run._agree_clip_decide()


class PipelineTraining:
    """The ``--pp`` layout of the training loop (module docstring)."""

    def __init__(self, cfg, model, optimizer, dp: int, signals):
        from shardflow.distributed.full_state import shard_optimizer_state
        from shardflow.distributed.parallel_config import parallelize
        from shardflow.distributed.pipelining.sync import parameter_owners
        from shardflow.models.gpt_pipeline import gpt_loss, gpt_pipe

        self.cfg, self.model, self.optimizer, self.dp = cfg, model, optimizer, dp
        self.device = next(iter(model.parameters())).device  # the run's device
        self.signals = tuple(signals)
        self.world = comm.get_world()
        self._losses: list = []  # this rank's micro-batch losses of the current step

        def loss_fn(output, target):
            loss = gpt_loss(output, target)
            self._losses.append(loss)
            return loss

        # the same cut on every rank (it only wraps the model's modules; no communication);
        # owner of a parameter: replica 0, TP index 0 of the first stage holding it
        tp = cfg.tp
        self.owners = parameter_owners(gpt_pipe(model, cfg.pp), lambda s: s * dp * tp)
        self.par = parallelize(model, _UpdateGate(self, optimizer), dp=dp, tp=tp, pp=cfg.pp,
                               loss_fn=loss_fn, split=gpt_pipe, n_microbatches=_microbatches(cfg),
                               batch_size=cfg.batch_size, schedule=cfg.schedule)
        shard_optimizer_state(optimizer)  # a resumed optimizer holds whole tensors (tp > 1)
        self.stage = self.par._state["stage"]
        self.tp_index = int(self.par._state.get("tp_index", 0))
        self._params = list({id(p): p for p in self.stage.submod.parameters()}.values())
        first_rank = self.world.rank - self.tp_index  # TP index 0 of this stage and replica
        # each parameter's squared gradient norm is counted once: on replica 0 of the first
        # stage holding it, on every TP rank for a split (sharded) one, else on TP index 0
        self._counted = [p for p in self._params if self.owners.get(id(p)) == first_rank
                         and (self.tp_index == 0 or _is_split(p))]
        self._whole_model, self._decide, self._signum, self.last = None, None, None, None
        self._ckpt_due = False

    def describe(self) -> str:
        return (f" (pipeline: dp {self.dp} x tp {self.cfg.tp} x pp {self.cfg.pp}, {_microbatches(self.cfg)} "
                f"micro-batches of {self.cfg.batch_size // self.dp // _microbatches(self.cfg)})")

    def step(self, batch, signum, decide, ckpt_due=False):
        """One training step on the global ``batch``; ``decide(bad, loss, grad_norm)`` is the
        loop's non-finite guard (True: skip the update). Returns ``(loss, grad_norm, bad,
        signum, ckpt_due)`` agreed by all ranks (``ckpt_due``: rank 0's time-based policy)."""
        self._decide, self._signum, self._ckpt_due = decide, signum, ckpt_due
        x, y = batch  # host tensors: the stages move their micro-batches to their device
        self.par.step(x, y)
        return self.last

    def _agree_clip_decide(self) -> None:
        losses, self._losses = self._losses, []
        sq = sum(float(get_array_module(g).dot(g.reshape(-1), g.reshape(-1)))  # on g's device
                 for g in (p.grad.array.astype(np.float64) for p in self._counted if p.grad is not None))
        # the last stage's TP ranks hold the same losses: TP index 0 speaks for them
        speak = losses and self.tp_index == 0
        loss = float(np.mean([lo.item() for lo in losses])) / self.dp if speak else 0.0
        v = np.array([loss, sq, float(self._ckpt_due),
                      *(float(self._signum == s) for s in self.signals)], np.float64)
        self.world.all_reduce(v, comm.ReduceOp.SUM)
        loss, norm = float(v[0]), math.sqrt(v[1]) if v[1] >= 0 else float("nan")
        got = [int(s) for s, flag in zip(self.signals, v[3:]) if flag > 0]
        bad = not (math.isfinite(loss) and math.isfinite(norm))
        self.last = (loss, norm, bad, got[-1] if got else 0, bool(v[2] > 0))
        coef = self.cfg.grad_clip / (norm + 1e-6) if self.cfg.grad_clip else math.inf
        if not bad and coef < 1.0:
            for p in self._params:
                if p.grad is not None:
                    g = p.grad.array
                    g *= get_array_module(g).asarray(coef, dtype=g.dtype)  # on g's device
        if not self._decide(bad, loss, norm):
            self.optimizer.step()

    def sync(self):
        """Every parameter's current value on every rank (a collective); returns the whole
        model on rank 0 (the trained model itself without TP, else a plain copy), else None."""
        from shardflow.distributed.pipelining.sync import sync_parameters

        whole = sync_parameters(self.model, self.owners, self.world)
        if self.world.rank != 0:
            return None
        if self.cfg.tp == 1:  # every parameter is plain and now current
            return self.model
        if self._whole_model is None:  # built once; its init must not move the RNG stream
            import shardflow as sf

            rng = sf.get_rng_state()
            self._whole_model = type(self.model)(self.model.config).to(self.device)
            sf.set_rng_state(rng)
        for n, p in self._whole_model.named_parameters():
            p.array[...] = whole[n]
            p._version_counter[0] += 1
        return self._whole_model

    def optimizer_state(self) -> dict:
        """The whole optimizer ``state_dict`` (a collective)."""
        from shardflow.distributed.pipelining.sync import gather_optimizer_state

        return gather_optimizer_state(self.optimizer, self.owners, self.world)
