"""The checkpoint and resume phases of ``shardflow train``.

Files: ``--out/ckpt_<step>.safetensors``, each holding the model, the optimizer, the RNG
state, the step, the best validation loss, the config, the world size, whether the
parameters are finite and the count of skipped non-finite updates (plus the task's extra
state, e.g. GPT's vocabulary). Tensors are whole in every layout (the sharded ones gather
them first), so a checkpoint resumes on any layout and number of ranks.

* :func:`prepare_out_dir`: create ``--out``, remove temp files that killed saves left.
* :func:`resume`: the :class:`ResumePoint` of the newest checkpoint that loads and has
  finite parameters (:func:`newest_resumable`; the model, optimizer and RNG state are
  loaded into the given objects), after checking that the model's shape flags match; says
  which newer files it skipped and why, and how this run differs from the saved one
  (:func:`resume_differences`). Checkpoints that exist but of which none can be resumed
  from stop the run (ConfigError) instead of silently starting from step 0.
* :class:`Checkpointer`: the periodic policy (:meth:`Checkpointer.due`) and the save
  (gather, write atomically on rank 0, prune with :func:`prune`, never deleting the newest
  checkpoint with finite parameters).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

import numpy as np

import shardflow as sf
from shardflow import checkpoint

from .checkpoint_writer import CheckpointWriter, snapshot
from .config import ConfigError, TrainConfig
from .layout import Layout

# what must match to resume: the model's shape (and the task) ...
_SHAPE_FLAGS = ("task", "block_size", "n_layer", "n_head", "n_embd", "model", "hidden")
# ... and what the run's trajectory is made of: the batches of every step and the model's
# initialisation come from the seed, the masks from dropout (the data is compared by content,
# check_same_data). Everything else may change on resume and is printed (changed_settings).
_TRAJECTORY_FLAGS = {
    "seed": "the batch of every step and the worker seeds come from it",
    "dropout": "it changes the model being trained (the masks drawn and the activations' scale)",
}
# may change without a note: where the run writes, how it reports, and --resume itself
_QUIET_FLAGS = ("out", "resume", "progress", "data", "max_corpus_bytes", "batch_size",
                "ckpt_async")


@dataclass
class ResumePoint:
    """Where training (re)starts: step 0 of a new run, or a checkpoint's step."""

    step: int = 0
    best_val: float = float("inf")
    nonfinite_skipped: int = 0  # updates skipped by the runs before this one
    last_finite: str | None = None  # newest checkpoint with finite parameters: never pruned


def checkpoint_path(cfg: TrainConfig, step: int) -> str:
    return os.path.join(cfg.out, f"ckpt_{step:07d}.safetensors")


def prepare_out_dir(cfg: TrainConfig, master: bool, log) -> None:
    """Rank 0 creates ``--out`` and removes the temp files that killed saves left there."""
    if not master:
        return
    os.makedirs(cfg.out, exist_ok=True)
    removed = checkpoint.clean_stale_temp_files(cfg.out)
    if removed:
        mb = sum(size for _, size in removed) / 1e6
        log(f"removed {len(removed)} temp file(s) ({mb:.1f} MB) left in {cfg.out} by "
            "interrupted saves")


def resume(cfg: TrainConfig, task, optimizer, world: int, log) -> ResumePoint:
    """With ``--resume``: load the newest checkpoint in ``--out`` that loads into the task's
    model, ``optimizer`` and the RNG, and return its point; a fresh point without
    ``--resume`` or without a checkpoint. Refuses (ConfigError, before anything is loaded) a
    checkpoint of another model shape, other data or another seed / dropout; prints what
    else changed. Every rank reads the file (the state is whole)."""
    model = task.model
    point = ResumePoint()
    if not cfg.resume:
        return point
    found = newest_resumable(cfg.out, log)
    if found is None:
        log(f"--resume: no checkpoint in {cfg.out}; starting from step 0")
        return point
    path, ck = found
    saved = ck.get("config", {})
    for key in _SHAPE_FLAGS:
        if key in saved and saved[key] != getattr(cfg, key):
            raise ConfigError(
                f"--{key.replace('_', '-')}: the checkpoint {path} was trained with "
                f"{saved[key]!r}, now {getattr(cfg, key)!r}; fix: use the same value or a new --out"
            )
    check_same_data(path, ck, task.data_identity(), cfg)
    for key, why in _TRAJECTORY_FLAGS.items():
        if key in saved and saved[key] != getattr(cfg, key):
            raise ConfigError(
                f"--{key}: the checkpoint {path} was trained with {saved[key]!r}, now "
                f"{getattr(cfg, key)!r}; {why}, so the run would not continue the saved one; fix: "
                f"resume with --{key} {saved[key]!r}, or train into a new --out")
    model.load_state_dict(ck["model"])
    optimizer.load_state_dict(ck["optimizer"])
    sf.set_rng_state(ck["rng"])
    point.step, point.best_val = int(ck["step"]), float(ck.get("best_val", point.best_val))
    point.nonfinite_skipped = int(ck.get("nonfinite_skipped", 0))
    point.last_finite = path  # newest_resumable returns only checkpoints with finite parameters
    log(f"resumed from {path} at step {point.step}")
    for line in resume_differences(path, ck, cfg, world):
        log(line)
    changed = changed_settings(saved, cfg)
    if saved.get("data") != cfg.data and "data" in saved:  # check_same_data: the same content
        changed.append(f"--data {saved['data']!r} -> {cfg.data!r} (the same content)")
    if changed:
        log("changed on resume: " + ", ".join(changed))
    if point.step >= cfg.max_steps:
        log(f"checkpoint step {point.step} >= --max-steps {cfg.max_steps}: nothing to do")
    return point


def newest_resumable(folder: str, log) -> tuple[str, dict] | None:
    """``(path, state)`` of the newest checkpoint in ``folder`` that loads and whose parameters
    are finite, saying (through ``log``) which newer files were skipped and why; None when
    the folder holds no checkpoint. Raises ConfigError when it holds checkpoints but none can
    be resumed from (all corrupt, truncated or non-finite): starting over from step 0 then
    would silently throw the run away."""
    files = checkpoint.checkpoint_files(folder)
    if not files:
        return None
    unusable = []  # (path, reason), newest first
    for path in files:
        try:
            ck = sf.load(path)
        except (checkpoint.CheckpointError, OSError) as e:
            unusable.append((path, str(e)))
            continue
        if not ck.get("finite", True):
            unusable.append((path, f"its parameters are not finite (an update overflowed by step "
                                   f"{int(ck.get('step', -1))}; the run stopped after it)"))
            continue
        for bad, reason in unusable:
            log(f"--resume: {checkpoint.skipped_message(bad, reason, path)}")
        return path, ck
    listing = "; ".join(f"{os.path.basename(p)}: {_short(r, p)}" for p, r in unusable)
    raise ConfigError(
        f"--resume: none of the {len(files)} checkpoint(s) in {folder} can be resumed from "
        f"({listing}); fix: move them out of {folder} (or pass another --out) to keep them, or "
        "run without --resume to start from step 0")


def _short(reason: str, path: str) -> str:
    """The reader's reason without the file name it starts with."""
    return reason[len(path):].lstrip(" :") if reason.startswith(path) else reason


def check_same_data(path: str, ck: dict, now: dict, cfg: TrainConfig) -> None:
    """Refuse to continue a checkpoint on other data: another vocabulary (GPT; its hash
    differs, even with the same size), or other content (the tokens' / samples' hash). The
    message names what the checkpoint was trained on and the flags that give it back.
    Checkpoints of earlier versions without the record are compared by vocabulary only."""
    saved = ck.get("data")
    saved_cfg = ck.get("config", {})
    again = f"--data {saved_cfg.get('data')}" if saved_cfg.get("data") else "no --data"
    if saved_cfg.get("max_corpus_bytes"):
        again += f" --max-corpus-bytes {saved_cfg['max_corpus_bytes']}"
    fix = f"fix: resume with the data it was trained on ({again}), or train into a new --out"
    if saved is None:  # an earlier version's checkpoint: only its vocabulary
        vocab = ck.get("vocab")
        if vocab is not None and now.get("vocab") is not None and vocab != now["vocab"]:
            raise ConfigError(f"--data: {path} was trained on another vocabulary "
                              f"({_vocab_diff(vocab, now['vocab'])}); {fix}")
        return
    if saved.get("vocab_sha256") != now.get("vocab_sha256"):
        raise ConfigError(
            f"--data: {path} was trained on a vocabulary of {saved.get('vocab_size')} tokens (sha256 "
            f"{str(saved.get('vocab_sha256'))[:12]}) from {saved.get('source')}; this run's data "
            f"{now['source']} gives {now.get('vocab_size')} (sha256 {str(now.get('vocab_sha256'))[:12]}"
            f"; {_vocab_diff(saved.get('vocab'), now.get('vocab'))}), so token ids would mean other "
            f"characters; {fix}")
    if saved.get("tokens_sha256") != now.get("tokens_sha256"):
        size = ("tokens", "samples")["samples" in saved]
        raise ConfigError(
            f"--data: {path} was trained on other data: {saved.get('source')} "
            f"({saved.get(size)} {size}, sha256 {str(saved.get('tokens_sha256'))[:12]}), this run "
            f"reads {now['source']} ({now.get(size)} {size}, sha256 "
            f"{str(now.get('tokens_sha256'))[:12]}); {fix}")


def _vocab_diff(old: str | None, new: str | None) -> str:
    """Which characters one vocabulary has and the other lacks, for the message."""
    if old is None or new is None:
        return "byte level vs characters" if (old is None) != (new is None) else "same"
    parts = []
    for label, chars in (("only in the checkpoint's", sorted(set(old) - set(new))),
                         ("only in this run's", sorted(set(new) - set(old)))):
        if chars:
            parts.append(f"{label}: {''.join(chars[:12]) + ('...' if len(chars) > 12 else '')!r}")
    return ", ".join(parts) or "the same characters in another order"


def changed_settings(saved: dict, cfg: TrainConfig) -> list[str]:
    """``--flag old -> new`` for each setting that may change on resume and did (the ones
    that may not are refused before; ``--batch-size`` has its own warning)."""
    out = []
    for f in dataclasses.fields(cfg):
        key = f.name
        if key in _QUIET_FLAGS or key in _SHAPE_FLAGS or key in _TRAJECTORY_FLAGS or key not in saved:
            continue
        old, new = saved[key], getattr(cfg, key)
        if old != new:
            out.append(f"--{key.replace('_', '-')} {old!r} -> {new!r}")
    return out


def resume_differences(path: str, ck: dict, cfg: TrainConfig, world: int) -> list[str]:
    """Lines that say how this run differs from the one that saved ``ck``, and what follows."""
    lines = []
    saved_world = ck.get("world_size")
    if saved_world is not None and int(saved_world) != world:
        same = (f"--batch-size {cfg.batch_size} is the global batch, so steps train on the same "
                "samples as before")
        if cfg.dropout > 0:
            lines.append(
                f"warning: {path} was saved by a run on {saved_world} rank(s), this run has "
                f"{world}; {same}, but with --dropout {cfg.dropout:g} each rank draws the masks for "
                f"its own slice, so from step {int(ck['step'])} on the result differs from an "
                f"uninterrupted {saved_world}-rank run; fix: resume with `shardflow run -n "
                f"{saved_world}` for an exact continuation")
        else:
            lines.append(
                f"note: {path} was saved by a run on {saved_world} rank(s), this run has {world}; "
                f"{same}, and the result matches the {saved_world}-rank run up to float rounding")
    saved_batch = ck.get("config", {}).get("batch_size")
    if saved_batch is not None and saved_batch != cfg.batch_size:
        lines.append(f"warning: {path} was trained with --batch-size {saved_batch}, this run uses "
                     f"{cfg.batch_size}; the steps from {int(ck['step'])} on see different batches "
                     "than the saved run would have")
    return lines


class Checkpointer:
    """Saves the run's checkpoints: when the policy says so (:meth:`due`: every
    ``--ckpt-interval`` steps, at ``--max-steps``, and every ``--ckpt-seconds`` seconds when
    given), and when a stop signal arrives (the loop calls :meth:`save`).

    ``save`` is a collective under layouts that shard the state (pipeline, global tensors,
    ZeRO): every rank calls it, the state is gathered whole, and rank 0 snapshots it and
    hands the write to the :class:`~.checkpoint_writer.CheckpointWriter` (a background
    thread unless ``--ckpt-sync``). :meth:`flush` waits for the file in flight."""

    def __init__(self, cfg: TrainConfig, layout: Layout, task, optimizer, pipe, log,
                 last_finite: str | None):
        self.cfg, self.layout, self.task, self.optimizer, self.pipe = cfg, layout, task, optimizer, pipe
        self.model = task.model  # the trained model itself (unwrapped; sharded in place)
        self.log = log
        self.last_finite = last_finite  # newest checkpoint with finite parameters: never pruned
        self.writer = CheckpointWriter(background=cfg.ckpt_async)
        self._last_save_t = time.monotonic()

    def due(self, step: int, by_time: bool = False) -> bool:
        """The periodic policy: whether the end of ``step`` saves a checkpoint. ``by_time``:
        the ranks agreed that ``--ckpt-seconds`` passed (:meth:`time_due` on rank 0)."""
        return by_time or step % self.cfg.ckpt_interval == 0 or step == self.cfg.max_steps

    def time_due(self) -> bool:
        """On rank 0: ``--ckpt-seconds`` have passed since the last save (the loop makes the
        ranks agree on it, so that every rank takes part in the save's collectives)."""
        secs = self.cfg.ckpt_seconds
        return bool(secs) and self.layout.master and time.monotonic() - self._last_save_t >= secs

    def path(self, step: int) -> str:
        return checkpoint_path(self.cfg, step)

    def save(self, step: int, best_val: float, nonfinite_skipped: int) -> None:
        """Gather the state (all ranks); on rank 0 snapshot it and write ``ckpt_<step>``,
        then prune (in the writer)."""
        t0 = time.perf_counter()
        self._last_save_t = time.monotonic()
        whole = self._gather()
        if whole is None:  # not rank 0
            return
        model_state, opt_state, finite = whole
        state = snapshot({"model": model_state, "optimizer": opt_state,
                          "rng": sf.get_rng_state(), "step": step, "best_val": best_val,
                          "config": dataclasses.asdict(self.cfg), "world_size": self.layout.world,
                          "finite": finite, "nonfinite_skipped": nonfinite_skipped,
                          "data": self.task.data_identity(), **self.task.extra_state()})
        path = self.path(step)

        def after():  # in the writer, once the file exists
            if finite:
                self.last_finite = path
            else:
                self.log(f"warning: checkpoint {path} holds non-finite parameters; "
                         f"{self.last_finite or 'no earlier checkpoint'} (the last finite one) is kept")
            prune(self.cfg.out, self.cfg.keep_checkpoints, protect=self.last_finite)

        self.writer.submit(state, path, after, t0)

    def flush(self) -> None:
        """Wait for the checkpoint being written (rank 0); re-raises a failed write."""
        self.writer.wait()

    def _gather(self):
        """``(model state, optimizer state, parameters finite)`` of whole tensors on rank 0,
        None on the other ranks, which take part in the collectives of sharded layouts."""
        master = self.layout.master
        if self.pipe is not None:  # every stage's parameters and optimizer state (collectives)
            whole, opt_state = self.pipe.sync(), self.pipe.optimizer_state()
            if not master:
                return None
            model_state = whole.state_dict()
            return model_state, opt_state, _state_finite(model_state)
        if self.layout.shards_parameters:  # whole tensors (a collective): resumes on any layout
            from shardflow.distributed.full_state import full_optimizer_state_dict, full_state_dict

            model_state = full_state_dict(self.model)
            opt_state = full_optimizer_state_dict(self.optimizer)
            if not master:
                return None
            return model_state, opt_state, _state_finite(model_state)
        if self.cfg.zero == 1:
            self.optimizer.consolidate_state_dict(to=0)  # a collective: whole state on rank 0
        if not master:
            return None
        return self.model.state_dict(), self.optimizer.state_dict(), parameters_finite(self.model)


def parameters_finite(model) -> bool:
    return all(bool(np.isfinite(p.array).all()) for p in model.parameters())


def _state_finite(state: dict) -> bool:
    return all(bool(np.isfinite(v.array).all()) for v in state.values() if isinstance(v, sf.Tensor))


def prune(folder, keep, protect=None):
    """Remove all but the newest ``keep`` checkpoints, except ``protect`` (the newest one with
    finite parameters: a run that diverged must not delete the state to go back to)."""
    ckpts = sorted(f for f in os.listdir(folder) if f.startswith("ckpt_") and f.endswith(".safetensors"))
    keep_name = os.path.basename(protect) if protect else None
    for f in ckpts[:-keep]:
        if f != keep_name:
            os.remove(os.path.join(folder, f))
