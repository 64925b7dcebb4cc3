"""A ``fully_shard``-ed ``nn.Linear`` streams its weight gradient
(``shardflow/distributed/fsdp/streamed_linear.py``), on the ranks this job has (2 or 3):

* stages 2 and 3, 4 AdamW steps, per-Linear units: the parameters equal one process's on
  the whole batch (1e-6 relative); the weights whose rows divide evenly are reduce-scattered
  in one block per row of a rank's chunk (``BLOCK_BYTES = 1``), so their whole gradient
  never existed; the fallbacks (a Linear run twice per forward, rows that do not divide,
  the backward after an unsynchronised one, which holds whole gradients) still reduce one
  whole gradient each, with the same results;
* the gathered weight's pages are given back before its gradient is made: when the bias's
  gradient arrives (after the weight's blocks) the unit is still unsharded and its weight
  reads zeros.
"""

from __future__ import annotations

import numpy as np

import shardflow as sf
import shardflow.nn.functional as F
from shardflow import distributed as dist
from shardflow import nn, optim
from shardflow.distributed.fsdp import fully_shard, streamed_linear

ROWS = 2  # batch rows per rank


class Net(nn.Module):
    """``up`` (12, 6) and ``down`` (6, 12, no bias) divide evenly on 2 and 3 ranks;
    ``shared`` runs twice per forward (its weight is still needed by the second use's
    backward); ``odd`` has 5 rows (uneven on 2 and 3 ranks)."""

    def __init__(self):
        super().__init__()
        self.up = nn.Linear(6, 12)
        self.down = nn.Linear(12, 6, bias=False)
        self.shared = nn.Linear(6, 6)
        self.odd = nn.Linear(6, 5)

    def forward(self, x):
        h = self.down(F.gelu(self.up(x)))
        return self.odd(self.shared(F.tanh(self.shared(h))))


def _batch(step, world):
    g = np.random.default_rng(step)
    return (g.standard_normal((ROWS * world, 3, 6)).astype(np.float32),
            g.standard_normal((ROWS * world, 3, 5)).astype(np.float32))


def _loss(model, x, y):
    return F.mse_loss(model(sf.tensor(x)), sf.tensor(y))


def _reduce_scatters(model) -> int:
    return model.fsdp_stats()["reduce_scatter"]


def _train_and_compare(stage: int, rank: int, world: int) -> None:
    sf.manual_seed(0)
    ref = Net()
    ref_opt = optim.AdamW(ref.parameters(), lr=0.02, weight_decay=0.1)
    sf.manual_seed(0)
    m = Net()
    for sub in (m.up, m.down, m.shared, m.odd):
        fully_shard(sub, reshard_after_forward=stage == 3)
    fully_shard(m, reshard_after_forward=stage == 3)
    opt = optim.AdamW(m.parameters(), lr=0.02, weight_decay=0.1)
    # one reduce-scatter per row of a rank's chunk for up.weight and down.weight, one each for
    # up.bias and the fallbacks (shared.weight, shared.bias, odd.weight, odd.bias)
    streamed = 12 // world + 6 // world + 1 + 4
    for step in range(4):
        X, Y = _batch(step, world)
        _loss(ref, X, Y).backward()
        ref_opt.step()
        ref_opt.zero_grad()
        x, y = X[rank * ROWS:(rank + 1) * ROWS], Y[rank * ROWS:(rank + 1) * ROWS]
        before = _reduce_scatters(m)
        if step == 3:  # gradient accumulation: two half batches, the first without sync
            m.set_requires_gradient_sync(False)
            (_loss(m, x[:1], y[:1]) * 0.5).backward()
            m.set_requires_gradient_sync(True)
            (_loss(m, x[1:], y[1:]) * 0.5).backward()
            expect = 3 + 4  # the held sums are reduced whole: nothing streams
        else:
            _loss(m, x, y).backward()
            expect = streamed
        count = _reduce_scatters(m) - before
        assert count == expect, (stage, step, count, expect)
        opt.step()
        opt.zero_grad()
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        full, want = p.numpy(), q.array
        err = float(np.abs(full - want).max() / np.abs(want).max())
        assert err < 1e-6, (stage, name, err)


def _weight_freed_before_its_gradient(stage: int) -> None:
    """A (96, 64) float32 weight (rows even on 2 and 3 ranks) is 6 whole pages at the start of
    its unit's storage."""
    sf.manual_seed(0)
    lin = nn.Linear(64, 96)
    root = nn.Sequential(lin, nn.Tanh())
    fully_shard(lin, reshard_after_forward=stage == 3)
    fully_shard(root, reshard_after_forward=stage == 3)
    seen = []
    lin.bias.register_hook(lambda g: seen.append(
        (lin.weight.is_global, int(np.count_nonzero(lin.weight.array)))))
    root(sf.randn(2, 64)).sum().backward()
    assert seen == [(False, 0)], (stage, seen)  # unsharded, and its pages read zero
    # a gradient hook of the user's on the weight wants its whole gradient: the weight is
    # not streamed (nor freed early), the hook sees the whole (96, 64) gradient
    shapes = []
    lin.weight.register_hook(lambda g: shapes.append(tuple(g.shape)))
    seen.clear()
    root(sf.randn(2, 64)).sum().backward()
    assert shapes == [(96, 64)] and seen[0][1] > 0, (stage, shapes, seen)
    # ... and so does one registered before fully_shard
    sf.manual_seed(0)
    lin = nn.Linear(64, 96)
    shapes = []
    lin.weight.register_post_accumulate_grad_hook(lambda p: shapes.append(tuple(p.grad.shape)))
    root = nn.Sequential(lin, nn.Tanh())
    fully_shard(lin, reshard_after_forward=stage == 3)
    fully_shard(root, reshard_after_forward=stage == 3)
    root(sf.randn(2, 64)).sum().backward()
    assert shapes == [(96, 64)], (stage, shapes)


def main(argv):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    streamed_linear.BLOCK_BYTES = 1  # one row of every rank's chunk per block: many blocks
    for stage in (2, 3):
        _train_and_compare(stage, rank, world)
        _weight_freed_before_its_gradient(stage)
