"""HSDP: ``fully_shard`` on a 2-D ``("dp_replicate", "dp_shard")`` cuda mesh of 4 ranks (its
dimensions are sub-group NCCL communicators of the host CUDA stand-in) trains like one CPU
process; shards are (B, S(0)); per step 2 units gathered twice, their reduce-scatters over
dp_shard each followed by an all-reduce over dp_replicate, the replicated last Linear
all-reduced over both dimensions; every one through NCCL."""

import shardflow as sf
from shardflow.distributed import init_device_mesh
from shardflow.distributed.fsdp import fully_shard

from ._common import host, init_nccl_world
from ._zero_training import adamw, close, make, reference, step_on


def main(argv):
    cuda_api, r, W = init_nccl_world()
    ref, _ = reference(r, W)
    mesh = init_device_mesh("cuda", (2, 2), mesh_dim_names=("dp_replicate", "dp_shard"))
    sf.manual_seed(100 + r)  # different per rank: fully_shard broadcasts rank 0's
    m = make("cuda")
    if r == 0:
        m.load_state_dict(make().state_dict())
    for i in (0, 2, 4):
        fully_shard(m[i], mesh=mesh)
    fully_shard(m, mesh=mesh)
    o = adamw(m.parameters())
    before = cuda_api.calls
    for step in range(4):
        step_on(m, o, step, "cuda", r, W, local=True)
    calls = cuda_api.calls - before
    w = m[0].weight
    rows = 4 if mesh.get_coordinate()[1] == 0 else 3  # 7 rows over the 2 ranks of dp_shard
    assert str(w.sbp) == "(B, S(0))" and w.to_local().shape == (rows, 5), (w.sbp, w.to_local().shape)
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        assert p.is_global and p.to_local().device.type == "cuda", name
        close(p.numpy(), host(q), name)
    st = m.fsdp_stats()
    # one reduce-scatter per sharded parameter (weight and bias of 2 units)
    assert st["unshard"] == 4 * 2 * 2 and st["reduce_scatter"] == 4 * 2 * 2, st
    assert st["all_reduce"] == 4 * 4, st
    assert st["bytes"]["all_reduce:replicate"] > 0, st
    assert calls >= st["all_gather"] + st["reduce_scatter"] + st["all_reduce"], (calls, st)
