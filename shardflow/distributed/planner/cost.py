"""The cost model: a traced step + a layout + a profile -> step time, memory, communication.

Notation: ``B`` global batch (samples), ``m`` micro-batches, ``b = B / (dp * m)`` samples
per micro-batch, ``p`` pipeline stages, ``v`` chunks per pipeline rank (interleaved), ``t``
tensor-parallel degree, ``f`` the profile's overlap fraction. The trace is taken at ``b``
samples (``ModelTrace.at(batch=b)``), then per op (``opcost.op_cost``):

* **Tensor parallelism** (``trace.assign_tp_roles``): a ``col`` op computes ``N/t`` of its
  output features, a ``row`` op ``K/t`` of its inputs, a ``split`` op (attention heads, the
  MLP's hidden units) ``1/t`` of its work and bytes; the rest (embeddings, norms, the head,
  the loss) is replicated on every TP rank. Communication, blocking: one all-reduce of each
  ``row`` output in forward (the partial sum made whole), one of each distinct ``col`` input's
  gradient in backward.
* **Compute of stage s**: ``t_f(s) = sum(op forward time + per-op overhead)``, ``t_b(s)``
  likewise for ops with a backward; with recomputation the stage's block forwards are run
  again in backward. Global tensors (tp > 1, or data parallelism through ``parallelize``)
  add the profile's global-tensor overhead per op.
* **Pipeline** (1F1B / GPipe, stage times ``T_s = t_f + t_b`` plus the send/recv of the
  activation and its gradient): ``T = sum_s T_s + (m - 1) * max_s T_s``, which is
  ``(m + p - 1) T`` for equal stages: the bubble ``(p - 1) / (m + p - 1)``. Interleaved with
  ``v`` chunks per rank: ``T = m * max_r T_r + (p - 1) * max_r T_r / v``, bubble
  ``(p - 1) / (v m + p - 1)``. On a measured host shardflow's own 1F1B/GPipe is replayed
  instead (``pipesim``: the runtime's timeline, its wake-up delays, the cores shared),
  and each stage pays the autograd engine's copy/adds of its gradients into ``.grad``
  (one copy and ``m - 1`` adds per parameter per step, ``_grad_accumulation``).
* **Data-parallel gradients** (``layout.grad_sync``), over the ``dp`` group:
  ``bucketed`` -- DDP's buckets (the first 1 MB, then 25 MB, closed at parameter
  boundaries) all-reduced as backward makes them, each in the ``Reducer``'s 1 MB pieces
  (one non-blocking call each, costed as a batch: ``Profile.collective_time(batched=True)``):
  all but the last bucket hide behind backward compute up to ``f * t_b``; ``per-use`` --
  global tensors all-reduce each use of a broadcast tensor in its backward (blocking);
  ``after-backward`` -- the pipeline all-reduces each parameter after the schedule (and each
  tied parameter between the first and last stage); ``sharded`` -- ZeRO-2/3 (``fully_shard``
  per block, then the root): per unit one all-gather per parameter in forward (stage 3:
  again in backward, all but the root), prefetched, and one reduce-scatter per parameter in
  backward (``FSDPParamGroup``'s calls, costed as a batch), hidden up to ``f`` times the
  compute they run beside; the ranks meet once per unit and phase. ZeRO-1 adds one
  all-gather of the updated parameters after the step. ``parallelize``'s data parallelism
  also all-reduces the loss's mean (forward) and the loss it returns (after the step).
* **Optimizer**: the profile's time per element over this rank's elements (``/dp`` for
  ZeRO >= 1).
* **A host with fewer cores than ranks** (measured profiles): ops run at the rates measured
  at ``min(ranks, cores)`` busy ranks (a rank holding a core), and the step is
  ``max(schedule, busy rank-seconds / cores)``: every rank is busy for its stage's
  micro-batches (compute, spinning collectives, sends) and the synchronisation and
  optimizer after them, idle in the pipeline bubble (``_time_shared``); and every
  collective call after compute costs the wait for peers that are queued for a core while
  the first arrivals spin (``_sync_waits``: measured by ``microbench.sync_wait``, else one
  scheduler tick of the host).

Memory per rank (bytes): parameters ``P`` (TP split of col/row weights, this stage's, /dp for
ZeRO-2/3: ``fully_shard`` keeps them sharded at rest for both; shardflow's pipelines keep the whole model on every rank: the other stages' parameters
count too, except for simulated clusters), gradients ``G`` (/dp for ZeRO >= 2), optimizer state ``O`` (Adam: 2 x 4 bytes per
element, + a 4-byte master copy in mixed precision; /dp for ZeRO >= 1: the ZeRO paper's
``(2 + 2 + K) Psi`` family), communication buffers (DDP's flat buckets ``G``, always; ZeRO-1's all-gather bucket, after
the step only; ZeRO-2's whole gathered parameters, ZeRO-3's two gathered units, from forward
into backward; ``fully_shard``'s two units of packed gradients, only once backward has freed
activations), activations ``A`` = what the ops keep at ``b`` samples (TP: col/split ops'
/t) times the micro-batches in flight (1F1B: ``p - s`` at stage s; GPipe: ``m``;
recomputation keeps each block's input only, plus one block), and the peaks on top:
``max(A + gathered + forward transient, A + gathered + backward extra, G + packed or the
ZeRO-1 bucket)``; with ``G`` inside the first two as well where 1F1B runs a forward after a
backward (more micro-batches than in flight: the gradients accumulated so far are resident),
and a pipeline's data-parallel ``Reducer`` buckets (``G``) on shardflow's runtime; with
tp on shardflow's runtime the forward transient has two row-parallel outputs more (the
residual stream stays partial until the next LayerNorm all-reduces it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...nn.parallel.reducer import piece_bounds
from .collectives import bus_bytes
from .layout import GLOBAL_SYNCS, Layout
from .opcost import OpCost, op_cost
from .profile import Group, Profile
from .trace import StepTrace, assign_tp_roles

__all__ = ["RunSpec", "Collective", "Estimate", "estimate", "predicted_comm_plan"]

DDP_FIRST_BUCKET = 1 << 20
DDP_BUCKET = 25 << 20
ZERO1_BUCKET = 16 << 20
REDUCER_PIECE = 1 << 20  # nn.parallel.reducer.Reducer's piece_cap_mb: bytes per all-reduce call


@dataclass
class RunSpec:
    """What the run is besides its layout: global batch, tokens per sample (1 for images),
    precision (``fp32`` | ``mixed``), optimizer (``adamw`` | ``sgd`` | ``sgd_momentum``), the
    tensor-parallel plan, the entry point (``layout.ENTRIES``), memory per rank (bytes,
    None: unlimited), and the model trace (``scaling.ModelTrace``)."""

    model_trace: object
    batch_size: int
    tokens_per_sample: int = 1
    precision: str = "fp32"
    optimizer: str = "adamw"
    tp_plan: dict | None = None
    entry: str = "parallelize"
    mem_per_rank: float | None = None
    extra_dims: dict = field(default_factory=dict)  # target dims besides the batch
    pp_scatter_gather: bool = False  # Megatron's pipeline sends 1/tp per rank, all-gathers inside


@dataclass
class Collective:
    phase: str  # forward | backward | step
    kind: str  # all_reduce, all_gather, reduce_scatter, broadcast, send_recv
    nbytes: float  # this rank's input (all-gather: output)
    axis: str  # dp | tp | pp
    group: int  # ranks in the group
    count: int = 1
    seconds: float = 0.0  # time of all `count`
    why: str = ""
    back_to_back: bool = False  # the `count` calls follow each other with no compute between
    syncs: int | None = None  # times the ranks meet among the `count` calls (None: each call)


@dataclass
class Estimate:
    layout: Layout
    step_time: float
    compute: float  # seconds of computation of the slowest stage (all its micro-batches)
    comm_total: float  # seconds of communication (all of it)
    comm_exposed: float  # not hidden behind compute
    comm_bytes: float  # bytes each rank sends per step (bus bytes)
    bubble: float  # pipeline bubble fraction (the schedule's formula)
    bubble_time: float  # seconds of the step the slowest stage waits in the bubble
    optimizer: float
    memory: float  # peak bytes on the worst rank
    memory_parts: dict
    tokens_per_s: float
    samples_per_s: float
    mfu: float
    model_flops: float  # FLOPs of one step (forward + backward, whole model, no recompute)
    fits: bool
    collectives: list
    stage_times: list
    notes: list = field(default_factory=list)
    time_share: float = 1.0  # step / schedule: > 1 where more ranks than cores time-share them
    sync_wait: float = 0.0  # seconds of descheduled-peer waits (more ranks than cores)

    @property
    def time_shared(self) -> float:
        """Seconds the step loses to more busy ranks than cores (0 within the cores); the
        waits for descheduled peers are communication (``comm_exposed``), not counted here."""
        base = self.step_time - self.sync_wait
        return base - base / self.time_share if self.time_share > 1 else 0.0

    @property
    def comm_share(self) -> float:
        return self.comm_exposed / self.step_time if self.step_time else 0.0


# ------------------------------------------------------------------------------ helpers
def _local_cost(rec, cost, role: str, tp: int, itemsize: int):
    """The cost on one TP rank of an op whose role is ``role`` (module docstring): a col/row
    ``linear`` is re-costed on its shard's shapes, a ``split`` op does ``1/tp`` of the work
    (attention: ``1/tp`` of the heads)."""
    if tp == 1 or not role:
        return cost
    from dataclasses import replace

    if role in ("col", "row") and rec.name == "linear" and len(rec.in_shapes) >= 2:
        ins = list(rec.in_shapes)
        x, w = ins[0], ins[1]
        if role == "col":
            ins[1] = (max(1, w[0] // tp),) + tuple(w[1:])
            if len(ins) > 2:
                ins[2] = (max(1, ins[2][0] // tp),)
            outs = [tuple(o[:-1]) + (max(1, o[-1] // tp),) for o in rec.out_shapes]
        else:
            ins[0] = tuple(x[:-1]) + (max(1, x[-1] // tp),)
            ins[1] = (w[0], max(1, w[1] // tp))
            outs = rec.out_shapes
        return op_cost(replace(rec, in_shapes=ins, out_shapes=outs), itemsize)

    def share(gs):
        return [(m, k, n, c // tp) if c >= tp else (m, k, max(1, n // tp), c) for m, k, n, c in gs]

    return replace(cost, fwd_gemms=share(cost.fwd_gemms), bwd_gemms=share(cost.bwd_gemms),
                   flops=cost.flops / tp, bwd_flops=cost.bwd_flops / tp, bytes=cost.bytes / tp,
                   bwd_bytes=cost.bwd_bytes / tp, retain=cost.retain / tp, elems=cost.elems / tp)


def _n(shape) -> int:
    return int(math.prod(shape)) if shape else 1


def _stage_of_layer(layer: int, n_layers: int, pp: int, v: int) -> tuple[int, int]:
    """``(pipeline rank, chunk)`` of ``layer``: ``pp * v`` equal chunks, chunk ``k`` on rank
    ``k % pp`` (the interleaved assignment; v = 1 is the plain split)."""
    chunks = pp * v
    k = layer * chunks // max(1, n_layers)
    return k % pp, k // pp


def _groups(layout: Layout, profile: Profile) -> dict:
    """Where each axis' groups sit (tp innermost, then dp, then pp: parallelize's
    ``("pp", "dp", "tp")`` mesh and Megatron's order)."""
    world = layout.world
    gpn = profile.ranks_per_node if profile.simulated else world
    out = {}
    stride = 1
    for axis, size in (("tp", layout.tp), ("dp", layout.dp), ("pp", layout.pp)):
        if stride >= gpn:
            per_node = 1
        else:
            per_node = max(1, min(size, gpn // stride))
        sharing = max(1, gpn // per_node) if per_node * stride >= gpn or stride > 1 else 1
        if not profile.simulated or size * stride <= gpn:
            per_node = 0  # inside one node
        out[axis] = Group(size=size, per_node=per_node, sharing=sharing, world=world)
        stride *= size
    return out


# ------------------------------------------------------------------------------ estimate
@dataclass
class _Ctx:
    """What every phase of :func:`estimate` reads: the run, the layout (sync filled in), the
    profile, the trace at one micro-batch, and the derived sizes."""

    spec: RunSpec
    L: Layout
    profile: Profile
    st: StepTrace
    v: int  # chunks per pipeline rank
    nl: int  # layers of the stack
    itemsize: int
    conc: int  # ranks busy at once on one host (1 on simulated hardware)
    groups: dict


@dataclass
class _Stages:
    """Per pipeline stage (lists of ``pp``): seconds of one micro-batch's forward and
    backward (recomputation included), the blocking collectives inside them and the sends;
    bytes kept, transient and largest retained; the parameters placed on it."""

    f: list
    b: list
    rc: list  # block forwards (run again in backward under recomputation)
    act: list
    trans: list
    biggest: list
    comm_f: list
    comm_b: list
    p2p: list
    op_stage: list = field(default_factory=list)
    layer_act: dict = field(default_factory=dict)  # layer -> bytes it keeps
    layer_in: dict = field(default_factory=dict)  # layer -> bytes of its input
    flops: float = 0.0  # forward + backward FLOPs of one micro-batch, whole model
    params: list = field(default_factory=list)  # elements on one rank of the stage
    param_list: list = field(default_factory=list)
    tied: list = field(default_factory=list)

    @classmethod
    def empty(cls, pp: int) -> _Stages:
        return cls(*([0.0] * pp for _ in range(9)))

    def compute(self) -> list:
        return [f + b for f, b in zip(self.f, self.b)]

    def total(self) -> list:
        return [c + f + b + p for c, f, b, p in zip(self.compute(), self.comm_f, self.comm_b, self.p2p)]


def estimate(spec: RunSpec, layout: Layout, profile: Profile) -> Estimate:
    """The predicted step of ``layout`` (module docstring), in phases: ops to stages, the
    parameters to stages, the collectives inside each stage, the pipeline's sends, the
    schedule, the data-parallel synchronisation, the optimizer, the host's cores, memory."""
    c = _context(spec, layout, profile)
    L, m = c.L, c.L.microbatches
    S = _cost_ops(c)
    tp_coll, dp_uses = _global_collectives(c.st, L, c.itemsize, S.op_stage)
    _place_params(c, S)
    _grad_accumulation(c, S)
    if L.recompute:
        S.b = [b + rc for b, rc in zip(S.b, S.rc)]
    colls: list[Collective] = []
    _stage_collectives(c, S, tp_coll, dp_uses, colls)
    _pipeline_sends(c, S, colls)

    # ---- the schedule
    stage_c, stage_T = S.compute(), S.total()
    pipe, bubble = _pipeline(stage_T, m, L.pp, c.v)
    pipe_c, _ = _pipeline(stage_c, m, L.pp, c.v)
    work = m * max(stage_c)
    bubble_time = max(0.0, pipe_c - work)
    comm_pipe = max(0.0, pipe - pipe_c)

    exposed, copies = _grad_sync(c, S, colls)
    grad_elems = max(S.params)
    opt_elems = grad_elems / L.dp if L.zero >= 1 else grad_elems
    t_opt = profile.optimizer_time(opt_elems, c.conc, spec.optimizer, spec.precision)
    rest = copies + exposed + t_opt + profile.step_overhead(c.conc)  # after the schedule, every rank
    compute = work + copies
    span = work + bubble_time + comm_pipe + rest
    step, share = _time_shared(span, stage_T, m, rest, L, profile)
    if _replays_pipeline(c):  # shardflow's own schedule on this host, event by event
        step, share, bubble_time, comm_pipe = _pipeline_replay(c, S, rest, work)
    notes = []
    if share > 1.0:
        notes.append(f"{L.world} ranks on {profile.host_cores} cores: time-shared, x{share:.2f} on the schedule")
    n_sync, t_sync = _sync_waits(c, stage_T, rest, colls)
    if t_sync > 0:
        step += t_sync
        notes.append(f"{n_sync} synchronisations with peers waiting for a core: +{t_sync * 1e3:.1f} ms")

    peak, mem_parts = _worst_memory(c, S)
    fits = spec.mem_per_rank is None or peak <= spec.mem_per_rank
    tokens = spec.batch_size * spec.tokens_per_sample / step if step > 0 else 0.0
    model_flops = S.flops * L.dp * m  # the trace was at one micro-batch of one replica
    mfu = model_flops / (step * L.world * profile.peak_flops(spec.precision)) if step > 0 else 0.0
    comm_total = max(sum(x.seconds for x in colls), comm_pipe + exposed)  # fill/drain repeats some
    comm_bytes = sum(bus_bytes(x.kind, x.group, x.nbytes) * x.count for x in colls)
    return Estimate(layout=L, step_time=step, compute=compute, comm_total=comm_total + t_sync,
                    comm_exposed=comm_pipe + exposed + t_sync, comm_bytes=comm_bytes, bubble=bubble,
                    bubble_time=bubble_time, optimizer=t_opt, memory=peak, memory_parts=mem_parts,
                    tokens_per_s=tokens, samples_per_s=spec.batch_size / step if step else 0.0,
                    mfu=mfu, model_flops=model_flops, fits=fits, collectives=colls,
                    stage_times=stage_T, notes=notes, time_share=share, sync_wait=t_sync)


def _context(spec: RunSpec, layout: Layout, profile: Profile) -> _Ctx:
    """The layout with its sync, the trace at ``b = B / (dp m)`` samples (TP roles set)."""
    L = layout.with_sync(spec.entry)
    b = spec.batch_size // (L.dp * L.microbatches)
    st: StepTrace = spec.model_trace.at(batch=b, **spec.extra_dims)
    if L.tp > 1:
        assign_tp_roles(st, spec.tp_plan)
    return _Ctx(spec=spec, L=L, profile=profile, st=st, v=L.virtual if L.schedule == "interleaved" else 1,
                nl=st.n_layers or 1, itemsize=2 if spec.precision == "mixed" else 4,
                conc=L.world if not profile.simulated else 1, groups=_groups(L, profile))


def _cost_ops(c: _Ctx) -> _Stages:
    """Each op's forward and backward seconds (its TP shard, plus the per-op overhead) and
    the bytes it keeps, summed per pipeline stage (layers by ``_stage_of_layer``; ops before
    the first layer on the first stage, the rest on the last)."""
    L, st, tp, isz = c.L, c.st, c.L.tp, c.itemsize
    S = _Stages.empty(L.pp)
    global_tensors = tp > 1 or (L.dp > 1 and L.grad_sync in GLOBAL_SYNCS)
    ov_f, ov_b = c.profile.overhead(c.conc, global_tensors)
    first_layer_op = next((i for i, o in enumerate(st.ops) if o.layer is not None), len(st.ops))
    row_out = [0.0] * L.pp  # per stage: the largest row-parallel output (bytes)
    for i, o in enumerate(st.ops):
        if o.layer is not None:
            s, _chunk = _stage_of_layer(o.layer, c.nl, L.pp, c.v)
        else:
            s = 0 if i < first_layer_op else L.pp - 1
        S.op_stage.append(s)
        full = op_cost(o, isz)
        S.flops += full.flops + (full.bwd_flops if full.has_bwd else 0.0)
        cost = _local_cost(o, full, o.tp_role if tp > 1 else "", tp, isz)
        tf = c.profile.op_time(cost, "fwd", c.conc, c.spec.precision) + ov_f
        tb = (c.profile.op_time(cost, "bwd", c.conc, c.spec.precision) + ov_b) if cost.has_bwd else 0.0
        S.f[s] += tf
        S.b[s] += tb
        keep = o.retained * (isz / o.itemsize)
        if tp > 1 and o.tp_role in ("col", "split"):
            keep /= tp
        S.act[s] += keep
        S.trans[s] = max(S.trans[s], o.transient * (isz / o.itemsize) / (tp if o.tp_role in ("col", "split") else 1))
        S.biggest[s] = max(S.biggest[s], cost.retain)
        if tp > 1 and o.tp_role == "row" and o.out_shapes:
            row_out[s] = max(row_out[s], _n(o.out_shapes[0]) * isz)
        if o.layer is not None:
            S.rc[s] += tf
            S.layer_act[o.layer] = S.layer_act.get(o.layer, 0.0) + keep
            if o.layer not in S.layer_in and o.in_shapes:
                S.layer_in[o.layer] = _n(o.in_shapes[0]) * isz
    if tp > 1 and c.spec.entry != "any":
        # shardflow's tp on global tensors keeps a row-parallel output partial through the
        # residual add (the next LayerNorm all-reduces): inside a block the frame holds the
        # partial residual beside the all-reduced copy the LayerNorm saves, and the
        # row-parallel output beside it until its add; two such activations above what the
        # ops keep (Megatron all-reduces the row output at once: not for entry "any")
        for k in range(L.pp):
            S.trans[k] += 2 * row_out[k]
    return S


def _place_params(c: _Ctx, S: _Stages) -> None:
    """Parameters to the stages whose ops use them (tied ones on each; TP-split ones at their
    shard's size)."""
    L, st = c.L, c.st
    param_stages = {}
    for i, o in enumerate(st.ops):
        for pname in o.params.values():
            param_stages.setdefault(pname, set()).add(S.op_stage[i])
    S.params = [0.0] * L.pp
    S.param_list = [[] for _ in range(L.pp)]
    for p in st.params:
        elems = _n(p.shape)
        if L.tp > 1 and p.tp_role:
            elems /= L.tp
        ss = param_stages.get(p.name, {0 if p.layer is None else _stage_of_layer(p.layer, c.nl, L.pp, c.v)[0]})
        if len(ss) > 1:
            S.tied.append((p.name, elems))
        for s in ss:
            S.params[s] += elems
            S.param_list[s].append((p, elems))


def _grad_accumulation(c: _Ctx, S: _Stages) -> None:
    """The autograd engine's writes into ``.grad`` (``engine._accumulate_leaf``), which the
    trace's ops do not include: the first micro-batch's gradient of each parameter is copied
    in (read + write), each later one added in place (two reads, a write). With ``m``
    micro-batches a stage pays one copy and ``m - 1`` adds of every parameter it holds per
    step, at the profile's measured ``contiguous`` and ``add`` bandwidths for the
    parameter's size; spread over the stage's ``m`` backwards (``S.b`` is per micro-batch).
    Measured profiles only (a simulated cluster's runs fuse this into their GEMMs)."""
    prof, m, isz = c.profile, c.L.microbatches, c.itemsize
    if prof.simulated:
        return
    for s, plist in enumerate(S.param_list):
        t = 0.0
        for _p, e in plist:
            nb = e * isz
            t += prof.op_time(OpCost("copy", name="contiguous", bytes=2 * nb, elems=e), "fwd", c.conc,
                              c.spec.precision)
            if m > 1:
                t += (m - 1) * prof.op_time(OpCost("elementwise", name="add", bytes=3 * nb, elems=e), "fwd",
                                            c.conc, c.spec.precision)
        S.b[s] += t / m


def _stage_collectives(c: _Ctx, S: _Stages, tp_coll, dp_uses, colls) -> None:
    """The blocking collectives inside each stage's forward and backward: TP's all-reduces
    (again in backward for a recomputed forward) and, on global tensors, the per-use
    data-parallel all-reduces and the loss's mean."""
    L, prof, m = c.L, c.profile, c.L.microbatches
    if L.tp > 1:
        g = c.groups["tp"]
        for phase, nb, s in tp_coll:
            t = prof.collective_time("all_reduce", nb, g)
            (S.comm_f if phase == "forward" else S.comm_b)[s] += t
            if phase == "forward" and L.recompute:
                S.comm_b[s] += t  # the recomputed forward all-reduces again
        for phase in ("forward", "backward"):
            sel = [nb for ph, nb, s in tp_coll if ph == phase and s == 0]
            if sel:
                reps = m * (2 if phase == "forward" and L.recompute else 1)
                colls.append(Collective(phase, "all_reduce", sum(sel) / len(sel), "tp", L.tp, count=len(sel) * reps,
                                        seconds=reps * sum(prof.collective_time("all_reduce", nb, g) for nb in sel),
                                        why="Megatron: row-parallel outputs (forward), column-parallel inputs' "
                                            "gradients (backward), on the first stage"))
    if L.dp > 1 and L.grad_sync in GLOBAL_SYNCS:
        g = c.groups["dp"]
        for nb, s in dp_uses:
            S.comm_b[s] += prof.collective_time("all_reduce", nb, g)
        t_mean = prof.collective_time("all_reduce", 8, g)
        S.comm_f[L.pp - 1] += t_mean  # the loss's mean over the global batch, blocking
        colls.append(Collective("forward", "all_reduce", 8, "dp", L.dp, count=m, seconds=m * t_mean,
                                why="the loss's mean over the global batch"))
        sel = [nb for nb, s in dp_uses if s == 0]
        if sel:
            colls.append(Collective("backward", "all_reduce", sum(sel) / len(sel), "dp", L.dp,
                                    count=len(sel) * m,
                                    seconds=m * sum(prof.collective_time("all_reduce", nb, g) for nb in sel),
                                    why="global tensors: one all-reduce per use of a broadcast "
                                        + ("tensor" if L.grad_sync == "per-use" else "activation")))


def _pipeline_sends(c: _Ctx, S: _Stages, colls) -> None:
    """The send/recv of each boundary's activation (forward) and its gradient (backward), on
    both stages of the boundary, per chunk."""
    L, prof, tp = c.L, c.profile, c.L.tp
    if L.pp == 1:
        return
    g = c.groups["pp"]
    pair = Group(2, g.per_node and 1, g.sharing, L.world)
    act_bytes = _boundary_bytes(c.st, S.op_stage, c.itemsize)
    if c.spec.pp_scatter_gather and tp > 1:  # Megatron's: 1/tp over the link, all-gather inside
        t = prof.collective_time("send_recv", act_bytes / tp, pair) + \
            prof.collective_time("all_gather", act_bytes, c.groups["tp"])
    else:
        t = prof.collective_time("send_recv", act_bytes, pair)
    t += prof.collective_time("send_recv", 64, pair)  # a header message before each
    for s in range(L.pp - 1):
        S.p2p[s] += t * c.v  # stage s sends its output on, stage s+1 the gradient back
        S.p2p[s + 1] += t * c.v
    m = L.microbatches
    colls.append(Collective("forward", "send_recv", act_bytes / (tp if c.spec.pp_scatter_gather else 1),
                            "pp", 2, count=2 * m * c.v * (L.pp - 1), seconds=2 * m * c.v * t,
                            why="activations forward, their gradients backward, per micro-batch and boundary"))


def _grad_sync(c: _Ctx, S: _Stages, colls) -> tuple[float, float]:
    """``(exposed seconds, packing-copy seconds)`` of the data-parallel gradient
    synchronisation (``layout.grad_sync``, module docstring) and of tied parameters."""
    L, prof, isz, dp, m = c.L, c.profile, c.itemsize, c.L.dp, c.L.microbatches
    grad_elems = max(S.params)

    def copy_time(nbytes):  # the framework's packing copies (DDP buckets, fully_shard units)
        return prof.op_time(OpCost("copy", name="contiguous", bytes=2 * nbytes, bwd_bytes=2 * nbytes,
                                   elems=nbytes / isz), "fwd", c.conc, c.spec.precision)

    ov = prof.overlap(L.world)
    exposed = copies = 0.0
    t_bwd = S.b[0]  # the last micro-batch's backward: what gradient reductions can hide behind
    t_fwd = S.f[0] * m
    gbytes = grad_elems * isz
    g = c.groups["dp"]
    if dp > 1 and L.grad_sync in ("bucketed", "global-bucketed"):
        # the Reducer's buckets at parameter boundaries, each all-reduced in pieces: one
        # non-blocking call each, launched as backward fills them, waited for at its end
        members = reducer_bucket_params(c.st, L.tp, isz) or [[0.0]]
        buckets = [sum(b) * isz for b in members]
        pieces = [reducer_pieces(b, REDUCER_PIECE // isz) for b in members]
        ts = [sum(prof.collective_time("all_reduce", e * isz, g, batched=True) for e in pc) for pc in pieces]
        total = sum(ts)
        n_pieces = sum(len(pc) for pc in pieces)
        hidden = min(total - ts[-1], ov * t_bwd) if len(ts) > 1 else 0.0
        exposed += total - hidden
        copies += 2 * copy_time(gbytes)  # gradients into the flat buckets and back
        colls.append(Collective("backward", "all_reduce", sum(buckets) / n_pieces, "dp", dp, count=n_pieces,
                                seconds=total, why=f"{'DDP' if L.grad_sync == 'bucketed' else 'reducer'} buckets "
                                                   f"({len(buckets)}) in {n_pieces} pieces, overlapped with backward",
                                back_to_back=True))  # issued during backward, waited for at its end
        if L.zero == 1:
            ag = _buckets(grad_elems * 4, ZERO1_BUCKET, ZERO1_BUCKET)
            t = sum(prof.collective_time("all_gather", nb, g) for nb in ag)
            exposed += t
            copies += copy_time(grad_elems * 4)  # gathered rows back into the parameters
            colls.append(Collective("step", "all_gather", grad_elems * 4 / len(ag), "dp", dp, count=len(ag),
                                    seconds=t, why="ZeRO-1: updated parameters gathered after the step",
                                    back_to_back=True))
    elif dp > 1 and L.grad_sync == "sharded":
        units = _fsdp_units(c.st, L.tp)
        calls = [_fsdp_calls(u, dp) for u in _fsdp_unit_params(c.st, L.tp)]
        # per unit: one all-gather per split parameter (issued together, waited for one by one:
        # a batch, ``Profile.collective_time(batched=True)``), one reduce-scatter per split
        # parameter and one all-reduce of the replicated ones, batched likewise
        ag = [sum(prof.collective_time("all_gather", e * isz, g, batched=True) for e in split) for split, _ in calls]
        rs = [sum(prof.collective_time("reduce_scatter", e * isz, g, batched=True) for e in split)
              + (prof.collective_time("all_reduce", repl * isz, g, batched=True) if repl else 0.0)
              for split, repl in calls]
        n_ag = sum(len(split) for split, _ in calls)
        n_rs = sum(len(split) + (1 if repl else 0) for split, repl in calls)
        f_comm = sum(ag)
        f_exposed = ag[0] + max(0.0, f_comm - ag[0] - ov * t_fwd)
        ag_b = ag[1:] if L.zero == 3 else []  # the root stays gathered from forward to backward
        b_comm = sum(rs) + sum(ag_b)
        b_exposed = rs[-1] + max(0.0, b_comm - rs[-1] - ov * t_bwd)
        exposed += f_exposed + b_exposed
        ub = sum(units) * isz  # unpack gathered units, pack gradients, unpack shards
        copies += copy_time(ub) * (2 if L.zero == 3 else 1) + copy_time(ub) + copy_time(ub / dp)
        colls.append(Collective("forward", "all_gather", ub / max(1, n_ag), "dp", dp, count=n_ag, seconds=f_comm,
                                syncs=len(units),
                                why="ZeRO: each unit's parameters gathered, one call per parameter, prefetched"))
        if L.zero == 3:
            n_agb = sum(len(split) for split, _ in calls[1:])
            colls.append(Collective("backward", "all_gather", sum(units[1:]) * isz / max(1, n_agb), "dp", dp,
                                    count=n_agb, seconds=sum(ag_b), syncs=len(units) - 1,
                                    why="ZeRO-3: gathered again for backward (all but the root)"))
        colls.append(Collective("backward", "reduce_scatter", ub / max(1, n_rs), "dp", dp,
                                count=n_rs, seconds=sum(rs), syncs=len(units),
                                why="ZeRO-2/3: gradients reduce-scattered, one call per parameter"))
    elif dp > 1 and L.grad_sync == "after-backward":
        worst = max(sum(prof.collective_time("all_reduce", e * isz, g) for _, e in S.param_list[s])
                    for s in range(L.pp))
        exposed += worst
        n0 = len(S.param_list[0])
        colls.append(Collective("step", "all_reduce", S.params[0] * isz / max(1, n0), "dp", dp,
                                count=n0, seconds=worst, why="pipeline: each parameter all-reduced after the schedule",
                                back_to_back=True))
    if c.spec.entry != "any" and ((dp > 1 and (L.grad_sync in GLOBAL_SYNCS or L.zero == 1)) or L.pp > 1):
        # parallelize's step returns the loss as a float after the optimizer: a blocking
        # one-element all-reduce (the global loss's .item(); ZeRO-1: the replicas' mean; a
        # pipeline: the last stage's losses over the whole world)
        axis, gl = ("dp", g) if L.pp == 1 else ("world", Group(L.world, world=L.world))
        t = prof.collective_time("all_reduce", 8, gl)
        exposed += t
        colls.append(Collective("step", "all_reduce", 8, axis, gl.size, count=1, seconds=t,
                                why="the loss read after the step (parallelize returns a float)"))
    if L.pp > 1 and S.tied:
        g2 = Group(2, c.groups["pp"].per_node and 1, c.groups["pp"].sharing, L.world)
        t = sum(prof.collective_time("all_reduce", e * isz, g2) for _, e in S.tied)
        exposed += t
        colls.append(Collective("step", "all_reduce", sum(e for _, e in S.tied) * isz / len(S.tied), "pp", 2,
                                count=len(S.tied), seconds=t, why="tied parameters summed between first and last stage",
                                back_to_back=True))
    return exposed, copies


def _worst_memory(c: _Ctx, S: _Stages) -> tuple[float, dict]:
    """``(peak bytes, parts)`` of the stage whose ranks peak highest (``_memory``)."""
    L, spec, st = c.L, c.spec, c.st
    mem_parts, peak = None, -1.0
    whole_elems = float(sum(_n(p.shape) for p in st.params))
    for s in range(L.pp):
        # shardflow builds the whole model on every rank before cutting it into stages (the
        # stage's own parameters are laid out; the others stay whole and untouched)
        resident = None
        if L.pp > 1 and spec.entry != "any":
            stage_whole = sum(_n(p.shape) for p, _ in S.param_list[s])
            resident = whole_elems - stage_whole + S.params[s]
        parts = _memory(spec, L, st, s, S.params[s], S.act[s], S.trans[s], S.biggest[s],
                        S.layer_act, S.layer_in, c.nl, c.v, c.itemsize, L.tp, resident)
        if parts["peak"] > peak:
            peak, mem_parts = parts["peak"], parts
    return peak, mem_parts


def _replays_pipeline(c: _Ctx) -> bool:
    """A pipeline that shardflow's schedule runs on a measured host (``pipesim``): 1F1B or
    GPipe, one stage per rank, an entry point that runs it."""
    L = c.L
    return (L.pp > 1 and not c.profile.simulated and c.v == 1 and L.schedule in ("1f1b", "gpipe")
            and c.spec.entry != "any")


def _pipeline_replay(c: _Ctx, S: _Stages, rest: float, work: float) -> tuple:
    """``(step, time share, bubble seconds, exposed pipeline communication)`` of the pipeline
    replayed by ``pipesim.simulate``: per stage one micro-batch's forward (compute, its
    blocking collectives, half its sends) and backward (likewise), the ``dp x tp`` ranks of a
    stage sharing the host's cores with the other stages', the receivers' wake-up delays;
    then ``rest`` (gradient synchronisation, copies, optimizer) on every rank at once,
    time-shared where the ranks outnumber the cores."""
    from .pipesim import simulate

    L, m = c.L, c.L.microbatches
    fwd = [f + cf + p2 / 2 for f, cf, p2 in zip(S.f, S.comm_f, S.p2p)]
    bwd = [b + cb + p2 / 2 for b, cb, p2 in zip(S.b, S.comm_b, S.p2p)]
    weights = [L.dp * L.tp] * L.pp
    cores = c.profile.host_cores
    sched = simulate(fwd, bwd, m, weights, cores, L.schedule)
    alone = simulate(fwd, bwd, m, weights, None, L.schedule)  # every rank on a core of its own
    rest_shared = rest * max(1.0, c.profile.time_share(L.world))
    step = sched + rest_shared
    share = step / (alone + rest) if alone + rest > 0 else 1.0
    compute_path = _pipeline(S.compute(), m, L.pp, 1)[0]
    bubble_time = max(0.0, compute_path - work)
    comm_pipe = max(0.0, alone - compute_path)
    return step, share, bubble_time, comm_pipe


def _time_shared(span, stage_T, m, per_rank_rest, L: Layout, profile: Profile) -> tuple[float, float]:
    """``(step seconds, factor over span)`` on a host with fewer cores than busy ranks.

    ``span`` is the schedule at the rates of a rank holding a core. Every rank is busy
    (computing, or spinning in a blocking collective or send/recv, as the MPI backend does)
    for its stage's ``m`` micro-batches (``stage_T``: compute, the collectives inside the
    stage, the pipeline sends) plus ``per_rank_rest`` (gradient synchronisation, packing
    copies, the optimizer); it is idle, napping, in the pipeline's bubble. The cores then
    deliver at most ``cores`` rank-seconds per second, so the step takes at least the total
    busy time over the cores: ``max(span, sum_ranks busy / cores)``. Both terms come from
    the profile: the rates at ``min(ranks, cores)`` and the cores it recorded."""
    cores = profile.host_cores
    if not cores or L.world <= cores:
        return span, 1.0
    per_stage = L.world // max(1, L.pp)  # the dp x tp ranks of each stage
    busy = per_stage * sum(m * t for t in stage_T) + L.world * per_rank_rest
    step = max(span, busy / cores)
    return step, step / span if span > 0 else 1.0


def _sync_waits(c: _Ctx, stage_T, per_rank_rest, colls) -> tuple[int, float]:
    """``(synchronisations, seconds)`` the step loses to peers waiting for a core, on a host
    with fewer cores than ranks: each collective call after compute (``colls``' counts; calls
    back to back, as the buckets waited for at the end of backward or the all-reduces after a
    pipeline's schedule, as one: the ranks arrive at the later ones together) is a point
    where every rank of it must have arrived, and the first ones spin on cores the last ones
    wait for. Each costs ``Profile.sync_wait`` (measured after the compute a rank does
    between two of them, its busy time over the count; else one scheduler tick). Pipelines are left to the replay (``pipesim``: wake-ups, shared cores): their
    ranks nap while they wait for a neighbour's activation, so fewer are runnable than there
    are ranks, and a stage's tensor-parallel peers mostly hold cores together (not measured
    separately: the wait here is for every rank runnable all step, as in dp and tp)."""
    prof, L = c.profile, c.L
    cores = prof.host_cores
    if not cores or L.world <= cores or L.pp > 1:
        return 0, 0.0
    n = sum(1 if x.back_to_back else x.count if x.syncs is None else x.syncs
            for x in colls if x.kind != "send_recv")
    if not n:
        return 0, 0.0
    busy = max(L.microbatches * t for t in stage_T) + per_rank_rest
    return n, n * prof.sync_wait(L.world, busy / n)


def _pipeline(stage_T, m, pp, v) -> tuple[float, float]:
    """``(seconds, bubble fraction)`` of ``m`` micro-batches through stages taking
    ``stage_T`` each (module docstring)."""
    if pp == 1:
        return stage_T[0] * m, 0.0
    if v == 1:
        return sum(stage_T) + (m - 1) * max(stage_T), (pp - 1) / (m + pp - 1)
    return m * max(stage_T) + (pp - 1) * max(stage_T) / v, (pp - 1) / (v * m + pp - 1)


def _global_collectives(st: StepTrace, L: Layout, itemsize: int, op_stage) -> tuple[list, list]:
    """The collectives global tensors run inside forward and backward, from the trace:
    ``(tp, dp)`` with ``tp = [(phase, bytes, stage)]`` (one all-reduce of each row-parallel
    output in forward, of each distinct column-parallel input's gradient in backward) and
    ``dp = [(bytes, stage)]`` (per-use data parallelism: one all-reduce in backward of each
    input that requires grad, does not depend on the batch and meets one that does;
    a parameter split by TP at its shard's size)."""
    tp, dp = L.tp, L.dp
    tp_coll, dp_uses, seen = [], [], set()
    roles = {p.name: p.tp_role for p in st.params}
    for o, s in zip(st.ops, op_stage):
        if tp > 1:
            if o.tp_role == "row":
                tp_coll.append(("forward", _n(o.out_shapes[0]) * itemsize, s))
            if o.tp_role == "col" and o.in_ids and o.in_ids[0] not in seen:
                seen.add(o.in_ids[0])
                tp_coll.append(("backward", _n(o.in_shapes[0]) * itemsize, s))
        if dp > 1 and L.grad_sync in GLOBAL_SYNCS:
            for j in o.dp_reduce:
                nb = _n(o.in_shapes[j]) * itemsize
                pname = o.params.get(j)
                if pname is not None and L.grad_sync == "global-bucketed":
                    continue  # a parameter's partial gradient waits for its bucket
                if pname is not None and tp > 1 and roles.get(pname):
                    nb /= tp
                dp_uses.append((nb, s))
    return tp_coll, dp_uses


def predicted_comm_plan(spec: RunSpec, layout: Layout) -> list:
    """``[(phase, collective, bytes, group size)]`` that ``distributed.comm_plan()`` should
    record for one micro-batch's forward and backward of a global-tensor layout (dp x tp,
    ``parallelize``'s path): the planner's model of it, compared with the recording in the
    tests."""
    L = layout.with_sync(spec.entry)
    b = spec.batch_size // (L.dp * L.microbatches)
    st = spec.model_trace.at(batch=b, **spec.extra_dims)
    if L.tp > 1:
        assign_tp_roles(st, spec.tp_plan)
    itemsize = 2 if spec.precision == "mixed" else 4
    tp_coll, dp_uses = _global_collectives(st, L, itemsize, [0] * len(st.ops))
    out = [(ph, "all_reduce", int(nb), L.tp) for ph, nb, _ in tp_coll]
    out += [("backward", "all_reduce", int(nb), L.dp) for nb, _ in dp_uses]
    if L.dp > 1 and L.grad_sync == "global-bucketed":
        out += [("backward", "all_reduce", int(nb), L.dp) for nb in reducer_buckets(st, L.tp, itemsize)]
    if L.dp > 1 and L.grad_sync in GLOBAL_SYNCS:
        out.append(("forward", "all_reduce", 8, L.dp))  # the loss's mean over the global batch
    return out


def reducer_buckets(st: StepTrace, tp: int, itemsize: int) -> list:
    """Bytes of each bucket of ``nn.parallel.reducer.Reducer`` (``reducer_bucket_params``)."""
    return [sum(b) * itemsize for b in reducer_bucket_params(st, tp, itemsize)] or [0.0]


def reducer_bucket_params(st: StepTrace, tp: int, itemsize: int) -> list:
    """Elements of each parameter of each bucket of ``nn.parallel.reducer.Reducer``, in its
    flat order: this rank's parameters (split ones divided by ``tp``) in reverse order, a
    bucket closed when the next parameter would pass its cap (the first
    ``DDP_FIRST_BUCKET``, then ``DDP_BUCKET``)."""
    out, cur, cap = [], [], DDP_FIRST_BUCKET
    for p in reversed(st.params):
        e = _n(p.shape) / (tp if p.tp_role else 1)
        if cur and (sum(cur) + e) * itemsize > cap:
            out.append(cur)
            cur, cap = [], DDP_BUCKET
        cur.append(e)
    return out + [cur] if cur else out


def reducer_pieces(sizes: list, piece_elems: int) -> list:
    """Elements of each piece a ``Reducer`` bucket of parameters of ``sizes`` elements (flat
    order) is all-reduced in, one non-blocking call each: the reducer's own cut
    (``nn.parallel.reducer.piece_bounds``)."""
    bounds, _ = piece_bounds(sizes, piece_elems)
    return [b - a for a, b in zip(bounds[:-1], bounds[1:])]


def _param_role(st: StepTrace, name: str) -> str:
    for p in st.params:
        if p.name == name:
            return p.tp_role
    return ""


def _boundary_bytes(st: StepTrace, op_stage, itemsize) -> float:
    """Bytes of the activation a stage sends on: the output of the last op before the
    first stage boundary (the residual stream for a transformer)."""
    for i in range(1, len(st.ops)):
        if op_stage[i] != op_stage[i - 1] and st.ops[i - 1].out_shapes:
            return _n(st.ops[i - 1].out_shapes[0]) * itemsize
    return 0.0


def _buckets(total: float, first: float, cap: float) -> list:
    if total <= 0:
        return [0.0]
    out = [min(total, first)]
    rest = total - out[0]
    while rest > 0:
        out.append(min(rest, cap))
        rest -= out[-1]
    return out


def _fsdp_units(st: StepTrace, tp: int) -> list:
    """Elements per ``fully_shard`` unit: each block of the stack, then the root (the rest),
    in forward order (root first: its pre-forward runs before the blocks')."""
    per_layer, root = {}, 0.0
    for p in st.params:
        e = _n(p.shape) / (tp if p.tp_role else 1)
        if p.layer is None:
            root += e
        else:
            per_layer[p.layer] = per_layer.get(p.layer, 0.0) + e
    return [root] + [per_layer[k] for k in sorted(per_layer)]


def _fsdp_unit_params(st: StepTrace, tp: int) -> list:
    """``[[(elements, rows)] per parameter] per fully_shard unit``, in ``_fsdp_units``' order
    (root first, then each block): what ``FSDPParamGroup`` makes its per-parameter
    collectives of."""
    per_layer, root = {}, []
    for p in st.params:
        split = tp if p.tp_role else 1
        rows = p.shape[0] // (split if p.tp_role == "col" else 1) if p.shape else 0
        item = (_n(p.shape) / split, rows)
        (root if p.layer is None else per_layer.setdefault(p.layer, [])).append(item)
    return [root] + [per_layer[k] for k in sorted(per_layer)]


def _fsdp_calls(unit: list, n: int) -> tuple[list, float]:
    """``(elements of each split parameter, elements of the replicated ones)`` of a unit on
    ``n`` ranks, by ``FSDPParamGroup``'s rule: a parameter with at least ``n`` rows is split
    (an all-gather and a reduce-scatter of its own), the rest replicated (their gradients in
    one all-reduce)."""
    split = [e for e, rows in unit if rows >= n]
    return split, sum(e for e, rows in unit if rows < n)


def _memory(spec, L, st, s, elems, act, trans, biggest, layer_act, layer_in, nl, v, itemsize, tp,
            resident=None) -> dict:
    """Memory parts of stage ``s``'s ranks (module docstring); ``resident``: parameter
    elements held when more than the stage's (``elems``)."""
    dp, pp, m = L.dp, L.pp, L.microbatches
    z = L.zero
    p_isz = itemsize
    # fully_shard keeps every parameter sharded at rest for ZeRO-2 as for ZeRO-3; the
    # gathered whole units are the buffers below (ZeRO-2 keeps them from forward to backward)
    params = (resident if resident is not None else elems) * p_isz / (dp if z >= 2 else 1)
    grads = elems * p_isz / (dp if z >= 2 else 1)
    state_per = {"adamw": 8.0, "adam": 8.0, "sgd_momentum": 4.0, "sgd": 0.0}.get(spec.optimizer, 8.0)
    if spec.precision == "mixed":
        state_per += 4.0  # the float32 master copy
    opt = elems * state_per / (dp if z >= 1 else 1)
    buckets = gathered = packed = step_only = 0.0
    if dp > 1 and (L.grad_sync in ("bucketed", "global-bucketed")
                   or (L.grad_sync == "after-backward" and spec.entry != "any")):
        # the reducer's flat buckets (shardflow's pipelines reduce the stage's gradients after
        # the schedule with a Reducer too: its buckets are made at the first step and kept)
        buckets = elems * p_isz
        if z == 1:  # the all-gather of the updated rows: after the step, activations gone
            step_only = min(ZERO1_BUCKET, elems * 4)
    if z >= 2 and dp > 1:
        units = _fsdp_units(st, tp)
        if z == 2:
            gathered = sum(units) * p_isz  # gathered parameters kept from forward to backward
        else:
            gathered = 2 * max(units) * p_isz  # the unit in use and the one prefetched
        packed = 2 * max(units) * p_isz  # packed gradients of two units
    buffers = buckets + step_only + gathered + packed
    # activations in flight
    if pp == 1:
        inflight = 1
    elif L.schedule == "gpipe":
        inflight = m
    elif v > 1:
        inflight = min(m * v, (pp - s - 1) * 2 + (v - 1) * pp + 1) / v
    else:
        inflight = min(pp - s, m)
    if L.recompute and nl:
        layers_here = [k for k in layer_act if _stage_of_layer(k, nl, pp, v)[0] == s]
        kept = sum(layer_in.get(k, 0.0) for k in layers_here)
        non_layer = act - sum(layer_act[k] for k in layers_here)
        one_block = max((layer_act[k] for k in layers_here), default=0.0)
        activations = inflight * (kept + max(0.0, non_layer)) + one_block
    else:
        activations = inflight * act
    # 1F1B (and its interleaved form) runs later forwards after earlier backwards: when more
    # micro-batches pass than are in flight at once, the gradients accumulated so far are
    # resident at the steady state's peaks (GPipe: every forward before any backward)
    grads_resident = pp > 1 and inflight < m
    bwd_extra = st.bwd_fixed * (grads / max(1.0, st.grad_bytes)) + st.bwd_per_act * biggest \
        if st.bwd_per_act or st.bwd_fixed else st.backward_extra
    # When each buffer is alive: DDP's buckets always; ZeRO-1's gather bucket after the step
    # (no activations then); fully_shard's gathered units from forward into backward, its
    # packed gradients only once backward has freed activations (a unit's gradients are
    # packed as its backward ends), so they meet the gradient shards, not the activations.
    base = params + opt + buckets + (grads if grads_resident else 0.0)
    fwd_peak = base + activations + trans + gathered
    bwd_peak = base + activations + bwd_extra + gathered
    end_peak = params + opt + buckets + grads + max(step_only, packed)
    peak = max(fwd_peak, bwd_peak, end_peak)
    return {"params": params, "grads": grads, "optimizer": opt, "buffers": buffers,
            "activations": activations, "transient": max(trans, bwd_extra), "peak": peak}
