"""``shardflow train``: train a reference model end to end.

    shardflow train gpt                     # char-level GPT on the stdlib's own source
    shardflow train mnist --data DIR        # LeNet-5 (or --model mlp) on MNIST IDX files
    shardflow train digits                  # MLP on scikit-learn's digits
    shardflow run -n 2 shardflow train gpt  # the same, data parallel over 2 ranks

Configuration: task defaults < ``--config file.yaml`` (keys are the long flag names with
``_``) < command-line flags. A configuration that cannot work is refused before anything
runs, naming the field and the fix.

Every run writes into ``--out`` (default ``runs/<task>``): ``ckpt_<step>.safetensors``
checkpoints (model, optimizer, RNG state, step, config; the newest ``--keep-checkpoints``
kept), ``metrics.csv`` and ``loss.png`` (when matplotlib is installed). ``--resume``
continues from the newest checkpoint that loads. Resuming reproduces the uninterrupted
run exactly: the batch of step ``s`` on rank ``r`` is drawn from ``seed, s, r`` alone
(``StepBatchSampler``), the learning rate is a pure function of the step, and the RNG
state travels in the checkpoint.

Under ``shardflow run -n N`` (world size > 1) the model is wrapped in
``DistributedDataParallel``, each rank draws its own batches, and only rank 0 prints and
writes files.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import shardflow as sf
import shardflow.data as sfdata
import shardflow.nn as nn
import shardflow.optim as optim
from shardflow import _config, checkpoint, models

TASKS = ("gpt", "mnist", "digits")


class ConfigError(ValueError):
    """An impossible configuration, found before training starts."""


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
    # bookkeeping
    eval_interval: int = 250
    eval_iters: int = 20
    log_interval: int = 10
    ckpt_interval: int = 250
    keep_checkpoints: int = 3
    num_workers: int = 1
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
        if f.name in ("task", "resume", "progress", "hidden"):
            continue
        typ = {"int | None": int, "str | None": str}.get(str(f.type), None)
        if typ is None:
            typ = {"int": int, "float": float, "str": str}[str(f.type)]
        p.add_argument("--" + f.name.replace("_", "-"), type=typ, default=None, dest=f.name)
    p.add_argument("--hidden", type=int, nargs="+", default=None, help="MLP hidden sizes")
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
                 "ckpt_interval", "keep_checkpoints", "block_size", "n_layer", "n_head", "n_embd"):
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
    if cfg.data is not None:
        need(os.path.isdir(cfg.data), "--data", cfg.data, "give an existing folder with the data files")
    if cfg.task == "mnist":
        need(cfg.data is not None or _config.data_root() is not None, "--data", None,
             "pass --data DIR, the folder with train-images-idx3-ubyte[.gz] etc.")


# ----------------------------------------------------------------------------- helpers
class StepBatchSampler(sfdata.Sampler):
    """Batches for steps ``start .. stop-1``: step ``s`` on rank ``r`` takes ``batch_size``
    indices drawn uniformly (with replacement) from ``Generator(seed, s, r)``, so any step's
    batch is known without replaying the ones before it (what exact resumption needs)."""

    def __init__(self, n: int, batch_size: int, seed: int, start: int, stop: int, rank: int = 0):
        self.n, self.batch_size, self.seed = n, batch_size, seed
        self.start, self.stop, self.rank = start, stop, rank

    def __iter__(self):
        for s in range(self.start, self.stop):
            rng = np.random.default_rng([self.seed, s, self.rank])
            yield rng.integers(0, self.n, size=self.batch_size).tolist()

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
        x, y = batch
        _, loss = model(x, y)
        return loss, None

    def optimizer(self, cfg):
        return self.model.configure_optimizers(cfg.weight_decay, cfg.lr, betas=(0.9, 0.99))

    def extra_state(self):
        return {"vocab": "".join(self.corpus.itos) if self.corpus.itos else None}

    def finish(self, cfg, log):
        prompt = "def "
        idx = sf.tensor(self.corpus.encode(prompt)[None])
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
        x, y = batch
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
    """Run the job described by ``cfg``; returns final metrics (also used by tests)."""
    li = _config.launch_info()
    rank, world = li.rank, li.world_size
    if world > 1:
        import shardflow.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group()
        rank, world = dist.get_rank(), dist.get_world_size()
    master = rank == 0

    def log(msg):
        if master:
            print(msg, flush=True)

    sf.manual_seed(cfg.seed)
    task = GPTTask(cfg) if cfg.task == "gpt" else ImageTask(cfg)
    raw_model = task.model
    optimizer = task.optimizer(cfg)
    start_step, best_val = 0, float("inf")
    if master:
        os.makedirs(cfg.out, exist_ok=True)

    if cfg.resume:
        path = checkpoint.find_latest(cfg.out)
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
            log(f"resumed from {path} at step {start_step}")
            if start_step >= cfg.max_steps:
                log(f"checkpoint step {start_step} >= --max-steps {cfg.max_steps}: nothing to do")

    model = raw_model
    if world > 1:
        from shardflow.nn.parallel import DistributedDataParallel

        sfdata.note_data_parallel(True)
        model = DistributedDataParallel(raw_model)

    n_params = raw_model.num_parameters()
    flops = raw_model.flops_per_sample(training=True)
    log(f"task {cfg.task}: {type(raw_model).__name__} with {n_params:,} parameters, "
        f"{flops / 1e6:.1f} MFLOP per training sample; world size {world}; "
        f"baseline loss (unigram / uniform) {task.baseline:.4f}")

    sampler = StepBatchSampler(len(task.train_ds), cfg.batch_size, cfg.seed, start_step, cfg.max_steps, rank)
    # its own generator: worker seeds must not consume the default generator, whose state
    # (dropout masks) travels in the checkpoint
    loader = sfdata.DataLoader(task.train_ds, batch_sampler=sampler, num_workers=cfg.num_workers,
                               timeout=120 if cfg.num_workers else 0,
                               generator=sf.Generator().manual_seed(cfg.seed))
    val_batches = list(StepBatchSampler(len(task.val_ds), cfg.batch_size, cfg.seed + 1, 0,
                                        cfg.eval_iters, 0))  # fixed val batches: comparable evals

    def evaluate():
        model.eval()
        losses, accs = [], []
        with sf.no_grad():
            for idx in val_batches:
                batch = sfdata.default_collate(_fetch(task.val_ds, idx))
                loss, acc = task.loss(raw_model, batch)
                losses.append(loss.item())
                if acc is not None:
                    accs.append(acc)
        model.train()
        return float(np.mean(losses)), (float(np.mean(accs)) if accs else None)

    metrics_path = os.path.join(cfg.out, "metrics.csv")
    rows = _read_metrics(metrics_path) if (cfg.resume and start_step > 0) else []
    rows = [r for r in rows if int(r["step"]) < start_step or (int(r["step"]) == start_step and r["train_loss"])]

    def record(row):
        rows.append(row)
        if master:
            _write_metrics(metrics_path, rows)

    def save(step):
        if not master:
            return
        state = {"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(),
                 "rng": sf.get_rng_state(), "step": step, "best_val": best_val,
                 "config": dataclasses.asdict(cfg), **task.extra_state()}
        sf.save(state, os.path.join(cfg.out, f"ckpt_{step:07d}.safetensors"))
        _prune(cfg.out, cfg.keep_checkpoints)

    bar = None
    if master and cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.max_steps, initial=start_step, desc=f"train {cfg.task}", unit="step",
                   dynamic_ncols=True, file=sys.stderr)
    model.train()
    t0, last_t, last_step = time.time(), time.time(), start_step
    step, loss_val, val_loss, val_acc, tps = start_step, float("nan"), None, None, 0.0
    it = iter(loader)
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
        loss, _ = task.loss(model, batch)
        loss.backward()
        if cfg.grad_clip > 0:
            nn.utils.clip_grad_norm_(raw_model.parameters(), cfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        loss_val = loss.item()
        if step % cfg.log_interval == 0 or step == cfg.max_steps:
            now = time.time()
            tps = (step - last_step) * task.tokens_per_batch(cfg) * world / max(now - last_t, 1e-9)
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
    if bar is not None:
        bar.close()
    if step > start_step or val_loss is None:
        val_loss, val_acc = evaluate()
        best_val = min(best_val, val_loss)
        record({"step": step, "train_loss": "", "val_loss": f"{val_loss:.5f}",
                "val_acc": "" if val_acc is None else f"{val_acc:.4f}", "lr": "", "throughput": "",
                "time_s": f"{time.time() - t0:.2f}"})
    log(f"final val loss {val_loss:.4f} (baseline {task.baseline:.4f})"
        + ("" if val_acc is None else f", accuracy {val_acc:.4f}"))
    if master:
        png = _plot(rows, os.path.join(cfg.out, "loss.png"), task.baseline, cfg.task)
        log(f"metrics: {metrics_path}" + (f", plot: {png}" if png else ""))
        task.finish(cfg, log)
    return {"val_loss": val_loss, "val_acc": val_acc, "baseline": task.baseline, "step": step,
            "model": raw_model}


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


def _prune(folder, keep):
    ckpts = sorted(f for f in os.listdir(folder) if f.startswith("ckpt_") and f.endswith(".safetensors"))
    for f in ckpts[:-keep]:
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
    except KeyboardInterrupt:
        print("\ninterrupted; continue with --resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
