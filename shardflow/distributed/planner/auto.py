"""``layout="auto"``: the planner's choice for a job about to start, agreed by every rank,
and the check of its prediction once the job has run a few steps.

* :func:`lm_spec` -- the :class:`~.cost.RunSpec` of a language model with nanoGPT's
  interface (``model(idx, targets) -> (logits, loss)``, ``model.config.block_size`` and
  ``vocab_size``): traced on random token batches of one and two sequences.
* :func:`choose` -- rank 0 plans (``search.plan``) and broadcasts the winner, so that every
  rank lays the model out the same way even if their traces differed in a byte of memory.
* :class:`StepCheck` -- fed each step's wall time, it prints predicted vs measured step time
  and memory after ``after`` steps. Memory is measured on one step (not timed): the
  parameter and optimizer-state arrays alive before it plus the ``tracemalloc`` peak of what
  the step allocates; where no step can be wrapped (``shardflow train``), the model states
  and the process's peak resident set are reported instead.
"""

from __future__ import annotations

import resource
import statistics

import numpy as np

from .cost import Estimate, RunSpec
from .layout import Layout
from .search import PlanResult, model_shape, plan, spec_for_model

__all__ = ["lm_spec", "choose", "StepCheck", "peak_rss_bytes", "resolve_profile", "parallelize_choice",
           "state_bytes"]

DEFAULT_PROFILE = "planner-profile.json"


def peak_rss_bytes() -> int:
    """This process's peak resident set so far (bytes; Linux reports kilobytes)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def resolve_profile(profile):
    """A :class:`~.profile.Profile` from a Profile, a path, a built-in name, or None (the
    ``planner-profile.json`` that ``shardflow plan calibrate`` writes in the current folder)."""
    import os

    from .profile import Profile, builtin_profiles, load_profile

    if isinstance(profile, Profile):
        return profile
    if profile is None:
        if not os.path.exists(DEFAULT_PROFILE):
            raise FileNotFoundError(
                f"the planner needs a profile of this machine and found no {DEFAULT_PROFILE} here; "
                f"fix: run `shardflow plan calibrate` (it writes {DEFAULT_PROFILE}), or pass a profile "
                f"file (built-in, simulated only: {', '.join(builtin_profiles())})")
        profile = DEFAULT_PROFILE
    return load_profile(profile)


def lm_spec(model, batch_size: int, *, entry: str = "parallelize", mem_per_rank=None,
            optimizer: str = "adamw", seed: int = 0) -> RunSpec:
    """The RunSpec of a nanoGPT-style language model (module docstring)."""
    from ...autograd.tensor import Tensor

    cfg = model.config
    T, V = cfg.block_size, cfg.vocab_size
    rng = np.random.default_rng(seed)

    def make_inputs(n):
        return (Tensor(rng.integers(0, V, (n, T))), Tensor(rng.integers(0, V, (n, T))))

    return spec_for_model(model, batch_size, make_inputs, lambda m, inp: m(*inp)[1],
                          tokens_per_sample=T, optimizer=optimizer, entry=entry,
                          mem_per_rank=mem_per_rank)


def choose(spec: RunSpec, world: int, profile, model=None, comm=None,
           **plan_options) -> tuple[Layout, Estimate, PlanResult | None]:
    """``(layout, its estimate, the whole plan on rank 0 / None elsewhere)``: rank 0 plans,
    the choice is broadcast over ``comm`` (the world communicator; None: a world of one)."""
    rank = comm.rank if comm is not None else 0
    res = None
    choice = None
    if rank == 0:
        res = plan(spec, world, profile, model_shape(model) if model is not None else
                   plan_options.pop("shape"), **plan_options)
        w = res.winner
        if w is None:
            choice = ("error", res.notes[0] if res.notes else "no layout fits")
        else:
            choice = ("ok", w)
    if comm is not None and comm.size > 1:
        choice = comm.broadcast_object(choice, src=0)
    if choice[0] == "error":
        raise ValueError(f"layout='auto': {choice[1]}")
    est = choice[1]
    return est.layout, est, res


class StepCheck:
    """Predicted vs measured (module docstring)."""

    def __init__(self, predicted: Estimate, after: int = 5, say=print, memory_at: int = 3):
        self.predicted, self.after, self.say = predicted, after, say
        self.times: list[float] = []
        self.rss0 = peak_rss_bytes()
        self.done = False
        self.memory_at = memory_at  # the step whose memory is measured (not timed)
        self.calls = 0
        self.memory: float | None = None

    def wants_memory(self) -> bool:
        """True for the one step to run under :meth:`measure_memory` (and not be timed)."""
        self.calls += 1
        return self.memory is None and self.calls == self.memory_at

    def measure_memory(self, step, state_bytes: float):
        """Run ``step()`` with ``tracemalloc`` on: the peak of what it allocates (activations,
        gradients, temporaries) plus ``state_bytes`` (parameters and optimizer state alive
        before it) is this rank's measured peak. Returns what ``step`` returns."""
        import tracemalloc

        was = tracemalloc.is_tracing()
        if not was:
            tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        try:
            out = step()
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            if not was:
                tracemalloc.stop()
        self.memory = float(state_bytes) + max(0, peak - base)
        return out

    def observe(self, seconds: float) -> str | None:
        """Record one step's wall time; after ``after`` steps, return (and say) the report."""
        if self.done:
            return None
        self.times.append(seconds)
        if len(self.times) < self.after:
            return None
        self.done = True
        text = self.report()
        if self.say is not None:
            self.say(text)
        return text

    def report(self, measured: float | None = None) -> str:
        """The comparison; ``measured`` seconds per step, else the median of the observed
        steps after the first (which pays for first calls)."""
        e = self.predicted
        steady = self.times[1:] or self.times
        meas = measured if measured is not None else statistics.median(steady)
        how = f"median of {len(steady)} steps; " if measured is None else ""
        text = (f"planner check ({e.layout.describe()}): step time predicted {e.step_time * 1e3:.1f} ms, "
                f"measured {meas * 1e3:.1f} ms ({how}prediction {(e.step_time / meas - 1) * 100:+.0f}%); "
                f"memory per rank predicted peak {e.memory / 2**20:.1f} MiB")
        if self.memory is not None:
            return text + (f", measured {self.memory / 2**20:.1f} MiB (parameters and optimizer state "
                           f"+ the traced peak of a step; prediction {(e.memory / self.memory - 1) * 100:+.0f}%)")
        peak = peak_rss_bytes()
        return text + (f", this process's peak resident set {peak / 2**20:.1f} MiB (it also holds the "
                       "interpreter, libraries and MPI buffers)")


def state_bytes(model, optimizer) -> float:
    """Bytes of this rank's parameter arrays and optimizer-state arrays (each array once)."""
    arrays = {}
    for p in model.parameters():
        arrays[id(p.array)] = p.array.nbytes
    for opt in (optimizer, getattr(optimizer, "optim", None), getattr(optimizer, "_optimizer", None)):
        for st in (getattr(opt, "state", None) or {}).values() if opt is not None else ():
            for v in st.values() if isinstance(st, dict) else ():
                a = getattr(v, "array", None)
                if a is not None:
                    arrays[id(a)] = a.nbytes
    return float(sum(arrays.values()))


def parallelize_choice(model, comm, batch_size, profile, mem_per_rank=None, can_pipeline=True,
                       say=print) -> tuple[dict, StepCheck]:
    """``parallelize(layout="auto")``: ``(dict(dp=, tp=, pp=, zero=, n_microbatches=,
    schedule=), StepCheck)``; rank 0 prints the ranked table and why the winner wins."""
    from . import report
    from .search import explain

    if not batch_size:
        raise ValueError("parallelize(layout='auto') needs batch_size= (the global batch): the "
                         "planner costs the step of that batch")
    cfg = getattr(model, "config", None)
    if not (hasattr(cfg, "block_size") and hasattr(cfg, "vocab_size")):
        raise ValueError("parallelize(layout='auto') plans language models with nanoGPT's interface "
                         "(model.config.block_size and vocab_size, model(idx, targets) -> (logits, loss)); "
                         "for another model call shardflow.distributed.planner.plan with "
                         "spec_for_model(...) and pass the winner's dp/tp/pp/zero")
    world = comm.size if comm is not None else 1
    prof = resolve_profile(profile)
    spec = lm_spec(model, batch_size, entry="parallelize",
                   mem_per_rank=mem_per_rank)
    allow = None if can_pipeline else (lambda L: "no split= given for pipeline stages" if L.pp > 1 else None)
    layout, est, res = choose(spec, world, prof, model=model, comm=comm, allow=allow)
    if res is not None and say is not None:
        say(f"layout='auto' on {world} rank(s), profile {prof.label()}\n{report.table(res, top=8)}\n"
            f"{explain(res)}")
    args = dict(dp=layout.dp, tp=layout.tp, pp=layout.pp, zero=layout.zero,
                n_microbatches=layout.microbatches if layout.pp > 1 else None,
                schedule=layout.schedule if layout.pp > 1 else "1f1b")
    return args, StepCheck(est, say=say)
