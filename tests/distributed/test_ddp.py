"""DistributedDataParallel / SyncBatchNorm on real ranks vs a single-process PyTorch reference.

Every rank can rebuild every rank's batch from its seed, so each rank computes the
reference itself with PyTorch: DDP averages the per-rank gradients with equal weight, so
the reference loss is ``sum_r mean_loss(batch_r) / world`` (the full-batch mean loss when
the batches are equal). Batches are uneven (rank r has 3 + 2r rows) except for the
SyncBatchNorm case, whose reference is BatchNorm on the full batch.
"""

import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

COMMON = r"""
import sys
import numpy as np, torch
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.nn.parallel import DistributedDataParallel as DDP, SyncBatchNorm
dist.init_process_group()
r, W = dist.get_rank(), dist.get_world_size()
torch.set_default_dtype(torch.float32)

def batch(rank, step, rows=None, din=6, dout=3):
    g = np.random.default_rng(10_000 + 100 * step + rank)
    n = rows if rows is not None else 3 + 2 * rank
    return (g.standard_normal((n, din)).astype(np.float32),
            g.standard_normal((n, dout)).astype(np.float32))

def to_torch(model, tmodel):
    with torch.no_grad():
        for (n1, p), (n2, q) in zip(model.named_parameters(), tmodel.named_parameters()):
            q.copy_(torch.from_numpy(p.numpy().copy()))

def check(model, tmodel, tol=2e-5):
    for (n1, p), (n2, q) in zip(model.named_parameters(), tmodel.named_parameters()):
        a, b = p.numpy(), q.detach().numpy()
        assert np.allclose(a, b, rtol=tol, atol=tol), (n1, np.abs(a - b).max())

def sgd(model, lr):
    for p in model.parameters():
        if p.grad is not None:
            p.array -= lr * p.grad.array

def tsgd(tmodel, lr):
    with torch.no_grad():
        for q in tmodel.parameters():
            if q.grad is not None:
                q -= lr * q.grad
"""

DDP_SCRIPT = COMMON + r"""
variant = sys.argv[1]
sf.manual_seed(1 + r)  # different init per rank: DDP must broadcast rank 0's
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))
tmodel = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8),
                             torch.nn.Tanh(), torch.nn.Linear(8, 3))
kw = dict(bucket_cap_mb=0.0004)  # ~400 bytes: several buckets
if variant == "view":
    kw["gradient_as_bucket_view"] = True
ddp = DDP(model, **kw)
assert len(ddp.bucket_sizes()) >= 3, ddp.bucket_sizes()
objs = [None] * W
dist.all_gather_object(objs, [p.numpy().copy() for p in model.parameters()])
for other in objs:
    for a, b in zip(other, objs[0]):
        assert np.array_equal(a, b)  # broadcast at wrap
to_torch(model, tmodel)
lr = 0.1
for step in range(4):
    if variant == "no_sync":
        x1, y1 = batch(r, 2 * step)
        with ddp.no_sync():
            F.mse_loss(ddp(sf.tensor(x1)), sf.tensor(y1)).backward()
        # local gradient only: must differ from the averaged one later
        x2, y2 = batch(r, 2 * step + 1)
        F.mse_loss(ddp(sf.tensor(x2)), sf.tensor(y2)).backward()
        tmodel.zero_grad()
        loss = 0
        for k in range(W):
            for s in (2 * step, 2 * step + 1):
                xk, yk = batch(k, s)
                loss = loss + torch.nn.functional.mse_loss(tmodel(torch.from_numpy(xk)), torch.from_numpy(yk)) / W
        loss.backward()
    else:
        x, y = batch(r, step)
        out = ddp(sf.tensor(x))
        F.mse_loss(out, sf.tensor(y)).backward()
        tmodel.zero_grad()
        loss = sum(torch.nn.functional.mse_loss(tmodel(torch.from_numpy(batch(k, step)[0])),
                                                torch.from_numpy(batch(k, step)[1])) for k in range(W)) / W
        loss.backward()
    for p, q in zip(model.parameters(), tmodel.parameters()):
        assert np.allclose(p.grad.numpy(), q.grad.numpy(), rtol=2e-5, atol=2e-6), np.abs(p.grad.numpy() - q.grad.numpy()).max()
    sgd(model, lr); tsgd(tmodel, lr)
    ddp.zero_grad(set_to_none=(variant != "view"))
check(model, tmodel)
assert ddp.stats["backward_waits"] == 4
print("ALL OK", r, flush=True)
"""

UNUSED_SCRIPT = COMMON + r"""
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 3)
        self.b = nn.Linear(6, 3)   # used only on even steps
    def forward(self, x, use_b):
        out = self.a(x)
        return out + self.b(x) if use_b else out
class TBranchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 3)
        self.b = torch.nn.Linear(6, 3)
    def forward(self, x, use_b):
        out = self.a(x)
        return out + self.b(x) if use_b else out
model, tmodel = Branchy(), TBranchy()
ddp = DDP(model, find_unused_parameters=True, bucket_cap_mb=0.0001)
to_torch(model, tmodel)
for step in range(4):
    use_b = step % 2 == 0
    x, y = batch(r, step)
    F.mse_loss(ddp(sf.tensor(x), use_b), sf.tensor(y)).backward()
    tmodel.zero_grad()
    loss = sum(torch.nn.functional.mse_loss(tmodel(torch.from_numpy(batch(k, step)[0]), use_b),
                                            torch.from_numpy(batch(k, step)[1])) for k in range(W)) / W
    loss.backward()
    sgd(model, 0.1); tsgd(tmodel, 0.1)
    ddp.zero_grad()
check(model, tmodel)
# without find_unused_parameters the next forward must raise PyTorch's error
model2 = Branchy()
ddp2 = DDP(model2)
x, y = batch(r, 0)
F.mse_loss(ddp2(sf.tensor(x), False), sf.tensor(y)).backward()
try:
    ddp2(sf.tensor(x), False)
except RuntimeError as e:
    assert "find_unused_parameters=True" in str(e)
else:
    raise AssertionError("expected the unfinished-reduction error")
print("ALL OK", r, flush=True)
"""

SYNCBN_SCRIPT = COMMON + r"""
model = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 3))
model = SyncBatchNorm.convert_sync_batchnorm(model)
assert isinstance(model[1], SyncBatchNorm)
tmodel = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
ddp = DDP(model)
to_torch(model, tmodel)
for step in range(3):
    x, y = batch(r, step, rows=4)
    F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y)).backward()
    xs = np.concatenate([batch(k, step, rows=4)[0] for k in range(W)])
    ys = np.concatenate([batch(k, step, rows=4)[1] for k in range(W)])
    tmodel.zero_grad()
    torch.nn.functional.mse_loss(tmodel(torch.from_numpy(xs)), torch.from_numpy(ys)).backward()
    sgd(model, 0.1); tsgd(tmodel, 0.1)
    ddp.zero_grad()
check(model, tmodel, 5e-5)
assert np.allclose(model[1].running_mean.numpy(), tmodel[1].running_mean.numpy(), atol=1e-5)
assert np.allclose(model[1].running_var.numpy(), tmodel[1].running_var.numpy(), atol=1e-5)
print("ALL OK", r, flush=True)
"""


@pytest.mark.parametrize("n,variant", [(2, "plain"), (3, "plain"), (2, "view"), (3, "no_sync")])
def test_ddp_matches_single_process(n, variant):
    res = run_mpi(DDP_SCRIPT, n=n, timeout=90, args=[variant]).check()
    assert res.stdout.count("ALL OK") == n, res.output


@pytest.mark.parametrize("n", [2])
def test_ddp_find_unused_parameters(n):
    res = run_mpi(UNUSED_SCRIPT, n=n, timeout=90).check()
    assert res.stdout.count("ALL OK") == n, res.output


@pytest.mark.parametrize("n", [2, 3])
def test_sync_batchnorm_matches_full_batch(n):
    res = run_mpi(SYNCBN_SCRIPT, n=n, timeout=90).check()
    assert res.stdout.count("ALL OK") == n, res.output


def test_ddp_world_of_one():
    import numpy as np

    import shardflow as sf
    import shardflow.nn as nn
    import shardflow.nn.functional as F
    from shardflow.nn.parallel import DistributedDataParallel as DDP

    model = nn.Linear(4, 2)
    ddp = DDP(model, process_group=__import__("shardflow").comm.LocalCommunicator())
    x, y = sf.randn(5, 4), sf.randn(5, 2)
    F.mse_loss(ddp(x), y).backward()
    ref = nn.Linear(4, 2)
    ref.load_state_dict(model.state_dict())
    F.mse_loss(ref(x), y).backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert np.allclose(p.grad.numpy(), q.grad.numpy())
    assert list(ddp.state_dict()) == ["module." + k for k in model.state_dict()]
