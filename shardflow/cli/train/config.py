"""The configuration phase of ``shardflow train``: task defaults < ``--config file.yaml``
(keys are the long flag names with ``_``) < command-line flags, resolved into a
:class:`TrainConfig` and checked by :func:`validate` before anything runs. A configuration
that cannot work raises :class:`ConfigError` naming the field, what was got and the fix.
Checks that need the world size (the layout's) come later, in ``layout.py``, still before
anything is built."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from dataclasses import dataclass, field

from shardflow import _config

from ..nonfinite import MODES as NONFINITE_MODES

# the first line of the package docstring: ``shardflow train --help``'s description
DESCRIPTION = "``shardflow train``: train a reference model end to end."

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
    on_nonfinite: str = "raise"
    max_consecutive_skips: int = 10
    # bookkeeping
    eval_interval: int = 250
    eval_iters: int = 20
    log_interval: int = 10
    ckpt_interval: int = 250
    # also save when this many seconds passed since the last save (rank 0's clock decides,
    # the ranks agree on it in the step's all-reduce); for elastic jobs (docs/TRAINING.md)
    ckpt_seconds: float | None = None
    # write checkpoints in a background thread (the loop only waits for the gather and a copy)
    ckpt_async: bool = True
    keep_checkpoints: int = 3
    num_workers: int = 1
    # layout (gpt): dp 0 = every rank not used by tp x pp; dp x tp x pp must be the world size
    dp: int = 0
    tp: int = 1
    pp: int = 1  # pipeline stages (pipeline.py); 1F1B over `microbatches` (0: 2 x pp)
    microbatches: int = 0
    schedule: str = "1f1b"  # pipeline schedule: 1f1b (at most pp micro-batches in flight) or gpipe
    # ZeRO (docs/ZERO.md): 0 off; 1 optimizer state sharded (ZeroRedundancyOptimizer + DDP);
    # 2 also gradients, 3 also parameters (fully_shard, reshard_after_forward False / True)
    zero: int = 0
    # manual (the flags above) or auto: the planner chooses them (cli/plan_train.py, docs/PLANNER.md)
    layout: str = "manual"
    plan_profile: str | None = None  # the planner's machine profile (default planner-profile.json)
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shardflow train", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", choices=TASKS, help="what to train")
    p.add_argument("--config", help="YAML file of options (keys as the flags, with _)")
    for f in dataclasses.fields(TrainConfig):
        if f.name in ("task", "resume", "progress", "hidden", "compile", "ckpt_async"):
            continue
        typ = {"int | None": int, "str | None": str, "float | None": float}.get(str(f.type), None)
        if typ is None:
            typ = {"int": int, "float": float, "str": str}[str(f.type)]
        p.add_argument("--" + f.name.replace("_", "-"), type=typ, default=None, dest=f.name)
    p.add_argument("--hidden", type=int, nargs="+", default=None, help="MLP hidden sizes")
    p.add_argument("--compile", action="store_true", default=None,
                   help="forward and backward through shardflow.compile_step (one process or DDP)")
    p.add_argument("--ckpt-sync", dest="ckpt_async", action="store_false", default=None,
                   help="write checkpoints in the loop instead of a background thread")
    p.add_argument("--resume", action="store_true", default=None,
                   help="continue from the newest checkpoint in --out")
    p.add_argument("--no-progress", dest="progress", action="store_false", default=None,
                   help="no progress bar (log lines instead)")
    return p


def resolve_config(argv: list[str]) -> TrainConfig:
    args = build_parser().parse_args(argv)
    values = dict(TASK_DEFAULTS[args.task])
    if args.config:
        from_file = _read_yaml(args.config)
        check_types(from_file, f"--config {args.config}")
        values.update(from_file)
    flags = {k: v for k, v in vars(args).items() if v is not None and k != "config"}
    check_types(flags, None)
    values.update(flags)
    values["task"] = args.task
    if values.get("out") is None:
        values["out"] = os.path.join("runs", args.task)
    cfg = TrainConfig(**values)
    validate(cfg)
    return cfg


# what a value of each annotated field type may be: (test, what is allowed)
_KINDS = {
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "float": (lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v),
              "a finite number"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "list": (lambda v: isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                                   and x > 0 for x in v),
             "a list of positive integers, e.g. [128, 64]"),
}


def check_types(values: dict, source: str | None) -> None:
    """Refuse a value whose type the field cannot take (a YAML string where a number belongs,
    ``true`` as a step count, ``--lr inf``), naming the key, where it came from, the value
    and what is allowed. ``source``: ``--config FILE`` for the YAML file, None for flags."""
    types = {f.name: str(f.type) for f in dataclasses.fields(TrainConfig)}
    for key, value in values.items():
        if key not in types or key == "task":
            continue
        kind = types[key]
        optional = kind.endswith(" | None")
        if optional and value is None:
            continue
        test, allowed = _KINDS[kind.removesuffix(" | None")]
        if not test(value):
            where = (f"{source}: {key}" if source else f"--{key.replace('_', '-')}")
            also = " or null (the default)" if optional else ""
            raise ConfigError(f"{where}: got {value!r} ({type(value).__name__}); allowed: "
                              f"{allowed}{also}")


def _read_yaml(path: str) -> dict:
    import yaml

    if not os.path.isfile(path):
        raise ConfigError(f"--config: file {path!r} does not exist; fix: give the path of a YAML file")
    with open(path) as fh:
        try:
            data = yaml.safe_load(fh) or {}
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            what = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise ConfigError(f"--config: {path} is not valid YAML{at}: {what}; fix: write one "
                              "`option: value` per line (e.g. `max_steps: 500`)") from None
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
    need(cfg.weight_decay >= 0, "--weight-decay", cfg.weight_decay, "use 0 (off) or a positive number")
    need(0 <= cfg.seed < 2**63, "--seed", cfg.seed, "use an integer in [0, 2**63)")
    need(cfg.sample_tokens >= 0, "--sample-tokens", cfg.sample_tokens, "use 0 (no sample) or more")
    need(cfg.max_corpus_bytes is None or cfg.max_corpus_bytes > 0, "--max-corpus-bytes",
         cfg.max_corpus_bytes, "use a positive number of bytes (default: the whole corpus)")
    need(cfg.warmup_steps >= 0, "--warmup-steps", cfg.warmup_steps, "use 0 or more")
    need(cfg.ckpt_seconds is None or cfg.ckpt_seconds > 0, "--ckpt-seconds", cfg.ckpt_seconds,
         "use a positive number of seconds (or leave it out: --ckpt-interval steps only)")
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
        from .pipeline import check_pipeline_config

        check_pipeline_config(cfg, None, ConfigError)
    need(cfg.zero == 0 or (cfg.tp == 1 and cfg.dp == 0), "--zero", cfg.zero,
         "ZeRO shards over the data-parallel ranks of a plain data-parallel run; drop --tp/--dp "
         "(global-tensor layouts) or use --zero 0")
    need(cfg.layout in ("manual", "auto"), "--layout", cfg.layout, "use manual (the layout flags) or auto (the planner)")
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
