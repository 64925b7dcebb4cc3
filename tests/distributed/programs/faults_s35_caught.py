"""Session 35's fault probes that every rank can catch, and the probed cases that are not
mistakes but must give torch's values (one launch, 2 ranks). Prints ``OK <case> <rank>`` per
case; a barrier after each case shows the job goes on.

Mistakes: ReduceOp.AVG of an int tensor (torch's RuntimeError; it was a TypeError), a
broadcast of another dtype per rank (a named mismatch, nothing changed), DDP with a
requires_grad that differs across ranks (torch's "same model" error, naming the parameter;
it was a bare mismatch in the first backward), DDP(static_graph=True) whose graph changes
(torch's "graph has changed" error, naming the parameters; it advised
find_unused_parameters), ZeroRedundancyOptimizer.state_dict() without / on another rank than
consolidate_state_dict(to=...), a P2POp of a wrong op, join(throw_on_early_termination=True).
Values: non-contiguous, bool and complex tensors in collectives, DDP buffers that differ
(rank 0's win; torch 2.13's broadcast_buffers / forward_sync_buffers / init_sync), static_graph with the same unused parameters every iteration (it was
ignored: the unused parameters failed the next forward), find_unused_parameters=True with
every parameter used (torch's warning), SyncBatchNorm with another batch size per rank and
with batch 1 (the single-process BatchNorm of the concatenated batch).
"""

import warnings

import numpy as np

import shardflow as torch
import shardflow.distributed as dist
import shardflow.nn as nn
from shardflow.comm import CommError
from shardflow.distributed.optim import ZeroRedundancyOptimizer
from shardflow.nn.parallel import DistributedDataParallel as DDP


def _expect(case, r, exc, *needles, fn):
    """``fn()`` raises ``exc`` with every needle in its message on this rank."""
    try:
        fn()
    except exc as e:
        for needle in needles:
            assert needle in str(e), (case, needle, str(e))
    else:
        raise AssertionError(f"{case}: no {exc.__name__} on rank {r}")
    _ok(case, r)


def _ok(case, r):
    dist.barrier()
    print(f"OK {case} {r}", flush=True)


class _Two(nn.Module):
    """Two linears; ``use_b=False`` skips the second (a graph that changes)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)

    def forward(self, x, use_b=True):
        return self.b(self.a(x)) if use_b else self.a(x)


def _collectives(r):
    t = torch.ones(2, dtype=torch.int64) * (r + 1)
    _expect("avg_int", r, RuntimeError, "ReduceOp.AVG needs a floating-point", "dtype int64",
            "use ReduceOp.SUM and divide", fn=lambda: dist.all_reduce(t, op=dist.ReduceOp.AVG))
    assert t.tolist() == [r + 1, r + 1], t  # nothing changed

    # torch 2.13's gloo takes these (no "Tensors must be contiguous" on CPU): the same values
    t = torch.arange(6.0).reshape(2, 3).t()
    dist.all_reduce(t)
    assert t.tolist() == [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]], t
    t = torch.arange(6.0).reshape(2, 3).t() * (r + 1)
    dist.broadcast(t, 0)
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]], t
    b = torch.tensor([r == 0, False])
    dist.all_reduce(b)
    assert b.tolist() == [True, False], b
    c = torch.tensor([1 + 2j, 3j]) * (r + 1)
    dist.all_reduce(c, op=dist.ReduceOp.AVG)
    assert c.tolist() == [1.5 + 3j, 4.5j], c
    _ok("collective_values", r)

    t = torch.zeros(3, dtype=torch.float32 if r == 0 else torch.float64) + r
    _expect("broadcast_dtype", r, CommError, "broadcast(shape=(3,), dtype=float32, root=0)",
            "broadcast(shape=(3,), dtype=float64, root=0)", "No array was changed",
            fn=lambda: dist.broadcast(t, 0))
    assert t.tolist() == [float(r)] * 3, t

    _expect("p2p_wrong_op", r, ValueError, "dist.isend or dist.irecv", "'all_reduce'",
            fn=lambda: dist.P2POp(dist.all_reduce, torch.zeros(2), 1 - r))


def _ddp(r):
    # buffers that differ: (running_mean after wrap, after one forward, warning) as torch
    # 2.13 (probed): broadcast_buffers (deprecated: FutureWarning) also controls the sync at
    # wrap; forward_sync_buffers only the forward; init_sync=False skips the wrap's sync
    mine, zero = float(r + 5), 5.0
    for kw, want in (({"broadcast_buffers": True}, (zero, zero, ["FutureWarning"])),
                     ({"broadcast_buffers": False}, (mine, mine, ["FutureWarning"])),
                     ({"forward_sync_buffers": False}, (zero, zero, [])),
                     ({"init_sync": False}, (mine, zero, [])),
                     ({"broadcast_buffers": False, "forward_sync_buffers": True},
                      (zero, zero, ["FutureWarning"]))):
        torch.manual_seed(0)
        bn = nn.BatchNorm1d(2)
        bn.running_mean.fill_(mine)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            d = DDP(bn, **kw)
        at_wrap = bn.running_mean.tolist()
        d.eval()
        d(torch.ones(3, 2))
        seen = (at_wrap[0], bn.running_mean.tolist()[0], [w.category.__name__ for w in got])
        assert seen == want, (kw, seen, want)
    _ok("ddp_buffers_differ", r)

    def frozen():
        m = nn.Linear(2, 2)
        if r == 1:
            m.bias.requires_grad_(False)
        DDP(m)
    _expect("ddp_requires_grad", r, RuntimeError,
            f"DDP expects same model across all ranks, but Rank {r} has {2 - r} params, while "
            f"rank {1 - r} has inconsistent {1 + r} params",
            f"parameter bias has requires_grad={r == 0} on rank {r}", "freeze", fn=frozen)

    torch.manual_seed(0)
    m = _Two()
    d = DDP(m, static_graph=True)
    other = DDP(nn.Linear(2, 2))
    other._set_static_graph()  # torch's private switch (recipes with checkpointing call it)
    assert other.static_graph and not DDP(nn.Linear(2, 2)).static_graph
    for _ in range(2):  # b unused every iteration: fine with a static graph, as in torch
        m.zero_grad()
        d(torch.ones(1, 2) * (r + 1), use_b=False).sum().backward()
    assert np.allclose(m.a.weight.grad.numpy(), 1.5), m.a.weight.grad
    assert m.b.weight.grad is None or not m.b.weight.grad.numpy().any()  # zeros (torch: None)
    _expect("ddp_static_graph_changes", r, RuntimeError,
            "Your training graph has changed in this iteration",
            "not compatible with static_graph set to True",
            f"rank {r}: unused in the first iteration but used now: b.weight, b.bias",
            fn=lambda: d(torch.ones(1, 2)))

    m = nn.Linear(2, 2)
    d = DDP(m, find_unused_parameters=True)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        for _ in range(2):
            d(torch.ones(1, 2)).sum().backward()
    texts = [str(w.message) for w in got]
    assert len(texts) == 1 and texts[0].startswith(  # torch's words, once
        "find_unused_parameters=True was specified in DDP constructor, but did not find any "
        "unused parameters in the forward pass."), texts
    _ok("ddp_find_unused_all_used", r)

    def early_end():
        with d.join(throw_on_early_termination=True):
            for _ in range(2 + 2 * r):
                d(torch.ones(1, 2)).sum().backward()
    needle = ("Rank 0 exhausted all inputs." if r == 0 else
              "Detected at least one rank that exhausted inputs.")
    _expect("ddp_join_throw", r, RuntimeError, needle, fn=early_end)


def _zero(r):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    opt = ZeroRedundancyOptimizer(m.parameters(), optimizer_class=torch.optim.Adam, lr=0.1)
    m(torch.ones(1, 2)).sum().backward()
    opt.step()
    _expect("zero_not_consolidated", r, RuntimeError,
            f"Optimizer state has not been consolidated on this rank (rank {r})",
            "consolidate_state_dict(to=RANK) on every rank first", fn=opt.state_dict)
    opt.consolidate_state_dict(to=1)
    if r == 1:
        assert sorted(opt.state_dict()["state"]) == [0, 1, 2, 3]
        _ok("zero_consolidated_elsewhere", r)
    else:
        _expect("zero_consolidated_elsewhere", r, RuntimeError,
                "It was consolidated to rank 1 (consolidate_state_dict(to=1)), so call "
                "state_dict() on rank 1 only", fn=opt.state_dict)


def _sync_batchnorm(r):
    torch.manual_seed(0)
    full = torch.randn(5, 3, 4) * 2 + 1  # the same on both ranks: rank 0 rows 0:2, rank 1 2:5
    weights = torch.randn(5, 3, 4)
    rows = slice(0, 2) if r == 0 else slice(2, 5)
    x = full[rows].clone().requires_grad_(True)
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm1d(3)))
    (sync(x) * weights[rows]).sum().backward()

    ref = nn.BatchNorm1d(3)
    xf = full.clone().requires_grad_(True)
    yf = ref(xf)
    (yf * weights).sum().backward()
    for got, want in ((sync[0].running_mean, ref.running_mean),
                      (sync[0].running_var, ref.running_var),  # unbiased over all 5 rows
                      (x.grad, xf.grad[rows])):
        assert np.allclose(got.numpy(), want.numpy(), atol=1e-5), (got, want)
    gw = sync[0].weight.grad.clone()
    dist.all_reduce(gw)  # each rank holds its own rows' part of the weight's gradient
    assert np.allclose(gw.numpy(), ref.weight.grad.numpy(), atol=1e-4), (gw, ref.weight.grad)
    y = sync(x.detach())  # train mode again: the same batch statistics
    assert np.allclose(y.detach().numpy(), yf[rows].detach().numpy(), atol=1e-5)
    one = nn.SyncBatchNorm(3)
    y1 = one(torch.full((1, 3), float(r)))  # batch 1 on each rank: a global batch of 2
    assert np.allclose(y1.detach().numpy(), 2 * r - 1.0, atol=1e-4), y1  # eps: not exactly 1
    _ok("sync_batchnorm", r)


def main(argv):
    dist.init_process_group("gloo")
    r = dist.get_rank()
    _collectives(r)
    _ddp(r)
    _zero(r)
    _sync_batchnorm(r)
    dist.destroy_process_group()
