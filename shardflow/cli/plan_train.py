"""``shardflow train gpt --layout auto``: the planner chooses the layout before the job
starts, and the job reports predicted vs measured once it has run.

:func:`auto_layout` (called by ``cli/train/job.py`` before the layout phase): refuses layout
flags given together with ``--layout auto``, joins the process group (rank 0 plans, every
rank takes its choice: ``planner.auto.choose``), builds the task's GPT once on the CPU to
trace it, plans over the ``shardflow train`` entry point (DDP, ZeRO 1-3, global-tensor
dp x tp, pipelines), prints the ranked table and why the winner wins, and returns the
configuration with ``--dp/--tp/--pp/--zero/--microbatches/--schedule`` set to the winner,
plus a :class:`~shardflow.distributed.planner.auto.StepCheck`. :func:`report_after` prints
the prediction against the loop's measured step time (from its last logged throughput) and
the process's peak resident set.
"""

from __future__ import annotations

import dataclasses

from shardflow import _config

__all__ = ["auto_layout", "report_after", "train_flags"]


def train_flags(layout, world: int) -> dict:
    """The TrainConfig fields that run ``layout`` (planner Layout) on ``world`` ranks."""
    plain = layout.tp == 1 and layout.pp == 1
    dp = 0 if plain and (layout.zero or layout.grad_sync == "bucketed") else layout.dp
    if plain and dp == world and world == 1:
        dp = 0
    return dict(dp=dp, tp=layout.tp, pp=layout.pp, zero=layout.zero,
                microbatches=layout.microbatches if layout.pp > 1 else 0,
                schedule=layout.schedule if layout.pp > 1 else "1f1b")


def auto_layout(cfg, log=print):
    """``(cfg, check)``: ``cfg`` itself and None unless ``cfg.layout == "auto"`` (module
    docstring). Raises ConfigError for a configuration the planner cannot serve."""
    if cfg.layout == "manual":
        return cfg, None
    from .train.config import ConfigError, validate  # here: train's job imports this module

    if cfg.task != "gpt":
        raise ConfigError(f"--layout auto: got task {cfg.task!r}; fix: the planner lays out the gpt "
                          "task (use --layout manual for the image tasks)")
    given = [f for f, v in (("--dp", cfg.dp), ("--tp", cfg.tp != 1), ("--pp", cfg.pp != 1),
                            ("--zero", cfg.zero), ("--microbatches", cfg.microbatches)) if v]
    if given:
        raise ConfigError(f"--layout auto chooses the layout itself, but {', '.join(given)} "
                          "were given; fix: drop them, or use --layout manual")
    from shardflow.distributed.planner import report
    from shardflow.distributed.planner.auto import StepCheck, choose, lm_spec, resolve_profile
    from shardflow.distributed.planner.search import explain

    world = _config.launch_info().world_size
    comm = None
    if world > 1:
        import shardflow.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("nccl" if cfg.device == "cuda" else None)
        from shardflow import comm as _comm

        comm = _comm.get_world()
    rank = comm.rank if comm is not None else 0
    spec = model = prof = None
    try:
        prof = resolve_profile(cfg.plan_profile)
    except (FileNotFoundError, ValueError) as e:
        raise ConfigError(f"--plan-profile: {e}") from None
    if rank == 0:
        import shardflow as sf
        import shardflow.data as sfdata
        from shardflow.models import GPT, GPTConfig

        corpus = sfdata.TextCorpus(cfg.data, block_size=cfg.block_size, max_bytes=cfg.max_corpus_bytes)
        rng = sf.get_rng_state()
        model = GPT(GPTConfig(block_size=cfg.block_size, vocab_size=corpus.vocab_size, n_layer=cfg.n_layer,
                              n_head=cfg.n_head, n_embd=cfg.n_embd, dropout=cfg.dropout))
        sf.set_rng_state(rng)  # planning must not move the run's random stream
        spec = lm_spec(model, cfg.batch_size, entry="train")
    try:
        layout, est, res = choose(spec, world, prof, model=model, comm=comm)
    except ValueError as e:
        raise ConfigError(f"--layout auto: {e}") from None
    if res is not None:
        log(f"--layout auto on {world} rank(s), profile {prof.label()}\n{report.table(res, top=8)}\n"
            f"{explain(res)}\nchosen: {layout.describe()} ("
            + (layout.flags() or ("DistributedDataParallel: no layout flags" if world > 1 else "one process"))
            + ")")
    cfg = dataclasses.replace(cfg, **train_flags(layout, world))
    validate(cfg)
    return cfg, StepCheck(est, say=log if rank == 0 else None)


def report_after(check, loop, cfg) -> None:
    """Print (rank 0) the prediction against the loop's measured step time (its last logged
    throughput) and this rank's model states (parameter and optimizer-state arrays)."""
    if check is None or check.say is None or not loop.tps:
        return
    seconds = cfg.batch_size * cfg.block_size / loop.tps
    arrays = {id(p.array): p.array.nbytes for p in loop.raw_model.parameters()}
    for st in loop.optimizer.state.values():
        for v in st.values():
            a = getattr(v, "array", None)
            if a is not None:
                arrays[id(a)] = a.nbytes
    check.say(check.report(measured=seconds))
    mp = check.predicted.memory_parts
    check.say(f"planner check: model states on this rank measured {sum(arrays.values()) / 2**20:.1f} MiB "
              f"(parameters + optimizer state), predicted {(mp['params'] + mp['optimizer']) / 2**20:.1f} MiB; "
              "`shardflow bench planner` measures the whole peak")
