"""FSDP (``fully_shard``) ZeRO-2 and ZeRO-3 with parameters on ``device="cuda"`` over the
NCCL communicator (host CUDA stand-in) train like one CPU process; parameters and optimizer
state are S(0) global tensors with device shards; the unshard / reduce-scatter / all-reduce
counts are the expected ones and each went through NCCL. Prints ``rank R: stage S ok``."""

import shardflow as sf
from shardflow.distributed.fsdp import fully_shard, sharded_optimizer_state_dict

from ._common import host, init_nccl_world
from ._zero_training import adamw, close, make, reference, step_on


def main(argv):
    cuda_api, r, W = init_nccl_world()
    ref, ref_opt = reference(r, W)
    for stage in (2, 3):
        sf.manual_seed(100 + r)  # different per rank: fully_shard broadcasts rank 0's
        m = make("cuda")
        if r == 0:
            m.load_state_dict(make().state_dict())
        for i in (0, 2, 4):
            fully_shard(m[i], reshard_after_forward=stage == 3)
        fully_shard(m, reshard_after_forward=stage == 3)
        o = adamw(m.parameters())
        before = cuda_api.calls
        for step in range(4):
            step_on(m, o, step, "cuda", r, W, local=True)
        calls = cuda_api.calls - before
        for (name, p), q in zip(m.named_parameters(), ref.parameters()):
            assert p.is_global and p.to_local().device.type == "cuda", name
            assert p.grad is None
            close(p.numpy(), host(q), (stage, name))  # gathers the shards
        st = m.fsdp_stats()
        # 4 steps x 2 units with a sharded parameter (the last Linear is replicated and
        # all-reduced): stage 2 gathers once per step, stage 3 twice; every one through NCCL
        assert st["unshard"] == 4 * 2 * (stage - 1), st
        # one reduce-scatter per sharded parameter (weight and bias of 2 units)
        assert st["reduce_scatter"] == 4 * 2 * 2 and st["all_reduce"] == 4, st
        assert calls >= st["all_gather"] + st["reduce_scatter"] + st["all_reduce"], (calls, st)
        w = m.state_dict()["0.weight"]
        assert w.is_global and str(w.sbp) == "(S(0),)", w.sbp
        assert w.to_local().shape == ((4, 5) if r == 0 else (3, 5)), w.to_local().shape
        osd = sharded_optimizer_state_dict(o)
        ea = osd["state"][0]["exp_avg"]
        assert ea.is_global and ea.to_local().device.type == "cuda"
        close(ea.numpy(), host(ref_opt.state_dict()["state"][0]["exp_avg"]), (stage, "exp_avg"))
        print(f"rank {r}: stage {stage} ok, {calls} NCCL calls", flush=True)
