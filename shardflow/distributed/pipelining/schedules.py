"""Pipeline schedules with PyTorch's names: ``ScheduleGPipe``, ``Schedule1F1B``,
``ScheduleInterleaved1F1B``; ``schedule.step(x, target=y, losses=[])``.

``step`` cuts the batch into ``n_microbatches`` chunks along dim 0 (``torch.chunk``'s
rule): the first stage's rank passes the input, the last stage's rank the target (and a
``losses`` list, which receives each micro-batch's loss); other ranks call ``step()``.
Each rank then runs its list of actions, ``F(stage, mb)`` / ``B(stage, mb)``:

* **GPipe**: all forwards, then all backwards (in the same micro-batch order). A stage holds
  the activations of all ``m`` micro-batches at the turn.
* **1F1B** (PipeDream-flush): rank ``r`` of ``p`` runs ``p - r - 1`` warm-up forwards, then
  alternates one forward and one backward, then drains the backwards: at most ``p - r``
  micro-batches in flight, so activation memory is bounded by ``p`` and not ``m``. Same
  bubble as GPipe, ``(p - 1) / (m + p - 1)`` of the step for equal stage times.
* **Interleaved 1F1B** (Megatron): each rank holds ``v`` stages (``s = k * p + r``); forwards
  go in groups of ``p`` micro-batches through chunk 0, 1, .., ``v - 1``; backwards through
  the chunks in reverse; warm-up ``(p - r - 1) * 2 + (v - 1) * p`` forwards. The bubble
  shrinks to ``(p - 1) / (v * m + p - 1)`` at the cost of ``v`` times the messages;
  ``m`` must be a multiple of ``p``.

Communication: every rank places all ranks' action lists on one timeline of unit steps (a
greedy run: an action goes at the first step after its input was produced; the same table on
every rank, PyTorch's ``pipeline_order``). At each step a rank runs its action, then posts, as
one batch (``Communicator.batch_p2p``, ``dist.batch_isend_irecv``'s), the send of what it
produced and the receives of what its neighbours produce at that step, e.g. 1F1B's "send my
activation / receive the next gradient". NCCL's send/recv run in order on one stream and a
send may wait until the peer posts its receive, so two neighbours that each send before they
receive deadlock; in a batch (one ``groupStart``/``groupEnd``) the pair progresses together,
and since every send of a step has its receive in the peer's batch of that step, no schedule
can deadlock. Activations first exchange their host headers (shape, dtype) in a batch of their
own. On MPI the ops are non-blocking anyway; the results are the same.

After the last backward: gradients are divided by ``m`` (``scale_grads=True``, PyTorch's
default: the step's gradient is that of the mean micro-batch loss, i.e. of the full-batch
mean loss for equal chunks), shared parameters' gradients are summed between the stages
that hold them (one all-reduce on a two-rank group per tied parameter), and with a
``dp_group`` each stage's gradients are averaged over its data-parallel replicas by the
shared gradient reducer (``shardflow.nn.parallel.reducer.Reducer``, its after-backward form:
one ``all_reduce(AVG)`` per bucket of the stage's gradients; a parameter the step did not
reach contributes zeros). With
tensor parallelism inside the stages (``PipelineStage(tp_mesh=)``) these act on each rank's
shards: the pipeline and data-parallel groups are lines of the ``("pp", "dp", "tp")`` mesh at
a fixed TP index, so they pair matching shards.

Timing: ``schedule.last_timing`` has the step's wall time and the time this rank spent in
forward/backward compute (not waiting on receives); ``1 - busy / wall`` is the measured
bubble (``shardflow bench pipeline``).
"""

from __future__ import annotations

import time

import numpy as np

from ...autograd.tensor import Tensor
from ...backend.xp import get_array_module
from ...nn.parallel.reducer import Reducer
from .stage import PipelineStage

__all__ = ["PipelineScheduleSingle", "PipelineScheduleMulti", "ScheduleGPipe", "Schedule1F1B",
           "ScheduleInterleaved1F1B", "ScheduleLoopedBFS", "ScheduleInterleavedZeroBubble",
           "ScheduleZBVZeroBubble", "ScheduleDualPipeV", "get_schedule_class", "bubble_fraction"]


def bubble_fraction(p: int, m: int, v: int = 1) -> float:
    """The analytic idle share of a step: ``(p - 1) / (v * m + p - 1)``."""
    return (p - 1) / (v * m + p - 1)


def _chunks(t, m: int) -> list:
    if t is None:
        return [None] * m
    arr = t.array if isinstance(t, Tensor) else np.asarray(t)
    if arr.shape[0] < m:
        raise ValueError(f"a batch of {arr.shape[0]} rows cannot be cut into {m} micro-batches; "
                         f"use n_microbatches <= {arr.shape[0]}")
    # row slices (equal to np.array_split's when m divides the rows), copied on the batch's
    # own device: a GPU batch stays on the GPU
    xp = get_array_module(arr)
    return [Tensor(xp.ascontiguousarray(a)) for a in _torch_chunk(arr, m)]


def _torch_chunk(arr, m):
    size = -(-arr.shape[0] // m)
    parts = [arr[i:i + size] for i in range(0, arr.shape[0], size)]
    if len(parts) != m:
        raise ValueError(f"torch.chunk of {arr.shape[0]} rows gives {len(parts)} chunks, not "
                         f"n_microbatches={m}; use a batch divisible by {m}")
    return parts


def _zero_grad(p) -> Tensor:
    """A zero gradient for a parameter the step did not reach (the collective still needs its
    buffer); for a global parameter (TP inside the stage) a global tensor of its grad layout."""
    g = Tensor(get_array_module(p.array).zeros_like(p.array))  # on the parameter's device
    if p._spec is not None:
        g._spec = p._spec.grad_spec()
    return g



def gpipe_actions(s: int, m: int) -> list:
    """GPipe on stage (= rank) ``s``: all ``m`` forwards, then all backwards."""
    return [("F", s, i) for i in range(m)] + [("B", s, i) for i in range(m)]


def one_f_one_b_actions(s: int, p: int, m: int) -> list:
    """1F1B on stage (= rank) ``s`` of ``p``: warm-up forwards, then one forward / one
    backward, then the remaining backwards."""
    warm = min(p - s - 1, m)
    acts = [("F", s, i) for i in range(warm)]
    for i in range(m - warm):
        acts += [("F", s, warm + i), ("B", s, i)]
    return acts + [("B", s, i) for i in range(m - warm, m)]


def greedy_timeline(acts: list, num_stages: int, name: str = "pipeline schedule") -> list:
    """Every rank's action list ``acts[r]`` placed on one timeline of unit steps:
    ``[{rank: action}]``, each rank's next action at the first step after the one at which
    its input was produced (see ``_Schedule._timeline``; the planner's replay uses it too)."""
    p = len(acts)
    pos, done_at, steps = [0] * p, {}, []
    while any(pos[r] < len(acts[r]) for r in range(p)):
        t, step = len(steps), {}
        for r in range(p):
            if pos[r] < len(acts[r]):
                kind, s, mb = acts[r][pos[r]]
                need = (("F", s - 1, mb) if s > 0 else None) if kind == "F" else \
                    (("B", s + 1, mb) if s < num_stages - 1 else ("F", s, mb))
                if need is None or done_at.get(need, t) < t:
                    step[r] = (kind, s, mb)
        if not step:
            raise RuntimeError(f"{name}: the ranks' action lists deadlock at positions {pos}")
        for r, a in step.items():
            done_at[a] = t
            pos[r] += 1
        steps.append(step)
    return steps

class _Schedule:
    def __init__(self, stages: list, n_microbatches: int, loss_fn=None, scale_grads: bool = True):
        if n_microbatches < 1:
            raise ValueError(f"n_microbatches must be >= 1, got {n_microbatches}")
        self.stages = sorted(stages, key=lambda s: s.stage_index)
        self.n_microbatches = int(n_microbatches)
        self.loss_fn = loss_fn
        self.scale_grads = scale_grads
        self.group = self.stages[0].group
        self.p = self.group.size
        self.last_timing = {}
        self._timeline_cache = None  # depends on p, v and m only: made at the first step
        self._tied_groups = self._make_tied_groups()
        self._dp_reducers: dict = {}  # stage index -> its gradient reducer over dp_group
        if any(s.is_last for s in self.stages) and loss_fn is None:
            raise ValueError("the last stage needs loss_fn to run backward; pass "
                             "loss_fn=lambda output, target: ...")

    # -------------------------------------------------------------- tied parameters
    def _make_tied_groups(self) -> dict:
        """One two-rank group per pair of pipeline ranks sharing parameters. ``new_group``
        is collective over the pipeline group, so every rank walks the same sorted pairs
        (each stage knows the pairs from the Pipe, which every rank built identically)."""
        pairs = set()
        for s in self.stages:
            for _, other in s.tied:
                a, b = sorted((s.stage_index % self.p, other % self.p))
                if a != b:
                    pairs.add((a, b))
        all_pairs = self.group.all_gather_object(sorted(pairs))
        union = sorted({tuple(x) for lst in all_pairs for x in lst})
        groups = {}
        for pair in union:
            g = self.group.new_group(list(pair))
            if g is not None:
                groups[pair] = g
        return groups

    def _sync_tied(self) -> None:
        for s in self.stages:
            params = dict(s.submod.named_parameters())
            for name, other in s.tied:
                pair = tuple(sorted((s.stage_index % self.p, other % self.p)))
                p = params[name]
                if p.grad is None:
                    p.grad = _zero_grad(p)
                if pair in self._tied_groups:
                    self._tied_groups[pair].all_reduce(p.grad.array)

    def _sync_dp(self) -> None:
        for s in self.stages:
            if s.dp_group is None or s.dp_group.size == 1:
                continue
            params = list(s.submod.parameters())
            for p in params:
                if p.grad is None:
                    p.grad = _zero_grad(p)
            reducer = self._dp_reducers.get(s.stage_index)
            if reducer is None:  # no collective: made at the first step on every replica
                reducer = Reducer(params, s.dp_group, op="avg", hooks=False,
                                  finalize_in_backward=False)
                self._dp_reducers[s.stage_index] = reducer
            reducer.reduce_gradients()

    # -------------------------------------------------------------- the step
    def _actions_of(self, r: int) -> list:  # pragma: no cover - interface
        """Pipeline rank ``r``'s actions ``(kind, stage, mb)``, in order."""
        raise NotImplementedError

    def _actions(self) -> list:
        return self._actions_of(self.group.rank)

    def _timeline(self) -> list:
        """Every rank's actions placed on one timeline of unit steps (computed identically on
        every rank): ``[{rank: action}]``. Each rank runs its next action at the first step
        after the one at which its input was produced (a greedy run with unit times), so the
        message an action sends at step ``t`` is received at step ``t`` by its peer and used
        later; the transfers of one step are one batch on each rank (``step``)."""
        if self._timeline_cache is not None:
            return self._timeline_cache
        acts = [self._actions_of(r) for r in range(self.p)]
        steps = greedy_timeline(acts, self.stages[0].num_stages, type(self).__name__)
        self._timeline_cache = steps
        return steps

    @staticmethod
    def _message(action, S: int):
        """The action a finished ``action`` feeds on another stage: ``("F", s + 1, mb)`` (its
        activation) or ``("B", s - 1, mb)`` (its input gradient); None when it sends nothing."""
        kind, s, mb = action
        if kind == "F":
            return ("F", s + 1, mb) if s < S - 1 else None
        return ("B", s - 1, mb) if s > 0 else None

    def _exchange(self, step: dict, produced, by_index: dict, inbox: dict, works: list) -> None:
        """One timeline step's transfers on this rank: what its action produced goes to the
        consuming stage's rank, and what the neighbours' actions of this step produce for
        this rank's stages is received, all as one batch (``Communicator.batch_p2p``; on NCCL
        one ``groupStart``/``groupEnd``). Every send of a step has its receive in the peer's
        batch of the same step, so no order of sends and receives between two ranks can
        deadlock on NCCL's in-order send/recv. Activations first exchange their host headers
        (shape, dtype) in a batch of their own, since the receiver allocates from them."""
        me, p, S = self.group.rank, self.p, self.stages[0].num_stages
        sends, recvs = [], []
        for q, action in sorted(step.items()):
            key = self._message(action, S)
            if key is None:
                continue
            dst = key[1] % p
            if q == me and dst == me:  # both stages on this rank (one pipeline rank)
                arr = produced.array if key[0] == "F" else produced
                inbox[key] = (arr.copy(), None)
            elif q == me:
                sends.append((key, dst, produced))
            elif dst == me:
                recvs.append((key, q))
        if not sends and not recvs:
            return
        hdr_ops, data = [], {}
        for key, dst, payload in sends:
            if key[0] == "F":
                hdr, data[key] = by_index[key[1] - 1].activation_message(payload)
                hdr_ops.append(("send", hdr, dst, PipelineStage.activation_tags(key[1])[0]))
            else:
                data[key] = payload
        hdrs = {}
        for key, src in recvs:
            if key[0] == "F":
                hdrs[key] = PipelineStage.header_buffer()
                hdr_ops.append(("recv", hdrs[key], src, PipelineStage.activation_tags(key[1])[0]))
        if hdr_ops:
            for (op, *_), w in zip(hdr_ops, self.group.batch_p2p(hdr_ops)):
                if op == "recv":
                    w.wait()  # the receiver allocates from the header
                else:
                    works.append(w)
        ops, bufs = [], []
        for key, dst, _ in sends:
            tag = (PipelineStage.activation_tags(key[1])[1] if key[0] == "F"
                   else PipelineStage.grad_tag(key[1]))
            ops.append(("send", data[key], dst, tag))
        for key, src in recvs:
            stage = by_index[key[1]]
            if key[0] == "F":
                buf, tag = stage.activation_buffer(hdrs[key]), PipelineStage.activation_tags(key[1])[1]
            else:
                buf, tag = stage.grad_buffer(key[2]), PipelineStage.grad_tag(key[1])
            ops.append(("recv", buf, src, tag))
            bufs.append((key, buf))
        batch = self.group.batch_p2p(ops)
        works.extend(batch[:len(sends)])
        for (key, buf), w in zip(bufs, batch[len(sends):]):
            inbox[key] = (buf, w)

    @staticmethod
    def _take(inbox: dict, key):
        arr, work = inbox.pop(key)
        if work is not None:
            work.wait()
        return arr

    def step(self, *args, target=None, losses=None, **kwargs):
        """Run one training step (forward and backward of every micro-batch; the optimizer
        step is the caller's). Returns the last stage's outputs concatenated, else None."""
        m = self.n_microbatches
        by_index = {s.stage_index: s for s in self.stages}
        first, last = by_index.get(0), by_index.get(self.stages[0].num_stages - 1)
        if first is not None and not args:
            raise ValueError("the first stage's rank must pass the input: schedule.step(x)")
        if last is not None and target is None:
            raise ValueError("the last stage's rank must pass target=...: schedule.step(target=y)")
        xs = _chunks(args[0] if args else None, m)
        ys = _chunks(target, m)
        works: list = []
        inbox: dict = {}  # (kind, stage, mb) -> (received array, its Work) for a later action
        outputs, mb_losses = {}, {}
        busy = 0.0
        me = self.group.rank
        t_start = time.perf_counter()
        for step in self._timeline():
            action, produced = step.get(me), None
            if action is not None:
                kind, s_idx, mb = action
                stage = by_index[s_idx]
                if kind == "F":
                    x = xs[mb] if stage.is_first else \
                        stage.as_input(self._take(inbox, ("F", s_idx, mb)))
                    produced = out = stage.forward_one(mb, x)
                    t0 = time.perf_counter()
                    if stage.is_last:
                        outputs[mb] = out
                        y = ys[mb].to(stage.device) if isinstance(ys[mb], Tensor) else ys[mb]
                        mb_losses[mb] = self.loss_fn(out, y)  # the target on the stage's device
                    busy += time.perf_counter() - t0 + stage.last_compute
                else:
                    if stage.is_last:
                        produced = stage.backward_one(mb, loss=mb_losses[mb])
                    else:
                        produced = stage.backward_one(mb, grad=self._take(inbox, ("B", s_idx, mb)))
                    busy += stage.last_compute
            self._exchange(step, produced, by_index, inbox, works)
        for w in works:
            w.wait()
        t_end = time.perf_counter()
        if self.scale_grads:
            for s in self.stages:
                s.scale_grads(m)
        self._sync_tied()
        self._sync_dp()
        self.last_timing = {"wall": t_end - t_start, "busy": busy,
                            "bubble": 1.0 - busy / max(t_end - t_start, 1e-12)}
        if last is None:
            return None
        if losses is not None:
            losses.extend(mb_losses[i] for i in range(m))
        from ...ops.shape import cat

        return cat([outputs[i] for i in range(m)], dim=0)


def _refuse_chunk_specs(args_chunk_spec, kwargs_chunk_spec, output_merge_spec) -> None:
    """torch's per-argument chunking specs: None only (every tensor argument is split on dim 0
    into ``n_microbatches`` chunks and the outputs concatenated on dim 0, torch's default)."""
    for name, value in (("args_chunk_spec", args_chunk_spec), ("kwargs_chunk_spec", kwargs_chunk_spec),
                        ("output_merge_spec", output_merge_spec)):
        if value is not None:
            raise NotImplementedError(
                f"pipeline schedule {name}=...: only the default (split every tensor on dim 0, "
                "merge outputs on dim 0) is supported; lay the batch dim first and pass None")


class PipelineScheduleSingle(_Schedule):
    """Schedules with one stage per rank: ``Schedule(stage, n_microbatches, loss_fn)``."""

    def __init__(self, stage, n_microbatches: int, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads: bool = True):
        _refuse_chunk_specs(args_chunk_spec, kwargs_chunk_spec, output_merge_spec)
        if stage.num_stages != stage.group.size:
            raise ValueError(
                f"{type(self).__name__} runs one stage per rank: num_stages ({stage.num_stages}) "
                f"must equal the pipeline group's size ({stage.group.size}); for several stages "
                "per rank use ScheduleInterleaved1F1B"
            )
        super().__init__([stage], n_microbatches, loss_fn, scale_grads)
        self.stage = stage


class ScheduleGPipe(PipelineScheduleSingle):
    """All forwards, then all backwards."""

    def _actions_of(self, s: int) -> list:  # one stage per rank: stage index = rank
        return gpipe_actions(s, self.n_microbatches)


class Schedule1F1B(PipelineScheduleSingle):
    """Warm-up forwards, then one forward / one backward, then the remaining backwards."""

    def _actions_of(self, s: int) -> list:  # one stage per rank: stage index = rank
        return one_f_one_b_actions(s, self.p, self.n_microbatches)


class PipelineScheduleMulti(_Schedule):
    """Schedules with several stages per rank (``stages``: this rank's, ``s = k * p + r``):
    ``Schedule(stages, n_microbatches, loss_fn)``; subclasses give ``_actions_of(rank)``."""

    def __init__(self, stages: list, n_microbatches: int, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads: bool = True,
                 backward_requires_autograd: bool = True, defer_pp_recv: bool = False):
        # backward_requires_autograd / defer_pp_recv: torch's scheduling knobs, no effect on values
        _refuse_chunk_specs(args_chunk_spec, kwargs_chunk_spec, output_merge_spec)
        if isinstance(stages, PipelineStage):
            raise TypeError(f"{type(self).__name__} takes a list of this rank's stages; got one "
                            f"PipelineStage (pass [stage], or use ScheduleGPipe/Schedule1F1B for one "
                            "stage per rank)")
        super().__init__(list(stages), n_microbatches, loss_fn, scale_grads)
        self.v = len(self.stages)
        if self.stages[0].num_stages != self.v * self.p:
            raise ValueError(f"each of the {self.p} ranks must hold the same number of stages: "
                             f"{self.stages[0].num_stages} stages, {self.v} here")


class ScheduleInterleaved1F1B(PipelineScheduleMulti):
    """Megatron's interleaved 1F1B over ``stages`` (this rank's, ``s = k * p + r``)."""

    def __init__(self, stages: list, n_microbatches: int, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads: bool = True,
                 backward_requires_autograd: bool = True, defer_pp_recv: bool = False):
        super().__init__(stages, n_microbatches, loss_fn, args_chunk_spec, kwargs_chunk_spec,
                         output_merge_spec, scale_grads, backward_requires_autograd, defer_pp_recv)
        if self.n_microbatches % self.p:
            raise ValueError(f"{type(self).__name__} needs n_microbatches ({n_microbatches}) to be "
                             f"a multiple of the number of pipeline ranks ({self.p})")

    def _actions_of(self, r: int) -> list:
        m, p, v = self.n_microbatches, self.p, self.v
        total = m * v

        def unit(k, backward):
            group, within = divmod(k, p * v)
            chunk = within // p
            if backward:
                chunk = v - 1 - chunk
            return chunk * p + r, group * p + within % p

        warm = min((p - r - 1) * 2 + (v - 1) * p, total)
        acts = [("F", *unit(k, False)) for k in range(warm)]
        for i in range(total - warm):
            acts.append(("F", *unit(warm + i, False)))
            acts.append(("B", *unit(i, True)))
        acts += [("B", *unit(k, True)) for k in range(total - warm, total)]
        return acts


class ScheduleLoopedBFS(PipelineScheduleMulti):
    """Breadth-first pipeline (Lamy-Poirier, arXiv:2211.05953), torch's order: each of this
    rank's stages in turn runs the forwards of all ``m`` micro-batches, then the stages in
    reverse run their backwards, micro-batches in reverse. Activations of ``v * m``
    micro-batch-stages are live at the turn (GPipe's memory), in exchange for long runs of one
    stage (fewer switches, and with ZeRO/FSDP one gather per stage per step)."""

    def __init__(self, stages: list, n_microbatches: int, loss_fn=None, output_merge_spec=None,
                 scale_grads: bool = True, backward_requires_autograd: bool = True,
                 defer_pp_recv: bool = False):
        super().__init__(stages, n_microbatches, loss_fn, output_merge_spec=output_merge_spec,
                         scale_grads=scale_grads)

    def _actions_of(self, r: int) -> list:
        m, ids = self.n_microbatches, range(r, self.p * self.v, self.p)
        acts = [("F", s, i) for s in ids for i in range(m)]
        return acts + [("B", s, i) for s in reversed(ids) for i in reversed(range(m))]


class ScheduleInterleavedZeroBubble(ScheduleInterleaved1F1B):
    """torch's name for the zero-bubble interleaved schedule (Qi et al., arXiv:2401.10241),
    which splits each backward into its input-gradient and weight-gradient halves and moves
    the weight halves into the bubble. Here the backward is not split: the step runs
    interleaved 1F1B's order, so the values (losses, gradients) are the schedule's exactly
    and the bubble is interleaved 1F1B's ``(p - 1) / (v * m + p - 1)``, not zero."""


class _VShapeSchedule(PipelineScheduleMulti):
    """Schedules that place stages in a V (rank ``r`` holds stages ``r`` and ``2p - 1 - r``):
    shardflow's pipeline places stage ``s`` on rank ``s % p`` only."""

    def __init__(self, stages, n_microbatches, *args, **kwargs):
        raise NotImplementedError(
            f"{type(self).__name__}: its V-shaped stage placement (rank r holds stages r and "
            "2p-1-r) is not supported by shardflow's pipeline, which places stage s on rank "
            "s % p; use ScheduleInterleaved1F1B or ScheduleInterleavedZeroBubble with stages "
            "[r, r + p] on rank r (docs/PIPELINE.md)")


class ScheduleZBVZeroBubble(_VShapeSchedule):
    """torch's zero-bubble V schedule: refused (see ``_VShapeSchedule``)."""


class ScheduleDualPipeV(_VShapeSchedule):
    """DeepSeek's DualPipeV: refused (see ``_VShapeSchedule``)."""


def get_schedule_class(schedule_name: str):
    """The schedule class for ``schedule_name``, case-insensitive (torch's table)."""
    schedule_map = {
        "1F1B": Schedule1F1B, "Interleaved1F1B": ScheduleInterleaved1F1B, "GPipe": ScheduleGPipe,
        "LoopedBFS": ScheduleLoopedBFS, "InterleavedZeroBubble": ScheduleInterleavedZeroBubble,
        "PipelineScheduleSingle": PipelineScheduleSingle, "PipelineScheduleMulti": PipelineScheduleMulti,
        "ZBVZeroBubble": ScheduleZBVZeroBubble, "DualPipeV": ScheduleDualPipeV,
    }
    by_lower = {k.lower(): k for k in schedule_map}
    if schedule_name.lower() not in by_lower:
        raise ValueError(f"Unknown schedule name '{schedule_name}'. The valid options are "
                         f"{list(schedule_map)}")
    return schedule_map[by_lower[schedule_name.lower()]]
