"""The dist-compat names on 2 real MPI ranks, in one launch, each checked against the
one-process computation: all_gather_single / reduce_scatter_single / split_group /
get_backend_config / reduce_op; dcp.async_save(...).result() of a sharded tensor loaded with
the deprecated load_state_dict(..., FileSystemReader(p)) into another layout (and read back
in this process), HuggingFaceStorageWriter of a sharded tensor (read by
safetensors.numpy.load_file here) and its reader into shards, load_sharded_optimizer_state_dict
into a sharded parameter's layout; register_ddp_comm_hook(NOOP / ALLREDUCE) and
post_localSGD_hook (global, then within a split_group) on DDP; and
PostLocalSGDOptimizer with PeriodicModelAverager against a two-model simulation."""

import numpy as np
import pytest

import shardflow as sf
import shardflow.distributed.checkpoint as dcp
from shardflow.testing.mpi import run_mpi

RANKS = 2
W = np.arange(12, dtype=np.float32).reshape(4, 3)

PROGRAM = r'''
import sys, warnings
import numpy as np
import shardflow as sf
import shardflow.distributed as dist
import shardflow.distributed.checkpoint as dcp
from shardflow.distributed.algorithms.ddp_comm_hooks import DDPCommHookType, register_ddp_comm_hook
from shardflow.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
from shardflow.distributed.optim import PostLocalSGDOptimizer
from shardflow.distributed.tensor import Replicate, Shard, distribute_tensor
from shardflow.nn.parallel import DistributedDataParallel as DDP

out = sys.argv[1]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2

# -- c10d names
x = sf.tensor(np.arange(6, dtype=np.float32) + 10 * rank)
both = [np.arange(6, dtype=np.float32) + 10 * r for r in range(2)]
o = sf.zeros(12)
dist.all_gather_single(o, x)
assert np.array_equal(o.numpy(), np.concatenate(both))
rs = sf.zeros(3)
dist.reduce_scatter_single(rs, x)
assert np.array_equal(rs.numpy(), (both[0] + both[1])[3 * rank:3 * rank + 3])
g = dist.split_group(split_ranks=[[1], [0]])
assert dist.get_process_group_ranks(g) == [rank] and dist.get_world_size(g) == 1
y = sf.ones(2) * (rank + 1)
dist.all_reduce(y, group=g)
assert y.numpy().tolist() == [rank + 1.0] * 2
assert dist.get_backend_config() == "cpu:gloo,cuda:gloo"
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    dist.all_reduce(y, op=dist.reduce_op.MAX)
assert y.numpy().tolist() == [2.0, 2.0]
dist.breakpoint(rank=-1)  # no rank stops: every rank passes the barrier

# -- checkpoints of a sharded tensor
W = np.arange(12, dtype=np.float32).reshape(4, 3)
mesh = dist.init_device_mesh("cpu", (2,))
w = distribute_tensor(sf.tensor(W), mesh, [Shard(0)])
state = {"model": {"w": w, "b": sf.tensor(np.full(3, 5.0, np.float32))}, "step": 7}
fut = dcp.async_save(state, checkpoint_id=out + "/ckpt")
w.to_local().add_(100.0)  # after staging
fut.result(timeout=60)
target = {"model": {"w": distribute_tensor(sf.zeros(4, 3), mesh, [Replicate()]),
                    "b": sf.zeros(3)}, "step": 0}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    dcp.load_state_dict(target, storage_reader=dcp.FileSystemReader(out + "/ckpt"))
assert np.array_equal(target["model"]["w"].to_local().numpy(), W) and target["step"] == 7
assert target["model"]["b"].numpy().tolist() == [5.0] * 3

w = distribute_tensor(sf.tensor(W), mesh, [Shard(0)])
dcp.save({"w": w, "b": sf.tensor(np.full(3, 5.0, np.float32))},
         storage_writer=dcp.HuggingFaceStorageWriter(out + "/hf"))
back = distribute_tensor(sf.zeros(4, 3), mesh, [Shard(0)])
dcp.load({"w": back}, storage_reader=dcp.HuggingFaceStorageReader(out + "/hf"))
assert np.array_equal(back.to_local().numpy(), W[2 * rank:2 * rank + 2])

exp_avg = distribute_tensor(sf.tensor(W * 0.5), mesh, [Shard(0)])
dcp.save({"model": {"w": w}, "optim": {"state": {"w": {"exp_avg": exp_avg,
                                                        "step": sf.tensor(3.0)}},
                                       "param_groups": [{"lr": 0.1, "params": ["w"]}]}},
         checkpoint_id=out + "/optim")
param = distribute_tensor(sf.zeros(4, 3), mesh, [Shard(0)])
osd = dcp.load_sharded_optimizer_state_dict({"w": param}, "optim",
                                            dcp.FileSystemReader(out + "/optim"))
got = osd["optim"]["state"]["w"]["exp_avg"]
assert got.placements == param.placements, got.placements
assert np.array_equal(got.to_local().numpy(), (W * 0.5)[2 * rank:2 * rank + 2])
assert float(osd["optim"]["state"]["w"]["step"]) == 3.0
assert osd["optim"]["param_groups"] == [{"lr": 0.1, "params": ["w"]}]

# -- DDP hooks registered by type
data = [np.random.default_rng(r).standard_normal((4, 3)).astype(np.float32) for r in range(2)]

def fresh():
    sf.manual_seed(0)
    return sf.nn.Linear(3, 2)

def grads_of(model, xs):
    model(sf.tensor(xs)).pow(2).sum().backward()
    return [p.grad.numpy().copy() for p in model.parameters()]

local = [grads_of(fresh(), d) for d in data]  # each rank's gradients, one process
for kind, want in ((DDPCommHookType.NOOP, local[rank]),
                   (DDPCommHookType.ALLREDUCE, [(a + b) / 2 for a, b in zip(*local)])):
    ddp = DDP(fresh())
    register_ddp_comm_hook(kind, ddp)
    got = grads_of(ddp, data[rank])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=str(kind))

from shardflow.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import (
    PostLocalSGDState, post_localSGD_hook)
ddp = DDP(fresh())
ddp.register_comm_hook(PostLocalSGDState(None, g, start_localSGD_iter=1), post_localSGD_hook)
for want in ([(a + b) / 2 for a, b in zip(*local)], local[rank]):  # global, then in g alone
    got = grads_of(ddp, data[rank])
    ddp.zero_grad()
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg="post_localSGD_hook")

# -- post-local SGD against a simulation of both ranks in this process
model = fresh()
opt = PostLocalSGDOptimizer(sf.optim.SGD(model.parameters(), lr=0.1),
                            PeriodicModelAverager(period=2, warmup_steps=1))
sims = [fresh(), fresh()]
sim_opts = [sf.optim.SGD(m.parameters(), lr=0.1) for m in sims]
for step in range(4):
    batch = [np.random.default_rng(10 * step + r).standard_normal((4, 3)).astype(np.float32)
             for r in range(2)]
    model(sf.tensor(batch[rank])).pow(2).sum().backward()
    opt.step()
    opt.zero_grad()
    for m, so, b in zip(sims, sim_opts, batch):
        m(sf.tensor(b)).pow(2).sum().backward()
        so.step()
        so.zero_grad()
    if step >= 1 and (step - 1) % 2 == 0:
        for ps in zip(*(m.parameters() for m in sims)):
            mean = (ps[0].detach().numpy() / 2 + ps[1].detach().numpy() / 2)
            for p in ps:
                p.array[...] = mean
for p, q in zip(model.parameters(), sims[rank].parameters()):
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
assert opt.state_dict()["step"] == 4
dist.destroy_process_group()
print("DIST COMPAT OK", rank, flush=True)
'''


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist_compat")
    res = run_mpi(PROGRAM, n=RANKS, args=[str(out)], timeout=180)
    return res, out


def test_two_ranks_match_one_process(job):
    res, _ = job
    res.check()
    assert res.output.count("DIST COMPAT OK") == RANKS, res.output


def test_files_written_on_two_ranks_read_in_one_process(job):
    from safetensors.numpy import load_file

    res, out = job
    res.check()
    whole = load_file(str(out / "hf" / "model-00001-of-00001.safetensors"))
    np.testing.assert_array_equal(whole["w"], W)  # the shards gathered by the HF writer
    target = {"model": {"w": sf.zeros(4, 3), "b": sf.zeros(3)}, "step": 0}
    dcp.load(target, checkpoint_id=out / "ckpt", no_dist=True)
    np.testing.assert_array_equal(target["model"]["w"].numpy(), W)  # staged before the add_
    assert target["step"] == 7
