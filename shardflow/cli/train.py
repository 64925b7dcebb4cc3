"""``shardflow train``: train a reference model end to end.

    shardflow train gpt                     # char-level GPT on the stdlib's own source
    shardflow train mnist --data DIR        # LeNet-5 (or --model mlp) on MNIST IDX files
    shardflow train digits                  # MLP on scikit-learn's digits
    shardflow run -n 2 shardflow train gpt  # the same, data parallel over 2 ranks
    shardflow run -n 4 shardflow train gpt --pp 2 --dp 2   # 2 pipeline stages x 2 replicas

Configuration: task defaults < ``--config file.yaml`` (keys are the long flag names with
``_``) < command-line flags. A configuration that cannot work is refused before anything
runs, naming the field and the fix.

Every run writes into ``--out`` (default ``runs/<task>``): ``ckpt_<step>.safetensors``
checkpoints (model, optimizer, RNG state, step, config, world size; the newest
``--keep-checkpoints`` kept, and never the last one with finite parameters pruned),
``metrics.csv`` and ``loss.png``. At start, temp files that killed saves left in ``--out``
are removed (``checkpoint.clean_stale_temp_files``). ``--resume`` continues from the
newest checkpoint that loads, and says which newer files it skipped and why. Resuming
reproduces the uninterrupted run exactly: the batch of step ``s`` is drawn from
``seed, s`` alone (``StepBatchSampler``), the learning rate is a pure function of the
step, and the RNG state travels in the checkpoint.

``--batch-size`` is the global batch. Under ``shardflow run -n N`` (world size > 1) the
model is wrapped in ``DistributedDataParallel`` and rank ``r`` trains on the ``r``-th of N
equal slices of each step's batch (the batch size must be a multiple of N), so N ranks
compute the same mean gradient as one process: the same flags give the same training,
up to float rounding, on any number of ranks, and a checkpoint saved on N ranks resumes
on M. (Dropout masks are the exception: each rank draws them for its own slice, so with
``--dropout`` > 0 the result depends on N; resuming on a different N says so.) Only rank
0 prints and writes files. ``--tp`` / ``--dp`` lay the model out as global tensors;
``--pp`` cuts it into pipeline stages through ``shardflow.parallelize``
(``train_parallel.py``); docs/TRAINING.md "Parallel layouts".

Stopping: SIGTERM (preemption; ``shardflow run`` forwards it to every rank), SIGHUP and
SIGINT (Ctrl-C) finish the current step, write a checkpoint and exit 128 + the signal
(143, 129, 130); all ranks agree on the step (``graceful_stop.py``). A second Ctrl-C stops
at once. A non-finite loss or gradient stops training before the update is applied
(``--on-nonfinite raise``, the default; exit code 1, naming the step), or skips that
update (``--on-nonfinite skip``; after ``--max-consecutive-skips`` in a row it stops);
see ``nonfinite.py``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import os
import signal
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import shardflow as sf
import shardflow.data as sfdata
import shardflow.nn as nn
import shardflow.optim as optim
from shardflow import _config, checkpoint, comm, models

from .graceful_stop import GracefulStop
from .nonfinite import MODES as NONFINITE_MODES
from .nonfinite import NonFiniteError, NonFiniteGuard

TASKS = ("gpt", "mnist", "digits")


class ConfigError(ValueError):
    """An impossible configuration, found before training starts."""


class TrainingStopped(Exception):
    """A stop signal ended training after a checkpoint was written (exit ``128 + signum``)."""

    def __init__(self, signum: int, step: int, path: str):
        super().__init__(f"stopped by signal {signum} at step {step}; checkpoint {path}")
        self.signum, self.step, self.path = signum, step, path


@dataclass
class TrainConfig:
    task: str = "gpt"
    out: str | None = None
    seed: int = 1337
    data: str | None = None
    # optimisation
    batch_size: int = 32
    lr: float = 2e-3
    min_lr: float = 2e-4
    warmup_steps: int = 50
    lr_decay_steps: int | None = None  # default: max_steps
    max_steps: int = 1000
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    on_nonfinite: str = "raise"
    max_consecutive_skips: int = 10
    # bookkeeping
    eval_interval: int = 250
    eval_iters: int = 20
    log_interval: int = 10
    ckpt_interval: int = 250
    keep_checkpoints: int = 3
    num_workers: int = 1
    # layout (gpt): dp 0 = every rank not used by tp x pp; dp x tp x pp must be the world size
    dp: int = 0
    tp: int = 1
    pp: int = 1  # pipeline stages (cli/train_parallel.py); 1F1B over `microbatches` (0: 2 x pp)
    microbatches: int = 0
    schedule: str = "1f1b"  # pipeline schedule: 1f1b (at most pp micro-batches in flight) or gpipe
    # ZeRO (docs/ZERO.md): 0 off; 1 optimizer state sharded (ZeroRedundancyOptimizer + DDP);
    # 2 also gradients, 3 also parameters (fully_shard, reshard_after_forward False / True)
    zero: int = 0
    # where the model and batches live: cpu (NumPy) or cuda (CuPy; collectives over NCCL)
    device: str = "cpu"
    # forward + backward through shardflow.compile_step (docs/KERNELS.md); clipping, the
    # non-finite check and the optimizer step stay in this loop
    compile: bool = False
    resume: bool = False
    progress: bool = True
    # gpt
    block_size: int = 64
    n_layer: int = 3
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    max_corpus_bytes: int | None = None
    sample_tokens: int = 300
    # image tasks
    model: str = "lenet"
    hidden: list = field(default_factory=lambda: [128])


TASK_DEFAULTS = {
    "gpt": {},
    "mnist": dict(batch_size=64, lr=1e-3, min_lr=1e-4, max_steps=1000, eval_interval=200,
                  ckpt_interval=500, weight_decay=0.0, warmup_steps=0, model="lenet"),
    "digits": dict(batch_size=64, lr=3e-3, min_lr=3e-4, max_steps=400, eval_interval=100,
                   ckpt_interval=200, weight_decay=0.0, warmup_steps=0, model="mlp",
                   num_workers=0),
}


# ----------------------------------------------------------------------------- configuration
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shardflow train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", choices=TASKS, help="what to train")
    p.add_argument("--config", help="YAML file of options (keys as the flags, with _)")
    for f in dataclasses.fields(TrainConfig):
        if f.name in ("task", "resume", "progress", "hidden", "compile"):
            continue
        typ = {"int | None": int, "str | None": str}.get(str(f.type), None)
        if typ is None:
            typ = {"int": int, "float": float, "str": str}[str(f.type)]
        p.add_argument("--" + f.name.replace("_", "-"), type=typ, default=None, dest=f.name)
    p.add_argument("--hidden", type=int, nargs="+", default=None, help="MLP hidden sizes")
    p.add_argument("--compile", action="store_true", default=None,
                   help="forward and backward through shardflow.compile_step (one process or DDP)")
    p.add_argument("--resume", action="store_true", default=None,
                   help="continue from the newest checkpoint in --out")
    p.add_argument("--no-progress", dest="progress", action="store_false", default=None,
                   help="no progress bar (log lines instead)")
    return p


def resolve_config(argv: list[str]) -> TrainConfig:
    args = build_parser().parse_args(argv)
    values = dict(TASK_DEFAULTS[args.task])
    if args.config:
        values.update(_read_yaml(args.config))
    values.update({k: v for k, v in vars(args).items() if v is not None and k != "config"})
    values["task"] = args.task
    if values.get("out") is None:
        values["out"] = os.path.join("runs", args.task)
    cfg = TrainConfig(**values)
    validate(cfg)
    return cfg


def _read_yaml(path: str) -> dict:
    import yaml

    if not os.path.isfile(path):
        raise ConfigError(f"--config: file {path!r} does not exist; fix: give the path of a YAML file")
    with open(path) as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"--config: {path} must hold a mapping of option: value, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    out = {}
    for k, v in data.items():
        key = str(k).replace("-", "_")
        if key not in known or key == "task":
            raise ConfigError(
                f"--config: unknown option {k!r} in {path}; fix: use one of {sorted(known - {'task'})}"
            )
        out[key] = v
    return out


def validate(cfg: TrainConfig) -> None:
    def need(ok, field_name, got, fix):
        if not ok:
            raise ConfigError(f"{field_name}: got {got!r}; fix: {fix}")

    for name in ("batch_size", "max_steps", "eval_interval", "eval_iters", "log_interval",
                 "ckpt_interval", "keep_checkpoints", "block_size", "n_layer", "n_head", "n_embd",
                 "max_consecutive_skips"):
        v = getattr(cfg, name)
        need(isinstance(v, int) and v > 0, f"--{name.replace('_', '-')}", v, "use a positive integer")
    for name in ("lr", "min_lr"):
        v = getattr(cfg, name)
        need(isinstance(v, int | float) and v > 0, f"--{name.replace('_', '-')}", v, "use a positive number such as 1e-3")
    need(cfg.min_lr <= cfg.lr, "--min-lr", cfg.min_lr, f"use a value <= --lr ({cfg.lr})")
    need(cfg.warmup_steps >= 0, "--warmup-steps", cfg.warmup_steps, "use 0 or more")
    need(cfg.lr_decay_steps is None or cfg.lr_decay_steps > 0, "--lr-decay-steps", cfg.lr_decay_steps,
         "use a positive integer (default: --max-steps)")
    need(cfg.num_workers >= 0, "--num-workers", cfg.num_workers, "use 0 (main process) or more")
    need(cfg.grad_clip >= 0, "--grad-clip", cfg.grad_clip, "use 0 (off) or a positive norm")
    need(0 <= cfg.dropout < 1, "--dropout", cfg.dropout, "use a value in [0, 1)")
    need(cfg.n_embd % cfg.n_head == 0, "--n-embd", cfg.n_embd,
         f"make it a multiple of --n-head ({cfg.n_head}), e.g. {cfg.n_head * max(1, cfg.n_embd // cfg.n_head)}")
    need(cfg.model in ("lenet", "mlp"), "--model", cfg.model, "use lenet or mlp")
    need(isinstance(cfg.tp, int) and cfg.tp >= 1, "--tp", cfg.tp, "use 1 (no tensor parallelism) or more")
    need(isinstance(cfg.dp, int) and cfg.dp >= 0, "--dp", cfg.dp,
         "use 0 (every rank not used by --tp does data parallelism) or a positive integer")
    need(cfg.tp == 1 or cfg.task == "gpt", "--tp", cfg.tp, "tensor parallelism is built for gpt; use --tp 1")
    need(cfg.n_head % cfg.tp == 0, "--tp", cfg.tp,
         f"use a divisor of --n-head ({cfg.n_head}): each rank holds n_head / tp heads")
    need(cfg.zero in (0, 1, 2, 3), "--zero", cfg.zero,
         "use 0 (off), 1 (shard optimizer state), 2 (+ gradients) or 3 (+ parameters)")
    need(isinstance(cfg.pp, int) and cfg.pp >= 1, "--pp", cfg.pp, "use 1 (no pipeline) or more stages")
    need(cfg.pp == 1 or cfg.task == "gpt", "--pp", cfg.pp, "pipeline parallelism is built for gpt; use --pp 1")
    need(isinstance(cfg.microbatches, int) and cfg.microbatches >= 0, "--microbatches", cfg.microbatches,
         "use 0 (2 x --pp) or a positive number of micro-batches per step")
    need(cfg.schedule in ("1f1b", "gpipe"), "--schedule", cfg.schedule,
         "use --schedule 1f1b (default) or --schedule gpipe")
    need(cfg.microbatches == 0 or cfg.pp > 1, "--microbatches", cfg.microbatches,
         "micro-batches are for pipeline stages: add --pp 2 (or more), or drop --microbatches")
    if cfg.pp > 1:  # parallelize's own checks, for the world size the flags imply
        from .train_parallel import check_pipeline_config

        check_pipeline_config(cfg, None, ConfigError)
    need(cfg.zero == 0 or (cfg.tp == 1 and cfg.dp == 0), "--zero", cfg.zero,
         "ZeRO shards over the data-parallel ranks of a plain data-parallel run; drop --tp/--dp "
         "(global-tensor layouts) or use --zero 0")
    need(cfg.device in ("cpu", "cuda"), "--device", cfg.device, "use cpu or cuda")
    if cfg.device == "cuda":
        from shardflow.backend.xp import cuda_is_available

        need(cuda_is_available(), "--device", cfg.device,
             "this machine has no CUDA device that CuPy sees: run on a machine with an NVIDIA GPU "
             "and CuPy (`pip install 'shardflow[gpu]'`), or use --device cpu")
    need(not cfg.compile or (cfg.tp == 1 and cfg.pp == 1 and cfg.dp == 0 and cfg.zero <= 1),
         "--compile", cfg.compile, "compile_step covers one process and plain data parallelism "
         "(DDP, --zero 1); drop --compile or --tp/--pp/--dp/--zero 2-3")
    need(not cfg.compile or cfg.device == "cpu", "--compile", cfg.compile,
         "the compiled step is verified on the CPU only so far; drop --compile or use --device cpu")
    need(cfg.on_nonfinite in NONFINITE_MODES, "--on-nonfinite", cfg.on_nonfinite,
         "use raise (stop at the first non-finite loss) or skip (skip such updates)")
    if cfg.data is not None:
        need(os.path.isdir(cfg.data), "--data", cfg.data, "give an existing folder with the data files")
    if cfg.task == "mnist":
        need(cfg.data is not None or _config.data_root() is not None, "--data", None,
             "pass --data DIR, the folder with train-images-idx3-ubyte[.gz] etc.")


# ----------------------------------------------------------------------------- helpers
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


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to ``lr``, then cosine decay to ``min_lr`` at ``lr_decay_steps``."""
    decay = cfg.lr_decay_steps or cfg.max_steps
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / (cfg.warmup_steps + 1)
    if step >= decay:
        return cfg.min_lr
    ratio = (step - cfg.warmup_steps) / max(1, decay - cfg.warmup_steps)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (cfg.lr - cfg.min_lr)


class Task:
    """What differs between tasks: data, model, loss, eval metric, final demo."""

    unit = "samples"
    device = "cpu"

    def on_device(self, batch):
        """The batch's tensors on the task's device (batches are collated on the CPU)."""
        return batch if self.device == "cpu" else [t.to(self.device) for t in batch]

    def tokens_per_batch(self, cfg):
        return cfg.batch_size


class GPTTask(Task):
    unit = "tok"

    def __init__(self, cfg: TrainConfig):
        self.corpus = sfdata.TextCorpus(cfg.data, block_size=cfg.block_size, max_bytes=cfg.max_corpus_bytes)
        self.train_ds, self.val_ds = self.corpus, self.corpus.split("val")
        self.baseline = self.corpus.unigram_entropy()
        mc = models.GPTConfig(block_size=cfg.block_size, vocab_size=self.corpus.vocab_size,
                              n_layer=cfg.n_layer, n_head=cfg.n_head, n_embd=cfg.n_embd, dropout=cfg.dropout)
        self.model = models.GPT(mc)

    def tokens_per_batch(self, cfg):
        return cfg.batch_size * cfg.block_size

    def loss(self, model, batch):
        x, y = self.on_device(batch)
        _, loss = model(x, y)
        return loss, None

    def optimizer(self, cfg):
        return self.model.configure_optimizers(cfg.weight_decay, cfg.lr, betas=(0.9, 0.99))

    def extra_state(self):
        return {"vocab": "".join(self.corpus.itos) if self.corpus.itos else None}

    def finish(self, cfg, log):
        prompt = "def "
        idx = sf.tensor(self.corpus.encode(prompt)[None], device=self.device)
        self.model.eval()
        out = self.model.generate(idx, cfg.sample_tokens, temperature=0.8, top_k=20,
                                  generator=sf.Generator().manual_seed(cfg.seed))
        log("\n--- sample (prompt 'def ') ---\n" + self.corpus.decode(out.numpy()[0]) + "\n---")


class ImageTask(Task):
    def __init__(self, cfg: TrainConfig):
        if cfg.task == "mnist":
            self.train_ds = sfdata.MNIST(cfg.data, train=True)
            self.val_ds = sfdata.MNIST(cfg.data, train=False)
            shape, ncls = (1, 28, 28), 10
        else:
            self.train_ds = sfdata.Digits(train=True, seed=cfg.seed)
            self.val_ds = sfdata.Digits(train=False, seed=cfg.seed)
            shape, ncls = (1, 8, 8), 10
        if cfg.batch_size > len(self.train_ds):
            raise ConfigError(
                f"--batch-size: got {cfg.batch_size} but the training set has only "
                f"{len(self.train_ds)} samples; fix: use --batch-size {min(64, len(self.train_ds))}"
            )
        if cfg.model == "lenet" and shape[1] == 28:
            self.model = models.LeNet5(models.LeNetConfig(num_classes=ncls))
        else:
            self.model = models.MLP(models.MLPConfig(in_features=int(np.prod(shape)),
                                                     hidden=tuple(cfg.hidden), num_classes=ncls))
        self.baseline = math.log(ncls)

    def loss(self, model, batch):
        x, y = self.on_device(batch)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
        acc = float((logits.argmax(-1) == y).float().mean().item())
        return loss, acc

    def optimizer(self, cfg):
        return optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    def extra_state(self):
        return {}

    def finish(self, cfg, log):
        self.model.eval()
        xs, ys = sfdata.default_collate([self.val_ds[i] for i in range(min(16, len(self.val_ds)))])
        with sf.no_grad():
            pred = self.model(xs).argmax(-1).numpy()
        log(f"predictions: {pred.tolist()}\nlabels:      {ys.numpy().tolist()}")


# ----------------------------------------------------------------------------- the job
def train(cfg: TrainConfig) -> dict:
    """Run the job described by ``cfg``; returns final metrics (also used by tests).

    Raises ConfigError (before anything is written), TrainingStopped (a stop signal; a
    checkpoint was written) or NonFiniteError (non-finite loss/gradient; see nonfinite.py)."""
    li = _config.launch_info()
    rank, world = li.rank, li.world_size
    if world > 1:
        import shardflow.distributed as dist

        if not dist.is_initialized():  # NCCL for device tensors (MPI carries the rest)
            dist.init_process_group("nccl" if cfg.device == "cuda" else None)
        rank, world = dist.get_rank(), dist.get_world_size()
    master = rank == 0
    pipe_dp = None  # --pp > 1: the data-parallel degree of the pipeline layout
    if cfg.pp > 1:
        from .train_parallel import PipelineTraining, check_pipeline_config

        pipe_dp = check_pipeline_config(cfg, world, ConfigError)
    layout = None if pipe_dp else _layout(cfg, world)  # None: pipeline, DDP or one process; else (dp, tp)
    if layout is not None:
        dp_size = layout[0]
        if cfg.batch_size % dp_size:
            raise ConfigError(
                f"--batch-size: got {cfg.batch_size}, which {dp_size} data-parallel ranks cannot "
                f"share evenly; fix: use a multiple of {dp_size}")
    elif cfg.batch_size % world and not pipe_dp:
        raise ConfigError(
            f"--batch-size: got {cfg.batch_size}, which {world} ranks cannot share evenly (it is "
            f"the global batch; each rank trains on batch-size / world-size samples); fix: use a "
            f"multiple of {world}, e.g. {max(world, cfg.batch_size // world * world)}")

    def log(msg):
        if master:
            print(msg, flush=True)

    sf.manual_seed(cfg.seed)
    task = GPTTask(cfg) if cfg.task == "gpt" else ImageTask(cfg)
    task.device = cfg.device
    raw_model = task.model
    if cfg.device != "cpu":
        raw_model.to(cfg.device)  # before the optimizer is built on its parameters
    model_class = type(raw_model)  # fully_shard (--zero 2/3) changes the instance's class
    optimizer = task.optimizer(cfg)
    if cfg.zero == 1:  # the same groups and hyper-parameters, the state sharded over the ranks
        from shardflow.distributed.zero import ZeroRedundancyOptimizer

        optimizer = ZeroRedundancyOptimizer([dict(g) for g in optimizer.param_groups],
                                            type(optimizer), **optimizer.defaults)
    start_step, best_val, skipped_before = 0, float("inf"), 0
    last_finite = None  # newest checkpoint with finite parameters: never pruned
    if master:
        os.makedirs(cfg.out, exist_ok=True)
        removed = checkpoint.clean_stale_temp_files(cfg.out)
        if removed:
            mb = sum(size for _, size in removed) / 1e6
            log(f"removed {len(removed)} temp file(s) ({mb:.1f} MB) left in {cfg.out} by "
                "interrupted saves")

    if cfg.resume:
        path = checkpoint.find_latest(cfg.out, on_skip=lambda m: log(f"--resume: {m}"))
        if path is None:
            log(f"--resume: no checkpoint in {cfg.out}; starting from step 0")
        else:
            ck = sf.load(path)
            saved = ck.get("config", {})
            for key in ("task", "block_size", "n_layer", "n_head", "n_embd", "model"):
                if key in saved and saved[key] != getattr(cfg, key):
                    raise ConfigError(
                        f"--{key.replace('_', '-')}: the checkpoint {path} was trained with "
                        f"{saved[key]!r}, now {getattr(cfg, key)!r}; fix: use the same value or a new --out"
                    )
            raw_model.load_state_dict(ck["model"])
            optimizer.load_state_dict(ck["optimizer"])
            sf.set_rng_state(ck["rng"])
            start_step, best_val = int(ck["step"]), float(ck.get("best_val", best_val))
            skipped_before = int(ck.get("nonfinite_skipped", 0))
            last_finite = path if ck.get("finite", True) else None
            log(f"resumed from {path} at step {start_step}")
            for line in _resume_differences(path, ck, cfg, world):
                log(line)
            if start_step >= cfg.max_steps:
                log(f"checkpoint step {start_step} >= --max-steps {cfg.max_steps}: nothing to do")

    model, pipe = raw_model, None
    if pipe_dp:  # parallelize prints the communication plan (rank 0)
        pipe = PipelineTraining(cfg, raw_model, optimizer, pipe_dp, _AGREED_SIGNALS)
    elif layout is not None:
        # Global tensors: parameters laid out over a (dp, tp) mesh (Megatron's split on tp,
        # broadcast on dp); every rank reads the whole global batch and keeps its S(0) part.
        from shardflow.distributed.full_state import shard_optimizer_state
        from shardflow.distributed.tensor_parallel import data_tensor_parallel

        mesh, data_sbp = data_tensor_parallel(raw_model, layout[0], layout[1],
                                              raw_model.tensor_parallel_plan())
        shard_optimizer_state(optimizer)  # a resumed optimizer holds whole tensors
        model = _GlobalBatch(raw_model, mesh, data_sbp)
    elif cfg.zero >= 2:  # each block one unit, then the root (embeddings, head)
        from shardflow.distributed.fsdp import fully_shard
        from shardflow.distributed.full_state import shard_optimizer_state

        for block in getattr(getattr(raw_model, "transformer", None), "h", ()):
            fully_shard(block, reshard_after_forward=cfg.zero == 3)
        fully_shard(raw_model, reshard_after_forward=cfg.zero == 3)
        shard_optimizer_state(optimizer)  # a resumed optimizer holds whole tensors
        model = raw_model
    elif world > 1:
        from shardflow.nn.parallel import DistributedDataParallel

        sfdata.note_data_parallel(True)
        model = DistributedDataParallel(raw_model)

    n_params = raw_model.num_parameters()
    flops = raw_model.flops_per_sample(training=True)
    log(f"task {cfg.task}: {model_class.__name__} with {n_params:,} parameters, "
        f"{flops / 1e6:.1f} MFLOP per training sample; world size {world}"
        + (f"; ZeRO stage {cfg.zero}" if cfg.zero else "")
        + (pipe.describe() if pipe else
           f" (global tensors: dp {layout[0]} x tp {layout[1]})" if layout is not None else
           f" ({cfg.batch_size // world} of each batch of {cfg.batch_size} per rank)" if world > 1 else "")
        + f"; baseline loss (unigram / uniform) {task.baseline:.4f}")

    sampler = StepBatchSampler(len(task.train_ds), cfg.batch_size, cfg.seed, start_step,
                               cfg.max_steps, *((0, 1) if layout is not None or pipe else (rank, world)))
    # its own generator: worker seeds must not consume the default generator, whose state
    # (dropout masks) travels in the checkpoint
    loader = sfdata.DataLoader(task.train_ds, batch_sampler=sampler, num_workers=cfg.num_workers,
                               timeout=120 if cfg.num_workers else 0,
                               generator=sf.Generator().manual_seed(cfg.seed))
    val_batches = list(StepBatchSampler(len(task.val_ds), cfg.batch_size, cfg.seed + 1, 0,
                                        cfg.eval_iters, 0))  # fixed val batches: comparable evals

    def evaluate():
        net = raw_model if layout is None else model
        if pipe is not None:  # the whole model on rank 0 (a collective); rank 0 evaluates
            net = pipe.sync()
            if net is None:
                return float("nan"), None
        model.eval()
        net.eval()
        losses, accs = [], []
        with sf.no_grad():
            for idx in val_batches:
                batch = sfdata.default_collate(_fetch(task.val_ds, idx))
                loss, acc = task.loss(net, batch)
                losses.append(loss.item())
                if acc is not None:
                    accs.append(acc)
        model.train()
        return float(np.mean(losses)), (float(np.mean(accs)) if accs else None)

    metrics_path = os.path.join(cfg.out, "metrics.csv")
    rows = _read_metrics(metrics_path) if (cfg.resume and start_step > 0) else []
    rows = [r for r in rows if int(r["step"]) < start_step or (int(r["step"]) == start_step and r["train_loss"])]
    guard = NonFiniteGuard(cfg.on_nonfinite, cfg.max_consecutive_skips)

    def record(row):
        rows.append(row)
        if master:
            _write_metrics(metrics_path, rows)

    def ckpt_path(step):
        return os.path.join(cfg.out, f"ckpt_{step:07d}.safetensors")

    def save(step):
        nonlocal last_finite
        gathered = layout is not None or cfg.zero >= 2
        if pipe is not None:  # every stage's parameters and optimizer state (collectives)
            whole = pipe.sync()
            opt_state = pipe.optimizer_state()
        elif gathered:  # whole tensors (a collective): resumes on any layout
            from shardflow.distributed.full_state import full_optimizer_state_dict, full_state_dict

            model_state, opt_state = full_state_dict(raw_model), full_optimizer_state_dict(optimizer)
        elif cfg.zero == 1:
            optimizer.consolidate_state_dict(to=0)  # a collective: whole state on rank 0
        if not master:
            return
        if pipe is not None:
            model_state = whole.state_dict()
        elif not gathered:
            model_state, opt_state = raw_model.state_dict(), optimizer.state_dict()
        finite = (_parameters_finite(raw_model) if not gathered and pipe is None else
                  all(bool(np.isfinite(v.array).all()) for v in model_state.values()
                      if isinstance(v, sf.Tensor)))
        state = {"model": model_state, "optimizer": opt_state,
                 "rng": sf.get_rng_state(), "step": step, "best_val": best_val,
                 "config": dataclasses.asdict(cfg), "world_size": world, "finite": finite,
                 "nonfinite_skipped": skipped_before + len(guard.skipped), **task.extra_state()}
        sf.save(state, ckpt_path(step))
        if finite:
            last_finite = ckpt_path(step)
        else:
            log(f"warning: checkpoint {ckpt_path(step)} holds non-finite parameters; "
                f"{last_finite or 'no earlier checkpoint'} (the last finite one) is kept")
        _prune(cfg.out, cfg.keep_checkpoints, protect=last_finite)

    bar = None
    if master and cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.max_steps, initial=start_step, desc=f"train {cfg.task}", unit="step",
                   dynamic_ncols=True, file=sys.stderr)
    def decide(bad, loss_val, grad_norm):
        """True: skip this step's update (all ranks decide alike); raises NonFiniteError to stop."""
        try:
            skip = guard.skip_update(step + 1, bool(bad), loss_val, grad_norm, lr)
        except NonFiniteError as e:
            last = last_finite or "none yet"
            also = ("; or pass --on-nonfinite skip to skip such steps" if cfg.on_nonfinite == "raise"
                    else "")
            raise NonFiniteError(
                f"{e}. Last checkpoint with finite parameters: {last}. Fix: lower --lr "
                f"(now {cfg.lr:g}) or --grad-clip (now {cfg.grad_clip:g}), then --resume{also}",
                e.step) from None
        if skip:
            msg = (f"step {step + 1}: non-finite loss or gradient (loss {loss_val:.4g}, gradient "
                   f"norm {grad_norm:.4g}); update skipped ({guard.streak} in a row, "
                   f"limit {cfg.max_consecutive_skips})")
            (bar.write(msg) if bar else log(msg))
        return skip

    model.train()
    compiled = None
    if cfg.compile:
        compiled = sf.compile_step(model, None, lambda m, *b: task.loss(m, b)[0])
    t0, last_t, last_step = time.time(), time.time(), start_step
    step, loss_val, val_loss, val_acc, tps = start_step, float("nan"), None, None, 0.0
    saved_at = None
    it = iter(loader)
    say = (lambda m: print(f"shardflow train: {m}", file=sys.stderr, flush=True)) if master else None
    with GracefulStop(say=say) as stop:
        while step < cfg.max_steps:
            if step % cfg.eval_interval == 0:
                te = time.time()
                val_loss, val_acc = evaluate()
                last_t += time.time() - te  # throughput counts training time only
                best_val = min(best_val, val_loss)
                record({"step": step, "train_loss": "", "val_loss": f"{val_loss:.5f}",
                        "val_acc": "" if val_acc is None else f"{val_acc:.4f}", "lr": "", "throughput": "",
                        "time_s": f"{time.time() - t0:.2f}"})
                msg = f"step {step}: val loss {val_loss:.4f}" + ("" if val_acc is None else f", acc {val_acc:.3f}")
                (bar.write(msg) if bar else log(msg))
            lr = lr_at(step, cfg)
            for g in optimizer.param_groups:
                g["lr"] = lr
            batch = next(it)

            if pipe is not None:  # agree, clip, decide and update inside (train_parallel.py)
                loss_val, grad_norm, bad, signum = pipe.step(batch, stop.signum, decide)
            else:
                if layout is not None and step == start_step and _config.debug_plan():
                    from shardflow.distributed import comm_plan

                    with comm_plan() as plan:
                        loss, _ = task.loss(model, batch)
                        loss.backward()
                    log(f"communication plan of one step (dp {layout[0]} x tp {layout[1]}):\n{plan}")
                elif compiled is not None:  # forward + backward; .grad left for the lines below
                    loss = compiled(*batch)
                    if step == start_step:
                        log("compile: " + compiled.explain().split("\n")[0])
                else:
                    loss, _ = task.loss(model, batch)
                    loss.backward()
                loss_val = loss.item()
                # the total norm before clipping; max_norm=inf measures without clipping
                grad_norm = float(nn.utils.clip_grad_norm_(raw_model.parameters(),
                                                           cfg.grad_clip or math.inf).item())
                # one small all-reduce per step: the ranks agree on skipping and on stopping, and
                # the loss logged is the mean over ranks (= the loss of the global batch)
                loss_val, bad, signum = _agree(loss_val, not math.isfinite(loss_val) or not math.isfinite(grad_norm),
                                               stop.signum, world)
                if not decide(bad, loss_val, grad_norm):
                    optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if step % cfg.log_interval == 0 or step == cfg.max_steps:
                now = time.time()
                tps = (step - last_step) * task.tokens_per_batch(cfg) / max(now - last_t, 1e-9)
                last_t, last_step = now, step
                record({"step": step, "train_loss": f"{loss_val:.5f}", "val_loss": "", "val_acc": "",
                        "lr": f"{lr:.3e}", "throughput": f"{tps:.1f}", "time_s": f"{now - t0:.2f}"})
                if bar is None:
                    log(f"step {step}/{cfg.max_steps} loss {loss_val:.4f} {tps:,.0f} {task.unit}/s lr {lr:.2e}")
            if bar is not None:
                bar.set_postfix(loss=f"{loss_val:.4f}", **{f"{task.unit}/s": f"{tps:,.0f}"})
                bar.update(1)
            if step % cfg.ckpt_interval == 0 or step == cfg.max_steps:
                save(step)
                saved_at = step
            if signum:
                if saved_at != step:
                    save(step)
                if world > 1:
                    comm.get_world().barrier()  # no rank exits (and ends the job) before the file exists
                if bar is not None:
                    bar.close()
                raise TrainingStopped(int(signum), step, ckpt_path(step))
    if bar is not None:
        bar.close()
    skipped = skipped_before + len(guard.skipped)
    if skipped:
        shown = ", ".join(map(str, guard.skipped[:20])) + (" ..." if len(guard.skipped) > 20 else "")
        log(f"skipped {skipped} update(s) with a non-finite loss or gradient"
            + (f" (this run: steps {shown})" if guard.skipped else ""))
    if step > start_step or val_loss is None:
        val_loss, val_acc = evaluate()
        best_val = min(best_val, val_loss)
        record({"step": step, "train_loss": "", "val_loss": f"{val_loss:.5f}",
                "val_acc": "" if val_acc is None else f"{val_acc:.4f}", "lr": "", "throughput": "",
                "time_s": f"{time.time() - t0:.2f}"})
    log(f"final val loss {val_loss:.4f} (baseline {task.baseline:.4f})"
        + ("" if val_acc is None else f", accuracy {val_acc:.4f}"))
    if pipe is not None:  # the whole model on rank 0
        whole = pipe.sync()
        if master:
            task.model = whole
    elif layout is not None or cfg.zero >= 2:  # sample with a whole copy of the model on rank 0
        from shardflow.distributed.full_state import full_state_dict

        whole = full_state_dict(raw_model)
        if master:
            task.model = model_class(raw_model.config).to(cfg.device)
            task.model.load_state_dict(whole)
    if master:
        png = _plot(rows, os.path.join(cfg.out, "loss.png"), task.baseline, cfg.task)
        log(f"metrics: {metrics_path}" + (f", plot: {png}" if png else ""))
        if _parameters_finite(task.model):
            task.finish(cfg, log)
        else:
            log("no demo: the parameters are not finite")
    return {"val_loss": val_loss, "val_acc": val_acc, "baseline": task.baseline, "step": step,
            "model": raw_model, "skipped_steps": skipped}


def _layout(cfg: TrainConfig, world: int):
    """``(dp, tp)`` when the run uses global tensors (--tp > 1 or an explicit --dp), else
    None (DistributedDataParallel, or one process). Checked before anything is built."""
    if cfg.tp == 1 and cfg.dp in (0, world):
        return None
    dp = cfg.dp or world // cfg.tp
    if dp * cfg.tp != world:
        raise ConfigError(
            f"--dp {cfg.dp or dp} x --tp {cfg.tp} = {dp * cfg.tp}, but this job has {world} rank(s); "
            f"fix: launch `shardflow run -n {dp * cfg.tp} ...` or choose --dp and --tp whose "
            f"product is {world}")
    return dp, cfg.tp


class _GlobalBatch(nn.Module):
    """Feeds the whole global batch (the same on every rank) to a model whose parameters are
    global: the inputs are laid out ``data_sbp`` (S(0) over the data-parallel ranks)."""

    def __init__(self, model, mesh, data_sbp):
        super().__init__()
        self.module = model
        self._layout = (mesh, data_sbp)

    def forward(self, *inputs):
        from shardflow.distributed import sbp

        mesh, data_sbp = self._layout
        whole = [sbp.broadcast] * mesh.ndim
        return self.module(*(x.to_global(mesh, whole).to_global(sbp=data_sbp) for x in inputs))


_AGREED_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM)  # the last received wins


def _agree(loss: float, bad: bool, signum: int | None, world: int) -> tuple[float, bool, int]:
    """``(mean loss over ranks, any rank bad, stop signal or 0)`` with one SUM all-reduce of
    ``[loss, bad, one flag per stop signal]`` (the inputs themselves in a world of one).
    Ranks' batches are equal slices of the global batch, so the mean of their mean losses
    is the global batch's loss."""
    if world == 1:
        return loss, bad, int(signum or 0)
    a = np.array([loss, float(bad), *(float(signum == s) for s in _AGREED_SIGNALS)], np.float64)
    comm.get_world().all_reduce(a, comm.ReduceOp.SUM)
    got = [int(s) for s, flag in zip(_AGREED_SIGNALS, a[2:]) if flag > 0]
    return float(a[0] / world), bool(a[1] > 0), (got[-1] if got else 0)


def _parameters_finite(model) -> bool:
    return all(bool(np.isfinite(p.array).all()) for p in model.parameters())


def _resume_differences(path: str, ck: dict, cfg: TrainConfig, world: int) -> list[str]:
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


def _fetch(ds, idx):
    getitems = getattr(ds, "__getitems__", None)
    return getitems(idx) if getitems else [ds[i] for i in idx]


_FIELDS = ["step", "train_loss", "val_loss", "val_acc", "lr", "throughput", "time_s"]


def _read_metrics(path):
    if not os.path.isfile(path):
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _write_metrics(path, rows):
    def write(fh):
        import io

        s = io.StringIO()
        w = csv.DictWriter(s, fieldnames=_FIELDS)
        w.writeheader()
        w.writerows(rows)
        fh.write(s.getvalue().encode())

    checkpoint.atomic_write(path, write)


def _prune(folder, keep, protect=None):
    """Remove all but the newest ``keep`` checkpoints, except ``protect`` (the newest one with
    finite parameters: a run that diverged must not delete the state to go back to)."""
    ckpts = sorted(f for f in os.listdir(folder) if f.startswith("ckpt_") and f.endswith(".safetensors"))
    keep_name = os.path.basename(protect) if protect else None
    for f in ckpts[:-keep]:
        if f != keep_name:
            os.remove(os.path.join(folder, f))


def _plot(rows, path, baseline, task):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    tr = [(int(r["step"]), float(r["train_loss"])) for r in rows if r["train_loss"]]
    va = [(int(r["step"]), float(r["val_loss"])) for r in rows if r["val_loss"]]
    fig, ax = plt.subplots(figsize=(7, 4))
    if tr:
        ax.plot(*zip(*tr), label="train loss", alpha=0.7)
    if va:
        ax.plot(*zip(*va), "o-", label="val loss")
    ax.axhline(baseline, color="gray", ls="--", label=f"baseline {baseline:.3f}")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_title(f"shardflow train {task}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "train":
        argv = argv[1:]
    try:
        cfg = resolve_config(argv)
        train(cfg)
    except ConfigError as e:
        print(f"shardflow train: error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ImportError) as e:
        print(f"shardflow train: error: {e}", file=sys.stderr)
        return 2
    except TrainingStopped as e:
        if _config.launch_info().rank == 0:
            print(f"shardflow train: stopped by {signal.Signals(e.signum).name} at step {e.step}; "
                  f"checkpoint {e.path}; continue with --resume", file=sys.stderr, flush=True)
        return 128 + e.signum
    except NonFiniteError as e:
        if _config.launch_info().rank == 0:
            print(f"shardflow train: error: {e}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted without saving the current step; continue with --resume",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
