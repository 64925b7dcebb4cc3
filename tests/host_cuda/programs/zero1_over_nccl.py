"""ZeroRedundancyOptimizer (ZeRO-1) under DDP with parameters on ``device="cuda"`` over the
NCCL communicator (host CUDA stand-in) trains like one CPU process; the inner optimizer's
state is this rank's rows on the device; the sharded state dict is a global S(0) tensor;
consolidated on rank 0 (PyTorch's protocol), the whole state loads into a fresh ZeRO
optimizer that resumes like the continued run and the reference; NCCL carried the
all-reduces and all-gathers."""

import shardflow as sf
import shardflow.distributed as dist
import shardflow.optim as optim
from shardflow.comm import world
from shardflow.comm.nccl import NCCLCommunicator
from shardflow.distributed.zero import ZeroRedundancyOptimizer
from shardflow.nn.parallel import DistributedDataParallel as DDP

from ._common import host, init_nccl_world
from ._zero_training import close, make, reference, step_on


def main(argv):
    cuda_api, r, W = init_nccl_world()
    assert isinstance(world.get_world(), NCCLCommunicator), type(world.get_world())
    ref, ref_opt = reference(r, W)
    sf.manual_seed(3 + r)
    m = make("cuda")
    ddp = DDP(m)  # rank 0's weights
    zo = ZeroRedundancyOptimizer(m.parameters(), optim.AdamW, lr=0.02, weight_decay=0.1)
    for step in range(4):
        step_on(ddp, zo, step, "cuda", r, W, local=True)
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        assert p.device.type == "cuda", name
        close(host(p), host(q), name)
    # the inner optimizer's state is this rank's rows, on the device
    for st in zo.optim.state.values():
        for v in st.values():
            if v.array.ndim:
                assert v.device.type == "cuda"
    want = ref_opt.state_dict()["state"]
    ssd = zo.sharded_state_dict()
    ea = ssd["state"][0]["exp_avg"]
    assert ea.is_global and str(ea.sbp) == "(S(0),)" and tuple(ea.shape) == (7, 5)
    assert ea.to_local().device.type == "cuda"
    close(ea.numpy(), host(want[0]["exp_avg"]), "sharded exp_avg")
    # PyTorch's protocol: consolidate on rank 0; the whole state loads into a fresh ZeRO optimizer
    zo.consolidate_state_dict(to=0)
    whole = [zo.state_dict() if r == 0 else None]
    dist.broadcast_object_list(whole, src=0)
    whole = whole[0]
    for i, st in want.items():
        for k, v in st.items():
            close(host(whole["state"][i][k]), host(v), (i, k))
    m2 = make("cuda")
    m2.load_state_dict(m.state_dict())
    zo2 = ZeroRedundancyOptimizer(m2.parameters(), optim.AdamW, lr=0.02, weight_decay=0.1)
    zo2.load_state_dict(whole)
    before = cuda_api.calls
    ddp2 = DDP(m2)
    for step in range(4, 6):
        step_on(ddp2, zo2, step, "cuda", r, W, local=True)
        step_on(ddp, zo, step, "cuda", r, W, local=True)
        step_on(ref, ref_opt, step, "cpu", r, W, local=False)
    for p, q, o in zip(m2.parameters(), ref.parameters(), m.parameters()):
        close(host(p), host(q), "resumed vs one process")
        close(host(p), host(o), "resumed vs continued")
    calls = cuda_api.calls
    assert calls - before >= 2 * 2 * 2, (before, calls)  # all-reduces and all-gathers per step
