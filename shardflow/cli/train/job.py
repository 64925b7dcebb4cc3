"""``train(cfg)``: the phases of a ``shardflow train`` job, in order (package docstring)."""

from __future__ import annotations

from ..plan_train import auto_layout, report_after
from .batches import train_loader, validation_batches
from .checkpoints import Checkpointer, prepare_out_dir, resume
from .config import TrainConfig
from .evaluation import Evaluator
from .layout import apply_layout, describe_layout, plan_layout, shard_optimizer
from .loop import AGREED_SIGNALS, TrainingLoop
from .metrics import MetricsLog
from .report import report
from .tasks import make_task


def train(cfg: TrainConfig) -> dict:
    """Run the job described by ``cfg``; returns final metrics (also used by tests).

    Raises ConfigError (before anything is written), TrainingStopped (a stop signal; a
    checkpoint was written) or NonFiniteError (non-finite loss/gradient; see nonfinite.py)."""
    cfg, planned = auto_layout(cfg)  # --layout auto: the planner sets the layout flags
    layout = plan_layout(cfg)  # joins the world; refuses a layout that cannot run

    def log(msg):
        if layout.master:
            print(msg, flush=True)

    task = make_task(cfg)
    raw_model = task.model
    model_class = type(raw_model)  # fully_shard (--zero 2/3) changes the instance's class
    optimizer = shard_optimizer(cfg, task.optimizer(cfg))
    prepare_out_dir(cfg, layout.master, log)
    start = resume(cfg, task, optimizer, layout.world, log)
    model, pipe = apply_layout(cfg, layout, raw_model, optimizer, AGREED_SIGNALS)
    flops = raw_model.flops_per_sample(training=True)
    log(f"task {cfg.task}: {model_class.__name__} with {raw_model.num_parameters():,} parameters, "
        f"{flops / 1e6:.1f} MFLOP per training sample; world size {layout.world}"
        + describe_layout(cfg, layout, pipe)
        + f"; baseline loss (unigram / uniform) {task.baseline:.4f}")

    loader = train_loader(cfg, task, start.step, *layout.batch_slice)
    evaluate = Evaluator(task, model, layout, pipe, validation_batches(cfg, task))
    metrics = MetricsLog(cfg, start.step, layout.master)
    checkpoints = Checkpointer(cfg, layout, task, optimizer, pipe, log, start.last_finite)
    loop = TrainingLoop(cfg, layout, task, model, optimizer, pipe, loader, evaluate, metrics,
                        checkpoints, start, log)
    loop.run()
    report_after(planned, loop, cfg)  # --layout auto: predicted vs measured
    loop.finish()
    report(cfg, layout, task, pipe, model_class, metrics, log)
    return {"val_loss": loop.val_loss, "val_acc": loop.val_acc, "baseline": task.baseline,
            "step": loop.step, "model": raw_model, "skipped_steps": loop.nonfinite_skipped}
