"""Data parallel on ``device="cuda"`` in real ranks, without a GPU: every rank installs CuPy's
host stand-in and the fake NCCL, which carries NCCL's calls over MPI on the host memory behind
the pointers (``tests.doubles.host_cuda.install()``). ``init_process_group("nccl")`` then builds the NCCL communicator (the one a GPU
uses: signature checks, packing, streams and events through the stand-in), DDP's gradient
buckets go through it, and the result must equal one process on the CPU; so must the main
job on 2 ranks with DDP, ZeRO-3 and tensor parallelism (a (1, 2) mesh: NCCL subgroups).
"""

import numpy as np
import pytest

from shardflow.cli.train import main
from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

DDP_SCRIPT = r"""
import numpy as np
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.comm import world
from shardflow.comm.nccl import NCCLCommunicator
from shardflow.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
r, W = dist.get_rank(), dist.get_world_size()
assert isinstance(world.get_world(), NCCLCommunicator), type(world.get_world())

def net():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))

def batch(step, rank):  # 4 rows per rank: the mean of the ranks' means is the global mean
    g = np.random.default_rng(100 * step + rank)
    return g.standard_normal((4, 6)).astype(np.float32), g.standard_normal((4, 3)).astype(np.float32)

sf.manual_seed(7)
ref = net()  # one process, CPU, the whole batch
sf.manual_seed(7 + r)  # DDP broadcasts rank 0's weights
model = DDP(net().to("cuda"), bucket_cap_mb=0.0002)  # ~200 bytes: several buckets
opt = sf.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
ref_opt = sf.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
for step in range(3):
    x, y = batch(step, r)
    loss = F.mse_loss(model(sf.tensor(x, device="cuda")), sf.tensor(y, device="cuda"))
    opt.zero_grad(); loss.backward(); opt.step()
    xs, ys = zip(*(batch(step, k) for k in range(W)))
    ref_loss = F.mse_loss(ref(sf.tensor(np.concatenate(xs))), sf.tensor(np.concatenate(ys)))
    ref_opt.zero_grad(); ref_loss.backward(); ref_opt.step()
    for p, q in zip(model.module.parameters(), ref.parameters()):
        assert p.device.type == "cuda"
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
calls = cuda_api.calls
assert calls >= 3 * 2, calls  # every step's buckets went through NCCL
print(f"rank {r}: ok, {calls} NCCL calls")
"""


def test_ddp_over_nccl_on_host_cuda_equals_one_cpu_process():
    res = run_mpi(DDP_SCRIPT, n=2, timeout=120).check()
    assert "rank 0: ok" in res.output and "rank 1: ok" in res.output


TRAIN_SCRIPT = r"""
import sys
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
from shardflow.cli.train import main
sys.exit(main(sys.argv[1:]))
"""

FLAGS = ["--max-steps", "3", "--n-layer", "1", "--n-embd", "32", "--n-head", "2", "--block-size", "16",
         "--batch-size", "8", "--eval-iters", "1", "--eval-interval", "3", "--log-interval", "1",
         "--sample-tokens", "5", "--no-progress", "--num-workers", "0", "--max-corpus-bytes", "20000"]


def _train_losses(path):
    rows = [r.split(",") for r in open(path).read().splitlines()[1:]]
    return [float(r[1]) for r in rows if r[1]]


@pytest.mark.parametrize("layout", [[], ["--zero", "3"], ["--tp", "2"]], ids=["ddp", "zero3", "tp2"])
def test_train_gpt_cuda_on_two_ranks_equals_one_cpu_process(tmp_path, capsys, layout):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    two, one = tmp_path / "two", tmp_path / "one"
    run_mpi(TRAIN_SCRIPT, n=2, timeout=240,
            args=["gpt", "--device", "cuda", *layout, "--data", str(corpus), "--out", str(two),
                  *FLAGS]).check()
    assert main(["gpt", "--data", str(corpus), "--out", str(one), *FLAGS]) == 0
    capsys.readouterr()
    np.testing.assert_allclose(_train_losses(two / "metrics.csv"), _train_losses(one / "metrics.csv"),
                               rtol=0, atol=5e-5)


SYNC_BN_SCRIPT = r"""
import numpy as np
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf, shardflow.nn as nn
import shardflow.distributed as dist

dist.init_process_group("nccl")
r, W = dist.get_rank(), dist.get_world_size()
g = np.random.default_rng(0)
full = g.standard_normal((2 * W, 3, 4, 4)).astype(np.float32)  # the global batch
up = g.standard_normal(full.shape).astype(np.float32)
ref = nn.BatchNorm2d(3)
xr = sf.tensor(full, requires_grad=True)
yr = ref(xr)
(yr * sf.tensor(up)).sum().backward()

bn = nn.SyncBatchNorm(3).to("cuda")
x = sf.tensor(full[2 * r:2 * r + 2], device="cuda", requires_grad=True)
y = bn(x)
(y * sf.tensor(up[2 * r:2 * r + 2], device="cuda")).sum().backward()
ok = lambda a, b: np.allclose(a, b, rtol=1e-4, atol=1e-5)
assert y.device.type == "cuda" and x.grad.device.type == "cuda"
assert ok(y.detach().cpu().numpy(), yr.detach().numpy()[2 * r:2 * r + 2]), "output"
assert ok(x.grad.cpu().numpy(), xr.grad.numpy()[2 * r:2 * r + 2]), "input gradient"
assert ok(bn.running_mean.cpu().numpy(), ref.running_mean.numpy()), "running mean"
assert ok(bn.running_var.cpu().numpy(), ref.running_var.numpy()), "running var"
assert cuda_api.calls >= 2
print(f"rank {r}: ok")
"""


def test_sync_batchnorm_on_host_cuda_equals_batchnorm_on_the_global_batch():
    res = run_mpi(SYNC_BN_SCRIPT, n=2, timeout=120).check()
    assert "rank 0: ok" in res.output and "rank 1: ok" in res.output
