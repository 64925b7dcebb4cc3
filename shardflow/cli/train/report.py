"""The report phase of ``shardflow train``, after the loop: the whole model on rank 0 (a
collective under layouts that shard it), ``loss.png``, and the task's demo (a GPT sample,
or image predictions), skipped when the parameters are not finite."""

from __future__ import annotations

import os

from .checkpoints import parameters_finite
from .config import TrainConfig
from .layout import Layout
from .metrics import MetricsLog, plot


def report(cfg: TrainConfig, layout: Layout, task, pipe, model_class, metrics: MetricsLog, log) -> None:
    """Rank 0 plots the metrics and runs the demo on the whole model (all ranks call this)."""
    whole = _whole_model(cfg, layout, task.model, pipe, model_class)
    if not layout.master:
        return
    task.model = whole
    png = plot(metrics.rows, os.path.join(cfg.out, "loss.png"), task.baseline, cfg.task)
    log(f"metrics: {metrics.path}" + (f", plot: {png}" if png else ""))
    if parameters_finite(task.model):
        task.finish(cfg, log)
    else:
        log("no demo: the parameters are not finite")


def _whole_model(cfg: TrainConfig, layout: Layout, model, pipe, model_class):
    """The trained model with whole parameters on rank 0 (``model`` itself unless the layout
    shards it; then a copy of ``model_class``), None elsewhere."""
    if pipe is not None:  # the whole model on rank 0
        return pipe.sync()
    if layout.shards_parameters:  # sample with a whole copy of the model on rank 0
        from shardflow.distributed.full_state import full_state_dict

        whole = full_state_dict(model)
        if not layout.master:
            return None
        copy = model_class(model.config).to(cfg.device)
        copy.load_state_dict(whole)
        return copy
    return model
