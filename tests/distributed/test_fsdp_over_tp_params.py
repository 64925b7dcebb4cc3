"""fully_shard / FSDP over a data-parallel mesh of one rank takes parameters already laid
out by tensor parallelism (PyTorch's fsdp_tp_example on 2 ranks: a (dp=1, tp=2) mesh) and
leaves them as they are: sharding over one rank is the identity and no gradient is reduced.
They were refused ("already a global tensor"). A dp mesh of several ranks over such
parameters (PyTorch's 2-D FSDP + TP) is not supported: NotImplementedError, naming the way
out. On 2 ranks, the model trains as one process does (AdamW losses, 1e-5)."""

import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

SCRIPT = r"""
import sys
import numpy as np
import shardflow as torch
import shardflow.distributed as dist
from shardflow.distributed.device_mesh import init_device_mesh
from shardflow.distributed.fsdp import fully_shard
from shardflow.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

dist.init_process_group()
dp, tp = (int(a) for a in sys.argv[1:3])
g = np.random.default_rng(0)
w1, w2 = g.standard_normal((8, 4)).astype("float32"), g.standard_normal((3, 8)).astype("float32")
xs = [g.standard_normal((5, 4)).astype("float32") for _ in range(3)]

def build():
    m = torch.nn.Sequential(torch.nn.Linear(4, 8, bias=False), torch.nn.ReLU(), torch.nn.Linear(8, 3, bias=False))
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor(w1)); m[2].weight.copy_(torch.tensor(w2))
    return m

def train(m):
    opt = torch.optim.AdamW(m.parameters(), lr=0.1)
    out = []
    for x in xs:
        loss = m(torch.tensor(x)).pow(2).sum()
        loss.backward(); opt.step(); opt.zero_grad()
        out.append(loss.item())
    return out

ref = train(build())
mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
m = parallelize_module(build(), mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
try:
    fully_shard(m, mesh=mesh["dp"])
except NotImplementedError as e:
    print("REFUSED", e)
    sys.exit(0)
got = train(m)
np.testing.assert_allclose(got, ref, rtol=1e-5)
print("SAME", dist.get_rank())
"""


def test_one_rank_dp_mesh_keeps_tensor_parallel_parameters():
    res = run_mpi(SCRIPT, n=2, args=(1, 2), timeout=90).check()
    assert res.output.count("SAME") == 2, res.output


def test_several_rank_dp_mesh_over_tensor_parallel_parameters_is_refused():
    res = run_mpi(SCRIPT, n=2, args=(2, 1), timeout=90).check()
    assert res.output.count("REFUSED") == 2, res.output
    assert "data-parallel mesh of 2 ranks" in res.output and "is not supported" in res.output, res.output
