"""The planner: every valid layout of a world size, costed, ranked, and the winner explained.

:func:`plan` enumerates dp x tp x pp x ZeRO stage x micro-batches x recomputation
(``layout.enumerate_layouts``; the refused ones are kept with their reason), estimates each
(``cost.estimate``), drops from first place what does not fit ``mem_per_rank``, and ranks
the rest by predicted step time. :func:`explain` says why the winner beats the runner-up and
plain data parallelism, term by term (compute, exposed communication, bubble, optimizer,
memory). :func:`spec_for_model` makes the :class:`~.cost.RunSpec` of a model that exists
here (traced at one and two samples: ``scaling.trace_live``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cost import Estimate, RunSpec, estimate
from .layout import Layout, ModelShape, enumerate_layouts

__all__ = ["PlanResult", "plan", "explain", "spec_for_model", "model_shape"]


@dataclass
class PlanResult:
    estimates: list  # ranked: fitting ones by step time, then those that do not fit
    refused: list  # [(Layout, reason)]
    profile: object
    spec: RunSpec
    world: int
    notes: list = field(default_factory=list)

    @property
    def winner(self) -> Estimate | None:
        return next((e for e in self.estimates if e.fits), None)

    def find(self, layout: Layout) -> Estimate | None:
        for e in self.estimates:
            if _same(e.layout, layout):
                return e
        return None


def _same(a: Layout, b: Layout) -> bool:
    keys = ("dp", "tp", "pp", "zero", "microbatches", "recompute", "schedule", "virtual")
    return all(getattr(a, k) == getattr(b, k) for k in keys) and (
        not a.grad_sync or not b.grad_sync or a.grad_sync == b.grad_sync)


def model_shape(model) -> ModelShape:
    """Layer and head counts from ``model.config`` (GPT's names, BERT's too), else none."""
    cfg = getattr(model, "config", None)
    n_layer = getattr(cfg, "n_layer", None) or getattr(cfg, "num_hidden_layers", None)
    n_head = getattr(cfg, "n_head", None) or getattr(cfg, "num_attention_heads", None)
    return ModelShape(n_layer, n_head)


def plan(spec: RunSpec, world: int, profile, shape: ModelShape, *, microbatches=None,
         recompute=(False,), schedules=("1f1b",), zero=(0, 1, 2, 3), virtual=(2,),
         allow=None) -> PlanResult:
    """Cost every valid layout of ``world`` ranks (module docstring); ``allow(layout) ->
    reason or None`` refuses more (e.g. pipelines when no split function was given)."""
    valid, refused = enumerate_layouts(world, shape, spec.batch_size, spec.entry,
                                       microbatches=microbatches, recompute=recompute,
                                       schedules=schedules, zero=zero, virtual=virtual)
    if allow is not None:
        keep = []
        for L in valid:
            why = allow(L)
            (refused.append((L, why)) if why else keep.append(L))
        valid = keep
    if not valid:
        why = "; ".join(sorted({r for _, r in refused}))[:600]
        raise ValueError(f"plan: no valid layout of {world} rank(s) for this model and batch "
                         f"{spec.batch_size} ({why}); change the rank count or the batch size")
    ests = [estimate(spec, L, profile) for L in valid]
    ests.sort(key=lambda e: (not e.fits, e.step_time))
    res = PlanResult(ests, refused, profile, spec, world)
    if res.winner is None:
        res.notes.append(f"no layout fits {spec.mem_per_rank / 2**30:.2f} GiB per rank; the "
                         "smallest needs " + f"{min(e.memory for e in ests) / 2**30:.2f} GiB")
    return res


def explain(res: PlanResult) -> str:
    """Why the winner wins (module docstring)."""
    w = res.winner
    if w is None:
        return res.notes[0] if res.notes else "no layout fits"
    lines = [f"winner: {w.layout.describe()} -- {w.step_time * 1e3:.1f} ms per step"]
    others = [e for e in res.estimates if e is not w and e.fits]
    if others:
        lines.append("  vs " + _versus(w, others[0]))
    plain = next((e for e in res.estimates if e.layout.tp == 1 and e.layout.pp == 1
                  and e.layout.zero == 0 and e is not w and (not others or e is not others[0])), None)
    if plain is not None and res.world > 1:
        lines.append("  vs plain data parallelism " + _versus(w, plain))
    faster = [e for e in res.estimates if not e.fits and e.step_time < w.step_time]
    if faster:
        f = faster[0]
        lines.append(f"  {f.layout.describe()} would be faster ({f.step_time * 1e3:.1f} ms) but needs "
                     f"{f.memory / 2**30:.2f} GiB per rank (limit {res.spec.mem_per_rank / 2**30:.2f} GiB)")
    return "\n".join(lines)


def _versus(w: Estimate, o: Estimate) -> str:
    d = o.step_time - w.step_time
    terms = [("compute", o.compute - w.compute),
             ("exposed communication", o.comm_exposed - w.comm_exposed),
             ("optimizer", o.optimizer - w.optimizer)]
    if o.layout.pp > 1 or w.layout.pp > 1:
        terms.append(("pipeline bubble", o.bubble_time - w.bubble_time))
    if o.time_shared or w.time_shared:
        terms.append(("cores time-shared", o.time_shared - w.time_shared))
    terms.sort(key=lambda t: -abs(t[1]))
    parts = [f"{name} {'+' if v >= 0 else '-'}{abs(v) * 1e3:.1f} ms" for name, v in terms if abs(v) > 1e-5][:3]
    pct = d / w.step_time * 100 if w.step_time else 0.0
    return (f"{o.layout.describe()} ({o.step_time * 1e3:.1f} ms, {pct:+.0f}%): "
            + (", ".join(parts) if parts else "the same terms")
            + (f"; memory {o.memory / 2**20:.0f} vs {w.memory / 2**20:.0f} MiB" if abs(o.memory - w.memory) > 2**20 else ""))


def spec_for_model(model, batch_size: int, make_inputs, step_loss, *, tokens_per_sample: int = 1,
                   optimizer: str = "adamw", entry: str = "parallelize", mem_per_rank=None,
                   tp_plan=None, precision: str = "fp32") -> RunSpec:
    """The RunSpec of an existing model (traced at one and two samples).
    ``make_inputs(n) -> tuple of tensors`` (a batch of ``n`` samples),
    ``step_loss(model, inputs) -> loss``."""
    from .scaling import trace_live

    if tp_plan is None and hasattr(model, "tensor_parallel_plan"):
        tp_plan = model.tensor_parallel_plan()
    mt = trace_live(model, make_inputs, step_loss)
    return RunSpec(mt, batch_size, tokens_per_sample, precision, optimizer, tp_plan, entry, mem_per_rank)
