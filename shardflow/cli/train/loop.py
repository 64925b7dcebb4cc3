"""The training loop of ``shardflow train``: steps ``start .. --max-steps``.

Each step (:meth:`TrainingLoop.run`):

1. every ``--eval-interval`` steps, evaluate first (a metrics row; the time is not counted
   in the throughput);
2. set the learning rate of the step (:func:`lr_at`, a pure function of the step);
3. forward + backward (eager, ``--compile``'s compiled step, or the pipeline schedule),
   the total gradient norm, clipping, then one small all-reduce by which the ranks agree
   on the loss to log (the global batch's), on a non-finite step and on a stop signal
   (:func:`_agree`); the update unless the non-finite guard skips it (``nonfinite.py``);
4. log every ``--log-interval`` steps (a metrics row, throughput);
5. save a checkpoint when the policy says so (``Checkpointer.due``: every
   ``--ckpt-interval`` steps, or ``--ckpt-seconds`` on rank 0's clock, agreed in step 3's
   all-reduce); the file is written in the background (``checkpoint_writer.py``);
6. on a stop signal (every rank sees the same one after step 3): save, wait for rank 0's
   file, raise :class:`TrainingStopped`.

:meth:`TrainingLoop.finish` then reports the skipped updates and evaluates the final model.
"""

from __future__ import annotations

import math
import signal
import sys
import time

import numpy as np

import shardflow as sf
import shardflow.nn as nn
from shardflow import _config, comm

from ..graceful_stop import GracefulStop
from ..nonfinite import NonFiniteError, NonFiniteGuard
from .checkpoints import Checkpointer, ResumePoint, parameters_finite
from .config import TrainConfig
from .evaluation import Evaluator
from .layout import Layout
from .metrics import MetricsLog

AGREED_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM)  # the last received wins


class TrainingStopped(Exception):
    """A stop signal ended training after a checkpoint was written (exit ``128 + signum``)."""

    def __init__(self, signum: int, step: int, path: str, received_here: bool = False):
        super().__init__(f"stopped by signal {signum} at step {step}; checkpoint {path}")
        self.signum, self.step, self.path = signum, step, path
        self.received_here = received_here  # this rank got the signal (not only the agreement)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to ``lr``, then cosine decay to ``min_lr`` at ``lr_decay_steps``."""
    decay = cfg.lr_decay_steps or cfg.max_steps
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / (cfg.warmup_steps + 1)
    if step >= decay:
        return cfg.min_lr
    ratio = (step - cfg.warmup_steps) / max(1, decay - cfg.warmup_steps)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (cfg.lr - cfg.min_lr)


class TrainingLoop:
    """The loop's state between steps (step, learning rate, last losses, best validation
    loss, timing, progress bar) and its phases as methods; see the module docstring."""

    def __init__(self, cfg: TrainConfig, layout: Layout, task, model, optimizer, pipe, loader,
                 evaluate: Evaluator, metrics: MetricsLog, checkpoints: Checkpointer,
                 start: ResumePoint, log):
        self.cfg, self.layout, self.task, self.optimizer, self.pipe = cfg, layout, task, optimizer, pipe
        self.model, self.raw_model = model, task.model  # what the step calls; the trained model
        self.loader, self.evaluate, self.metrics, self.checkpoints = loader, evaluate, metrics, checkpoints
        self.log = log
        self.guard = NonFiniteGuard(cfg.on_nonfinite, cfg.max_consecutive_skips)
        self.start_step = self.step = start.step
        self.best_val = start.best_val
        self.skipped_before = start.nonfinite_skipped
        self.lr = None
        self.loss_val, self.val_loss, self.val_acc, self.tps = float("nan"), None, None, 0.0
        self.bar = self.compiled = None
        self._saved_at = None

    @property
    def nonfinite_skipped(self) -> int:
        """Updates skipped for a non-finite loss or gradient, by this run and the ones before."""
        return self.skipped_before + len(self.guard.skipped)

    # ------------------------------------------------------------------ the loop
    def run(self) -> None:
        """Train up to ``--max-steps``; raises TrainingStopped (a stop signal, after saving)
        or NonFiniteError (``nonfinite.py``)."""
        cfg = self.cfg
        self.bar = self._progress_bar()
        self.model.train()
        if cfg.compile:
            self.compiled = sf.compile_step(self.model, None, lambda m, *b: self.task.loss(m, b)[0])
        self._t0, self._last_t, self._last_step = time.time(), time.time(), self.start_step
        it = iter(self.loader)
        say = ((lambda m: print(f"shardflow train: {m}", file=sys.stderr, flush=True))
               if self.layout.master else None)
        with GracefulStop(say=say) as stop:
            while self.step < cfg.max_steps:
                if self.step % cfg.eval_interval == 0:
                    self._periodic_evaluation()
                self.lr = lr_at(self.step, cfg)
                for g in self.optimizer.param_groups:
                    g["lr"] = self.lr
                signum, by_time = self._train_step(next(it), stop.signum,
                                                   self.checkpoints.time_due())
                self.step += 1
                self._log_progress()
                if self.checkpoints.due(self.step, by_time):
                    self._save()
                    self._saved_at = self.step
                if signum:
                    self._stop(signum, received_here=stop.signum is not None)
        self.checkpoints.flush()
        if self.bar is not None:
            self.bar.close()

    def _train_step(self, batch, signum: int | None, ckpt_due: bool) -> tuple[int, bool]:
        """One step on ``batch``; returns the stop signal the ranks agreed on (0: none) and
        whether they agreed that a time-based checkpoint is due (``ckpt_due``: rank 0's)."""
        if self.pipe is not None:  # agree, clip, decide and update inside (pipeline.py)
            self.loss_val, _, _, signum, ckpt_due = self.pipe.step(batch, signum, self._decide,
                                                                   ckpt_due)
        else:
            loss = self._forward_backward(batch)
            loss_val = loss.item()
            # the total norm before clipping; max_norm=inf measures without clipping
            grad_norm = float(nn.utils.clip_grad_norm_(self.raw_model.parameters(),
                                                       self.cfg.grad_clip or math.inf).item())
            # one small all-reduce per step: the ranks agree on skipping and on stopping, and
            # the loss logged is the mean over ranks (= the loss of the global batch)
            bad = not math.isfinite(loss_val) or not math.isfinite(grad_norm)
            self.loss_val, bad, signum, ckpt_due = _agree(loss_val, bad, signum, ckpt_due,
                                                         self.layout.world)
            if not self._decide(bad, self.loss_val, grad_norm):
                self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return signum, ckpt_due

    def _forward_backward(self, batch):
        """The loss of ``batch``, with the gradients in ``.grad``."""
        first = self.step == self.start_step
        mesh = self.layout.global_tensors
        if mesh is not None and first and _config.debug_plan():
            from shardflow.distributed import comm_plan

            with comm_plan() as plan:
                loss, _ = self.task.loss(self.model, batch)
                loss.backward()
            self.log(f"communication plan of one step (dp {mesh[0]} x tp {mesh[1]}):\n{plan}")
        elif self.compiled is not None:  # forward + backward; .grad left for the caller
            loss = self.compiled(*batch)
            if first:
                self.log("compile: " + self.compiled.explain().split("\n")[0])
        else:
            loss, _ = self.task.loss(self.model, batch)
            loss.backward()
        return loss

    def _decide(self, bad, loss_val, grad_norm) -> bool:
        """True: skip this step's update (all ranks decide alike); raises NonFiniteError to stop."""
        cfg = self.cfg
        try:
            skip = self.guard.skip_update(self.step + 1, bool(bad), loss_val, grad_norm, self.lr,
                                          lambda: parameters_finite(self.raw_model))
        except NonFiniteError as e:
            self.checkpoints.flush()  # the file in flight decides which one is the last finite
            last = self.checkpoints.last_finite or "none yet"
            also = ("; or pass --on-nonfinite skip to skip such steps" if cfg.on_nonfinite == "raise"
                    else "")
            raise NonFiniteError(
                f"{e}. Last checkpoint with finite parameters: {last}. Fix: lower --lr "
                f"(now {cfg.lr:g}) or --grad-clip (now {cfg.grad_clip:g}), then --resume{also}",
                e.step) from None
        if skip:
            self._write(f"step {self.step + 1}: non-finite loss or gradient (loss {loss_val:.4g}, "
                        f"gradient norm {grad_norm:.4g}); update skipped ({self.guard.streak} in a "
                        f"row, limit {cfg.max_consecutive_skips})")
        return skip

    # ------------------------------------------------------------------ around the step
    def _periodic_evaluation(self) -> None:
        te = time.time()
        self.val_loss, self.val_acc = self.evaluate()
        self._last_t += time.time() - te  # throughput counts training time only
        self.best_val = min(self.best_val, self.val_loss)
        self.metrics.record_eval(self.step, self.val_loss, self.val_acc, time.time() - self._t0)
        self._write(f"step {self.step}: val loss {self.val_loss:.4f}"
                    + ("" if self.val_acc is None else f", acc {self.val_acc:.3f}"))

    def _log_progress(self) -> None:
        cfg, step = self.cfg, self.step
        if step % cfg.log_interval == 0 or step == cfg.max_steps:
            now = time.time()
            self.tps = (step - self._last_step) * self.task.tokens_per_batch(cfg) / max(now - self._last_t, 1e-9)
            self._last_t, self._last_step = now, step
            self.metrics.record_train(step, self.loss_val, self.lr, self.tps, now - self._t0)
            if self.bar is None:
                self.log(f"step {step}/{cfg.max_steps} loss {self.loss_val:.4f} "
                         f"{self.tps:,.0f} {self.task.unit}/s lr {self.lr:.2e}")
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{self.loss_val:.4f}", **{f"{self.task.unit}/s": f"{self.tps:,.0f}"})
            self.bar.update(1)

    def _save(self) -> None:
        self.checkpoints.save(self.step, self.best_val, self.nonfinite_skipped)

    def _stop(self, signum: int, received_here: bool) -> None:
        """After a stop signal: the step's checkpoint (if the policy did not just write it),
        on every rank only once rank 0's file exists; then TrainingStopped."""
        if self._saved_at != self.step:
            self._save()
        self.checkpoints.flush()  # the file exists before any rank exits
        if self.layout.world > 1:
            comm.get_world().barrier()  # no rank exits (and ends the job) before the file exists
        if self.bar is not None:
            self.bar.close()
        raise TrainingStopped(int(signum), self.step, self.checkpoints.path(self.step),
                              received_here)

    def _progress_bar(self):
        if not (self.layout.master and self.cfg.progress):
            return None
        from tqdm.auto import tqdm

        return tqdm(total=self.cfg.max_steps, initial=self.start_step, desc=f"train {self.cfg.task}",
                    unit="step", dynamic_ncols=True, file=sys.stderr)

    def _write(self, msg: str) -> None:
        """A line that keeps the progress bar intact."""
        (self.bar.write(msg) if self.bar else self.log(msg))

    # ------------------------------------------------------------------ after the loop
    def finish(self) -> None:
        """Report the skipped updates; evaluate the final model (unless the loop ended on an
        evaluation of it), log the final validation loss."""
        skipped, this_run = self.nonfinite_skipped, self.guard.skipped
        if skipped:
            shown = ", ".join(map(str, this_run[:20])) + (" ..." if len(this_run) > 20 else "")
            self.log(f"skipped {skipped} update(s) with a non-finite loss or gradient"
                     + (f" (this run: steps {shown})" if this_run else ""))
        if self.step > self.start_step or self.val_loss is None:
            self.val_loss, self.val_acc = self.evaluate()
            self.best_val = min(self.best_val, self.val_loss)
            self.metrics.record_eval(self.step, self.val_loss, self.val_acc, time.time() - self._t0)
        self.log(f"final val loss {self.val_loss:.4f} (baseline {self.task.baseline:.4f})"
                 + ("" if self.val_acc is None else f", accuracy {self.val_acc:.4f}"))
        line = self.checkpoints.writer.summary()
        if line:
            self.log(line)


def _agree(loss: float, bad: bool, signum: int | None, ckpt_due: bool,
           world: int) -> tuple[float, bool, int, bool]:
    """``(mean loss over ranks, any rank bad, stop signal or 0, checkpoint due)`` with one
    SUM all-reduce of ``[loss, bad, checkpoint due, one flag per stop signal]`` (the inputs
    themselves in a world of one). Ranks' batches are equal slices of the global batch, so
    the mean of their mean losses is the global batch's loss."""
    if world == 1:
        return loss, bad, int(signum or 0), bool(ckpt_due)
    a = np.array([loss, float(bad), float(ckpt_due),
                  *(float(signum == s) for s in AGREED_SIGNALS)], np.float64)
    comm.get_world().all_reduce(a, comm.ReduceOp.SUM)
    got = [int(s) for s, flag in zip(AGREED_SIGNALS, a[3:]) if flag > 0]
    return float(a[0] / world), bool(a[1] > 0), (got[-1] if got else 0), bool(a[2] > 0)
