"""The data phase of ``shardflow train``: which samples each step trains on.

``--batch-size`` is the global batch: step ``s`` draws it from ``Generator(seed, s, 0)``
alone (:class:`StepBatchSampler`), so any step's batch is known without replaying the
ones before it (exact resumption) and does not depend on the number of ranks (N ranks
train like one). Evaluation uses fixed batches, so evaluations are comparable."""

from __future__ import annotations

import numpy as np

import shardflow as sf
import shardflow.data as sfdata

from .config import TrainConfig


class StepBatchSampler(sfdata.Sampler):
    """Batches for steps ``start .. stop-1``: step ``s`` draws a global batch of ``batch_size``
    indices uniformly (with replacement) from ``Generator(seed, s, 0)``, and rank ``r`` of
    ``world_size`` takes its ``r``-th equal slice. Any step's batch is known without
    replaying the ones before it (what exact resumption needs), and it does not depend on
    the number of ranks (what makes N ranks train like one)."""

    def __init__(self, n: int, batch_size: int, seed: int, start: int, stop: int, rank: int = 0,
                 world_size: int = 1):
        if batch_size % world_size:
            raise ValueError(f"batch_size {batch_size} is not a multiple of world_size {world_size}")
        self.n, self.batch_size, self.seed = n, batch_size, seed
        self.start, self.stop, self.rank, self.world_size = start, stop, rank, world_size

    def __iter__(self):
        per = self.batch_size // self.world_size
        for s in range(self.start, self.stop):
            rng = np.random.default_rng([self.seed, s, 0])
            yield rng.integers(0, self.n, size=self.batch_size)[self.rank * per:(self.rank + 1) * per].tolist()

    def __len__(self):
        return max(0, self.stop - self.start)


def train_loader(cfg: TrainConfig, task, start_step: int, rank: int, world: int) -> sfdata.DataLoader:
    """The batches of steps ``start_step .. --max-steps``; this rank's slice of each one
    (``rank, world`` = ``0, 1`` for layouts where every rank reads the whole batch)."""
    sampler = StepBatchSampler(len(task.train_ds), cfg.batch_size, cfg.seed, start_step,
                               cfg.max_steps, rank, world)
    # its own generator: worker seeds must not consume the default generator, whose state
    # (dropout masks) travels in the checkpoint
    return sfdata.DataLoader(task.train_ds, batch_sampler=sampler, num_workers=cfg.num_workers,
                             timeout=120 if cfg.num_workers else 0,
                             generator=sf.Generator().manual_seed(cfg.seed))


def validation_batches(cfg: TrainConfig, task) -> list[list[int]]:
    """The ``--eval-iters`` fixed validation batches (indices), the same at every evaluation."""
    return list(StepBatchSampler(len(task.val_ds), cfg.batch_size, cfg.seed + 1, 0,
                                 cfg.eval_iters, 0))


def fetch(ds, idx):
    """The samples ``idx`` of ``ds`` (in one call when the data set batches its reads)."""
    getitems = getattr(ds, "__getitems__", None)
    return getitems(idx) if getitems else [ds[i] for i in idx]
