"""The measurements behind a measured profile, run by every rank of a calibration job.

All ranks of the job run each compute measurement at the same time (a barrier before each),
so the rates are those of ``n`` ranks sharing the host: the concurrency the planner asks
for when it costs a layout of ``n`` ranks on this machine, up to the host's cores (beyond
them a short op runs un-preempted at about the ``cores`` rate, and the planner time-shares
the cores over the whole step instead). Times are medians of repeats.

* GEMM: ``np.matmul`` float32 over a log grid of (M, K, N) (shardflow's ``linear`` folds
  leading dims into M and calls the same BLAS); cells above a size cap are left empty (the
  rate has saturated; ``profile.py`` takes the nearest measured cell).
* attention (causal ``scaled_dot_product_attention``) and ``conv2d``: FLOP rates through
  shardflow's own ops, forward and backward separately, counted as ``opcost`` counts them.
* memory-bound ops: effective GB/s of shardflow's ``add``, ``gelu``, ``layer_norm``,
  ``cross_entropy``, ``embedding``, ``contiguous``, forward and backward, at a few sizes;
  bytes as ``opcost`` counts them, so model and measurement use one convention.
* optimizer: shardflow's AdamW and SGD (momentum) per parameter element.
* overheads: a small transformer block on tiny tensors (the compute is negligible), its
  forward and backward time divided by its op count and its autograd-node count; once on
  local tensors, once on global (broadcast) tensors on the job's mesh.
* collectives (``n > 1``): all-reduce, reduce-scatter, all-gather, broadcast over the world
  and over groups of every divisor size (running at once, as a layout's groups do), and
  send/recv between rank pairs; ``alpha + beta * bytes`` fitted per kind and group size.
* overlap: a non-blocking all-reduce started before a run of GEMMs with ``progress()``
  calls between them (what DDP's hooks do): the fraction of the shorter of the two hidden.
* sync wait (``n > 1``): the wall time a blocking collective adds after ``W`` of compute on
  every rank, against the same compute with no collective (``sync_wait``): what a rank
  spinning for a peer that waits for its core costs when the ranks outnumber the cores.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from .collectives import fit_alpha_beta
from .opcost import op_cost
from .trace import trace_step

__all__ = ["compute_rates", "collective_fits", "overlap_fraction", "sync_wait", "GRID", "QUICK_GRID"]

GRID = [16, 64, 256, 1024, 4096]
QUICK_GRID = [16, 256, 4096]


def _median_time(fn, reps: int, barrier=None) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(reps):
        if barrier is not None:
            barrier()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _gemm_table(grid, cap, barrier, reps):
    rng = np.random.default_rng(0)
    table = []
    for m in grid:
        plane = []
        for k in grid:
            row = []
            for n in grid:
                if m * k * n > cap:
                    if barrier is not None:
                        barrier()  # keep the ranks' barriers matched
                    row.append(None)
                    continue
                a = rng.standard_normal((m, k), dtype=np.float32)
                b = rng.standard_normal((k, n), dtype=np.float32)
                t = _median_time(lambda a=a, b=b: a @ b, reps, barrier)
                row.append(round(2.0 * m * k * n / max(t, 1e-9) / 1e9, 4))
            plane.append(row)
        table.append(plane)
    return table


def _fwd_bwd(make, reps, barrier):
    """(forward seconds, backward seconds) of ``make() -> (fwd_fn)``: fwd_fn returns a
    scalar loss; backward is timed on a fresh forward each time."""
    fwd = make()
    t_f = _median_time(fwd, reps, barrier)
    tb = []
    fwd().backward()
    for _ in range(reps):
        loss = fwd()
        if barrier is not None:
            barrier()
        t0 = time.perf_counter()
        loss.backward()
        tb.append(time.perf_counter() - t0)
    return t_f, statistics.median(tb)


def _record(name, ins, outs, kw=None, grads=None):
    from .trace import OpRecord

    return OpRecord(name=name, in_shapes=[tuple(s) for s in ins], out_shapes=[tuple(s) for s in outs],
                    itemsize=4, module="", layer=None, params={}, needs_grad=True,
                    inputs_grad=grads or [True] * len(ins), batch_dep=True, dp_reduce=[], kw=kw or {})


def _less(t, overhead_s):
    """A measured time less the framework overhead it includes (never below a tenth)."""
    return max(t - overhead_s, 0.1 * t)


def _family_rates(reps, barrier, sizes, ov):
    """Effective GB/s (forward, backward) per op and family through shardflow's ops, less
    the per-op overheads ``ov = (forward, backward)`` seconds of the op and its ``sum``."""
    from ...autograd.tensor import Tensor
    from ...nn import functional as F

    rng = np.random.default_rng(1)

    def param(*shape):
        return Tensor(rng.standard_normal(shape, dtype=np.float32) * 0.1, requires_grad=True)

    bw = {}
    for rows_elems in sizes:
        C = 256
        rows = max(1, rows_elems // C)
        for name, (fn, rec) in _cases(F, param, rng, rows, C).items():
            t_f, t_b = _fwd_bwd(lambda fn=fn: fn, reps, barrier)
            t_f, t_b = _less(t_f, 2 * ov[0]), _less(t_b, 2 * ov[1])
            c = op_cost(rec)
            entry = bw.setdefault(name, {"family": c.family, "elems": [], "fwd": [], "bwd": []})
            entry["elems"].append(rows * C)
            entry["fwd"].append(round(c.bytes / max(t_f, 1e-9) / 1e9, 4))
            entry["bwd"].append(round(c.bwd_bytes / max(t_b, 1e-9) / 1e9, 4))
    return bw


def _cases(F, param, rng, rows, C, V=256):
    """``{op: (loss function, its OpRecord)}`` at ``rows x C`` (the reduction that makes
    the scalar is timed with the op: a small share for these memory-bound ops)."""
    from ...autograd.tensor import Tensor

    x, y, h = param(rows, C), param(rows, C), param(rows, C)
    w_ln, b_ln = param(C), param(C)
    logits = param(rows, V)
    tgt = Tensor(rng.integers(0, V, rows))
    emb_w = param(V, C)
    idx = Tensor(rng.integers(0, V, rows))
    xt = param(rows // 8 or 1, 8, C // 8, 8)
    tshape = (xt.shape[0], xt.shape[2], 8, 8)
    return {
        "add": (lambda: (x + y).sum(), _record("add", [x.shape, y.shape], [x.shape])),
        "gelu": (lambda: F.gelu(h).sum(), _record("gelu", [h.shape], [h.shape])),
        "layer_norm": (lambda: F.layer_norm(x, (C,), w_ln, b_ln).sum(),
                       _record("layer_norm", [x.shape, (C,), (C,)], [x.shape])),
        "cross_entropy": (lambda: F.cross_entropy(logits, tgt),
                          _record("cross_entropy", [logits.shape, (rows,)], [()])),
        "embedding": (lambda: F.embedding(idx, emb_w).sum(),
                      _record("embedding", [(rows,), emb_w.shape], [(rows, C)])),
        "contiguous": (lambda: xt.transpose(1, 2).contiguous().sum(),
                       _record("contiguous", [tshape], [tshape])),
    }


def _attention_rate(reps, barrier, ov, B=2, nh=4, T=128, hs=32):
    from ...autograd.tensor import Tensor
    from ...nn import functional as F

    rng = np.random.default_rng(2)
    q, k, v = (Tensor(rng.standard_normal((B, nh, T, hs), dtype=np.float32), requires_grad=True)
               for _ in range(3))
    t_f, t_b = _fwd_bwd(lambda: (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).sum()),
                        reps, barrier)
    t_f, t_b = _less(t_f, 2 * ov[0]), _less(t_b, 2 * ov[1])
    c = op_cost(_record("scaled_dot_product_attention", [q.shape] * 3, [q.shape]))
    return {"fwd_gflops": round(c.flops / t_f / 1e9, 4), "bwd_gflops": round(c.bwd_flops / t_b / 1e9, 4),
            "shape": [B, nh, T, hs]}


def _conv_rate(reps, barrier, ov, B=4, C=32, H=16):
    from ...autograd.tensor import Tensor
    from ...nn import functional as F

    rng = np.random.default_rng(3)
    x = Tensor(rng.standard_normal((B, C, H, H), dtype=np.float32), requires_grad=True)
    w = Tensor(rng.standard_normal((C, C, 3, 3), dtype=np.float32) * 0.1, requires_grad=True)
    t_f, t_b = _fwd_bwd(lambda: (lambda: F.conv2d(x, w, padding=1).sum()), reps, barrier)
    t_f, t_b = _less(t_f, 2 * ov[0]), _less(t_b, 2 * ov[1])
    c = op_cost(_record("conv2d", [x.shape, w.shape], [x.shape]))
    return {"fwd_gflops": round(c.flops / t_f / 1e9, 4), "bwd_gflops": round(c.bwd_flops / t_b / 1e9, 4),
            "shape": [B, C, H, H, 3]}


def _optimizer_ns(reps, barrier, elems=1 << 20):
    from ... import optim
    from ...autograd.tensor import Tensor

    out = {}
    for name, make in (("adamw", lambda ps: optim.AdamW(ps, lr=1e-3, weight_decay=0.1)),
                       ("sgd_momentum", lambda ps: optim.SGD(ps, lr=1e-3, momentum=0.9)),
                       ("sgd", lambda ps: optim.SGD(ps, lr=1e-3))):
        p = Tensor(np.zeros(elems, np.float32), requires_grad=True)
        p.grad = Tensor(np.full(elems, 1e-3, np.float32))
        opt = make([p])
        t = _median_time(opt.step, reps, barrier)
        out[name] = round(t / elems * 1e9, 6)
    return out


class _TinyBlock:
    """A pre-LN transformer block built from nn layers (the planner cannot import models)."""

    def __init__(self, C=16, nh=2):
        from ... import nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
                self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
                self.fc, self.out = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

            def forward(self, x):
                from ...nn import functional as F

                B, T, _ = x.shape
                q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
                q, k, v = (t.view(B, T, nh, C // nh).transpose(1, 2) for t in (q, k, v))
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
                return x + self.out(F.gelu(self.fc(self.ln2(x))))

        self.model = Block()


def _overheads(reps, barrier, world_size):
    """Seconds per op (forward) and per autograd node (backward), local and global."""
    from ...autograd.tensor import Tensor

    rng = np.random.default_rng(4)
    blk = _TinyBlock().model
    x = Tensor(rng.standard_normal((1, 4, 16), dtype=np.float32), requires_grad=True)
    tr = trace_step(blk, (x,), lambda m, inp: m(*inp).sum())
    n_f = len(tr.ops) + 1  # + the sum
    n_b = sum(1 for o in tr.ops if o.needs_grad) + 1
    t_f, t_b = _fwd_bwd(lambda: (lambda: blk(x).sum()), reps, barrier)
    out = {"op_fwd": t_f / n_f * 1e6, "op_bwd": t_b / n_b * 1e6}
    try:
        from ..placement import init_device_mesh
        from ..sbp import broadcast

        mesh = init_device_mesh("cpu", (world_size,))
        gblk = _TinyBlock().model
        gblk.to_global(mesh, (broadcast,))
        gx = x.detach().to_global(mesh, [broadcast]).requires_grad_(True)
        g_f, g_b = _fwd_bwd(lambda: (lambda: gblk(gx).sum()), reps, barrier)
        out["global_op_fwd"] = max(0.0, g_f / n_f * 1e6 - out["op_fwd"])
        out["global_op_bwd"] = max(0.0, g_b / n_b * 1e6 - out["op_bwd"])
    finally:
        from .. import route

        route.disable()
    out["step"] = 0.0
    return {k: round(v, 3) for k, v in out.items()}


def compute_rates(quick: bool, barrier, world_size: int) -> dict:
    """Every compute figure of one concurrency level (module docstring)."""
    reps = 3 if quick else 5
    grid = QUICK_GRID if quick else GRID
    cap = (1 << 26) if quick else (1 << 30)
    sizes = [1 << 16, 1 << 20] if quick else [1 << 14, 1 << 17, 1 << 20, 1 << 22]
    over = _overheads(reps, barrier, world_size)
    ov = (over["op_fwd"] * 1e-6, over["op_bwd"] * 1e-6)
    bw = _family_rates(reps, barrier, sizes, ov)
    fams = {}
    for e in bw.values():
        fams.setdefault(e["family"], []).append(e)
    by_family = {}
    for fam, es in fams.items():  # the family's figure: the geometric mean of its ops'
        by_family[fam] = {"elems": es[0]["elems"],
                          "fwd": [round(float(np.exp(np.mean(np.log(col)))), 4) for col in zip(*(e["fwd"] for e in es))],
                          "bwd": [round(float(np.exp(np.mean(np.log(col)))), 4) for col in zip(*(e["bwd"] for e in es))]}
    return {"gemm": {"grid": grid, "gflops": _gemm_table(grid, cap, barrier, reps)},
            "attention": _attention_rate(reps, barrier, ov),
            "conv": _conv_rate(reps, barrier, ov),
            "bandwidth_gbs": {**{k: {kk: vv for kk, vv in v.items() if kk != "family"} for k, v in bw.items()},
                              **by_family},
            "optimizer_ns": _optimizer_ns(reps, barrier),
            "overhead_us": over}


def collective_fits(world, quick: bool) -> dict:
    """``{kind: {group size: [alpha, beta]}}`` measured on ``world`` (module docstring)."""
    n = world.size
    sizes = [1 << 12, 1 << 16, 1 << 20, 1 << 23] if quick else [1 << k for k in range(10, 25, 2)]
    reps = 3 if quick else 7
    out = {}
    group_sizes = [g for g in range(2, n + 1) if n % g == 0]
    for g in group_sizes:
        comms = {}
        for start in range(0, n, g):  # every rank takes part in one new_group call per group
            c = world.new_group(list(range(start, start + g))) if g < n else world
            if c is not None:
                comms["mine"] = c
        comm = comms["mine"]
        for kind in ("all_reduce", "reduce_scatter", "all_gather", "broadcast"):
            ts = []
            for nbytes in sizes:
                elems = max(g, nbytes // 4 // g * g)
                fn = _collective(comm, kind, elems, g)
                ts.append(_median_time(fn, reps, world.barrier))
            out.setdefault(kind, {})[str(g)] = list(fit_alpha_beta([s // 4 // g * g * 4 for s in sizes], ts))
    # send/recv between pairs (0,1), (2,3), ... at once: half a ping-pong
    if n >= 2:
        me, peer = world.rank, world.rank ^ 1
        ts = []
        for nbytes in sizes:
            buf = np.ones(nbytes // 4, np.float32)

            def ping(buf=buf):
                if peer >= n:
                    return
                if me % 2 == 0:
                    world.send(buf, peer)
                    world.recv(buf, peer)
                else:
                    world.recv(buf, peer)
                    world.send(buf, peer)

            ts.append(_median_time(ping, reps, world.barrier) / 2)
        out["send_recv"] = {"2": list(fit_alpha_beta(sizes, ts))}
    # the same figures on every rank: rank 0's
    return world.broadcast_object(out, src=0)


def _collective(comm, kind, elems, g):
    """A call of ``kind`` on ``elems`` float32 elements (all-gather: ``elems / g`` in)."""
    buf = np.ones(elems, np.float32)
    if kind == "all_reduce":
        return lambda: comm.all_reduce(buf)
    if kind == "reduce_scatter":
        return lambda: comm.reduce_scatter(buf)
    if kind == "all_gather":
        part = np.ones(elems // g, np.float32)
        return lambda: comm.all_gather(part)
    return lambda: comm.broadcast(buf, src=0)


def overlap_fraction(world, quick: bool) -> float:
    """Fraction of the shorter of (all-reduce, GEMMs) hidden when the all-reduce runs
    non-blocking beside the GEMMs with ``progress()`` between them."""
    a = np.random.default_rng(5).standard_normal((256, 256), dtype=np.float32)
    buf = np.ones((4 << 20) // 4, np.float32)
    k = 20 if quick else 60

    def gemms():
        for _ in range(k):
            a @ a

    def gemms_polling(work):
        for _ in range(k):
            a @ a
            world.progress()
        work.wait()

    t_c = _median_time(gemms, 3, world.barrier)
    t_a = _median_time(lambda: world.all_reduce(buf), 3, world.barrier)
    t_both = _median_time(lambda: gemms_polling(world.all_reduce(buf, async_op=True)), 3, world.barrier)
    hidden = (t_c + t_a - t_both) / max(1e-12, min(t_c, t_a))
    f = float(min(1.0, max(0.0, hidden)))
    return float(world.broadcast_object(round(f, 4), src=0))


SYNC_WORK_S = (5e-4, 2e-3, 8e-3, 3.2e-2)  # each rank's compute between two synchronisations


def sync_wait(world, quick: bool) -> dict:
    """The wall seconds one blocking synchronisation adds to a job of ``world.size`` ranks,
    after ``W`` seconds of compute on every rank, for ``W`` in :data:`SYNC_WORK_S`.

    Why: with more ranks than cores the ranks are not in step. The first to arrive at a
    blocking collective spins (as the MPI backend's blocking data step does) on a core that a
    peer still queued behind it needs, until the scheduler preempts it; the collectives of
    ``collective_fits`` run back to back, every rank already there, and do not see it. So a
    loop of ``W`` of GEMMs then a blocking 1 KB all-reduce is timed against the same GEMMs
    with no collective (one barrier at the end), the ranks at once: the difference per
    iteration, less the all-reduce's own back-to-back time, is the wait. With a core per rank
    it is about zero on a quiet machine (the ranks arrive together).
    ``{"work_s": [...], "extra_s": [...]}`` (rank 0's figures, medians of repeats)."""
    a = np.random.default_rng(6).standard_normal((128, 128), dtype=np.float32)
    small = np.ones(256, np.float32)
    per = _median_time(lambda: a @ a, 50)  # one GEMM, this rank while the others wait here
    per = float(np.median(world.all_gather(np.array([per], np.float64))))
    alpha = _median_time(lambda: world.all_reduce(small), 7, world.barrier)
    reps = 3 if quick else 5
    works = SYNC_WORK_S[:3] if quick else SYNC_WORK_S
    extra = []
    for w in works:
        k = max(1, round(w / per))
        iters = max(4, int((0.15 if quick else 0.4) / (w * world.size)))

        def loop(sync, k=k, iters=iters):
            for _ in range(iters):
                for _ in range(k):
                    a @ a
                if sync:
                    world.all_reduce(small)
            if not sync:
                world.barrier()

        loop(True)  # warm-up
        diffs = []
        for _ in range(reps):  # alternated, so a burst of load falls on both
            world.barrier()
            t0 = time.perf_counter()
            loop(True)
            t1 = time.perf_counter()
            world.barrier()
            t2 = time.perf_counter()
            loop(False)
            diffs.append((t1 - t0) - (time.perf_counter() - t2))
        extra.append(max(0.0, statistics.median(diffs) / iters - alpha))
    out = {"work_s": list(works), "extra_s": [round(x, 7) for x in extra]}
    return world.broadcast_object(out, src=0)


BATCH_CALLS = 52  # non-blocking collectives issued together, then waited for (a GPT's fully_shard step)
BATCH_BYTES = 1 << 16  # each one's bytes (all-gather: output; reduce-scatter: input)


def batched_alphas(world, fits: dict, quick: bool) -> dict:
    """``{kind: {str(world.size): alpha}}``: the seconds per call of :data:`BATCH_CALLS`
    non-blocking collectives over the whole world issued back to back and then waited for
    one by one, as ``fully_shard`` runs its per-parameter all-gathers and reduce-scatters,
    less each call's bytes at the blocking fit's ``beta`` (``fits``, ``collective_fits``).

    Why: this backend advances a non-blocking collective only inside a poll (no
    asynchronous progress), and ``MPIWork.wait`` spins briefly, then naps 10 us .. 1 ms
    between polls: a batch pays those wake-ups per call, which the blocking calls of
    ``collective_fits`` (every rank there, spinning) never do; on this machine's 2 ranks a
    batched 64 KB all-gather took 4-5x a blocking one (session 40, docs/PLANNER.md)."""
    n = world.size
    reps = 3 if quick else 7
    calls = BATCH_CALLS // 4 if quick else BATCH_CALLS
    part = np.ones(BATCH_BYTES // 4 // n, np.float32)
    whole = np.ones(part.size * n, np.float32)
    outs = [np.empty((n, part.size), np.float32) for _ in range(calls)]
    shards = [np.empty(part.size, np.float32) for _ in range(calls)]
    kinds = {
        "all_gather": lambda i: world.all_gather(part, out=outs[i], async_op=True),
        "reduce_scatter": lambda i: world.reduce_scatter(whole, "avg", out=shards[i], async_op=True),
        "all_reduce": lambda i: world.all_reduce(outs[i].reshape(-1), async_op=True),
    }
    out = {}
    for kind, start in kinds.items():
        def batch(start=start):
            works = [start(i) for i in range(calls)]
            for w in works:
                w.wait()

        batch()  # warm-up
        per = []
        for _ in range(reps):  # the least disturbed repetition: the figure is wall time with naps in it
            world.barrier()
            t0 = time.perf_counter()
            batch()
            per.append(time.perf_counter() - t0)
        per = min(per) / calls
        nbytes = part.size * n * 4
        beta = fits.get(kind, {}).get(str(n), [0.0, 0.0])[1]
        out[kind] = {str(n): max(0.0, per - beta * nbytes)}
    return world.broadcast_object(out, src=0)
